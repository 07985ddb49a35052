"""Commands that wait for a ``cd`` are placed from the folder it leads to.

``cd src && cat ../a.txt`` reads the workspace's ``a.txt``: the ``cat`` runs only if the
``cd`` succeeded, in the line's own shell, and ``src`` is a plain folder of the
workspace. Everything that leaves where a command runs unsure keeps the starting folder
in play, where ``../a.txt`` is outside the workspace, so the line asks: a failed,
skipped or unsure ``cd`` (``;``, ``||``, a pipeline, a subshell, ``&``, ``!``, a
run-time word, ``cd -``, ``CDPATH``, ``pushd``), a way through a link, a folder made or
changed earlier on the line, compound commands, and ``cd`` that may not be the builtin.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from command_support import build_snapshot, judge

from runtime.policy.placed import Where
from runtime.policy.shell import split_command_line
from runtime.records import Decision

ASKED = ("ask", "deny")
RULES = ("cd *", "pushd *", "popd *", "cat *", "ls *", "head *", "grep *", "echo *", "true", "wc *", "mkdir *", "ln *")


@pytest.fixture(scope="module")
def decide_line(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Decision]:
    base = tmp_path_factory.mktemp("cd")
    root = base / "ws"
    for folder in ("src/sub/deep", "docs", "build"):
        (root / folder).mkdir(parents=True)
    for name in ("a.txt", "src/a.py", "src/sub/x.py", "docs/guide.md"):
        (root / name).write_text("x\n")
    (base / "outside").mkdir()
    (base / "outside" / "a.txt").write_text("secret\n")
    (base / "a.txt").write_text("secret\n")
    os.symlink("../outside", root / "lnk")  # leads out of the workspace
    os.symlink("src", root / "inside_link")  # stays inside, but is a link
    os.symlink("..", root / "src" / "up")  # a link back to the root
    os.symlink("../../outside", root / "src" / "src")  # `cd src` twice leads out
    where = Where.of(root, (base / "state",))
    snapshot = build_snapshot(base / "snap", RULES)
    return lambda line: judge(snapshot, line, mode="default", where=where)


FOLLOWS_THE_CD = [
    "cd src && cat ../a.txt",
    "cd src && cat a.py",
    "cd -P src && cat ../a.txt",
    "cd -L src && cat ../a.txt",
    "cd -- src && cat ../a.txt",
    "cd -e src && cat ../a.txt",
    "cd ./src && cat ../a.txt",
    "cd src/ && cat ../a.txt",
    "cd src/sub && cat ../../a.txt",
    "cd src/sub/deep && cat ../x.py",
    "cd src && cd sub && cat ../../a.txt",
    "cd src && cd .. && cat a.txt",
    "cd src/sub && cd ../.. && cat a.txt",
    "cd src && cat ../a.txt && ls ..",
    "cd src && head ../a.txt | grep x",
    "ls && cd src && cat ../a.txt",
    "cat a.txt && cd src && cat ../a.txt",
    "cd src &&\ncat ../a.txt",
    "cd src && (cat ../a.txt)",
    "cd src 2>/dev/null && cat ../a.txt",
    "cd docs && cat ../src/a.py",
    "cd src && cat ../a.txt && cd sub && cat ../../a.txt",
    "cd src && ls ../docs && cat ../docs/guide.md",
    "cd src && wc -l ../a.txt a.py",
]


@pytest.mark.parametrize("line", FOLLOWS_THE_CD)
def test_a_command_waiting_for_a_cd_into_a_plain_folder_is_placed_from_there(
    decide_line: Callable[[str], Decision], line: str
) -> None:
    decision = decide_line(line)
    assert decision.effect == "allow", (line, decision.effect, decision.reason)


KEEPS_ASKING = [
    # the cd may not have happened, or not in this shell
    "cd src; cat ../a.txt",
    "cd src\ncat ../a.txt",
    "cd src || cat ../a.txt",
    "cd src || true && cat ../a.txt",
    "true || cd src && cat ../a.txt",
    "cat a.txt && true || cd src && cat ../a.txt",
    "cd src && cat a.py || cat ../a.txt",
    "cd src && true; cat ../a.txt",
    "cd src && cat a.py\ncat ../a.txt",
    "cd src | cat && cat ../a.txt",
    "cat a.txt | cd src && cat ../a.txt",
    "cd src |& cat && cat ../a.txt",
    "(cd src) && cat ../a.txt",
    "(cd src && true) && cat ../a.txt",
    "{ cd src; } && cat ../a.txt",
    "! cd src && cat ../a.txt",
    "time cd src && cat ../a.txt",
    "cd src & cat ../a.txt",
    "cd src && true & cat ../a.txt",
    "echo $(cd src) && cat ../a.txt",
    "sh -c 'cd src' && cat ../a.txt",
    "x=1 cd src && cat ../a.txt",
    # where the cd leads is only known at run time
    "cd $d && cat ../a.txt",
    'cd "$PWD/src" && cat ../a.txt',
    "cd $(echo src) && cat ../a.txt",
    "cd - && cat ../a.txt",
    "cd && cat ../a.txt",
    "cd ~ && cat ../a.txt",
    "cd ~/src && cat ../a.txt",
    "cd s* && cat ../a.txt",
    "cd {src,docs} && cat ../a.txt",
    "CDPATH=/tmp; cd src && cat ../a.txt",
    "export CDPATH=..; cd src && cat ../a.txt",
    "CDPATH=.. cd src && cat ../a.txt",
    "pushd src && cat ../a.txt",
    "pushd src >/dev/null && cat ../a.txt",
    "pushd src; popd; cat ../a.txt",
    "cd src x && cat ../a.txt",
    "cd -X src && cat ../a.txt",
    # not a plain folder of the workspace, or a way through a link
    "cd nothing && cat ../a.txt",
    "cd a.txt && cat ../a.txt",
    "cd lnk && cat ../a.txt",
    "cd inside_link && cat ../a.txt",
    "cd -P inside_link && cat ../a.txt",
    "cd src/up && cat ../a.txt",
    "cd src/up/src && cat ../a.txt",
    "cd src/.. && cat ../a.txt",
    "cd .. && cat ws/a.txt",
    "cd ../ws/src && cat ../a.txt",
    "cd src/sub && cat ../../../a.txt",
    "cd src && cat ../../a.txt",
    "cd src && cd .. && cat ../a.txt",
    "cd /tmp && cat ../a.txt",
    # the way may change before the cd runs
    "mkdir new && cd new && cat ../a.txt",
    "ln -s .. lk && cd lk && cat ../a.txt",
    "ln -sfn .. src/sub && cd src/sub && cat ../a.txt",
    # loops and branches: the order of the list is not the order of the run
    "if cd src; then cat ../a.txt; fi",
    "if true; then cd src && cat ../a.txt; fi",
    "while cd src && cat ../a.txt; do true; done",
    "for d in 1 2; do cd src && cat ../a.txt; done",
    "until cd src && cat ../a.txt; do true; done",
    "case x in x) cd src && cat ../a.txt;; esac",
    # a loop: each round starts where the last one ended (`cd src` twice is src/src)
    "for i in 1 2; do cd src; done; cat a.txt",
    "for i in 1 2; do cd src; done && cat a.txt",
    "for i in 1 2; do cd src && true; done; cat a.txt",
    "for i in 1 2\ndo\ncd src\ndone\ncat a.txt",
    "while true; do cd src || break; done; cat a.txt",
    "until false; do cd src; done; cat a.txt",
    "select d in src; do cd $d; done; cat a.txt",
    "for ((i = 0; i < 2; i++)); do cd src; done; cat a.txt",
    "for i in 1 2; do pushd src; done; cat a.txt",
    "for i in 1 2; do builtin cd src; done; cat a.txt",
    "for i in 1 2; do command cd src; done; cat a.txt",
    "for i in 1 2; do eval cd src; done; cat a.txt",
    "bash -c 'for i in 1 2; do cd src; done; cat a.txt'",
    "for i in 1 2; do cd src; done 2>/dev/null; cat a.txt",
    "for i in 1 2; do cd src; done | cat; cat a.txt",
    # `cd` that may not be the shell's builtin
    "/usr/bin/cd src && cat ../a.txt",
    "\\cd src && cat ../a.txt",
    "'cd' src && cat ../a.txt",
    "builtin cd src && cat ../a.txt",
    "command cd src && cat ../a.txt",
    "enable -n cd; cd src && cat ../a.txt",
    "alias cd=true; cd src && cat ../a.txt",
    "cd() { true; }; cd src && cat ../a.txt",
    "eval cd src && cat ../a.txt",
    "sudo cd src && cat ../a.txt",
    "env cd src && cat ../a.txt",
]


@pytest.mark.parametrize("line", KEEPS_ASKING)
def test_a_cd_that_may_not_have_moved_the_line_keeps_the_start_in_play(
    decide_line: Callable[[str], Decision], line: str
) -> None:
    decision = decide_line(line)
    assert decision.effect in ASKED, (line, decision.effect, decision.reason)


@pytest.mark.parametrize(
    ("line", "gates"),
    [
        ("cd src && cat a", (-1, 0)),
        ("cd a && cd b && cat c", (-1, 0, 1)),
        ("a && cd src && b | c && d", (-1, -1, 1, 1, 1)),
        ("cd src && a || b && c", (-1, 0, -1, -1)),
        ("cd src && echo $(cat a)", (-1, 0, 0)),
        ("cd src &&\n cat a\n cat b", (-1, 0, -1)),
        ("cd src; cat a", ()),
        ("x || cd src && cat a", ()),
        ("(cd src) && cat a", ()),
        ("if cd src; then cat a; fi", ()),
    ],
)
def test_the_split_says_which_cd_each_command_waits_for(line: str, gates: tuple[int, ...]) -> None:
    assert split_command_line(line).gates == gates


def test_the_placement_is_judged_again_when_the_folder_becomes_a_link(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text("x\n")
    (tmp_path / "out").mkdir()
    snapshot = build_snapshot(tmp_path / "snap", RULES)
    where = Where.of(root, (tmp_path / "state",))
    line = "cd src && cat ../a.txt"
    assert judge(snapshot, line, where=where).effect == "allow"
    (root / "src").rmdir()
    os.symlink(tmp_path / "out", root / "src")
    assert judge(snapshot, line, where=where).effect in ASKED
