"""The placement cache: a remembered line is reused only while the facts it rests on hold.

A cached line is proven again with one lstat per distinct path: an existing component
must be the same entry, and a name that was absent (or a ``.git`` that was a folder) is
proven by its folder's entries being unchanged (inode, mtime and ctime). Each hostile
case below changes the workspace between two decisions the way an agent's own command
could, including setting the folder's mtime back with ``touch -d``; the second decision
must see it. The workspace is made once and left to age past the racy window, so that
its folders are trusted.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from command_support import WIDE, Place, build_snapshot, judge, make_place

from runtime.policy import placecache
from runtime.policy.placecache import compile_checks, still_valid
from runtime.policy.placed import Where, place
from runtime.policy.shell import split_command_line
from runtime.records import Decision
from runtime.snapshot import Snapshot

CASES = 12


def _aged(folder: Path) -> None:
    """Wait (a condition, not a duration) until no folder below ``folder`` changed within the racy window."""
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in (os.lstat(p) for p in [folder, *folder.rglob("*")]))
    while time.time_ns() - newest < placecache.RACY_NS:
        time.sleep(0.05)


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Place]]:
    base = tmp_path_factory.mktemp("cache")
    made = [make_place(base / str(k)) for k in range(CASES)]
    for one in made:
        (one.root / ".git").mkdir()
    _aged(base)
    yield made
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("cache-config"), WIDE)


Decide = Callable[[str], Decision]


def _decider(snapshot: Snapshot, made: Place) -> tuple[Where, Decide]:
    where = made.where()
    return where, lambda line: judge(snapshot, line, mode="default", where=where)


def _remembered(where: Where, decide: Decide, line: str) -> None:
    assert decide(line).effect == "allow", decide(line).reason
    assert decide(line).effect == "allow"
    assert (line, ".") in where.recent, "the line was remembered"


def _set_back(path: Path, st: os.stat_result) -> None:
    """What `touch -d` can do: put the folder's times back (its ctime moves on regardless)."""
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize(
    ("k", "line", "name"),
    [
        (0, "git diff HEAD~1", "HEAD~1"),
        (1, "cat missing.txt", "missing.txt"),
        (2, "cat src/later.py", "src/later.py"),
        (3, "head -n 3 docs/new.md", "docs/new.md"),
    ],
)
def test_a_missing_name_that_becomes_a_link_to_toolrt_files_is_seen_even_with_the_folder_times_set_back(
    places: list[Place], snapshot: Snapshot, k: int, line: str, name: str
) -> None:
    made = places[k]
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, line)
    folder = (made.root / name).parent
    before = os.lstat(folder)
    os.symlink(made.root / "toolrt.d" / "p.yaml", made.root / name)
    _set_back(folder, before)
    assert os.lstat(folder).st_mtime_ns == before.st_mtime_ns
    assert decide(line).effect == "deny"


def test_a_missing_name_that_becomes_a_hard_link_to_the_audit_log_is_seen(
    places: list[Place], snapshot: Snapshot
) -> None:
    made = places[4]
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, "cat sub/log.txt")
    before = os.lstat(made.root / "sub")
    os.link(made.audit, made.root / "sub" / "log.txt")
    _set_back(made.root / "sub", before)
    assert decide("cat sub/log.txt").effect == "deny"


def test_a_folder_on_the_path_replaced_by_a_link_out_of_the_workspace_is_seen(
    places: list[Place], snapshot: Snapshot
) -> None:
    made = places[5]
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, "cat src/a.py")
    before = os.lstat(made.root)
    shutil.rmtree(made.root / "src")
    os.symlink(made.outside, made.root / "src")
    _set_back(made.root, before)
    assert decide("cat src/a.py").effect != "allow"


def test_a_remembered_file_renamed_over_by_a_link_is_seen(places: list[Place], snapshot: Snapshot) -> None:
    made = places[6]
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, "cat README.md")
    os.symlink(made.root / "toolrt.d" / "p.yaml", made.root / "tmp-link")
    os.replace(made.root / "tmp-link", made.root / "README.md")
    assert decide("cat README.md").effect == "deny"


def test_git_in_a_workspace_whose_git_folder_is_replaced_by_a_link_is_judged_again(
    places: list[Place], snapshot: Snapshot
) -> None:
    made = places[7]
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, "git status --short")
    before = os.lstat(made.root)
    (made.root / ".git").rmdir()
    (made.root / "evil").mkdir()
    os.symlink("evil", made.root / ".git")
    _set_back(made.root, before)
    assert decide("git status --short").effect != "allow"


def test_git_where_no_repository_was_is_judged_again_once_the_agent_makes_one(
    places: list[Place], snapshot: Snapshot
) -> None:
    made = places[8]
    (made.root / ".git").rmdir()
    _aged(made.root)
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, "git log -1")
    before = os.lstat(made.root)
    for name in ("HEAD", "objects", "refs"):
        if name == "HEAD":
            (made.root / name).write_text("ref: refs/heads/main\n")
        else:
            (made.root / name).mkdir()
    _set_back(made.root, before)
    assert decide("git log -1").effect != "allow"


def test_a_line_whose_folder_changed_within_the_racy_window_is_not_remembered(
    places: list[Place], snapshot: Snapshot
) -> None:
    made = places[9]
    where, decide = _decider(snapshot, made)
    (made.root / "fresh.txt").write_text("new\n")  # the root changed just now
    assert decide("cat nothing-here.txt").effect == "allow"
    assert ("cat nothing-here.txt", ".") not in where.recent


@pytest.mark.parametrize(
    ("line", "paths"),
    [
        ("cat README.md", 1),  # the file itself: the same entry, one name
        # HEAD~1 absent and .git a folder: the root's entries prove both; .git's entries
        # prove the index (which says whether a secret file is tracked) is the same.
        ("git diff HEAD~1", 2),
        ("ls src && git status --short", 1),  # src is proven by the root's entries too
        ("cat src/a.py src/b.py", 3),  # src (not a link since), then each file (its link count)
    ],
)
def test_a_remembered_line_is_proven_again_with_one_lstat_per_distinct_path(
    places: list[Place], snapshot: Snapshot, line: str, paths: int
) -> None:
    made = places[10]
    where, decide = _decider(snapshot, made)
    _remembered(where, decide, line)
    _, validator = where.recent[(line, ".")]
    expects, slow = validator
    assert len(expects) == paths and not slow, validator
    assert still_valid(validator)


def test_a_file_with_two_names_is_never_remembered(places: list[Place], snapshot: Snapshot) -> None:
    made = places[11]
    os.link(made.root / "a.txt", made.root / "sub" / "twin.txt")
    _aged(made.root)
    where = made.where()
    line = "cat a.txt"
    place(split_command_line(line), where, ".", line)
    assert (line, ".") not in where.recent
    assert compile_checks([(f"{made.root}\0a.txt", f"{made.root}/a.txt", (f"{made.root}/a.txt",))]) is None
