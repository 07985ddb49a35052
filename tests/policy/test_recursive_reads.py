"""A recursive read of a folder that holds toolrt's own files is a read of those files.

The rule (fail closed, in the placing layer): a command that reads every file below a
folder (``grep -r``, ``rg``, ``find -exec``, ``find | xargs``, ``cp -r``, ``tar -c`` ...) is
denied, in every mode and whatever the rules, when the folder holds toolrt's own files
(config, state, audit log, artifacts), lies inside them, or holds another name (a hard
link) for one of them, just as reading those files by name is. The reason names the
folder and says to name the folders beside them; a grep that excludes them by name
(``--exclude-dir``) reads none of them and is judged as usual.

The workspace is ``command_support.make_place``: ``.toolrt/`` and ``toolrt.d/`` inside,
the audit log next to it, ``sub/back_to_ws`` a link back to the root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from command_support import WIDE, Place, build_snapshot, judge, make_place

from runtime.policy.recursive import lists_tree, tree_reads
from runtime.snapshot import Snapshot

MORE = (*WIDE, "ag *", "ack *", "pt *", "sift *", "ugrep *", "egrep *", "fgrep *", "zgrep *", "fd *", "tree *")
MORE += ("rsync *", "zip *", "diff *", "scp *", "while *", "git ls-files *")


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    made = make_place(tmp_path_factory.mktemp("tree") / "p")
    (made.root / "hl").mkdir()
    os.link(made.root / "toolrt.d" / "p.yaml", made.root / "hl" / "notes.txt")  # the config under another name
    return made


@pytest.fixture(scope="module")
def outside_place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    """A workspace whose toolrt files all live outside it (the default layout)."""
    return make_place(tmp_path_factory.mktemp("tree-out") / "p")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("tree-config"), MORE)


DENIED = [
    # grep's recursive flags in every spelling
    "grep -r x .",
    "grep -R x .",
    "grep --recursive x .",
    "grep --recur x .",
    "grep --dereference-recursive x .",
    "grep --deref x .",
    "grep -rn x .",
    "grep -nr x .",
    "grep -inr x .",
    "grep -lr x .",
    "grep -r -n x .",
    "grep -rnw x .",
    "grep -r x",
    "grep -rn x src .",
    "grep -d recurse x .",
    "grep -drecurse x .",
    "grep --directories=recurse x .",
    "grep --directories recurse x .",
    "grep --dir=rec x .",
    "grep -nd recurse x .",
    "grep -r -e x .",
    "grep -r x -- .",
    "grep -r --include=*.yaml x .",
    "grep -rn --exclude-dir=src x .",
    "egrep -r x .",
    "fgrep -r x .",
    "zgrep -r x .",
    "ugrep -r x .",
    # the folder, spelled many ways
    "grep -r x ./",
    "grep -r x .//",
    "grep -r x src/..",
    "grep -r x sub/..",
    "grep -r x src/../.",
    "grep -r x {root}",
    "grep -r x {root}/",
    "grep -r x {root}/src/..",
    "grep -r x sub/back_to_ws",
    "grep -r x sub/back_to_ws/",
    "grep -r x toolrt.d",
    "grep -r x .toolrt",
    "grep -r x toolrt.d/",
    "grep -r x t*",
    "grep -r x ?oolrt.d",
    "grep -r x .t*",
    "grep -r x {{src,.}}",
    "grep -r x hl",
    "cd src && grep -r x ..",
    "cd sub && grep -rn x ../",
    "cd sub/back_to_ws && grep -r x .",
    # searchers that always recurse
    "rg x",
    "rg x .",
    "rg -n x ./",
    "rg -e x",
    "rg --files",
    "rg x src/..",
    "rg -uu x",
    "rg x hl",
    "ag x",
    "ag x .",
    "ack x",
    "ack -i x .",
    "pt x",
    "sift x",
    "git grep x",
    "git grep -n x .",
    "git grep x -- .",
    "git -C . grep x",
    "git grep --no-index x",
    # find pipelines
    "find . -exec cat {{}} +",
    "find . -type f -exec grep -H x {{}} ;",
    "find -exec cat {{}} +",
    "find . -execdir cat {{}} +",
    "find . -ok cat {{}} ;",
    "find -L . -exec cat {{}} +",
    "find hl -exec cat {{}} +",
    "find . -type f | xargs cat",
    "find . -print0 | xargs -0 grep x",
    "find . -name '*.yaml' | xargs cat",
    "find . | while read f; do cat $f; done",
    "ls -R | xargs cat",
    "fd . | xargs cat",
    "tree -fi | xargs cat",
    "git ls-files | xargs cat",
    "cat $(find . -type f)",
    # copies and archives that carry the files elsewhere
    "cp -r . /tmp/copy",
    "cp -R . backup",
    "cp -a . backup",
    "cp --recursive . backup",
    "cp -r toolrt.d backup",
    "cp -r hl backup",
    "rsync -a . backup",
    "rsync -r ./ backup",
    "tar -cf out.tar .",
    "tar czf out.tgz .",
    "tar -c .",
    "zip -r out.zip .",
    "diff -r . src",
    "scp -r . host:x",
]


def _line(text: str, made: Place) -> str:
    return text.format(root=made.root)


@pytest.mark.parametrize("mode", ["default", "bypass"])
@pytest.mark.parametrize("text", DENIED)
def test_a_recursive_read_of_a_folder_holding_toolrt_files_is_denied(
    snapshot: Snapshot, place: Place, text: str, mode: str
) -> None:
    line = _line(text, place)
    decision = judge(snapshot, line, mode=mode, where=place.where())
    assert decision.effect == "deny", (line, decision.effect, decision.reason)


@pytest.mark.parametrize(
    "text",
    [
        "grep -r x .",
        "rg x",
        "find . -exec cat {{}} +",
        "cp -r . backup",
        "grep -rn x {root}",
        "find . -type f | xargs cat",
    ],
)
def test_the_denial_names_the_folder_and_says_what_to_do(snapshot: Snapshot, place: Place, text: str) -> None:
    decision = judge(snapshot, _line(text, place), where=place.where())
    reason = decision.reason or ""
    assert "reads every file below" in reason and "toolrt's own files" in reason, reason
    assert "name the folders beside them" in reason, reason


def test_a_recursive_read_from_inside_toolrt_files_is_denied(snapshot: Snapshot, place: Place) -> None:
    for line in ("grep -r x", "rg x", "grep -r x ."):
        assert judge(snapshot, line, where=place.where(), cwd="toolrt.d").effect == "deny", line


ALLOWED = [
    "grep -rn TODO src",
    "grep -r x src docs",
    "grep -rl TODO src docs",
    "rg x src",
    "rg -n x src docs",
    "ag x src",
    "ack x src",
    "git grep x -- src",
    "find src -name '*.py'",
    "find . -name '*.py'",
    "find . -type f",
    "ls -R src",
    "cp -r src backup",
    "diff -r src docs",
    "grep -e -r x README.md",
    "grep -- -r README.md",
    "grep -n -e -R x README.md",
    "grep x README.md",
]


@pytest.mark.parametrize("text", ALLOWED)
def test_a_read_that_leaves_toolrt_files_out_is_judged_as_usual(snapshot: Snapshot, place: Place, text: str) -> None:
    decision = judge(snapshot, text, where=place.where())
    assert decision.effect == "allow", (text, decision.reason)


@pytest.mark.parametrize(
    "text",
    [
        # The workspace holds a .env at its root: a recursive read leaves it out too.
        "grep -rn TODO . --exclude-dir .toolrt --exclude-dir toolrt.d --exclude='.*'",
        "grep -rn TODO . --exclude-dir .toolrt --exclude-dir=toolrt* --exclude=.env*",
        "grep -rn TODO --exclude-dir=.tool[r]t --exclude-dir toolrt.? --exclude='.*'",
        "grep -r --exclude-dir '?toolrt' --exclude-dir 'toolrt*' --exclude='.*' x .",
    ],
)
def test_a_grep_that_excludes_toolrt_folders_by_name_is_judged_as_usual(
    snapshot: Snapshot, outside_place: Place, text: str
) -> None:
    decision = judge(snapshot, text, where=outside_place.where())
    assert decision.effect == "allow", (text, decision.reason)


@pytest.mark.parametrize(
    "text",
    [
        "grep -rn TODO . --exclude-dir .toolrt",
        "grep -rn TODO . --exclude-dir toolrt.d",
        "grep -rn TODO . --exclude-dir src --exclude-dir docs",
        "grep -rn TODO . --exclude .toolrt --exclude toolrt.d",
    ],
)
def test_an_exclusion_that_leaves_one_of_toolrt_folders_in_is_denied(
    snapshot: Snapshot, place: Place, text: str
) -> None:
    decision = judge(snapshot, text, where=place.where())
    assert decision.effect == "deny", (text, decision.reason)


def test_a_recursive_read_from_a_sub_folder_is_judged_as_usual(snapshot: Snapshot, place: Place) -> None:
    for line in ("grep -r x", "rg x", "grep -rn TODO .", "find . -exec cat {} +"):
        decision = judge(snapshot, line, where=place.where(), cwd="src")
        assert decision.effect != "deny", (line, decision.reason)


@pytest.mark.parametrize("text", ["grep -rn TODO .", "rg TODO", "git grep TODO", "grep -r x", "cp -r . backup"])
def test_a_recursive_read_of_a_workspace_without_toolrt_files_stays_allowed(
    snapshot: Snapshot, tmp_path: Path, text: str
) -> None:
    made = make_place(tmp_path / "p")
    (made.root / ".env").unlink()  # a secret file below is read too: test_recursive_secret_reads.py
    outside = Path(made.root).parent / "state"
    where_all_outside = made.where().of(made.root, protected=(outside, made.audit))
    decision = judge(snapshot, text, where=where_all_outside)
    assert decision.effect == "allow", (text, decision.reason)


@pytest.mark.parametrize(
    ("argv", "folders"),
    [
        (("grep", "-r", "x"), ((0, "."),)),
        (("grep", "-rn", "x", "a", "b"), ((3, "a"), (4, "b"))),
        (("grep", "-e", "-r", "x"), ()),
        (("grep", "--", "-r", "x"), ()),
        (("grep", "-A3", "x", "."), ()),
        (("grep", "-d", "read", "x", "."), ()),
        (("grep", "-d", "rec", "x", "."), ((4, "."),)),
        (("rg", "x"), ((0, "."),)),
        (("ag", "-i", "x", "src"), ((3, "src"),)),
        (("find", "-L", "a", "b", "-exec", "cat", "{}", "+"), ((2, "a"), (3, "b"))),
        (("find", "a", "-name", "x"), ()),
        (("cp", "-r", "a", "b", "dest"), ((2, "a"), (3, "b"))),
        (("cp", "a", "dest"), ()),
        (("tar", "-tf", "a.tar"), ()),
        (("tar", "--no-recursion", "-cf", "o.tar", "."), ()),
    ],
)
def test_the_folders_a_command_reads_recursively_are_found(
    argv: tuple[str, ...], folders: tuple[tuple[int, str], ...]
) -> None:
    assert tree_reads(argv) == folders


def test_listers_name_the_folders_they_walk() -> None:
    assert lists_tree(("find", "src", "-type", "f")) == ((1, "src"),)
    assert lists_tree(("ls", "-la")) == ()
    assert lists_tree(("ls", "-R", "docs")) == ((2, "docs"),)
