"""FileReader on real files: windows, numbering, limits, encodings, binary refusal, the cache."""

from __future__ import annotations

import codecs
import hashlib
import os
import threading
import time

import pytest
from ws_helpers import Tree

from runtime.workspace import BinaryFileError, FileReader, ReadCache, WorkspaceError

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40


def _write(tree: Tree, rel: str, data: bytes | str) -> None:
    path = tree.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def _age(tree: Tree, rel: str, seconds: float = 60.0) -> None:
    """Move the file's mtime into the past (out of the cache's racy-timestamp window)."""
    past = time.time() - seconds
    os.utime(tree.root / rel, (past, past))


def test_lines_are_numbered_like_cat_n_with_a_footer(plain: Tree) -> None:
    _write(plain, "a.py", "import os\n\ndef f():\n    return 1\n")
    result = plain.reader.read("a.py")
    assert result.text == "     1\timport os\n     2\t\n     3\tdef f():\n     4\t    return 1"
    assert (result.start_line, result.end_line, result.total_lines) == (1, 4, 4)
    assert result.sha256 == hashlib.sha256((plain.root / "a.py").read_bytes()).hexdigest()
    assert not result.truncated and result.next_offset is None
    assert result.render().endswith(f"[a.py: lines 1-4 of 4; sha256 {result.sha256}]")


def test_offset_and_limit_select_a_window_and_say_where_to_continue(plain: Tree) -> None:
    _write(plain, "n.txt", "".join(f"line {i}\n" for i in range(1, 101)))
    result = plain.reader.read("n.txt", offset=10, limit=5)
    assert result.text.splitlines() == [f"{i:>6}\tline {i}" for i in range(10, 15)]
    assert (result.truncated, result.truncated_by, result.next_offset) == (True, "limit", 15)
    assert "continue with offset=15" in result.render()
    tail = plain.reader.read("n.txt", offset=98)
    assert (tail.start_line, tail.end_line, tail.truncated) == (98, 100, False)


def test_the_default_window_is_two_thousand_lines(plain: Tree) -> None:
    _write(plain, "long.txt", "x\n" * 2500)
    result = plain.reader.read("long.txt")
    assert (result.end_line, result.next_offset, result.total_lines) == (2000, 2001, 2500)


def test_bad_windows_are_refused_with_the_valid_range(plain: Tree) -> None:
    _write(plain, "n.txt", "a\nb\nc\n")
    with pytest.raises(
        WorkspaceError, match=r"offset 7 is past the end of n\.txt \(3 lines\); use an offset from 1 to 3"
    ):
        plain.reader.read("n.txt", offset=7)
    with pytest.raises(WorkspaceError, match="1-based"):
        plain.reader.read("n.txt", offset=0)
    with pytest.raises(WorkspaceError, match="limit must be at least 1"):
        plain.reader.read("n.txt", limit=0)
    with pytest.raises(WorkspaceError, match="whole number"):
        plain.reader.read("n.txt", offset="2")  # type: ignore[arg-type]


def test_an_empty_file_reads_as_no_lines(plain: Tree) -> None:
    _write(plain, "empty.txt", b"")
    result = plain.reader.read("empty.txt")
    assert (result.text, result.total_lines, result.start_line) == ("", 0, 0)
    assert "empty file" in result.render()


def test_a_last_line_without_newline_counts_and_crlf_is_not_shown(plain: Tree) -> None:
    _write(plain, "win.txt", b"one\r\ntwo\r\nthree")
    result = plain.reader.read("win.txt")
    assert result.text == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.line_endings == "crlf"


def test_long_lines_are_cut_with_a_marker(plain: Tree) -> None:
    _write(plain, "min.js", "a" * 5000 + "\nshort\n")
    result = plain.reader.read("min.js")
    first = result.text.splitlines()[0]
    assert first.startswith("     1\t" + "a" * 2000 + "…")
    assert "[line cut: 5,000 characters in all]" in first
    assert result.lines_cut == 1 and "1 long line(s) cut" in result.render()


def test_max_bytes_stops_the_window_at_a_line_boundary(plain: Tree) -> None:
    _write(plain, "w.txt", "".join(f"{i:04d}" + "z" * 95 + "\n" for i in range(100)))
    result = plain.reader.read("w.txt", max_bytes=1000)
    assert len(result.text.encode()) <= 1000
    assert result.truncated_by == "max_bytes" and result.next_offset == result.end_line + 1
    assert result.end_line == 9  # 107 bytes a numbered line
    one = plain.reader.read("w.txt", max_bytes=10)
    assert one.end_line == 1  # at least one line, always


def test_binary_files_are_refused_with_a_description_not_their_bytes(plain: Tree) -> None:
    _write(plain, "img/logo.png", PNG)
    with pytest.raises(BinaryFileError) as caught:
        plain.reader.read("img/logo.png")
    message = str(caught.value)
    assert (
        message
        == f"img/logo.png is a binary file, {len(PNG):,} bytes, looks like PNG image; file_read shows text files only"
    )
    _write(plain, "data.bin", b"abc\x00def" * 10)
    with pytest.raises(BinaryFileError, match=r"binary file, 70 bytes; file_read"):
        plain.reader.read("data.bin")
    _write(plain, "doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")  # no NUL in its head
    with pytest.raises(BinaryFileError, match="looks like PDF document"):
        plain.reader.read("doc.pdf")
    _write(plain, "noise.bin", bytes([1, 2, 3, 4, 5, 0xFF, 6, 7]) * 100)  # control bytes, not UTF-8
    with pytest.raises(BinaryFileError):
        plain.reader.read("noise.bin")


def test_utf8_bom_is_hidden_but_hashed_and_reported(plain: Tree) -> None:
    raw = codecs.BOM_UTF8 + "héllo\n".encode()
    _write(plain, "bom.txt", raw)
    result = plain.reader.read("bom.txt")
    assert result.text == "     1\théllo"
    assert result.encoding == "utf-8-sig"
    assert result.sha256 == hashlib.sha256(raw).hexdigest()


def test_utf16_with_bom_and_latin1_fallback_are_read_as_text(plain: Tree) -> None:
    _write(plain, "u16.txt", codecs.BOM_UTF16_LE + "wide ✓\n".encode("utf-16-le"))
    assert plain.reader.read("u16.txt").text == "     1\twide ✓"
    _write(plain, "legacy.txt", b"caf\xe9 cr\xe8me\n")
    result = plain.reader.read("legacy.txt")
    assert (result.text, result.encoding) == ("     1\tcafé crème", "latin-1")
    assert "encoding latin-1" in result.render()


def test_directories_and_fifos_are_refused_without_hanging(plain: Tree) -> None:
    (plain.root / "dir").mkdir()
    with pytest.raises(WorkspaceError, match="is a directory"):
        plain.reader.read("dir")
    os.mkfifo(plain.root / "pipe")
    done = threading.Event()

    def read_pipe() -> None:
        with pytest.raises(WorkspaceError, match="not a regular file"):
            plain.reader.read("pipe")
        done.set()

    thread = threading.Thread(target=read_pipe, daemon=True)
    thread.start()
    assert done.wait(5), "reading a FIFO blocked"


def test_a_file_over_the_size_limit_needs_a_window_and_is_then_streamed(plain: Tree) -> None:
    reader = FileReader(plain.ws, plain.cache, max_file_bytes=1000)
    body = "".join(f"row {i}\n" for i in range(1, 501)) + "y" * 9000 + "\nlast"
    _write(plain, "big.log", body)
    with pytest.raises(
        WorkspaceError,
        match=(
            r"big\.log is 12\.6 KB, over the 1,000 bytes limit for reading a whole file; read a window with offset "
            r"and limit .* or search it with grep"
        ),
    ):
        reader.read("big.log")
    result = reader.read("big.log", offset=499, limit=4)
    lines = result.text.splitlines()
    assert lines[:2] == ["   499\trow 499", "   500\trow 500"]
    assert lines[2].startswith("   501\t" + "y" * 2000 + "…") and "about 9,000 bytes in all" in lines[2]
    assert lines[3] == "   502\tlast"
    assert result.total_lines == 502 and not result.truncated
    assert result.sha256 == hashlib.sha256(body.encode()).hexdigest()
    window = reader.read("big.log", offset=1, limit=3)
    assert (window.text.splitlines()[-1], window.next_offset) == ("     3\trow 3", 4)
    too_big = FileReader(plain.ws, None, max_file_bytes=1000, max_stream_bytes=5000)
    with pytest.raises(WorkspaceError, match="too large to read.*grep"):
        too_big.read("big.log", offset=1, limit=3)


def test_a_second_read_hits_the_cache_and_a_write_or_touch_misses(plain: Tree) -> None:
    _write(plain, "c.txt", "one\ntwo\n")
    _age(plain, "c.txt")
    first = plain.reader.read("c.txt")
    second = plain.reader.read("c.txt", offset=2)
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert second.text == "     2\ttwo" and second.sha256 == first.sha256

    plain.editor.edit("c.txt", "str_replace", old_string="two", new_string="TWO")  # same size
    after_edit = plain.reader.read("c.txt")
    assert not after_edit.cache_hit and "TWO" in after_edit.text

    _age(plain, "c.txt", 120)
    plain.reader.read("c.txt")
    assert plain.reader.read("c.txt").cache_hit
    (plain.root / "c.txt").write_text("one\nTOO\n")  # another program, same size
    _age(plain, "c.txt", 30)  # a different mtime, still in the past
    changed = plain.reader.read("c.txt")
    assert not changed.cache_hit and "TOO" in changed.text


def test_the_cache_does_not_keep_files_modified_a_moment_ago(plain: Tree) -> None:
    reader = FileReader(plain.ws, ReadCache())  # default racy window: 2 s
    _write(plain, "fresh.txt", "new\n")
    assert not reader.read("fresh.txt").cache_hit
    assert not reader.read("fresh.txt").cache_hit
    _age(plain, "fresh.txt")
    reader.read("fresh.txt")
    assert reader.read("fresh.txt").cache_hit


def test_reads_go_through_the_resolver(tree: Tree) -> None:
    assert tree.reader.read("link_in/file.txt").path == "sub/file.txt"
    with pytest.raises(WorkspaceError, match="protected"):
        tree.reader.read("sub/.env")
    with pytest.raises(WorkspaceError, match="did you mean: sub/file.txt"):
        tree.reader.read("sub/file.tx")
