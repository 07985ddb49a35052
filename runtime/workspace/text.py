"""Bytes to text and back for the workspace tools: encodings, binary sniffing, line helpers, diffs.

Encodings (the decision, in order):

1. a byte-order mark decides: UTF-8 with BOM (``utf-8-sig``), UTF-16 LE or BE
   (``utf-16-le`` / ``utf-16-be``; UTF-16 is recognised only by its BOM);
2. NUL bytes in the first 8 KiB, or the signature of a known binary format whose
   start is not valid UTF-8 (PNG, PDF, ZIP, ELF, ...), mean binary: refused with a
   description, never dumped;
3. valid UTF-8 is ``utf-8``;
4. otherwise, if more than 10% of the first 8 KiB are control bytes, binary;
5. otherwise ``latin-1``: legacy 8-bit text. Latin-1 maps every byte to one
   character, so it never fails and an edit writes untouched bytes back exactly
   (cp1252 would not: five of its bytes are undefined). Non-Latin legacy encodings
   (GBK, Shift-JIS) show as mojibake; the reported encoding says so.

An edited file is written back in the encoding it was read in, BOM included; text
that the encoding cannot hold is refused rather than replaced.
"""

from __future__ import annotations

import codecs
import difflib
import re
from dataclasses import dataclass

from runtime.workspace.errors import BinaryFileError, WorkspaceError

SNIFF_BYTES = 8192

# name -> (codec, BOM written before the text)
ENCODINGS: dict[str, tuple[str, bytes]] = {
    "utf-8": ("utf-8", b""),
    "utf-8-sig": ("utf-8", codecs.BOM_UTF8),
    "utf-16-le": ("utf-16-le", codecs.BOM_UTF16_LE),
    "utf-16-be": ("utf-16-be", codecs.BOM_UTF16_BE),
    "latin-1": ("latin-1", b""),
}

_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "PNG image"),
    (b"\xff\xd8\xff", 0, "JPEG image"),
    (b"GIF87a", 0, "GIF image"),
    (b"GIF89a", 0, "GIF image"),
    (b"BM", 0, "BMP image"),
    (b"\x00\x00\x01\x00", 0, "ICO icon"),
    (b"WEBP", 8, "WebP image"),
    (b"%PDF-", 0, "PDF document"),
    (b"PK\x03\x04", 0, "ZIP archive (or a jar/docx/xlsx/wheel)"),
    (b"\x1f\x8b", 0, "gzip-compressed data"),
    (b"BZh", 0, "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", 0, "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", 0, "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", 0, "7-Zip archive"),
    (b"ustar", 257, "tar archive"),
    (b"\x7fELF", 0, "ELF executable or library"),
    (b"MZ", 0, "Windows executable"),
    (b"\xcf\xfa\xed\xfe", 0, "Mach-O executable"),
    (b"\xca\xfe\xba\xbe", 0, "Java class file or Mach-O universal binary"),
    (b"\x00asm", 0, "WebAssembly module"),
    (b"SQLite format 3\x00", 0, "SQLite database"),
    (b"ID3", 0, "MP3 audio"),
    (b"OggS", 0, "Ogg media"),
    (b"fLaC", 0, "FLAC audio"),
    (b"ftyp", 4, "MP4/MOV video"),
    (b"wOFF", 0, "WOFF font"),
    (b"wOF2", 0, "WOFF2 font"),
    (b"\x00\x01\x00\x00\x00", 0, "TrueType font"),
    (b"OTTO", 0, "OpenType font"),
    (b"\x80\x04\x95", 0, "Python pickle"),
)

# Control bytes that ordinary text uses: tab, LF, CR, form feed, backspace, escape.
_TEXT_CONTROLS = frozenset(b"\t\n\r\x0c\x08\x1b")
_BINARY_CONTROL_RATIO = 0.10


@dataclass(frozen=True)
class Decoded:
    """Text decoded from a file, and the :data:`ENCODINGS` name to write it back with."""

    text: str
    encoding: str


def describe_binary(head: bytes, size: int) -> str:
    """A one-line description of a binary file for a refusal message."""
    kind = next((label for magic, at, label in _MAGIC if head[at : at + len(magic)] == magic), None)
    return f"binary file, {size:,} bytes" + (f", looks like {kind}" if kind else "")


def sniff(head: bytes) -> str | None:
    """The encoding announced by a BOM at the start of ``head``, else None."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith(codecs.BOM_UTF16_LE) and not head.startswith(codecs.BOM_UTF32_LE):
        return "utf-16-le"
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be"
    return None


def looks_binary(head: bytes, *, utf8_ok: bool) -> bool:
    """Whether a file starting with ``head`` (no BOM) is binary; ``utf8_ok`` if it decodes as UTF-8."""
    sample = head[:SNIFF_BYTES]
    if b"\x00" in sample:
        return True
    if utf8_ok:
        return False
    # Signatures of 2-3 bytes ("BM", "MZ") could start legacy text: only long ones decide.
    if any(len(magic) >= 4 and sample[at : at + len(magic)] == magic for magic, at, _ in _MAGIC):
        return True
    controls = sum(1 for byte in sample if (byte < 32 and byte not in _TEXT_CONTROLS) or byte == 127)
    return bool(sample) and controls / len(sample) > _BINARY_CONTROL_RATIO


def utf8_prefix_ok(head: bytes) -> bool:
    """Whether ``head`` is valid UTF-8, allowing a character cut off at its end."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def decode(raw: bytes) -> Decoded:
    """Decode a whole file (see the module docstring); raises :class:`BinaryFileError`."""
    bom = sniff(raw)
    if bom is not None:
        codec, mark = ENCODINGS[bom]
        try:
            return Decoded(raw[len(mark) :].decode(codec), bom)
        except UnicodeDecodeError:
            raise BinaryFileError(
                f"{describe_binary(raw[:64], len(raw))}: it starts with a {bom} byte-order mark but is not valid "
                f"{codec}"
            ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        if looks_binary(raw[:SNIFF_BYTES], utf8_ok=False):
            raise BinaryFileError(describe_binary(raw[:SNIFF_BYTES], len(raw))) from None
        return Decoded(raw.decode("latin-1"), "latin-1")
    if looks_binary(raw[:SNIFF_BYTES], utf8_ok=True):
        raise BinaryFileError(describe_binary(raw[:SNIFF_BYTES], len(raw)))
    return Decoded(text, "utf-8")


def encode(text: str, encoding: str) -> bytes:
    """``text`` in ``encoding`` (BOM included); refuses characters the encoding cannot hold."""
    codec, mark = ENCODINGS[encoding]
    try:
        return mark + text.encode(codec)
    except UnicodeEncodeError as err:
        bad = err.object[err.start : err.end]
        shown = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in bad[:3])
        raise WorkspaceError(
            f"the file is {encoding} encoded and cannot hold {shown}; use only characters that {encoding} can store, "
            "or rewrite the whole file as UTF-8 first"
        ) from None


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (what editors and grep count), without the newline.

    A final newline ends the last line rather than starting an empty one; ``""`` has
    no lines. Other separators (``\\v``, U+2028, ...) stay inside lines.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def split_keepends(text: str) -> list[str]:
    """Like :func:`split_lines` but each line keeps its ``\\n``."""
    return [line + "\n" for line in text.split("\n")[:-1]] + ([tail] if (tail := text.rsplit("\n", 1)[-1]) else [])


def line_endings(text: str) -> str:
    """``"lf"``, ``"crlf"``, ``"mixed"`` or ``"none"`` (no newline at all)."""
    crlf = text.count("\r\n") if "\r" in text else 0  # most files have no CR: one fast scan
    if crlf == 0:
        return "lf" if "\n" in text else "none"
    return "crlf" if text.count("\n") == crlf else "mixed"


def to_crlf(text: str) -> str:
    """Every bare ``\\n`` in ``text`` as ``\\r\\n``."""
    return re.sub(r"(?<!\r)\n", "\r\n", text)


def number_line(number: int, line: str, max_chars: int) -> tuple[str, bool]:
    """``line`` as ``cat -n`` shows it (right-aligned number, tab), cut at ``max_chars``; True if cut."""
    line = line[:-1] if line.endswith("\r") else line
    if len(line) > max_chars:
        return f"{number:>6}\t{line[:max_chars]}… [line cut: {len(line):,} characters in all]", True
    return f"{number:>6}\t{line}", False


_FULL_DIFF_LINES = 4000  # changed regions larger than this are summarised, not diffed
_STEP = 1 << 16


def short_diff(
    old: str | None, new: str, label: str, *, context: int = 3, max_lines: int = 60, max_chars: int = 6000
) -> str:
    """A unified diff of ``old`` -> ``new`` (None: a new file), cut to ``max_lines`` / ``max_chars``.

    The common head and tail are found by comparing large slices (C speed); only the
    lines between them are split and compared, and the result is one hunk with
    ``context`` lines around it. A one-line edit of a 10 MB file costs a scan.
    """
    a, b = old or "", new
    if a == b:
        return ""
    head = _common_prefix(a, b)
    tail = _common_suffix(a, b, min(len(a), len(b)) - head)
    start = a.rfind("\n", 0, head) + 1  # the changed lines start here, in both texts
    a_end, b_end = _line_end(a, len(a) - tail), _line_end(b, len(b) - tail)
    a_count, b_count = _count_lines(a, start, a_end), _count_lines(b, start, b_end)
    # A huge changed region is summarised from its first lines: never split it all.
    keep = max_lines if a_count + b_count > _FULL_DIFF_LINES else None
    a_mid = [line.rstrip("\r") for line in _lines_between(a, start, a_end, keep)]
    b_mid = [line.rstrip("\r") for line in _lines_between(b, start, b_end, keep)]
    if a_mid == b_mid and keep is None:
        return "(only line endings or the final newline changed)"
    ctx_start = start
    for _ in range(context):
        if ctx_start == 0:
            break
        ctx_start = a.rfind("\n", 0, ctx_start - 1) + 1
    ctx_end = a_end
    for _ in range(context):
        ctx_end = _line_end(a, ctx_end)
    before = [line.rstrip("\r") for line in split_lines(a[ctx_start:start])]
    after = [line.rstrip("\r") for line in split_lines(a[a_end:ctx_end])]
    first = a.count("\n", 0, ctx_start) + 1
    body = [" " + line for line in before]
    if keep is not None:
        body += ["-" + line for line in a_mid] + (["-…"] if a_count > keep else [])
        body += ["+" + line for line in b_mid] + (["+…"] if b_count > keep else [])
    else:
        matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                body += [" " + line for line in a_mid[i1:i2]]
            else:
                body += ["-" + line for line in a_mid[i1:i2]] + ["+" + line for line in b_mid[j1:j2]]
    body += [" " + line for line in after]
    size_a = len(before) + a_count + len(after)
    size_b = len(before) + b_count + len(after)
    lines = [
        f"--- {'/dev/null' if old is None else 'a/' + label}",
        f"+++ b/{label}",
        f"@@ -{_range(first, size_a)} +{_range(first, size_b)} @@",
        *body,
    ]
    kept: list[str] = []
    used = 0
    for line in lines:
        if len(kept) >= max_lines or used + len(line) + 1 > max_chars:
            kept.append(f"… diff cut ({len(lines) - len(kept)} more lines)")
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)


def _count_lines(text: str, start: int, end: int) -> int:
    """Lines in ``text[start:end]`` (a final line without newline counts)."""
    if end <= start:
        return 0
    return text.count("\n", start, end) + (text[end - 1] != "\n")


def _lines_between(text: str, start: int, end: int, keep: int | None) -> list[str]:
    """The lines of ``text[start:end]`` (split on newlines only), at most ``keep`` of them."""
    if keep is None:
        return split_lines(text[start:end])
    lines: list[str] = []
    while start < end and len(lines) < keep:
        stop = text.find("\n", start, end)
        stop = end if stop == -1 else stop
        lines.append(text[start:stop])
        start = stop + 1
    return lines


def _range(first: int, length: int) -> str:
    # Unified diff convention: an empty range names the line before it.
    if length == 0:
        return f"{first - 1},0"
    return str(first) if length == 1 else f"{first},{length}"


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i : i + _STEP] == b[i : i + _STEP]:
        i += _STEP
    lo, hi = i, min(n, i + _STEP)  # the first difference is in [lo, hi)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i:mid] == b[i:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common suffix of ``a`` and ``b``, at most ``limit``."""
    la, lb = len(a), len(b)
    i = 0
    while i < limit and a[la - min(i + _STEP, limit) : la - i] == b[lb - min(i + _STEP, limit) : lb - i]:
        i = min(i + _STEP, limit)
    lo, hi = i, min(limit, i + _STEP)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - i] == b[lb - mid : lb - i]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _line_end(text: str, at: int) -> int:
    """The offset just past the newline ending the line that contains offset ``at`` (or the end)."""
    if at >= len(text):
        return len(text)
    end = text.find("\n", at)
    return len(text) if end == -1 else end + 1
