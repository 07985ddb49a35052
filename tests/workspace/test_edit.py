"""FileEditor on real files: every mode, the refusals the model sees, hashes, modes, encodings."""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
import time
from typing import Any

import pytest
from ws_helpers import Tree

from runtime.workspace import TEMP_PREFIX, BinaryFileError, EditConflict, WorkspaceError


def _put(tree: Tree, rel: str, data: bytes | str) -> None:
    path = tree.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def _text(tree: Tree, rel: str) -> str:
    return (tree.root / rel).read_bytes().decode()


def _sha(tree: Tree, rel: str) -> str:
    return hashlib.sha256((tree.root / rel).read_bytes()).hexdigest()


# -- replace ---------------------------------------------------------------------------


def test_replace_creates_the_file_and_its_missing_directories(plain: Tree) -> None:
    result = plain.editor.edit("src/pkg/mod.py", "replace", content="x = 1\ny = 2\n")
    assert _text(plain, "src/pkg/mod.py") == "x = 1\ny = 2\n"
    assert result.created and result.changed and result.old_sha256 is None
    assert result.new_sha256 == _sha(plain, "src/pkg/mod.py")
    assert result.diff == "--- /dev/null\n+++ b/src/pkg/mod.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2"
    assert result.render().startswith("Created src/pkg/mod.py (12 bytes); sha256 is now ")


def test_replace_overwrites_an_existing_file_and_reports_a_diff(plain: Tree) -> None:
    _put(plain, "a.txt", "one\ntwo\nthree\n")
    old = _sha(plain, "a.txt")
    result = plain.editor.edit("a.txt", "replace", content="one\n2\nthree\n")
    assert (result.created, result.old_sha256) == (False, old)
    assert result.diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"


def test_replace_with_identical_content_writes_nothing(plain: Tree) -> None:
    _put(plain, "same.txt", "same\n")
    inode = (plain.root / "same.txt").stat().st_ino
    result = plain.editor.edit("same.txt", "replace", content="same\n")
    assert not result.changed and result.diff == "" and result.new_sha256 == result.old_sha256
    assert (plain.root / "same.txt").stat().st_ino == inode
    assert "unchanged" in result.render() and plain.editor.unchanged == 1


# -- append and insert -------------------------------------------------------------------


def test_append_starts_on_a_new_line(plain: Tree) -> None:
    _put(plain, "log.txt", "first")
    plain.editor.edit("log.txt", "append", content="second\n")
    plain.editor.edit("log.txt", "append", content="third\n")
    assert _text(plain, "log.txt") == "first\nsecond\nthird\n"


def test_append_and_insert_refuse_a_missing_file(plain: Tree) -> None:
    for mode, extra in (("append", {}), ("insert", {"line": 1})):
        with pytest.raises(WorkspaceError, match="not found"):
            plain.editor.edit("nope.txt", mode, content="x\n", **extra)  # type: ignore[arg-type]
    assert not (plain.root / "nope.txt").exists()


def test_insert_puts_the_text_at_the_given_line(plain: Tree) -> None:
    _put(plain, "i.txt", "a\nb\nc\n")
    plain.editor.edit("i.txt", "insert", content="top", line=1)
    assert _text(plain, "i.txt") == "top\na\nb\nc\n"
    plain.editor.edit("i.txt", "insert", content="mid1\nmid2\n", line=3)
    assert _text(plain, "i.txt") == "top\na\nmid1\nmid2\nb\nc\n"
    plain.editor.edit("i.txt", "insert", content="end", line=7)  # total lines + 1 appends
    assert _text(plain, "i.txt") == "top\na\nmid1\nmid2\nb\nc\nend\n"


def test_insert_after_a_last_line_without_newline_ends_that_line_first(plain: Tree) -> None:
    _put(plain, "n.txt", "a\nb")
    plain.editor.edit("n.txt", "insert", content="c", line=3)
    assert _text(plain, "n.txt") == "a\nb\nc\n"


def test_insert_refuses_line_zero_and_lines_past_the_end(plain: Tree) -> None:
    _put(plain, "i.txt", "a\nb\n")
    with pytest.raises(WorkspaceError, match=r"1-based; 0 is not valid \(line=1 inserts at the top"):
        plain.editor.edit("i.txt", "insert", content="x", line=0)
    with pytest.raises(WorkspaceError, match=r"line 4 is past the end of i\.txt \(2 lines\); use a line from 1 to 3"):
        plain.editor.edit("i.txt", "insert", content="x", line=4)
    assert _text(plain, "i.txt") == "a\nb\n"


# -- str_replace ---------------------------------------------------------------------------


def test_str_replace_replaces_the_single_match(plain: Tree) -> None:
    _put(plain, "m.py", "def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = plain.editor.edit("m.py", "str_replace", old_string="    return 2", new_string="    return 3")
    assert _text(plain, "m.py").endswith("return 3\n")
    assert result.replacements == 1
    assert "-    return 2\n+    return 3" in result.diff
    assert "(str_replace, 1 replacement)" in result.render()


def test_str_replace_without_a_match_shows_the_closest_lines(plain: Tree) -> None:
    _put(plain, "m.py", "import os\n\ndef compute_total(items):\n    return sum(items)\n")
    with pytest.raises(WorkspaceError) as caught:
        plain.editor.edit(
            "m.py", "str_replace", old_string="def compute_totals(items):", new_string="def total(items):"
        )
    message = str(caught.value)
    assert message.startswith("old_string was not found in m.py.\nClosest lines:\n  line 3: def compute_total(items):")
    assert "must match the file exactly" in message


def test_str_replace_points_at_a_match_that_differs_only_in_whitespace(plain: Tree) -> None:
    _put(plain, "m.py", "if x:\n\treturn 1\n")
    with pytest.raises(WorkspaceError, match="except for whitespace or indentation starts at line 1"):
        plain.editor.edit("m.py", "str_replace", old_string="if x:\n    return 1", new_string="if x:\n    return 2")


def test_str_replace_recognises_line_number_prefixes_copied_from_read_output(plain: Tree) -> None:
    _put(plain, "m.py", "a = 1\nb = 2\n")
    with pytest.raises(WorkspaceError, match="line-number prefixes"):
        plain.editor.edit("m.py", "str_replace", old_string="     1\ta = 1\n     2\tb = 2", new_string="a = 3")


def test_str_replace_with_several_matches_lists_their_lines(plain: Tree) -> None:
    _put(plain, "d.txt", "x = 1\ny = 2\nx = 1\nz\nx = 1\n")
    with pytest.raises(WorkspaceError) as caught:
        plain.editor.edit("d.txt", "str_replace", old_string="x = 1", new_string="x = 9")
    message = str(caught.value)
    assert "occurs 3 times in d.txt (starting at lines 1, 3, 5)" in message
    assert "include more of the surrounding lines" in message and "replace_all" in message
    assert _text(plain, "d.txt") == "x = 1\ny = 2\nx = 1\nz\nx = 1\n"
    result = plain.editor.edit("d.txt", "str_replace", old_string="x = 1", new_string="x = 9", replace_all=True)
    assert result.replacements == 3 and _text(plain, "d.txt") == "x = 9\ny = 2\nx = 9\nz\nx = 9\n"


def test_overlapping_occurrences_count_as_several_matches(plain: Tree) -> None:
    _put(plain, "o.txt", "aaa\n")
    with pytest.raises(WorkspaceError, match="occurs 2 times"):
        plain.editor.edit("o.txt", "str_replace", old_string="aa", new_string="b")


def test_str_replace_refuses_identical_or_empty_strings(plain: Tree) -> None:
    _put(plain, "s.txt", "abc\n")
    with pytest.raises(WorkspaceError, match="identical"):
        plain.editor.edit("s.txt", "str_replace", old_string="abc", new_string="abc")
    with pytest.raises(WorkspaceError, match="old_string is empty"):
        plain.editor.edit("s.txt", "str_replace", old_string="", new_string="x")


def test_crlf_files_match_plain_newlines_and_keep_crlf(plain: Tree) -> None:
    _put(plain, "w.txt", b"a\r\nb\r\nc\r\n")
    plain.editor.edit("w.txt", "str_replace", old_string="a\nb\n", new_string="a\nB\nb2\n")
    plain.editor.edit("w.txt", "append", content="d\ne\n")
    assert (plain.root / "w.txt").read_bytes() == b"a\r\nB\r\nb2\r\nc\r\nd\r\ne\r\n"


def test_arguments_that_do_not_fit_the_mode_are_refused(plain: Tree) -> None:
    _put(plain, "f.txt", "x\n")
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {"mode": "rewrite", "content": "x"},
            "unknown edit mode 'rewrite'; use one of: replace, append, insert, str_replace",
        ),
        ({"mode": "str_replace", "content": "x"}, "takes old_string and new_string, not content"),
        ({"mode": "str_replace", "old_string": "x"}, "needs old_string"),
        ({"mode": "replace"}, "needs content"),
        ({"mode": "append", "content": ""}, "would change nothing"),
        ({"mode": "insert", "content": "x"}, "needs line"),
        ({"mode": "append", "content": "x", "line": 2}, "line belongs to mode 'insert'"),
        ({"mode": "replace", "content": "x", "old_string": "y"}, "belong to mode 'str_replace'"),
        ({"mode": "replace", "content": "x", "expected_hash": "abc"}, "64-character hex sha256"),
    ]
    for kwargs, fragment in cases:
        mode = kwargs.pop("mode")
        with pytest.raises(WorkspaceError) as caught:
            plain.editor.edit("f.txt", mode, **kwargs)  # type: ignore[arg-type]
        assert fragment in str(caught.value)
    assert _text(plain, "f.txt") == "x\n"


# -- expected_hash --------------------------------------------------------------------------


def test_expected_hash_mismatch_reports_the_current_hash_and_changes_nothing(plain: Tree) -> None:
    _put(plain, "h.txt", "v1\n")
    seen = plain.reader.read("h.txt").sha256
    (plain.root / "h.txt").write_text("v2 by someone else\n")
    current = _sha(plain, "h.txt")
    with pytest.raises(EditConflict) as caught:
        plain.editor.edit("h.txt", "append", content="mine\n", expected_hash=seen)
    assert caught.value.current_hash == current
    message = str(caught.value)
    assert f"expected sha256 {seen}, current sha256 {current}" in message
    assert "Read the file again with file_read" in message
    assert _text(plain, "h.txt") == "v2 by someone else\n"
    assert plain.editor.conflicts == 1
    plain.editor.edit("h.txt", "append", content="mine\n", expected_hash=current.upper())  # hex case does not matter
    assert _text(plain, "h.txt") == "v2 by someone else\nmine\n"


def test_expected_hash_for_a_file_deleted_meanwhile_is_a_conflict(plain: Tree) -> None:
    _put(plain, "gone.txt", "x\n")
    seen = _sha(plain, "gone.txt")
    (plain.root / "gone.txt").unlink()
    with pytest.raises(EditConflict, match="no longer exists"):
        plain.editor.edit("gone.txt", "replace", content="y\n", expected_hash=seen)
    assert not (plain.root / "gone.txt").exists()


# -- what the file keeps --------------------------------------------------------------------


def test_permission_bits_survive_every_mode(plain: Tree) -> None:
    _put(plain, "p.txt", "a\n")
    os.chmod(plain.root / "p.txt", 0o640)
    plain.editor.edit("p.txt", "replace", content="b\n")
    plain.editor.edit("p.txt", "append", content="c\n")
    plain.editor.edit("p.txt", "insert", content="0\n", line=1)
    plain.editor.edit("p.txt", "str_replace", old_string="c", new_string="C")
    assert stat.S_IMODE((plain.root / "p.txt").stat().st_mode) == 0o640
    _put(plain, "run.sh", "#!/bin/sh\n")
    os.chmod(plain.root / "run.sh", 0o755)
    plain.editor.edit("run.sh", "append", content="echo hi\n")
    assert stat.S_IMODE((plain.root / "run.sh").stat().st_mode) == 0o755


def test_the_encoding_and_bom_are_kept(plain: Tree) -> None:
    _put(plain, "bom.txt", codecs.BOM_UTF8 + b"alpha\n")
    plain.editor.edit("bom.txt", "append", content="beta\n")
    assert (plain.root / "bom.txt").read_bytes() == codecs.BOM_UTF8 + b"alpha\nbeta\n"
    _put(plain, "legacy.txt", b"caf\xe9\n\xff\xfe odd bytes\n")
    plain.editor.edit("legacy.txt", "str_replace", old_string="café", new_string="café crème")
    assert (plain.root / "legacy.txt").read_bytes() == b"caf\xe9 cr\xe8me\n\xff\xfe odd bytes\n"
    with pytest.raises(WorkspaceError, match=r"latin-1 encoded and cannot hold '→' \(U\+2192\)"):
        plain.editor.edit("legacy.txt", "append", content="→\n")
    _put(plain, "u16.txt", codecs.BOM_UTF16_LE + "x\n".encode("utf-16-le"))
    plain.editor.edit("u16.txt", "append", content="✓\n")
    assert (plain.root / "u16.txt").read_bytes() == codecs.BOM_UTF16_LE + "x\n✓\n".encode("utf-16-le")


def test_binary_files_can_be_replaced_but_not_patched(plain: Tree) -> None:
    _put(plain, "blob.bin", b"\x00\x01\x02binary")
    with pytest.raises(
        BinaryFileError, match=r"blob\.bin is a binary file, 9 bytes; file_edit changes text files only"
    ):
        plain.editor.edit("blob.bin", "str_replace", old_string="binary", new_string="text")
    result = plain.editor.edit("blob.bin", "replace", content="now text\n")
    assert result.diff == "(binary content replaced by 1 line of text)"


def test_edits_refuse_directories_and_symlinked_escapes(tree: Tree) -> None:
    with pytest.raises(WorkspaceError, match="is a directory"):
        tree.editor.edit("sub", "replace", content="x")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        tree.editor.edit("link_out/secret.txt", "replace", content="x")
    assert (tree.outside / "secret.txt").read_text() == "outside secret\n"


def test_editing_through_a_link_inside_the_workspace_edits_its_target(tree: Tree) -> None:
    result = tree.editor.edit("link_in/file.txt", "append", content="more\n")
    assert result.path == "sub/file.txt"
    assert (tree.root / "sub" / "file.txt").read_text() == "hello\nmore\n"
    assert (tree.root / "link_in").is_symlink()


# -- cache, sweep, diff size, metrics ---------------------------------------------------------


def test_a_write_invalidates_the_read_cache_even_within_one_timestamp_tick(plain: Tree) -> None:
    _put(plain, "c.txt", "aaaa\n")
    for new in ("bbbb\n", "cccc\n", "dddd\n"):  # same size, written fast
        plain.reader.read("c.txt")
        plain.editor.edit("c.txt", "replace", content=new)
        assert plain.reader.read("c.txt").text == "     1\t" + new.strip()


def test_old_temp_files_of_crashed_writers_are_swept_by_a_later_edit(plain: Tree) -> None:
    stale = plain.root / "dir" / f"{TEMP_PREFIX}999-dead"
    stale.parent.mkdir()
    stale.write_bytes(b"half written")
    past = time.time() - 7200
    os.utime(stale, (past, past))
    plain.editor.edit("dir/f.txt", "replace", content="x\n")
    assert not stale.exists()
    assert plain.editor.temp_files_swept == 1


def test_the_diff_of_a_large_change_is_capped(plain: Tree) -> None:
    _put(plain, "big.txt", "".join(f"old {i}\n" for i in range(1000)))
    result = plain.editor.edit("big.txt", "replace", content="".join(f"new {i}\n" for i in range(1000)))
    lines = result.diff.splitlines()
    assert len(lines) <= 61 and lines[-1].startswith("… diff cut (")
    assert len(result.diff) <= 6100


def test_a_one_line_edit_in_a_large_file_shows_only_that_region(plain: Tree) -> None:
    _put(plain, "huge.txt", "".join(f"row {i}\n" for i in range(200_000)))
    result = plain.editor.edit("huge.txt", "str_replace", old_string="row 150000\n", new_string="ROW 150000\n")
    assert result.diff.splitlines()[2] == "@@ -149998,7 +149998,7 @@"
    assert "-row 150000\n+ROW 150000" in result.diff


def test_counters_for_metrics(plain: Tree) -> None:
    _put(plain, "m.txt", "a\n")
    plain.editor.edit("m.txt", "append", content="b\n")
    with pytest.raises(EditConflict):
        plain.editor.edit("m.txt", "append", content="c\n", expected_hash="0" * 64)
    stats = plain.editor.stats()
    assert (stats["edits"], stats["conflicts"], stats["lock_timeouts"]) == (1, 1, 0)
    assert stats["lock_wait_seconds"] >= 0 and stats["lock_wait_max_seconds"] <= stats["lock_wait_seconds"]
