"""``file_read``: a window of a text file with line numbers, its SHA-256, and a cache.

Output lines look like ``cat -n`` (and common coding agents): the 1-based number
right-aligned in six columns, a tab, the line. Lines over ``max_line_chars`` are cut
with a marker; the whole window is cut at ``max_bytes`` of output. The result always
carries the SHA-256 of the *whole* file, which ``file_edit`` accepts as
``expected_hash``.

Size: files up to ``max_file_bytes`` (10 MiB) are read whole, decoded and cached.
A larger file is refused for a plain read (the message says how large it is and
suggests a window or grep); with an explicit ``offset`` or ``limit`` it is streamed:
the whole file is hashed and its lines counted, only the requested lines decoded
(undecodable bytes there appear as U+FFFD). Files over ``max_stream_bytes`` (1 GiB)
are refused outright.

Files are opened through :meth:`Workspace.open_for_read` (no symbolic link is followed
after the path was checked) and with ``O_NONBLOCK`` so a FIFO cannot hang the call.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass

from runtime.workspace.cache import CachedText, FileIdentity, ReadCache
from runtime.workspace.errors import BinaryFileError, WorkspaceError
from runtime.workspace.sandbox import Resolved, Workspace
from runtime.workspace.text import (
    ENCODINGS,
    SNIFF_BYTES,
    decode,
    describe_binary,
    line_endings,
    looks_binary,
    number_line,
    sniff,
    split_lines,
    utf8_prefix_ok,
)

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ReadResult:
    """A window of a file. ``text`` holds the numbered lines ``start_line``..``end_line``.

    ``start_line``/``end_line`` are 0 when no line is shown (empty file).
    ``truncated`` means lines after ``end_line`` exist (``next_offset`` continues);
    ``truncated_by`` says whether ``limit`` or ``max_bytes`` stopped the window;
    ``lines_cut`` counts long lines shortened in the window.
    """

    path: str
    text: str
    start_line: int
    end_line: int
    total_lines: int
    sha256: str
    size_bytes: int
    encoding: str
    line_endings: str
    cache_hit: bool
    truncated: bool
    truncated_by: str | None
    next_offset: int | None
    lines_cut: int

    def render(self) -> str:
        """The text for the model: the numbered lines and a one-line footer."""
        if self.total_lines == 0:
            footer = f"[{self.path}: empty file; sha256 {self.sha256}]"
            return footer
        where = f"lines {self.start_line}-{self.end_line} of {self.total_lines:,}"
        more = f"; continue with offset={self.next_offset}" if self.next_offset else ""
        cut = f"; {self.lines_cut} long line(s) cut" if self.lines_cut else ""
        enc = f"; encoding {self.encoding}" if self.encoding != "utf-8" else ""
        return f"{self.text}\n[{self.path}: {where}{more}{cut}{enc}; sha256 {self.sha256}]"


class FileReader:
    """Reads text files of a :class:`Workspace`, through an optional :class:`ReadCache`."""

    def __init__(
        self,
        workspace: Workspace,
        cache: ReadCache | None = None,
        *,
        max_file_bytes: int = 10 * 1024 * 1024,
        max_stream_bytes: int = 1024 * 1024 * 1024,
        default_limit: int = 2000,
        max_line_chars: int = 2000,
        max_bytes: int = 256 * 1024,
    ) -> None:
        self.workspace = workspace
        self.cache = cache
        self.max_file_bytes = max_file_bytes
        self.max_stream_bytes = max_stream_bytes
        self.default_limit = default_limit
        self.max_line_chars = max_line_chars
        self.max_bytes = max_bytes

    def read(
        self, path: str, offset: int | None = None, limit: int | None = None, max_bytes: int | None = None
    ) -> ReadResult:
        """Lines ``offset`` (1-based, default 1) to ``offset + limit - 1`` (default 2,000 lines) of ``path``.

        ``max_bytes`` caps the UTF-8 size of the numbered output (default 256 KiB);
        at least one line is always shown. Refusals raise
        :class:`~runtime.workspace.errors.WorkspaceError`.
        """
        explicit_window = offset is not None or limit is not None
        first = 1 if offset is None else _whole(offset, "offset")
        count = self.default_limit if limit is None else _whole(limit, "limit")
        budget = self.max_bytes if max_bytes is None else _whole(max_bytes, "max_bytes")
        if first < 1:
            raise WorkspaceError(f"offset is a 1-based line number; {first} is not valid (use offset=1 for the start)")
        if count < 1:
            raise WorkspaceError(f"limit must be at least 1 line (got {count})")
        if budget < 1:
            raise WorkspaceError(f"max_bytes must be positive (got {budget})")

        resolved, fd, st = self.workspace.open_file(path)
        try:
            if stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"{resolved.relative} is a directory, not a file; list it to see what it contains")
            if not stat.S_ISREG(st.st_mode):
                raise WorkspaceError(
                    f"{resolved.relative} is not a regular file (device, socket or FIFO); it cannot be read"
                )
            if st.st_size > self.max_file_bytes:
                return self._read_large(fd, st, resolved, first, count, budget, explicit_window)
            cached, hit = self._load(fd, st, resolved)
        finally:
            os.close(fd)
        lines = split_lines(cached.text)
        return self._window(resolved, lines, cached, first, count, budget, hit)

    def _load(self, fd: int, st: os.stat_result, resolved: Resolved) -> tuple[CachedText, bool]:
        identity = FileIdentity.of(st)
        key = resolved.location
        if self.cache is not None:
            found = self.cache.get(key, identity)
            if found is not None:
                return found, True
        raw = _read_all(fd, self.max_file_bytes + 1)
        if len(raw) > self.max_file_bytes:
            raise WorkspaceError(
                f"{resolved.relative} grew past {_mb(self.max_file_bytes)} while being read; read a window with "
                "offset and limit"
            )
        try:
            decoded = decode(raw)
        except BinaryFileError as err:
            raise BinaryFileError(f"{resolved.relative} is a {err}; file_read shows text files only") from None
        value = CachedText(decoded.text, hashlib.sha256(raw).hexdigest(), decoded.encoding, len(raw))
        # Cache only if nothing changed while we read: the key must describe these bytes.
        if self.cache is not None and FileIdentity.of(os.fstat(fd)) == identity and identity.size == len(raw):
            self.cache.put(key, identity, value)
        return value, False

    def _window(
        self, resolved: Resolved, lines: list[str], value: CachedText, first: int, count: int, budget: int, hit: bool
    ) -> ReadResult:
        total = len(lines)
        if total == 0:
            if first > 1:
                raise WorkspaceError(f"offset {first} is past the end: {resolved.relative} is empty")
            return ReadResult(
                resolved.relative,
                "",
                0,
                0,
                0,
                value.sha256,
                value.size,
                value.encoding,
                "none",
                hit,
                False,
                None,
                None,
                0,
            )
        if first > total:
            raise WorkspaceError(
                f"offset {first} is past the end of {resolved.relative} ({total:,} lines); use an offset from 1 to "
                f"{total:,}"
            )
        window = lines[first - 1 : first - 1 + count]
        if _ARMOR in value.text:
            window = _mask_key_lines(lines, first, window)
        shown, cut, by_bytes = self._number(window, first, budget)
        return _window(
            resolved.relative,
            shown,
            first,
            total,
            value.sha256,
            value.size,
            value.encoding,
            line_endings(value.text),
            hit,
            by_bytes,
            cut,
        )

    def _number(
        self, window: list[str], first: int, budget: int, streamed: list[int | None] | None = None
    ) -> tuple[list[str], int, bool]:
        """``window`` numbered from ``first``, cut at ``budget`` bytes of output (at least one line).

        ``streamed[i]`` is the full byte length of line ``i`` when it was already cut
        while streaming. Returns the numbered lines, how many were cut, and whether
        the budget stopped the window.
        """
        limit = self.max_line_chars
        shown = [
            str(number).rjust(6) + "\t" + line for number, line in enumerate(window, start=first)
        ]  # a third faster than an f-string
        cut = 0
        # Long lines and carriage returns are rare: find them with C-speed scans, redo only those.
        if window and (max(map(len, window)) > limit or "\r" in "".join(window)):
            for index in [i for i, line in enumerate(window) if len(line) > limit or line.endswith("\r")]:
                shown[index], was_cut = number_line(first + index, window[index], limit)
                cut += was_cut
        for index, full in enumerate(streamed or ()):
            if full is not None:
                text, _ = number_line(first + index, window[index][:limit], limit)
                shown[index] = f"{text}… [line cut: about {full:,} bytes in all]"
                cut += 1
        if (
            sum(map(len, shown)) + len(shown) <= budget // 4
            or sum(len(text.encode("utf-8", "surrogatepass")) + 1 for text in shown) <= budget
        ):
            return shown, cut, False
        used = 0
        for index, text in enumerate(shown):
            used += len(text.encode("utf-8", "surrogatepass")) + 1
            if used > budget and index > 0:
                kept = shown[:index]
                return kept, sum(1 for t in kept if "… [line cut: " in t), True
        return shown, cut, False

    def _read_large(
        self, fd: int, st: os.stat_result, resolved: Resolved, first: int, count: int, budget: int, explicit: bool
    ) -> ReadResult:
        size = st.st_size
        if size > self.max_stream_bytes:
            raise WorkspaceError(
                f"{resolved.relative} is {_mb(size)}, too large to read (limit {_mb(self.max_stream_bytes)}); search "
                "it with grep instead"
            )
        if not explicit:
            raise WorkspaceError(
                f"{resolved.relative} is {_mb(size)}, over the {_mb(self.max_file_bytes)} limit for reading a whole "
                "file; "
                f"read a window with offset and limit (e.g. offset=1, limit=200) or search it with grep"
            )
        head = os.pread(fd, SNIFF_BYTES, 0)
        encoding = sniff(head)
        if encoding is not None and encoding.startswith("utf-16"):
            raise WorkspaceError(
                f"{resolved.relative} is UTF-16 text of {_mb(size)}; windows of UTF-16 files over "
                f"{_mb(self.max_file_bytes)} are not supported, search it with grep"
            )
        if encoding is None:
            ok = utf8_prefix_ok(head)
            if looks_binary(head, utf8_ok=ok):
                raise BinaryFileError(
                    f"{resolved.relative} is a {describe_binary(head, size)}; file_read shows text files only"
                )
            encoding = "utf-8" if ok else "latin-1"
        window, total, digest, read_size = _stream_window(fd, first, count, self.max_line_chars * 4 + 4)
        if total == 0 or first > total:
            raise WorkspaceError(
                f"offset {first} is past the end of {resolved.relative} ({total:,} lines); use an offset from 1 to "
                f"{total:,}"
            )
        codec = ENCODINGS[encoding][0]
        lines = [raw.decode(codec, "replace") for raw, _ in window]
        if first == 1 and encoding == "utf-8-sig":
            lines[0] = lines[0].removeprefix("\ufeff")
        shown, cut, by_bytes = self._number(
            lines, first, budget, [full if full > len(raw) else None for raw, full in window]
        )
        return _window(
            resolved.relative, shown, first, total, digest, read_size, encoding, "unknown", False, by_bytes, cut
        )


_ARMOR = "PRIVATE KEY"
_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_BODY_LINE = re.compile(r"[A-Za-z0-9+/=]*\r?|[A-Za-z][A-Za-z-]*: .*")  # base64, or an armor header (Version: ...)
KEY_LINE = "[REDACTED:private_key]"
"""What a line inside a private key block reads as in a window of the file."""


def _mask_key_lines(lines: list[str], first: int, window: list[str]) -> list[str]:
    """``window`` (lines ``first``.. of ``lines``) with every line inside a private key
    block replaced: the file is known whole, so a window that shows no armor line (the
    last short body line alone, say) is still known to lie inside a key."""
    inside: set[int] = set()
    index = 0
    while index < len(lines):
        if _BEGIN.search(lines[index]) is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and _END.search(lines[end]) is None and _BODY_LINE.fullmatch(lines[end]):
            end += 1
        inside.update(range(index + 1, end))  # the body (the armor lines are redacted as text)
        index = end + 1
    if not inside:
        return window
    return [KEY_LINE if first - 1 + offset in inside else line for offset, line in enumerate(window)]


def _window(
    relative: str,
    shown: list[str],
    first: int,
    total: int,
    sha256: str,
    size: int,
    encoding: str,
    endings: str,
    hit: bool,
    by_bytes: bool,
    cut: int,
) -> ReadResult:
    """The result for numbered lines ``shown`` starting at line ``first`` of ``total``:
    whether more follows, what stopped the window and where to go on."""
    end = first + len(shown) - 1
    more = end < total
    by = ("max_bytes" if by_bytes else "limit") if more else None
    return ReadResult(
        relative,
        "\n".join(shown),
        first,
        end,
        total,
        sha256,
        size,
        encoding,
        endings,
        hit,
        more,
        by,
        end + 1 if more else None,
        cut,
    )


def _stream_window(fd: int, first: int, count: int, keep: int) -> tuple[list[tuple[bytes, int]], int, str, int]:
    """Hash the whole file and collect lines ``first``..``first+count-1`` (each cut at ``keep`` bytes).

    Returns ``[(bytes, full_length)]``, the line count, the SHA-256 and the bytes read.
    Chunks entirely before or after the window are only counted.
    """
    digest = hashlib.sha256()
    stop = first + count
    line_no = 1
    current = bytearray()
    current_len = 0
    window: list[tuple[bytes, int]] = []
    size = 0
    last = b""
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
        size += len(chunk)
        last = chunk[-1:]
        newlines = chunk.count(b"\n")
        if line_no + newlines < first or line_no >= stop:
            line_no += newlines
            continue
        pieces = chunk.split(b"\n")
        for index, piece in enumerate(pieces):
            inside = first <= line_no < stop
            if inside:
                if len(current) < keep:
                    current += piece[: keep - len(current)]
                current_len += len(piece)
            if index < len(pieces) - 1:
                if inside:
                    window.append((bytes(current), current_len))
                current.clear()
                current_len = 0
                line_no += 1
    ends_with_newline = last == b"\n" or size == 0
    if not ends_with_newline and first <= line_no < stop:
        window.append((bytes(current), current_len))
    total = line_no - 1 if ends_with_newline else line_no
    return window, total, digest.hexdigest(), size


def _read_all(fd: int, cap: int) -> bytes:
    """Read from ``fd`` until EOF or ``cap`` bytes (the file may grow or shrink meanwhile)."""
    parts: list[bytes] = []
    got = 0
    while got < cap:
        chunk = os.read(fd, min(_CHUNK * 8, cap - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _whole(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkspaceError(f"{name} must be a whole number, not {value!r}")
    return value


def _mb(size: int) -> str:
    """A size for a message: "12.3 MB", "4.0 KB", "900 bytes"."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size:,} bytes"
