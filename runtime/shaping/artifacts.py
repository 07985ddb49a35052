"""Full outputs that were too long to show: saved to disk, read back page by page.

Layout: one directory, three files per artifact, all named by its id::

    art_<24 hex>.txt    the text, UTF-8
    art_<24 hex>.idx    byte offset of every 4,096th character (only when not ASCII)
    art_<24 hex>.json   id, call, tool, sizes, SHA-256, stride: written last, so it is
                        the commit record; an artifact without it does not exist

Why UTF-8 plus a sparse index (and not UTF-32, or no index): pages are addressed in
characters (what the model counts and what the truncation notice says), while a
file is addressed in bytes. UTF-32 would make the mapping trivial but quadruple the
size of the common (ASCII) case; scanning from the start would make reading page
10,000 of a 1 GB output read 1 GB. With one 8-byte offset every 4,096 characters a
read seeks to the nearest indexed point and decodes at most 4,095 characters to
reach the exact offset; the index costs 2 MB per billion characters and is skipped
entirely for ASCII text, where character and byte offsets are equal.

Saving is atomic (temporary file in the same directory, fsync, rename, fsync of the
directory), ids are random (``secrets``, 96 bits), and every id that comes from a model
is validated before it gets near a path. Retention (count, total size, age; oldest
first) runs after each save.

Every artifact belongs to the session whose call made it. The commit record keeps the
owner as a salted SHA-256 of the session id (so the directory, which other processes
share, never lists the sessions), and a read from any other session gets exactly the
answer an id that never existed gets: another session's artifact cannot be read, nor
told apart from a missing one. A commit record without an owner (written before owners
were recorded) belongs to no session.

The files, ids and records are in ``artifact_format``, writing in ``artifact_writer``;
this module is the store: saving, reading pages (filtered or not) and retention.
"""

from __future__ import annotations

import io
import json
import os
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from runtime.regex import RegexRejected, compile_re2
from runtime.shaping.artifact_format import (
    BIG_ENDIAN,
    DEFAULT_SESSION,
    INDEX_STRIDE,
    TEMP_PREFIX,
    ArtifactError,
    ArtifactPage,
    ArtifactRef,
    ArtifactSaveError,
    artifact_paths,
    check_artifact_id,
    is_artifact_id,
    owned_by,
    unlink,
)
from runtime.shaping.artifact_writer import ArtifactWriter

__all__ = [
    "DEFAULT_SESSION",
    "INDEX_STRIDE",
    "MAX_PAGE_CHARS",
    "PATTERN_SCAN_CHARS",
    "ArtifactError",
    "ArtifactPage",
    "ArtifactRef",
    "ArtifactSaveError",
    "ArtifactStore",
    "ArtifactWriter",
    "check_artifact_id",
]

MAX_PAGE_CHARS = 1_000_000
"""The largest ``limit`` :meth:`ArtifactStore.read` accepts."""

PATTERN_SCAN_CHARS = 8_000_000
"""Characters one filtered read scans at most before returning what it found so far
(with ``next_offset`` set, so the caller can go on): a pattern that matches nothing
in a 1 GB artifact must not make one call read 1 GB."""

_LINE_CHUNK = 65_536  # lines longer than this are matched piece by piece
_BATCH_CHARS = 262_144  # lines checked together by one prefilter pass
_WRITE_SLICE = 1 << 20  # characters encoded at a time by save(): bounds the extra memory


class ArtifactStore:
    """A directory of saved outputs, with retention by count, total size and age."""

    def __init__(
        self, root: Path, max_count: int = 1000, max_bytes: int = 1 << 30, max_age_s: float = 7 * 86400
    ) -> None:
        if max_count < 1 or max_bytes < 1 or max_age_s <= 0:
            raise ValueError("max_count, max_bytes and max_age_s must be positive")
        self.root = Path(root)
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        # Leftovers of a crashed writer are removed after this long; a live writer
        # streaming for longer than a day would lose its temporary file.
        self.stale_temp_s = min(max_age_s, 86400.0)

    # -- writing -----------------------------------------------------------------------

    def save(
        self, text: str, *, call_id: str, tool: str, session: str = DEFAULT_SESSION, untrusted: bool = False
    ) -> ArtifactRef:
        """Save ``text`` atomically for ``session`` (only it can read it back) and return
        where it is; then apply retention. ``untrusted``: the output of an untrusted tool
        (pages of it are marked as data when read)."""
        writer = self.writer(call_id=call_id, tool=tool, session=session, untrusted=untrusted)
        try:
            for start in range(0, len(text), _WRITE_SLICE):
                writer.write(text[start : start + _WRITE_SLICE])
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def writer(
        self, *, call_id: str, tool: str, session: str = DEFAULT_SESSION, untrusted: bool = False
    ) -> ArtifactWriter:
        """A writer for output too large to hold in memory: ``write`` chunks, then ``close``.
        The artifact belongs to ``session``; ``untrusted`` as for :meth:`save`."""
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as err:
            raise ArtifactSaveError(f"cannot create the artifact directory {self.root}: {err.strerror or err}") from err
        return ArtifactWriter(self, call_id=call_id, tool=tool, session=session, untrusted=untrusted)

    # -- reading -----------------------------------------------------------------------

    def _paths(self, artifact_id: str) -> tuple[Path, Path, Path]:
        return artifact_paths(self.root, artifact_id)

    def _meta(self, artifact_id: str, session: str) -> dict[str, Any]:
        check_artifact_id(artifact_id)
        meta_path = self._paths(artifact_id)[2]
        try:
            with _open_nofollow(meta_path) as handle:
                meta = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            raise self._unknown(artifact_id) from None
        except (OSError, ValueError) as err:
            raise ArtifactError(f"artifact {artifact_id} cannot be read: {err}") from err
        if not isinstance(meta, dict) or not owned_by(meta.get("owner"), session):
            # Word for word the answer for an id that does not exist: the caller learns nothing.
            raise self._unknown(artifact_id)
        if meta.get("id") != artifact_id:
            raise ArtifactError(f"artifact {artifact_id} cannot be read: its metadata is damaged.")
        return meta

    def _unknown(self, artifact_id: str) -> ArtifactError:
        return ArtifactError(
            f"no artifact {artifact_id}: it does not exist or has expired (artifacts are kept for at most "
            f"{self.max_age_s / 86400:g} days and the newest {self.max_count:,}). "
            "Run the tool again to get a fresh one."
        )

    def info(self, artifact_id: str, *, session: str = DEFAULT_SESSION) -> ArtifactRef:
        """The :class:`ArtifactRef` of an artifact ``session`` saved (:class:`ArtifactError` if unknown to it)."""
        meta = self._meta(artifact_id, session)
        return ArtifactRef(
            artifact_id, self._paths(artifact_id)[0], int(meta["chars"]), int(meta["bytes"]), str(meta["sha256"])
        )

    def read(
        self,
        artifact_id: str,
        offset: int = 0,
        limit: int = 2000,
        pattern: str | None = None,
        *,
        session: str = DEFAULT_SESSION,
        look_ahead: int = 0,
    ) -> ArtifactPage:
        """Up to ``limit`` characters of an artifact of ``session`` from character ``offset``.

        With ``pattern`` (RE2 syntax), only the lines that match are returned, joined
        as they were; ``offset``/``next_offset`` still count characters of the whole
        artifact, so paging works the same way. A filtered read scans at most
        :data:`PATTERN_SCAN_CHARS` characters per call. Only the page is read from
        disk, never the whole file. An artifact of another session is unknown here.
        ``look_ahead`` more characters after an unfiltered page come in ``after``
        (to judge a marker cut by the page's end), without moving ``next_offset``.
        """
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ArtifactError(f"offset must be a whole number of characters >= 0, not {offset!r}.")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ArtifactError(f"limit must be a whole number of characters >= 1, not {limit!r}.")
        limit = min(limit, MAX_PAGE_CHARS)
        regex = prefilter = None
        if pattern is not None:
            try:
                regex = compile_re2(pattern)
                # The same pattern over many lines at once: `^`/`$` at line breaks mean
                # what they mean on one line; \A and \z do not, so no prefilter then.
                prefilter = None if ("\\A" in pattern or "\\z" in pattern) else compile_re2("(?m)" + pattern)
            except RegexRejected as err:
                raise ArtifactError(f"pattern {pattern[:80]!r} cannot be used: {err.message}") from None
        meta = self._meta(artifact_id, session)
        total = int(meta["chars"])
        tool, untrusted = str(meta.get("tool", "")), meta.get("untrusted") is True
        if offset >= total:
            return ArtifactPage("", offset, None, total, tool, untrusted)
        text_path, index_path, _ = self._paths(artifact_id)
        try:
            with _open_nofollow(text_path) as raw:
                skip = self._seek(
                    raw, index_path, offset, int(meta["bytes"]) == total, int(meta.get("stride", INDEX_STRIDE))
                )
                reader = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")
                while skip:
                    skip -= len(reader.read(skip)) or skip  # `or skip`: stop at a premature end
                after = ""
                if regex is None:
                    text = reader.read(limit)
                    end = offset + len(text)
                    if look_ahead > 0 and end < total:
                        after = reader.read(look_ahead)
                else:
                    text, end = _filter_lines(
                        reader, regex, prefilter, offset, min(total, offset + PATTERN_SCAN_CHARS), limit
                    )
                reader.detach()
        except FileNotFoundError:
            raise ArtifactError(
                f"no artifact {artifact_id}: it has just expired. Run the tool again to get a fresh one."
            ) from None
        except OSError as err:
            raise ArtifactError(f"artifact {artifact_id} cannot be read: {err.strerror or err}") from err
        return ArtifactPage(text, offset, end if end < total else None, total, tool, untrusted, after)

    @staticmethod
    def _seek(raw: BinaryIO, index_path: Path, offset: int, ascii_only: bool, stride: int) -> int:
        """Seek ``raw`` near character ``offset``; return how many characters remain to skip."""
        if ascii_only:
            raw.seek(offset)
            return 0
        entry = offset // stride
        with _open_nofollow(index_path) as index:
            index.seek(entry * 8)
            packed = index.read(8)
        if len(packed) != 8:
            raise ArtifactError("the artifact's offset index is damaged.")
        position = array("Q")
        position.frombytes(packed)
        if BIG_ENDIAN:
            position.byteswap()
        raw.seek(position[0])
        return offset - entry * stride

    # -- retention ---------------------------------------------------------------------

    def enforce_retention(self, *, keep: str | None = None) -> int:
        """Delete the oldest artifacts until count, total bytes and age are within limits.

        ``keep`` (the artifact just saved) is never deleted. Leftovers of crashed
        writers are removed once they are :attr:`stale_temp_s` old. Returns the
        number of artifacts deleted. Safe to run from several processes at once.
        """
        now = time.time()
        groups: dict[str, _Group] = {}
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        for entry in entries:
            name = entry.name
            try:
                stat = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # deleted meanwhile by another process
            if name.startswith(TEMP_PREFIX):
                if now - stat.st_mtime > self.stale_temp_s:
                    unlink(entry.path)
                continue
            stem, dot, suffix = name.partition(".")
            if not dot or suffix not in ("txt", "idx", "json") or not is_artifact_id(stem):
                continue  # not ours: leave it alone
            group = groups.setdefault(stem, _Group(stem))
            group.bytes += stat.st_size
            group.files.append(entry.path)
            if suffix == "json":
                group.committed = stat.st_mtime
            else:
                group.newest_file = max(group.newest_file, stat.st_mtime)
        committed = sorted((g for g in groups.values() if g.committed is not None), key=lambda g: (g.committed, g.id))
        count = len(committed)
        total = sum(g.bytes for g in committed)
        deleted = 0
        for group in committed:
            if group.id == keep:
                continue
            if count <= self.max_count and total <= self.max_bytes and now - (group.committed or now) <= self.max_age_s:
                break  # oldest first: everything after this is newer and within the limits too
            group.delete()
            count -= 1
            total -= group.bytes
            deleted += 1
        for group in groups.values():
            # Files of an artifact whose commit record never appeared (crash between
            # renames), or whose deletion was interrupted.
            if group.committed is None and now - group.newest_file > self.stale_temp_s:
                group.delete()
        return deleted


@dataclass(slots=True)
class _Group:
    """The files of one artifact id found in the directory."""

    id: str
    bytes: int = 0
    committed: float | None = None  # mtime of the commit record, None if there is none
    newest_file: float = 0.0
    files: list[str] = field(default_factory=list)

    def delete(self) -> None:
        # The commit record goes first: a concurrent reader then sees "expired", never
        # a half-deleted artifact.
        for path in sorted(self.files, key=lambda p: not p.endswith(".json")):
            unlink(path)


def _open_nofollow(path: Path) -> BinaryIO:
    # O_NOFOLLOW: a symlink planted in the artifact directory is not followed.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    return open(fd, "rb")


def _filter_lines(
    reader: io.TextIOWrapper, regex: Any, prefilter: Any, offset: int, scan_end: int, limit: int
) -> tuple[str, int]:
    """The lines of ``reader`` matching ``regex``, from ``offset``; and where reading stopped.

    Lines are read in batches of about :data:`_BATCH_CHARS`; ``prefilter`` (the same
    pattern in multi-line mode, or None) is run once over a whole batch, and only a
    batch where it finds something is checked line by line. A batch of a sparse
    search costs one RE2 pass instead of one call per line.
    """
    found: list[str] = []
    size = 0
    position = offset
    while position < scan_end:
        batch: list[str] = []
        batch_chars = 0
        whole_lines = True
        while batch_chars < _BATCH_CHARS and position + batch_chars < scan_end:
            line = reader.readline(_LINE_CHUNK)
            if not line:
                break
            batch.append(line)
            batch_chars += len(line)
            whole_lines = whole_lines and line.endswith("\n")
        if not batch:
            break
        # The prefilter can only skip a batch of whole lines: the piece of a long line
        # (or the last line, without its newline) could match `^` or `$` on its own
        # where it does not in the joined text.
        if prefilter is not None and whole_lines and prefilter.search("".join(batch)) is None:
            position += batch_chars
            continue
        for line in batch:
            # Match the line without its newline, so that `$` means the end of the line.
            if regex.search(line[:-1] if line.endswith("\n") else line) is None:
                position += len(line)
                continue
            room = limit - size
            if len(line) > room:
                if found:
                    return "".join(found), position  # the next page starts with this line
                line = line[:room]  # a single line longer than a page: give a page of it
            found.append(line)
            size += len(line)
            position += len(line)
            if size >= limit:
                return "".join(found), position
    return "".join(found), position
