"""``file_edit``: change a text file safely, with optimistic concurrency.

Modes (the decisions the tool description should repeat):

``replace``
    ``content`` becomes the whole file. The only mode that creates a file; missing
    parent directories inside the workspace are created.
``append``
    ``content`` is added at the end, starting on a new line: if the file does not
    end with a newline, one is added first. The file must exist.
``insert``
    ``content`` is inserted so that its first line becomes line ``line`` (1-based):
    ``1`` inserts at the top, ``total_lines + 1`` at the end; ``0`` is refused. The
    inserted text always forms whole lines (a final newline is added if missing).
``str_replace``
    ``old_string`` must occur exactly once (overlapping occurrences count) and is
    replaced by ``new_string``; with ``replace_all`` every non-overlapping
    occurrence is. No match: the error shows the closest lines; several: their line
    numbers. ``old_string == new_string`` is refused.

In a file whose line endings are all CRLF, ``\\n`` in the given text is written as
``\\r\\n`` (and an ``old_string`` typed with ``\\n`` still matches). The file keeps its
encoding (BOM included) and permission bits.

Concurrency: writers of one file are serialised by a cross-process lock
(:class:`filelock.FileLock`) whose lock file lives in ``lock_dir``, named by the
SHA-256 of the file's resolved path: never in the user's workspace. Under the lock
the file is re-read from disk (never from the read cache), ``expected_hash`` is
compared with the SHA-256 of those bytes, the new content is computed and written
atomically (:func:`~runtime.workspace.atomic.atomic_write`) through a directory
descriptor (:meth:`~runtime.workspace.sandbox.Workspace.open_parent_dir`). Just
before the rename the file's identity is checked again, which catches most programs
that do not take the lock (editors, formatters) writing in between.

Lock files stay in ``lock_dir`` after release (all waiters must share one inode);
they are empty, one per file ever edited.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import filelock

from runtime.workspace.atomic import atomic_write, sweep_stale_temp_files
from runtime.workspace.cache import FileIdentity, ReadCache
from runtime.workspace.errors import BinaryFileError, EditConflict, FileBusy, WorkspaceError
from runtime.workspace.sandbox import TEMP_PREFIX, Resolved, Workspace
from runtime.workspace.text import (
    Decoded,
    decode,
    encode,
    line_endings,
    short_diff,
    split_keepends,
    split_lines,
    to_crlf,
)

EditMode = Literal["replace", "append", "insert", "str_replace"]
EDIT_MODES: tuple[str, ...] = get_args(EditMode)

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_HASH = re.compile(r"[0-9a-f]{64}")
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")
_MAX_CANDIDATE_SCAN = 50_000  # lines compared with a missing old_string, at most


@dataclass(frozen=True)
class EditResult:
    """What an edit did. ``old_sha256`` is None when the file was created.

    ``changed`` is False when the new content equals the old (nothing was written);
    ``replacements`` counts the occurrences a ``str_replace`` replaced.
    """

    path: str
    mode: str
    created: bool
    changed: bool
    old_sha256: str | None
    new_sha256: str
    diff: str
    replacements: int
    bytes_written: int

    def render(self) -> str:
        """A short report for the model: what happened, the new hash, the diff."""
        if self.created:
            what = f"Created {self.path} ({self.bytes_written:,} bytes)"
        elif not self.changed:
            what = f"{self.path} unchanged (the new content equals the old)"
        else:
            count = (
                f", {self.replacements} replacement{'s' if self.replacements != 1 else ''}"
                if self.mode == "str_replace"
                else ""
            )
            what = f"Edited {self.path} ({self.mode}{count})"
        diff = f"\n{self.diff}" if self.diff else ""
        return f"{what}; sha256 is now {self.new_sha256}{diff}"


@dataclass
class _Current:
    raw: bytes
    identity: FileIdentity


class FileEditor:
    """Edits files of a :class:`Workspace`; see the module docstring for the rules.

    Counters for metrics (read them any time): ``edits`` (writes done), ``unchanged``,
    ``conflicts`` (hash mismatches and concurrent changes), ``lock_timeouts``,
    ``lock_wait_seconds`` (total time spent waiting for locks),
    ``lock_wait_max_seconds`` and ``temp_files_swept``.
    """

    def __init__(
        self,
        workspace: Workspace,
        lock_dir: str | os.PathLike[str],
        cache: ReadCache | None = None,
        *,
        lock_timeout_s: float = 10.0,
        lock_poll_s: float = 0.005,
        max_file_bytes: int = 64 * 1024 * 1024,
        sweep_interval_s: float = 300.0,
        stale_temp_age_s: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workspace = workspace
        self.lock_dir = Path(lock_dir)
        self.lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        real_lock_dir = self.lock_dir.resolve()
        if real_lock_dir.is_relative_to(workspace.root):
            raise ValueError("lock_dir must be outside the workspace: lock files would show up in the user's tree")
        self.cache = cache
        self.lock_timeout_s = lock_timeout_s
        # filelock waits by polling; its default 50 ms would dominate short, contended edits.
        self.lock_poll_s = lock_poll_s
        self.max_file_bytes = max_file_bytes
        self.sweep_interval_s = sweep_interval_s
        self.stale_temp_age_s = stale_temp_age_s
        self._clock = clock
        self._stats_lock = threading.Lock()
        self._last_sweep: dict[tuple[int, int], float] = {}
        self.edits = 0
        self.unchanged = 0
        self.conflicts = 0
        self.lock_timeouts = 0
        self.lock_wait_seconds = 0.0
        self.lock_wait_max_seconds = 0.0
        self.temp_files_swept = 0

    def lock_path(self, resolved: Resolved) -> Path:
        """The lock file serialising writers of ``resolved`` (outside the workspace)."""
        return self.lock_dir / (hashlib.sha256(os.fsencode(resolved.absolute)).hexdigest() + ".lock")

    def stats(self) -> dict[str, float]:
        """The counters, for metrics."""
        with self._stats_lock:
            return {
                "edits": self.edits,
                "unchanged": self.unchanged,
                "conflicts": self.conflicts,
                "lock_timeouts": self.lock_timeouts,
                "lock_wait_seconds": self.lock_wait_seconds,
                "lock_wait_max_seconds": self.lock_wait_max_seconds,
                "temp_files_swept": self.temp_files_swept,
            }

    def edit(
        self,
        path: str,
        mode: str,
        *,
        content: str | None = None,
        old_string: str | None = None,
        new_string: str | None = None,
        replace_all: bool = False,
        line: int | None = None,
        expected_hash: str | None = None,
    ) -> EditResult:
        """Apply one edit to ``path``; refusals raise :class:`~runtime.workspace.errors.WorkspaceError`.

        ``expected_hash`` (the ``sha256`` from ``file_read``) makes the edit fail with
        :class:`~runtime.workspace.errors.EditConflict` if the file changed since.
        """
        _check_arguments(mode, content, old_string, new_string, replace_all, line)
        if expected_hash is not None:
            if not isinstance(expected_hash, str) or not _HASH.fullmatch(expected_hash.strip().lower()):
                raise WorkspaceError(
                    "expected_hash must be the 64-character hex sha256 that file_read returned for this file"
                )
            expected_hash = expected_hash.strip().lower()
        resolved = self.workspace.resolve(path, for_write=True, must_exist=mode != "replace")
        lock = filelock.FileLock(
            str(self.lock_path(resolved)), timeout=self.lock_timeout_s, poll_interval=self.lock_poll_s
        )
        started = self._clock()
        try:
            lock.acquire()
        except filelock.Timeout:
            with self._stats_lock:
                self.lock_timeouts += 1
            raise FileBusy(
                f"{resolved.relative} is busy: another edit has held it for over {self.lock_timeout_s:g} s; try again "
                "shortly (nothing was changed)"
            ) from None
        finally:
            self._count_wait(self._clock() - started)
        try:
            return self._edit_locked(resolved, mode, content, old_string, new_string, replace_all, line, expected_hash)
        finally:
            lock.release()

    def _edit_locked(
        self,
        resolved: Resolved,
        mode: str,
        content: str | None,
        old_string: str | None,
        new_string: str | None,
        replace_all: bool,
        line: int | None,
        expected_hash: str | None,
    ) -> EditResult:
        rel = resolved.relative
        parent_fd = self.workspace.open_parent_dir(resolved, create=mode == "replace")
        try:
            current = self._read_current(parent_fd, resolved)
            old_hash = hashlib.sha256(current.raw).hexdigest() if current is not None else None
            if expected_hash is not None and expected_hash != old_hash:
                self._count_conflict()
                if old_hash is None:
                    raise EditConflict(
                        f"{rel} no longer exists (it was deleted or renamed since you read it); re-read the directory "
                        "before editing",
                        None,
                    )
                raise EditConflict(
                    f"{rel} changed since you read it: expected sha256 {expected_hash}, current sha256 {old_hash}. "
                    "Read the file again with file_read and redo the edit on its current content.",
                    old_hash,
                )
            if current is None and mode != "replace":
                raise WorkspaceError(
                    f"{rel} not found (it may have just been removed); use mode 'replace' to create a file"
                )

            decoded: Decoded | None = None
            if current is not None:
                try:
                    decoded = decode(current.raw)
                except BinaryFileError as err:
                    if mode != "replace":
                        raise BinaryFileError(f"{rel} is a {err}; file_edit changes text files only") from None
            encoding = decoded.encoding if decoded is not None else "utf-8"
            old_text = decoded.text if decoded is not None else None
            if mode == "str_replace":
                new_text, replacements = _str_replace(
                    rel, old_text or "", old_string or "", new_string or "", replace_all
                )
            else:
                new_text, replacements = _apply_content(rel, mode, old_text or "", content or "", line or 0), 0
            new_raw = encode(new_text, encoding)

            if current is not None and new_raw == current.raw:
                with self._stats_lock:
                    self.unchanged += 1
                return EditResult(rel, mode, False, False, old_hash, old_hash or "", "", replacements, 0)

            self._check_unchanged(parent_fd, resolved, current)
            atomic_write(parent_fd, resolved.name, new_raw, mode=None)
            if self.cache is not None:
                self.cache.invalidate(str(resolved.absolute))
            with self._stats_lock:
                self.edits += 1
            self._maybe_sweep(parent_fd)
        finally:
            os.close(parent_fd)

        if current is not None and decoded is None:
            count = len(split_lines(new_text))
            diff = f"(binary content replaced by {count:,} line{'' if count == 1 else 's'} of text)"
        else:
            diff = short_diff(old_text, new_text, rel)
        return EditResult(
            rel,
            mode,
            current is None,
            True,
            old_hash,
            hashlib.sha256(new_raw).hexdigest(),
            diff,
            replacements,
            len(new_raw),
        )

    def _read_current(self, parent_fd: int, resolved: Resolved) -> _Current | None:
        """The file's bytes as they are now (None if missing), opened without following links."""
        try:
            fd = os.open(resolved.name, _READ_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise WorkspaceError(
                    f"{resolved.relative} changed while in use (it is now a symbolic link); nothing was written, try "
                    "again"
                ) from None
            if err.errno == errno.EACCES:
                raise WorkspaceError(f"permission denied: {resolved.relative} is not readable") from None
            raise
        self.workspace.refuse_protected(fd, resolved.relative)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"{resolved.relative} is a directory; give the path of a file")
            if not stat.S_ISREG(st.st_mode):
                raise WorkspaceError(
                    f"{resolved.relative} is not a regular file (device, socket or FIFO); it cannot be edited"
                )
            if st.st_size > self.max_file_bytes:
                raise WorkspaceError(
                    f"{resolved.relative} is {st.st_size / 2**20:,.1f} MB; file_edit handles files up to "
                    f"{self.max_file_bytes / 2**20:,.0f} MB"
                )
            chunks: list[bytes] = []
            got = 0
            while got <= self.max_file_bytes and (chunk := os.read(fd, 8 << 20)):
                chunks.append(chunk)
                got += len(chunk)
            if got > self.max_file_bytes:
                raise WorkspaceError(
                    f"{resolved.relative} grew past {self.max_file_bytes / 2**20:,.0f} MB while being read; file_edit "
                    "handles files up to that size"
                )
            return _Current(b"".join(chunks), FileIdentity.of(st))
        finally:
            os.close(fd)

    def read_current(self, parent_fd: int, resolved: Resolved) -> _Current | None:
        """The file's bytes and identity as they are now (None if missing); for the other
        writers of the workspace (file_delete), which must read it the same way under the lock."""
        return self._read_current(parent_fd, resolved)

    def _check_unchanged(self, parent_fd: int, resolved: Resolved, current: _Current | None) -> None:
        """Refuse to write if the file changed (outside our lock) since it was read."""
        try:
            now: FileIdentity | None = FileIdentity.of(os.stat(resolved.name, dir_fd=parent_fd, follow_symlinks=False))
        except FileNotFoundError:
            now = None
        if now != (current.identity if current is not None else None):
            self._count_conflict()
            raise EditConflict(
                f"{resolved.relative} was changed by another program during the edit; read it again and redo the edit "
                "(nothing was written)",
                None,
            )

    def _maybe_sweep(self, parent_fd: int) -> None:
        """Now and then, remove temp files that crashed writers left in this directory."""
        st = os.fstat(parent_fd)
        key = (st.st_dev, st.st_ino)
        now = self._clock()
        with self._stats_lock:
            last = self._last_sweep.get(key)
            if last is not None and now - last < self.sweep_interval_s:
                return
            self._last_sweep[key] = now
        removed = sweep_stale_temp_files(parent_fd, self.stale_temp_age_s)
        if removed:
            with self._stats_lock:
                self.temp_files_swept += removed

    def sweep_tree(self, *, max_dirs: int = 100_000) -> int:
        """Remove the temporary files crashed writers left anywhere in the workspace
        (see :func:`~runtime.workspace.atomic.sweep_stale_temp_files`); return how many.

        A Runtime runs this once when it starts, in a thread of its own: links are not
        followed, and at most ``max_dirs`` folders are looked at."""
        removed = 0
        root = str(self.workspace.root)
        for count, (current, dirs, names) in enumerate(os.walk(root, followlinks=False)):
            if count >= max_dirs:
                break
            dirs[:] = [d for d in dirs if not d.startswith(TEMP_PREFIX)]
            if not any(name.startswith(TEMP_PREFIX) for name in names):
                continue
            try:
                fd = os.open(current, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                removed += sweep_stale_temp_files(fd, self.stale_temp_age_s)
            finally:
                os.close(fd)
        if removed:
            with self._stats_lock:
                self.temp_files_swept += removed
        return removed

    def _count_wait(self, waited: float) -> None:
        with self._stats_lock:
            self.lock_wait_seconds += waited
            self.lock_wait_max_seconds = max(self.lock_wait_max_seconds, waited)

    def _count_conflict(self) -> None:
        with self._stats_lock:
            self.conflicts += 1


def _check_arguments(
    mode: str, content: str | None, old_string: str | None, new_string: str | None, replace_all: bool, line: int | None
) -> None:
    """Refuse arguments that do not fit the mode, before any file is touched."""
    if mode not in EDIT_MODES:
        raise WorkspaceError(f"unknown edit mode {mode!r}; use one of: {', '.join(EDIT_MODES)}")
    if not isinstance(replace_all, bool):
        raise WorkspaceError(f"replace_all must be true or false, not {replace_all!r}")
    if mode == "str_replace":
        if content is not None:
            raise WorkspaceError("mode 'str_replace' takes old_string and new_string, not content")
        if not isinstance(old_string, str) or not isinstance(new_string, str):
            raise WorkspaceError(
                "mode 'str_replace' needs old_string (the exact text to find) and new_string (its replacement)"
            )
        if old_string == "":
            raise WorkspaceError(
                "old_string is empty; give the exact text to replace (to add text use mode 'insert' or 'append')"
            )
        if old_string == new_string:
            raise WorkspaceError(
                "old_string and new_string are identical, so the edit would change nothing; give the new text in "
                "new_string"
            )
    else:
        if old_string is not None or new_string is not None or replace_all:
            raise WorkspaceError(
                f"old_string, new_string and replace_all belong to mode 'str_replace'; mode {mode!r} takes content"
            )
        if not isinstance(content, str):
            raise WorkspaceError(f"mode {mode!r} needs content (a string)")
        if mode in ("append", "insert") and content == "":
            raise WorkspaceError(f"content is empty, so mode {mode!r} would change nothing")
    if mode == "insert":
        if isinstance(line, bool) or not isinstance(line, int):
            raise WorkspaceError("mode 'insert' needs line: the 1-based line number the inserted text should start at")
        if line < 1:
            raise WorkspaceError(f"line is 1-based; {line} is not valid (line=1 inserts at the top of the file)")
    elif line is not None:
        raise WorkspaceError("line belongs to mode 'insert'")


def _apply_content(rel: str, mode: str, old: str, content: str, line: int) -> str:
    """The new text of the file for modes replace, append and insert."""
    crlf = line_endings(old) == "crlf"
    newline = "\r\n" if crlf else "\n"
    text = to_crlf(content) if crlf else content
    if mode == "replace":
        return text
    if mode == "append":
        joiner = newline if old and not old.endswith("\n") else ""
        return old + joiner + text
    lines = split_keepends(old)
    if line > len(lines) + 1:
        raise WorkspaceError(
            f"line {line} is past the end of {rel} ({len(lines):,} lines); use a line from 1 to {len(lines) + 1:,} "
            f"({len(lines) + 1:,} appends at the end)"
        )
    if not text.endswith("\n"):
        text += newline
    if line == len(lines) + 1 and lines and not lines[-1].endswith("\n"):
        text = newline + text  # the last line had no newline: end it first
    return "".join(lines[: line - 1]) + text + "".join(lines[line - 1 :])


def _str_replace(rel: str, old: str, old_string: str, new_string: str, replace_all: bool) -> tuple[str, int]:
    """The new text and the number of replacements; refuses zero or (without replace_all) several matches."""
    positions = _find_all(old, old_string)
    if not positions and line_endings(old) == "crlf" and "\n" in old_string and "\r\n" not in old_string:
        # Text typed with plain newlines, file written with CRLF: match in the file's style.
        old_string, new_string = to_crlf(old_string), to_crlf(new_string)
        positions = _find_all(old, old_string)
    if not positions:
        raise WorkspaceError(_no_match_message(rel, old, old_string))
    if len(positions) > 1 and not replace_all:
        numbers = sorted({old.count("\n", 0, pos) + 1 for pos in positions})
        listed = ", ".join(str(n) for n in numbers[:20]) + (
            f" and {len(numbers) - 20} more" if len(numbers) > 20 else ""
        )
        raise WorkspaceError(
            f"old_string occurs {len(positions)} times in {rel} (starting at lines {listed}); include more of the "
            "surrounding lines in old_string so it matches exactly once, or set replace_all to replace every "
            "occurrence"
        )
    if replace_all:
        return old.replace(old_string, new_string), old.count(old_string)
    at = positions[0]
    return old[:at] + new_string + old[at + len(old_string) :], 1


def _find_all(text: str, needle: str) -> list[int]:
    """Start offsets of every occurrence of ``needle``, overlapping ones included."""
    found: list[int] = []
    at = text.find(needle)
    while at != -1:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _no_match_message(rel: str, text: str, old_string: str) -> str:
    """Why ``old_string`` was not found, with the closest lines of the file as candidates."""
    lines = [line.rstrip("\r") for line in split_lines(text)]
    wanted = [line.rstrip("\r") for line in old_string.split("\n")]
    hints: list[str] = []
    if all(_LINE_NUMBER_PREFIX.match(w) for w in wanted if w.strip()):
        hints.append(
            "old_string seems to include the line-number prefixes of file_read output ('    12<TAB>'); give only the "
            "file's text"
        )
    start = _whitespace_insensitive_match(lines, wanted)
    if start is not None:
        hints.append(
            f"a passage matching except for whitespace or indentation starts at line {start}; copy it exactly, spaces "
            "and tabs included"
        )
    key = max((w.strip() for w in wanted), key=len, default="")
    candidates: list[tuple[float, int]] = []
    if key:
        for number, line in enumerate(lines[:_MAX_CANDIDATE_SCAN], start=1):
            matcher = difflib.SequenceMatcher(None, key, line.strip(), autojunk=False)
            if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
                continue
            ratio = matcher.ratio()
            if ratio >= 0.5:
                candidates.append((ratio, number))
    candidates.sort(key=lambda item: (-item[0], item[1]))
    parts = [f"old_string was not found in {rel}."]
    if candidates:
        parts.append("Closest lines:\n" + "\n".join(f"  line {n}: {_clip(lines[n - 1])}" for _, n in candidates[:3]))
    else:
        parts.append("No line of the file resembles it; check the path, or read the file again.")
    hints.append(
        "old_string must match the file exactly (whitespace, indentation and line breaks included); re-read the file "
        "if it may have changed"
    )
    return "\n".join(parts + [f"Hint: {h}." for h in hints])


def _whitespace_insensitive_match(lines: list[str], wanted: list[str]) -> int | None:
    """The line where ``wanted`` matches ignoring whitespace differences, if it does."""
    norm = [" ".join(w.split()) for w in wanted]
    while norm and not norm[0]:
        norm.pop(0)
    while norm and not norm[-1]:
        norm.pop()
    if not norm:
        return None
    file_norm = [" ".join(line.split()) for line in lines[:_MAX_CANDIDATE_SCAN]]
    for start in range(len(file_norm) - len(norm) + 1):
        if file_norm[start] == norm[0] and file_norm[start : start + len(norm)] == norm:
            return start + 1
    return None


def _clip(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[:width] + "…"
