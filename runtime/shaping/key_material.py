"""Private key material a command prints in pieces: the keys it could read are known.

The ``secrets`` profile finds a key by its armor and by body lines of 40+ random-looking
characters. A piece shorter than that printed alone (``grep '=$' key.pem`` prints the
short last line, ``cut -c1-8``, ``head -c``, ``tail -n 2``, ``sed -n 5p``) looks like
nothing in particular. But the runtime knows where keys are: a :class:`KeyIndex` holds
the body text of every private key block (PEM: RSA, EC, DSA, OPENSSH, PKCS#8, encrypted;
PGP PRIVATE KEY BLOCK) in the files of the workspace (a bounded scan, each file cached by
inode, mtime and size, refreshed at most once a second when output holds a candidate),
in ``~/.ssh`` and ``/etc/ssh``, and in files a command line names. :class:`KeyStream`
then removes from a command's output, before anything else sees it (result, artifact,
job output, audit, logs):

- any run of 12+ base64 characters that holds 12 consecutive characters of a key body
  (72 random bits: clean text never does), also inside a longer run (``tr -d '\\n'``, a
  JSON string with ``\\n`` escapes);
- a shorter run alone on its line (after a line number, a ``path:line:`` prefix, a diff
  sign or quotes) that is a whole body line of 3+ characters or a piece of one of 6+.

Output is held back only up to the end of its last complete line, so a piece split
across chunks is seen whole. While no key is known, a chunk costs one regex search (for
a line that could be a piece of a key the command just made).
"""

from __future__ import annotations

import operator
import os
import re
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import re2

NAME = "private_key_material"
MARK = f"[REDACTED:{NAME}]"
GRAM = 12  # characters of key body that identify it
_MIN_PIECE = 6  # a piece of a body line alone on its line
_MIN_LINE = 3  # a whole body line alone on its line (the short last line: "Zw==")
_MAX_FILES = 20_000
_MAX_FILE_BYTES = 1 << 20
_REFRESH_S = 1.0
_LOOK_AGAIN_S = 0.2  # a stream looks for new keys at most this often
_HOLD_MAX = 1 << 16  # bytes of an unfinished line held back at most
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"})
_ARMOR = re.compile(rb"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----")
_BODY_LINE = re.compile(r"[A-Za-z0-9+/]+={0,2}|=[A-Za-z0-9+/]{4}")  # PGP's checksum line is =XXXX
_LONG = re.compile(r"[A-Za-z0-9+/]{12,}")
# Where key text sits in a run: at its start (a line, a cut, tr -d '\n'), one or two
# characters in (a JSON \n escape, a glued prefix), or at its end.
_CUTS = tuple(
    operator.itemgetter(slice(start, stop)) for start, stop in ((0, GRAM), (1, GRAM + 1), (2, GRAM + 2), (-GRAM, None))
)
# A short piece alone on its line, after a grep path:line: or path-line- prefix, a line
# number, a diff sign or quotes (RE2: linear, and several times faster than re here).
_ALONE = re2.compile(
    r"(?m)^(?:[^\s:]{1,200}(?::\d*:?|-\d+-))?[ \t0-9:>+|\"'-]*(=?[0-9]*[A-Za-z+/][A-Za-z0-9+/]{0,10}={0,2})"
    r"[\"']?,?[ \t]*\r?$"
)
# A line that could be part of a key body: 16+ base64 characters alone on it, or a
# short line ending in padding (the last line of a body).
_CANDIDATE = re2.compile(r"(?m)^[ \t0-9:>+|\"'-]*(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2})[\"']?\r?$")


def key_bodies(data: bytes) -> list[list[str]]:
    """The body lines of each private key block in ``data`` (headers such as
    ``Proc-Type:`` left out; a block cut before its END line ends at its first line
    that is not body)."""
    blocks: list[list[str]] = []
    for found in _ARMOR.finditer(data):
        end = data.find(b"-----END " + found.group(1) + b"-----", found.end())
        text = data[found.end() : end if end >= 0 else len(data)].decode("ascii", "replace")
        lines: list[str] = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or ":" in line:
                continue
            if not _BODY_LINE.fullmatch(line):
                if end < 0:
                    break
                continue
            lines.append(line)
        if lines:
            blocks.append(lines)
    return blocks


class KeyIndex:
    """The private key material of a workspace, ``~/.ssh``, ``/etc/ssh`` and files named
    by command lines; thread-safe, shared by every call of a Runtime."""

    def __init__(self, root: Path | None, extra_dirs: Sequence[Path] = ()) -> None:
        self._root = root
        self._extra = tuple(extra_dirs)
        self._lock = threading.Lock()
        self._files: dict[str, tuple[tuple[int, int, int], list[list[str]]]] = {}
        self._named: set[str] = set()  # files named by command lines, outside the scanned folders
        self._scanned_at = float("-inf")
        self.grams: frozenset[str] = frozenset()
        self.lines: frozenset[str] = frozenset()
        self.text = ""  # every body line, one per line

    @property
    def empty(self) -> bool:
        """Whether no key is known (then commands' output is not held back at all)."""
        return not self.grams and not self.lines

    def refresh(self, *, force: bool = False) -> None:
        """Scan again (at most once a second unless ``force``): files unchanged since the
        last scan (inode, mtime, size) are not read again."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._scanned_at < _REFRESH_S:
                return
            self._scanned_at = now
            seen: dict[str, tuple[tuple[int, int, int], list[list[str]]]] = {}
            budget = [_MAX_FILES]
            for folder in (*((self._root,) if self._root is not None else ()), *self._extra):
                self._walk(str(folder), seen, budget)
            for path in self._named:
                self._look(path, seen)
            if seen.keys() == self._files.keys() and all(seen[p][0] == self._files[p][0] for p in seen):
                return
            self._files = seen
            self._rebuild()

    def note_paths(self, words: Iterable[str], cwd: Path) -> None:
        """Files a command line names (absolute, ``~``, relative to ``cwd``) that hold a
        private key are indexed before the command runs."""
        added = False
        for word in words:
            if "/" not in word and "." not in word:
                continue
            path = os.path.join(str(cwd), os.path.expanduser(word))
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > _MAX_FILE_BYTES:
                    continue
            except OSError:
                continue
            real = os.path.realpath(path)
            with self._lock:
                if real in self._named or real in self._files:
                    continue
                seen = dict(self._files)
                self._look(real, seen)
                if real in seen:
                    self._named.add(real)
                    self._files = seen
                    added = True
        if added:
            with self._lock:
                self._rebuild()

    def _walk(self, top: str, seen: dict[str, tuple[tuple[int, int, int], list[list[str]]]], budget: list[int]) -> None:
        stack = [top]
        while stack and budget[0] > 0:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                budget[0] -= 1
                if budget[0] <= 0:
                    return
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in _SKIP_DIRS:
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        self._look(entry.path, seen, entry.stat(follow_symlinks=False))
                except OSError:
                    continue

    def _look(self, path: str, seen: dict[str, tuple[tuple[int, int, int], list[list[str]]]], st=None) -> None:  # type: ignore[no-untyped-def]
        try:
            st = st or os.stat(path)
        except OSError:
            return
        if st.st_size > _MAX_FILE_BYTES or st.st_size < 64:
            return
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        known = self._files.get(path)
        if known is not None and known[0] == key:
            seen[path] = known
            return
        try:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_FILE_BYTES)
        except OSError:
            return
        if b"PRIVATE KEY" not in data:
            return
        bodies = key_bodies(data)
        if bodies:
            seen[path] = (key, bodies)

    def _rebuild(self) -> None:
        grams: set[str] = set()
        lines: set[str] = set()
        texts: list[str] = []
        for _key, bodies in self._files.values():
            for body in bodies:
                joined = "".join(line.rstrip("=") for line in body)
                grams.update(joined[i : i + GRAM] for i in range(len(joined) - GRAM + 1))
                lines.update(line for line in body if len(line) >= _MIN_LINE)
                texts.append("\n".join(body))
        self.grams = frozenset(grams)
        self.lines = frozenset(lines)
        self.text = "\n".join(texts)

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every piece of indexed key material replaced, and how many."""
        grams, count = self.grams, 0
        if not grams and not self.lines:
            return text, 0
        spans: list[tuple[int, int]] = []
        runs = _LONG.findall(text) if grams else []
        # The common case, no key text at all, is settled without a Python-level loop.
        if runs and not all(grams.isdisjoint(map(cut, runs)) for cut in _CUTS):
            for found in _LONG.finditer(text):
                run = found.group()
                # Key text starts a run (a line, a cut, tr -d '\n'), follows one to two
                # characters (a JSON \n escape, a glued prefix) or ends it.
                if (
                    run[:GRAM] in grams
                    or run[1 : GRAM + 1] in grams
                    or run[2 : GRAM + 2] in grams
                    or run[-GRAM:] in grams
                ):
                    spans.append(found.span())
        lines, body = self.lines, self.text
        pieces = _ALONE.findall(text)
        if any(piece in lines or (len(piece) >= _MIN_PIECE and piece.strip("=") in body) for piece in pieces):
            for found in _ALONE.finditer(text):
                piece = found.group(1)
                if piece in lines or (len(piece) >= _MIN_PIECE and piece.strip("=") in body):
                    spans.append(found.span(1))
        if not spans:
            return text, 0
        out: list[str] = []
        at = 0
        for start, end in sorted(spans):
            if start < at:
                continue
            out += [text[at:start], MARK]
            at = end
            count += 1
        out.append(text[at:])
        return "".join(out), count

    def has_candidate(self, text: str) -> bool:
        """Whether ``text`` holds a line that could be a piece of a key not indexed yet
        (a line ending in base64 padding, or 16+ base64 characters alone on a line)."""
        return _CANDIDATE.search(text) is not None


class _Inner(Protocol):
    counts: dict[str, int]

    def feed(self, chunk: str) -> str: ...
    def preview(self) -> str: ...
    def finish(self) -> str: ...


class KeyStream:
    """A command's output stream with indexed key material removed first, then the
    tool's own redaction (``inner``); the same interface as the stream redactor."""

    def __init__(
        self, index: KeyIndex, inner: _Inner | None, words: Sequence[str] = (), cwd: Path | None = None
    ) -> None:
        self._index = index
        self._inner = inner
        self._words = words
        self._cwd = cwd
        self._pending = ""
        self._finished = False
        self._looked_at = float("-inf")
        self.counts: dict[str, int] = inner.counts if inner is not None else {}

    def _pass(self, text: str) -> str:
        if not text:
            return text
        now = time.monotonic()
        first = self._looked_at == float("-inf")  # the command may have made a key before printing
        if first or (now - self._looked_at >= _LOOK_AGAIN_S and self._index.has_candidate(text)):
            # A key the command itself may have made since the last scan (a file it names too).
            self._looked_at = now
            if self._cwd is not None:
                self._index.note_paths(self._words, self._cwd)
            self._index.refresh(force=True)
        redacted, found = self._index.redact(text)
        if found:
            self.counts[NAME] = self.counts.get(NAME, 0) + found
        return self._inner.feed(redacted) if self._inner is not None else redacted

    def feed(self, chunk: str) -> str:
        self._pending += chunk
        cut = self._pending.rfind("\n") + 1
        if cut == 0 and len(self._pending) > _HOLD_MAX:
            cut = len(self._pending) - GRAM  # a line without end: keep a gram's worth back
        if cut <= 0:
            return ""
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._pass(ready)

    def preview(self) -> str:
        if self._finished:
            return ""
        redacted, _ = self._index.redact(self._pending)
        inner = self._inner.preview() if self._inner is not None else ""
        return inner + redacted

    def finish(self) -> str:
        if self._finished:
            return ""
        self._finished = True
        released = self._pass(self._pending)
        self._pending = ""
        return released + (self._inner.finish() if self._inner is not None else "")


_WORD_SPLIT = re.compile(r"[\s;&|<>()'\"=`$]+")


def command_words(argv: Sequence[str]) -> list[str]:
    """Path-like words of a command's argv (a shell line is split on shell punctuation)."""
    return [word for item in argv for word in _WORD_SPLIT.split(item) if word]


def key_dirs() -> list[Path]:
    """Where keys usually live outside a workspace: the user's ~/.ssh and /etc/ssh."""
    return [Path.home() / ".ssh", Path("/etc/ssh")]
