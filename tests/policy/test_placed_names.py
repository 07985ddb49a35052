"""A hostile corpus for placing command lines: where names lead once links are followed.

Six classes, each judged with the real permission code in a real workspace
(``command_support.make_place`` plus the links and files of :func:`build_place`):

1. ``..`` after a name resolves physically (after symbolic links), as the kernel does;
2. names made earlier on the same line (links, copies of links, moves, unpacked
   archives, checkouts) are judged as what they will be;
3. hard links that already exist to toolrt's own files;
4. brace expressions, expanded as bash does;
5. the config folder's sub-folders in the runtime's own layout;
6. git in a repository the agent could have made.

Every hostile line was run in bash in a scratch copy of this workspace (toolrt's files
holding markers) to confirm that it reads or writes what its list says; lines marked
``hole`` get through today (strict xfail, with the reason). ``ORDINARY`` pins lines
touching links, copies, git and braces that must stay allowed under a matching rule.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from command_support import INCLUDE, WIDE, Place, build_snapshot, judge, make_place

from runtime import Runtime, Session
from runtime.policy.bashglob import BRACE_LIMIT, brace_variants
from runtime.policy.placed import Where
from runtime.policy.shell import split_command_line
from runtime.records import Decision, Status
from runtime.settings import Settings
from runtime.snapshot import Snapshot

ASKED = ("ask", "deny")


def hole(reason: str) -> pytest.MarkDecorator:
    """A line the guarantee says must not get through, and that does today."""
    return pytest.mark.xfail(reason=reason, strict=True)


# ---------------------------------------------------------------------------------------
# The workspace: command_support's (toolrt.d and .toolrt inside, the audit log next to
# it, `outside/` next to it, `docs/lnk` -> outside, `sub/back_to_ws` -> the workspace),
# plus links that lead elsewhere and files an agent could have made in earlier calls.

EXTRA_FILES = {
    "x.diff": "--- sub/x\n+++ sub/x\n@@ -1 +1 @@\n-x\n+y\n",
    "templates/allow.yaml": "kind: Policy\n",
    "toolrt.d/more/q.yaml": "kind: Policy\n",
    # A bare-looking repository (HEAD, objects/, refs/) whose config runs a command.
    "evil2/HEAD": "ref: refs/heads/master\n",
    "evil2/config": (
        '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "id >&2; false"\n'
    ),
    "evil2/objects/info/.keep": "",
    "evil2/refs/heads/.keep": "",
    "evil2/work/src/.keep": "",
    # `.git` files: pointing at that repository, outside the workspace, into the
    # workspace's own .git (a submodule, a worktree: fine), and not a gitdir file at all.
    "gf/.git": "gitdir: ../evil2\n",
    "gf/a/b/.keep": "",
    "gm/.git": "gitdir: ../.git/modules/gm\n",
    ".git/HEAD": "ref: refs/heads/main\n",
    ".git/objects/.keep": "",
    ".git/refs/heads/.keep": "",
    ".git/modules/gm/HEAD": "ref: refs/heads/main\n",
    ".git/worktrees/w/HEAD": "ref: refs/heads/w\n",
    "junk/.git": "not a gitdir file\n",
}


def build_place(base: Path) -> Place:
    """command_support's workspace plus this corpus's links, files and hard links."""
    made = make_place(base)
    root = made.root
    for name, text in EXTRA_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "gw").mkdir()
    (root / "gw" / ".git").write_text(f"gitdir: {root}/.git/worktrees/w\n")
    (root / "gfo").mkdir()
    (root / "gfo" / ".git").write_text(f"gitdir: {made.outside}/repo\n")
    for name in ("HEAD", "config", "objects/info/.keep", "refs/heads/.keep"):  # a repository outside, the same as evil2
        (made.outside / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
        (made.outside / "repo" / name).write_text(EXTRA_FILES[f"evil2/{name}"])
    (root / "gl").mkdir()
    os.symlink("../evil2", root / "gl" / ".git")  # a `.git` that is a symbolic link
    os.symlink("../src", root / "docs" / "in_src")  # relative, inside: docs/in_src/.. is the workspace
    (root / "chain").mkdir()
    os.symlink("l2", root / "chain" / "l1")  # a link to a link to a link to the workspace
    os.symlink("../sub/back_to_ws", root / "chain" / "l2")
    (root / "deep" / "a" / "b").mkdir(parents=True)
    os.symlink(root, root / "deep" / "a" / "b" / "top")
    os.symlink("..", root / "sub" / "up")  # sub/up is the workspace; sub/up/.. its parent
    # Relative links that stay inside where they are, and lead elsewhere once copied or
    # moved to another folder (a link keeps its text).
    os.symlink(
        "../outside", root / "sub" / "rel"
    )  # the workspace's outside/ (none): the sibling outside/ from the root
    os.symlink("../toolrt.d", root / "deep" / "a" / "cfg")  # deep/toolrt.d (none): the config from sub/
    os.symlink(
        "../../outside", root / "deep" / "a" / "b" / "rel"
    )  # inside here; in a copy at the top, the sibling outside/
    os.symlink("../../toolrt.d", root / "deep" / "a" / "b" / "cfg")  # inside here; in a copy in sub/, the config
    # Hard links that already exist to toolrt's own files.
    os.link(root / "toolrt.d" / "p.yaml", root / "sub" / "hard.txt")
    os.link(made.audit, root / "sub" / "hard_log")
    os.link(root / ".toolrt" / "audit.sqlite3", root / "docs" / "state.md")
    # Two names for one workspace file: not toolrt's, so both keep working.
    os.link(root / "a.txt", root / "sub" / "a2.txt")
    return made


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    return build_place(tmp_path_factory.mktemp("names") / "p")


#: Rules: none; WIDE (command_support's wildcards) plus the programs used below.
MORE = (
    *WIDE,
    "rsync *",
    "unzip *",
    "bsdtar *",
    "cpio *",
    "gtar *",
    "patch *",
    "pushd *",
    "tee *",
    "chown *",
    "rmdir *",
    "truncate *",
)


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Snapshot]:
    base = tmp_path_factory.mktemp("names-snapshots")
    return {"wide": build_snapshot(base / "wide", MORE), "none": build_snapshot(base / "none", ())}


#: decided(line, rules=..., mode=..., outside=..., cwd=..., layout=...): the decision for a
#: line. {root}, {audit} and {name} stand for the workspace, the audit log and the
#: workspace's folder name. layout "protected" (toolrt.d and .toolrt protected whole) or
#: "config" (toolrt.d given as the config folder, as the runtime does).
Judge = Callable[..., Decision]


def _where(place: Place, outside: str, layout: str) -> Where:
    if layout == "config":
        return Where.of(place.root, (place.root / ".toolrt", place.audit), outside, configs=(place.root / "toolrt.d",))
    return place.where(outside)


def _spelled(place: Place, line: str) -> str:
    for mark, value in (("{root}", str(place.root)), ("{audit}", str(place.audit)), ("{name}", place.root.name)):
        line = line.replace(mark, value)
    return line


@pytest.fixture(scope="module")
def decided(snapshots: dict[str, Snapshot], place: Place) -> Judge:
    def decided(
        line: str,
        *,
        rules: str = "none",
        mode: str = "bypass",
        outside: str = "ask",
        cwd: str | None = None,
        layout: str = "protected",
    ) -> Decision:
        return judge(snapshots[rules], _spelled(place, line), mode=mode, where=_where(place, outside, layout), cwd=cwd)

    return decided


def _assert_protected(decided: Judge, line: str, outside: str) -> None:
    decision = decided(line, outside=outside)
    assert decision.effect == "deny", (line, decision.effect, decision.reason)


def _assert_outside(decided: Judge, line: str) -> None:
    in_bypass = decided(line)
    assert in_bypass.effect in ASKED, (line, in_bypass.effect, in_bypass.reason)
    under_wildcards = decided(line, rules="wide", mode="default")
    assert under_wildcards.effect in ASKED, (line, under_wildcards.effect, under_wildcards.reason)


# =======================================================================================
# 1. `..` after a name resolves after symbolic links.
#    sub/back_to_ws -> the workspace, so sub/back_to_ws/.. is the folder that holds the
#    audit log; docs/in_src -> ../src, so docs/in_src/.. is the workspace. Written
#    lexically, each of these paths stays inside the workspace.
# =======================================================================================

DOTDOT_PROTECTED = [
    pytest.param("cat sub/back_to_ws/../audit.sqlite3", id="audit log through a link to the workspace"),
    pytest.param("cat sub/back_to_ws/../{name}/toolrt.d/p.yaml", id="config through the workspace's parent"),
    pytest.param("cat sub/back_to_ws/../{name}/.toolrt/audit.sqlite3", id="state through the workspace's parent"),
    pytest.param("cat docs/in_src/../toolrt.d/p.yaml", id="config through a relative link to a sibling"),
    pytest.param("cat sub/up/../audit.sqlite3", id="a link whose target is .."),
    pytest.param("cat chain/l1/../audit.sqlite3", id="a link to a link to a link"),
    pytest.param("cat deep/a/b/top/../audit.sqlite3", id="an absolute link three folders down"),
    pytest.param("cat {root}/sub/back_to_ws/../audit.sqlite3", id="an absolute path with .. after a link"),
    pytest.param("cat /{root}/sub/back_to_ws/../audit.sqlite3", id="two leading slashes"),
    pytest.param("cat //{root}/sub/back_to_ws/../audit.sqlite3", id="three leading slashes"),
    pytest.param("cat sub/./back_to_ws/./../audit.sqlite3", id="dot components mixed in"),
    pytest.param("cat ./sub//back_to_ws/.//../audit.sqlite3", id="dots and doubled slashes"),
    pytest.param("cat sub/back_to_ws/src/../../audit.sqlite3", id="two dot-dots in a row after a link"),
    pytest.param("cat sub/back_to_ws/sub/back_to_ws/../audit.sqlite3", id="a link reached through itself"),
    pytest.param("cat sub/back_to_ws/../{name}/sub/back_to_ws/../audit.sqlite3", id="two links each followed by .."),
    pytest.param("cat a.txt sub/back_to_ws/../audit.sqlite3", id="the second operand"),
    pytest.param("cat < sub/back_to_ws/../audit.sqlite3", id="an input redirection"),
    pytest.param("head -n1 < docs/in_src/../toolrt.d/p.yaml", id="an input redirection through a relative link"),
    pytest.param("echo x > docs/in_src/../toolrt.d/p.yaml", id="an output redirection"),
    pytest.param("echo x >> sub/back_to_ws/../audit.sqlite3", id="an appending redirection"),
    pytest.param("cat a.txt 2> sub/up/../audit.sqlite3", id="a stderr redirection"),
    pytest.param("diff --from-file=sub/back_to_ws/../audit.sqlite3 a.txt", id="an option value with ="),
    pytest.param("diff --from-file sub/back_to_ws/../audit.sqlite3 a.txt", id="an option value as the next word"),
    pytest.param("sort -osub/back_to_ws/../audit.sqlite3 a.txt", id="an option value attached"),
    pytest.param("sort --output=docs/in_src/../toolrt.d/p.yaml a.txt", id="a write option value"),
    pytest.param("cp sub/back_to_ws/../audit.sqlite3 copy && cat copy", id="a copy's source"),
    pytest.param("cd sub/back_to_ws/../{name}/.. && cat audit.sqlite3", id="plain cd falls back to the physical path"),
    pytest.param("cd -P sub/back_to_ws/.. && cat audit.sqlite3", id="cd -P with .. after a link"),
    pytest.param("cd sub/back_to_ws && cd -P .. && cat audit.sqlite3", id="cd -P .. after cd into a link"),
    pytest.param("set -P; cd sub/back_to_ws/..; cat audit.sqlite3", id="set -P then cd"),
    pytest.param("pushd sub/back_to_ws/../{name}/.. && cat audit.sqlite3", id="pushd falls back to the physical path"),
    pytest.param("cd sub && cd up/../{name}/.. && cat audit.sqlite3", id="two cds, the second through a link"),
    pytest.param("cd docs/in_src && cat ../toolrt.d/p.yaml", id="a relative path after cd into a link"),
    pytest.param("cd docs/in_src; cat ../toolrt.d/p.yaml", id="a relative path after cd into a link with ;"),
    pytest.param("pushd docs/in_src && head ../toolrt.d/p.yaml", id="a relative path after pushd into a link"),
    pytest.param("cd chain/l1 && cat ../audit.sqlite3", id="cd into a chain of links"),
]


@pytest.mark.parametrize("outside", ["ask", "allow"])
@pytest.mark.parametrize("line", DOTDOT_PROTECTED)
def test_dot_dot_after_a_link_to_toolrt_files_is_denied(decided: Judge, line: str, outside: str) -> None:
    _assert_protected(decided, line, outside)


DOTDOT_OUTSIDE = [
    pytest.param("cat sub/back_to_ws/../outside/x", id="a sibling folder through a link to the workspace"),
    pytest.param("cat docs/lnk/../outside/x", id="through a link that leads out"),
    pytest.param("cat sub/up/../outside/x", id="a link whose target is .."),
    pytest.param("cat chain/l1/../outside/x", id="a link to a link to a link"),
    pytest.param("cat deep/a/b/top/../outside/x", id="an absolute link three folders down"),
    pytest.param("cat sub/back_to_ws/src/../../outside/x", id="two dot-dots in a row"),
    pytest.param("cat ./sub/./back_to_ws/.././outside/x", id="dot components mixed in"),
    pytest.param("cat {root}/sub/back_to_ws/../outside/x", id="an absolute path"),
    pytest.param("cat //{root}/sub/back_to_ws/../outside/x", id="two leading slashes"),
    pytest.param("cat ///{root}/sub/up/../outside/x", id="three leading slashes"),
    pytest.param("head -n1 < sub/back_to_ws/../outside/x", id="an input redirection"),
    pytest.param("cat a.txt > sub/back_to_ws/../outside/new", id="an output redirection"),
    pytest.param("diff --from-file=sub/back_to_ws/../outside/x a.txt", id="an option value"),
    pytest.param("cd sub/back_to_ws/../outside && cat x", id="plain cd with .. after a link"),
    pytest.param("cd -P sub/up/.. && cat outside/x", id="cd -P through a link to .."),
    pytest.param("cd sub/back_to_ws && cd ../outside && cat x", id="cd .. after cd into a link"),
    pytest.param("cd docs/lnk/../outside && cat x", id="plain cd falls back to the physical path"),
    pytest.param("pushd docs/lnk/../outside && cat x", id="pushd falls back to the physical path"),
    pytest.param("cd docs/in_src && cat ../../outside/x", id="two dot-dots after cd into a link"),
]


@pytest.mark.parametrize("line", DOTDOT_OUTSIDE)
def test_dot_dot_after_a_link_out_of_the_workspace_asks(decided: Judge, line: str) -> None:
    _assert_outside(decided, line)


# =======================================================================================
# 2. Names made earlier on the same line. The making command is harmless on its own
#    (its operands are inside the workspace); what a later command reads through the
#    new name is not.
# =======================================================================================

MADE_PROTECTED = [
    # `..` after a made name: the kernel applies it to where the new link leads.
    pytest.param("ln -s ../src sub/o && cat sub/o/../toolrt.d/p.yaml", id="ln -s then .. after the link"),
    pytest.param("ln -sr src sub/o && cat sub/o/../toolrt.d/p.yaml", id="ln -sr then .. after the link"),
    pytest.param("ln -s -t sub ../src && cat sub/src/../toolrt.d/p.yaml", id="ln -s -t then .. after the link"),
    pytest.param("ln -sT ../src sub/o && cat sub/o/../toolrt.d/p.yaml", id="ln -sT then .. after the link"),
    pytest.param(
        "ln -s --target-directory=sub ../src && cat sub/src/../toolrt.d/p.yaml", id="ln --target-directory= then .."
    ),
    pytest.param(
        "ln -s ../src sub/a && ln -s a sub/b && cat sub/b/../toolrt.d/p.yaml", id="a made link to a made link then .."
    ),
    pytest.param("ln -s docs d; cat d/lnk/../audit.sqlite3", id="a made link to a folder holding a link, then .."),
    pytest.param("cp -P docs/lnk sub/o && cat sub/o/../audit.sqlite3", id="cp -P of a link then .."),
    pytest.param("cp -d docs/in_src sub/o && cat sub/o/../toolrt.d/p.yaml", id="cp -d of a relative link then .."),
    pytest.param("cp -a docs d2 && cat d2/lnk/../audit.sqlite3", id="cp -a of a folder then .. after a copied link"),
    pytest.param("cp -a docs sub/d2 && cat sub/d2/in_src/../../toolrt.d/p.yaml", id="cp -a keeps a relative link"),
    pytest.param("cp -r docs d2 && cat d2/lnk/../audit.sqlite3", id="cp -r copies links as links"),
    pytest.param("cp -R docs d2; cat d2/lnk/../audit.sqlite3", id="cp -R copies links as links"),
    pytest.param("mv docs/in_src sub/s && cat sub/s/../toolrt.d/p.yaml", id="mv of a relative link then .."),
    pytest.param("mv docs/lnk o; cat o/../audit.sqlite3", id="mv of a link then .."),
    pytest.param("rsync -a docs/ d2/ && cat d2/lnk/../audit.sqlite3", id="rsync -a then .. after a copied link"),
    pytest.param("rsync -l docs/lnk o && cat o/../audit.sqlite3", id="rsync -l then .."),
    pytest.param("(ln -s ../src sub/o) && cat sub/o/../toolrt.d/p.yaml", id="made in a subshell"),
    pytest.param("ln -s ../src sub/o | cat sub/o/../toolrt.d/p.yaml", id="made in a pipeline"),
    pytest.param("{ mv docs/lnk o; }; cat < o/../audit.sqlite3", id="made in a group, read by a redirection"),
    # A copied or moved relative link keeps its text, read from its new folder.
    pytest.param("cp -P deep/a/cfg sub/c && cat sub/c/p.yaml", id="cp -P of a relative link to another depth"),
    pytest.param("cp -d deep/a/cfg sub/c; cat sub/c/p.yaml", id="cp -d of a relative link to another depth"),
    pytest.param("cp -a deep/a/cfg sub/c && cat sub/c/p.yaml", id="cp -a of a relative link to another depth"),
    pytest.param("mv deep/a/cfg sub/c && cat sub/c/p.yaml", id="mv of a relative link to another depth"),
    pytest.param("mv -t sub deep/a/cfg && cat sub/cfg/p.yaml", id="mv -t of a relative link"),
    pytest.param("rsync -l deep/a/cfg sub/c && cat sub/c/p.yaml", id="rsync -l of a relative link"),
    pytest.param(
        "ln -s ../toolrt.d deep/a/new && mv deep/a/new sub/n && cat sub/n/p.yaml",
        id="a link made on the line, then moved",
    ),
    pytest.param(
        "ln -s ../toolrt.d deep/a/new && cp -P deep/a/new sub/n && cat sub/n/p.yaml",
        id="a link made on the line, then copied",
    ),
    pytest.param("ln --symbolic ../src sub/o && cat sub/o/../toolrt.d/p.yaml", id="ln --symbolic then .."),
    pytest.param("ln -s -- ../src sub/o && cat sub/o/../toolrt.d/p.yaml", id="ln -s -- then .."),
    pytest.param("ln -sfn ../src sub/o && cat sub/o/../toolrt.d/p.yaml", id="ln -sfn then .."),
    pytest.param(
        "cp --no-dereference deep/a/cfg sub/c && cat sub/c/p.yaml", id="cp --no-dereference of a relative link"
    ),
    pytest.param("cp --archive deep/a/cfg sub/c && cat sub/c/p.yaml", id="cp --archive of a relative link"),
    pytest.param("cp -P -- deep/a/cfg sub/c && cat sub/c/p.yaml", id="cp -P -- of a relative link"),
    pytest.param("rsync --links deep/a/cfg sub/c && cat sub/c/p.yaml", id="rsync --links of a relative link"),
    pytest.param("mv -T deep/a/cfg sub/c && cat sub/c/p.yaml", id="mv -T of a relative link"),
    pytest.param(
        "mv --target-directory=sub deep/a/cfg && cat sub/cfg/p.yaml", id="mv --target-directory= of a relative link"
    ),
    pytest.param("cp -P deep/a/cfg sub/ && cat sub/cfg/p.yaml", id="cp -P into a folder"),
    pytest.param(
        "cd deep/a && cp -P cfg ../../sub/c && cd ../.. && cat sub/c/p.yaml", id="cp -P after cd, read after cd back"
    ),
    pytest.param("(cd deep/a && mv cfg ../../sub/c); cat sub/c/p.yaml", id="mv in a subshell after cd"),
    pytest.param("mv deep/a/cfg sub/c && cd sub/c && cat p.yaml", id="cd into the moved link"),
    pytest.param("mv deep/a/cfg sub/c && cat < sub/c/p.yaml", id="the moved link read by a redirection"),
    pytest.param("mv deep/a/cfg sub/c && echo x > sub/c/p.yaml", id="the moved link written by a redirection"),
    # A copied or moved folder's relative links, read from the copy.
    pytest.param("cp -a deep/a/b sub/b3 && cat sub/b3/cfg/p.yaml", id="cp -a of a folder holding a relative link"),
    pytest.param("cp -r deep/a/b sub/b3; cat sub/b3/cfg/p.yaml", id="cp -r of a folder holding a relative link"),
    pytest.param("mv deep/a/b sub/b3 && cat sub/b3/cfg/p.yaml", id="mv of a folder holding a relative link"),
    pytest.param(
        "rsync -a deep/a/b/ sub/b3/ && cat sub/b3/cfg/p.yaml", id="rsync -a of a folder holding a relative link"
    ),
    pytest.param("mv deep/a/b sub/b3 && cd sub/b3/cfg && cat p.yaml", id="cd into a moved folder's relative link"),
    # A made name that is toolrt's files, or a folder holding them.
    pytest.param("mv sub/back_to_ws w; cat w/toolrt.d/p.yaml", id="mv of a link to the workspace"),
    pytest.param("mv sub/up u && cat u/toolrt.d/p.yaml", id="mv of a link to .."),
    pytest.param("ln -s sub/up o", id="ln -s to a link to the workspace"),
    pytest.param("ln -s ./sub/../toolrt.d c", id="ln -s to the config with dots"),
    pytest.param("cd sub && ln -s ../toolrt.d c", id="ln -s to the config after cd"),
    pytest.param("ln -s ../sub/back_to_ws docs/w && cat docs/w/toolrt.d/p.yaml", id="ln -s to a link to the workspace"),
    pytest.param("cp -P sub/back_to_ws w && cat w/toolrt.d/p.yaml", id="cp -P of a link to the workspace"),
    pytest.param("cp -s {root}/toolrt.d/p.yaml o && cat o", id="cp -s of the config"),
    pytest.param("ln toolrt.d/p.yaml h && cat h", id="ln (hard) of the config"),
    pytest.param("ln -t sub toolrt.d/p.yaml && cat sub/p.yaml", id="ln -t (hard) of the config"),
    pytest.param("cp -l toolrt.d/p.yaml h; cat h", id="cp -l of the config"),
    pytest.param("cp -al toolrt.d c && cat c/p.yaml", id="cp -al of the config folder"),
    pytest.param("rsync -aH toolrt.d/ c/ && cat c/p.yaml", id="rsync -H of the config folder"),
    pytest.param("ln sub/hard.txt h2 && cat h2", id="ln of a hard link to the config"),
]


@pytest.mark.parametrize("outside", ["ask", "allow"])
@pytest.mark.parametrize("line", MADE_PROTECTED)
def test_a_name_made_earlier_on_the_line_that_reaches_toolrt_files_is_denied(
    decided: Judge, line: str, outside: str
) -> None:
    _assert_protected(decided, line, outside)


MADE_OUTSIDE = [
    pytest.param("ln -s docs d && cat d/lnk/x", id="ln -s of a folder holding a link out"),
    pytest.param("ln -s ../docs sub/d && cat sub/d/lnk/x", id="ln -s with a target read from the link's folder"),
    pytest.param("cd sub && ln -s ../docs d && cat d/lnk/x", id="ln -s after cd"),
    pytest.param("ln -s ../src sub/o && cat sub/o/../../outside/x", id="ln -s then two dot-dots"),
    pytest.param("ln -s docs d && ln -s d/lnk e && cat e/x", id="a made link to a made link"),
    pytest.param("mv docs d && cat d/lnk/x", id="mv of a folder holding a link out"),
    pytest.param("mv -t sub docs && cat sub/docs/lnk/x", id="mv -t"),
    pytest.param("cp -a docs d2 && cat d2/lnk/x", id="cp -a"),
    pytest.param("cp -r docs d2 && cat d2/lnk/x", id="cp -r"),
    pytest.param("cp -R docs d2 && cat d2/lnk/x", id="cp -R"),
    pytest.param("cp -dr docs d2 && cat d2/lnk/x", id="cp -dr"),
    pytest.param("cp -a docs -t sub && cat sub/docs/lnk/x", id="cp -a -t"),
    pytest.param("cp -a --target-directory=sub docs && cat sub/docs/lnk/x", id="cp --target-directory="),
    pytest.param("cp -al docs d2 && cat d2/lnk/x", id="cp -al"),
    pytest.param("cp -rs {root}/docs d2 && cat d2/lnk/x", id="cp -rs"),
    pytest.param("rsync -a docs/ d2/ && cat d2/lnk/x", id="rsync -a with a trailing slash"),
    pytest.param("rsync -rl docs d2 && cat d2/docs/lnk/x", id="rsync -rl into a folder"),
    pytest.param("rsync -aH docs d2 && cat d2/docs/lnk/x", id="rsync -aH"),
    pytest.param("cp -P sub/rel r && cat r/x", id="cp -P of a relative link to another depth"),
    pytest.param("cp -d sub/rel r; cat r/x", id="cp -d of a relative link to another depth"),
    pytest.param("mv sub/rel r && cat r/x", id="mv of a relative link to another depth"),
    pytest.param("rsync -l sub/rel r && cat r/x", id="rsync -l of a relative link to another depth"),
    pytest.param("ln -s ../outside sub/made && mv sub/made r && cat r/x", id="a link made on the line, then moved"),
    pytest.param("cp -a deep/a/b b3 && cat b3/rel/x", id="cp -a of a folder holding a relative link"),
    pytest.param("cp -R deep/a/b b3; cat b3/rel/x", id="cp -R of a folder holding a relative link"),
    pytest.param("mv deep/a/b b3 && cat b3/rel/x", id="mv of a folder holding a relative link"),
    pytest.param("rsync -a deep/a/b/ b3/ && cat b3/rel/x", id="rsync -a of a folder holding a relative link"),
    pytest.param("cp -r deep/a/b b3 && cd b3/rel && cat x", id="cd into a copied folder's relative link"),
    pytest.param("ln -s docs d | cat d/lnk/x", id="in a pipeline"),
    pytest.param("(ln -s docs d); cat d/lnk/x", id="in a subshell"),
    pytest.param("(cd sub && ln -s ../docs d) && cat sub/d/lnk/x", id="cd and ln in a subshell"),
    pytest.param("ln -s docs d && cd d/lnk && cat x", id="cd through the made link"),
    pytest.param("ln -s docs d && cat < d/lnk/x", id="read by a redirection"),
    pytest.param("ln -s docs d && echo x > d/lnk/new", id="written by a redirection"),
    pytest.param("ln -s docs d && diff --from-file=d/lnk/x a.txt", id="an option value"),
    pytest.param("ln -s docs d && cp d/lnk/x copy && cat copy", id="a copy's source"),
]


@pytest.mark.parametrize("line", MADE_OUTSIDE)
def test_a_name_made_earlier_on_the_line_that_leads_out_asks(decided: Judge, line: str) -> None:
    _assert_outside(decided, line)


# Programs that write links the line does not show (archives, patches, checkouts): a
# later path below the folder they wrote may go through one. Asked, also when paths
# outside the workspace are allowed.
UNPACKED = [
    pytest.param("tar -xf a.tar -C sub && cat sub/hello.txt", id="tar -xf -C"),
    pytest.param("tar xf a.tar -C sub && cat sub/hello.txt", id="tar xf (old style)"),
    pytest.param("tar xvf a.tar -C sub && cat sub/hello.txt", id="tar xvf (old style)"),
    pytest.param("tar -C sub -xf a.tar; cat sub/hello.txt", id="tar -C first"),
    pytest.param("tar -Csub -xvf a.tar && cat sub/hello.txt", id="tar -CDIR"),
    pytest.param("tar -x -f a.tar --directory sub && cat sub/hello.txt", id="tar -x --directory DIR"),
    pytest.param("tar --extract -f a.tar -C sub && cat sub/hello.txt", id="tar --extract"),
    pytest.param("tar --get -f a.tar --directory=sub && cat sub/hello.txt", id="tar --get --directory="),
    pytest.param("tar --extract --file=a.tar -C sub && cat sub/hello.txt", id="tar --file="),
    pytest.param("tar -xzf a.tgz -C sub && cat sub/hello.txt", id="tar -xzf"),
    pytest.param("gtar -xf a.tar -C sub && cat sub/hello.txt", id="gtar"),
    pytest.param("cd sub && tar -xf ../a.tar && cat hello.txt", id="tar after cd"),
    pytest.param("bsdtar -xf a.tar -C sub && cat sub/hello.txt", id="bsdtar"),
    pytest.param("cd sub && bsdtar xf ../a.tar && cat hello.txt", id="bsdtar after cd"),
    pytest.param("unzip -d sub evil.zip && cat sub/x", id="unzip -d first"),
    pytest.param("unzip evil.zip -d sub && cat sub/x", id="unzip -d last"),
    pytest.param("unzip -o -q evil.zip -d sub && cat sub/x", id="unzip -o -q"),
    pytest.param("cd sub && cpio -id < ../a.cpio && cat x", id="cpio -id"),
    pytest.param("patch -d sub -p0 < x.diff && cat sub/x", id="patch -d"),
    pytest.param("git -C sub apply ../x.diff && cat sub/x", id="git apply"),
    pytest.param("git -C sub checkout main -- . && cat sub/x", id="git checkout"),
    pytest.param("cd sub && git checkout main -- . && cat x", id="git checkout after cd"),
    pytest.param("git -C sub switch topic && cat sub/x", id="git switch"),
    pytest.param("git -C sub restore . && cat sub/x", id="git restore"),
    pytest.param("git -C sub reset --hard && cat sub/x", id="git reset --hard"),
    pytest.param("git -C sub stash pop && cat sub/x", id="git stash pop"),
    pytest.param("git -C sub pull && cat sub/x", id="git pull"),
    pytest.param("git -C sub merge topic && cat sub/x", id="git merge"),
    pytest.param("git -C sub rebase main && cat sub/x", id="git rebase"),
    pytest.param("git -C sub cherry-pick abc && cat sub/x", id="git cherry-pick"),
    pytest.param("git clone https://example.com/r.git sub/r && cat sub/r/x", id="git clone then a path in the clone"),
    pytest.param("git -C sub clone https://example.com/r.git r && cat sub/r/x", id="git -C clone"),
]


@pytest.mark.parametrize("line", UNPACKED)
def test_a_path_after_an_unpacked_archive_patch_or_checkout_asks(decided: Judge, line: str) -> None:
    assert decided(line).effect in ASKED
    assert decided(line, rules="wide", mode="default").effect in ASKED


@pytest.mark.parametrize(
    "line",
    [pytest.param(p.values[0], id=p.id) for p in UNPACKED],
)
def test_a_path_after_an_unpacked_archive_asks_also_when_outside_paths_are_allowed(decided: Judge, line: str) -> None:
    assert decided(line, outside="allow").effect in ASKED


# Writing into the folder that holds toolrt's files from input the line does not show.
TREE_WRITERS = [
    pytest.param("tar -xf a.tar", id="tar -xf"),
    pytest.param("tar xf a.tar", id="tar xf"),
    pytest.param("cd sub && tar xf ../a.tar -C ..", id="tar -C .. after cd"),
    pytest.param("tar -xf a.tar -C sub/back_to_ws", id="tar -C a link to the workspace"),
    pytest.param("unzip evil.zip", id="unzip"),
    pytest.param("unzip -o evil.zip -d .", id="unzip -d ."),
    pytest.param("bsdtar -xf a.tar", id="bsdtar -xf"),
    pytest.param("bsdtar -x -f a.tar -C .", id="bsdtar -x -C ."),
    pytest.param("cpio -idu < a.cpio", id="cpio -idu"),
    pytest.param("cpio --extract --make-directories --unconditional < a.cpio", id="cpio --extract"),
    pytest.param("patch -p0 < x.diff", id="patch"),
    pytest.param("patch -p0 -i x.diff", id="patch -i"),
    pytest.param("git apply x.diff", id="git apply"),
    pytest.param("git checkout main", id="git checkout"),
    pytest.param("git reset --hard", id="git reset --hard"),
    pytest.param("git stash pop", id="git stash pop"),
    pytest.param("git pull", id="git pull"),
    pytest.param("git merge topic", id="git merge"),
    pytest.param("git -C sub/back_to_ws reset --hard", id="git -C a link to the workspace"),
    pytest.param("cd toolrt.d && tar xf ../a.tar", id="tar in the config folder"),
]


@pytest.mark.parametrize("line", TREE_WRITERS)
def test_a_tree_writer_in_the_folder_that_holds_toolrt_files_asks_in_bypass_mode(decided: Judge, line: str) -> None:
    assert decided(line).effect in ASKED


# =======================================================================================
# 3. Hard links that already exist: sub/hard.txt is toolrt.d/p.yaml, sub/hard_log the
#    audit log, docs/state.md toolrt's state file; sub/a2.txt is a.txt (not toolrt's).
# =======================================================================================

HARD_LINKED = [
    pytest.param("cat sub/hard.txt", id="cat"),
    pytest.param("grep -v zzz sub/hard.txt", id="grep"),
    pytest.param("sed -n p sub/hard.txt", id="sed -n p"),
    pytest.param("head sub/hard.txt", id="head"),
    pytest.param("tail -n 5 sub/hard.txt", id="tail"),
    pytest.param("paste sub/hard.txt", id="paste"),
    pytest.param("cat < sub/hard.txt", id="an input redirection"),
    pytest.param("cat a.txt > sub/hard.txt", id="an output redirection writes the config"),
    pytest.param("echo x >> sub/hard_log", id="appending to the audit log"),
    pytest.param("cat sub/hard_log", id="the audit log"),
    pytest.param("cat docs/state.md", id="the state file"),
    pytest.param("cp sub/hard.txt copy.txt && cat copy.txt", id="a copy's source"),
    pytest.param("sed -i s/Policy/Other/ sub/hard.txt", id="sed -i"),
    pytest.param("cat sub/back_to_ws/sub/hard.txt", id="through a link to the workspace"),
    pytest.param("cat {root}/sub/hard.txt", id="an absolute path"),
    pytest.param("cat sub/../sub/hard.txt", id="with .."),
    pytest.param("cd sub && cat hard.txt", id="after cd"),
    pytest.param("cat sub/*.txt", id="matched by a glob"),
    pytest.param("cat sub/hard.{txt,md}", id="spelled with a brace list"),
    pytest.param("diff --from-file=sub/hard.txt a.txt", id="an option value"),
    pytest.param("grep -r -v zzz sub", id="grep -r over the folder"),
    pytest.param("cat docs/*", id="a glob of the folder"),
    pytest.param("cat docs/state.m?", id="a one-letter glob"),
]


@pytest.mark.parametrize("line", HARD_LINKED)
def test_a_hard_link_to_toolrt_files_is_denied(decided: Judge, line: str) -> None:
    decision = decided(line)
    assert decision.effect == "deny", (line, decision.effect, decision.reason)


# =======================================================================================
# 4. Brace expressions.
# =======================================================================================

BRACES_PROTECTED = [
    pytest.param("cat {toolrt.d,src}/p.yaml", id="a list"),
    pytest.param("cat {{a,b},{toolrt.d/p,c}}.yaml", id="nested lists"),
    pytest.param("cat {a,{b,{c,{d,toolrt.d/p.yaml}}}}", id="deeply nested lists"),
    pytest.param("cat {x,{y,toolrt.d/p.y}}aml", id="nested with a suffix"),
    pytest.param("cat toolrt{,}.d/p.yaml", id="an empty alternative"),
    pytest.param("cat toolrt.d/p.y{a,}ml", id="an empty last alternative"),
    pytest.param("cat {,,,}{root}/../audit.sqlite3", id="only empty alternatives"),
    pytest.param("cat {s..u}oolrt.d/p.yaml", id="a letter sequence"),
    pytest.param("cat {t,x}oolrt.d/p.yaml", id="a letter list"),
    pytest.param("cat {audit}{,}", id="the audit log twice"),
    pytest.param("cat {root}/../audit.sqlite{1..5}", id="a number sequence"),
    pytest.param("cat {root}/../audit.sqlite{1..9..2}", id="a sequence with a step"),
    pytest.param("cat {root}/../audit.sqlite{0..10..3}", id="a step that lands on it"),
    pytest.param("cat {root}/../audit.sqlite{9..1..3}", id="a descending sequence with a step"),
    pytest.param("cat {root}/../audit.sqlite{1..5..-2}", id="a negative step"),
    pytest.param("cat {root}/../audit.sqlite{-3..3}", id="from a negative number"),
    pytest.param("cat {root}/../audit.{r..t}qlite3", id="letters in the middle"),
    pytest.param("cat {root}/../audit.{t..r}qlite3", id="descending letters"),
    pytest.param("cat {root}/../audit.{a..z..2}qlite3", id="letters with a step"),
    pytest.param("cat {root}/../audit.{q..u..2}qlite3", id="letters with a step that lands on it"),
    pytest.param("cat {toolrt.d,x}/p.yaml${x}", id="a brace before a parameter"),
    pytest.param("cat toolrt.d/${x}p.{yaml,x}", id="a brace after a parameter"),
    pytest.param('cat "toolrt.d"{/p.yaml,x}', id="a quoted prefix"),
    pytest.param('cat {"toolrt.d/p.yaml",x}', id="a quoted alternative"),
    pytest.param("cat {'toolrt.d/p.yaml',x}", id="a single-quoted alternative"),
    pytest.param("cat {..,..}/{name}/toolrt.d/p.yaml", id="the workspace's parent"),
    pytest.param("cp {toolrt.d/p.yaml,x} && cat x", id="cp of two variants"),
    pytest.param("mv {toolrt.d,cfg}", id="mv of two variants"),
    pytest.param("cat a.txt > {toolrt.d/p.yaml,}", id="a redirection with an empty alternative"),
    pytest.param("cat a.txt > {t..t}oolrt.d/p.yaml", id="a redirection with a one-letter sequence"),
    pytest.param("cat < {t..t}oolrt.d/p.yaml", id="an input redirection"),
    pytest.param("cat a.txt >> toolrt.d/p.{y..y}aml", id="an appending redirection"),
    pytest.param("cat a.txt 2> toolrt.d/p.{y..y}aml", id="a stderr redirection"),
    pytest.param("cat a.txt &> {{audit},}", id="a redirection of both streams"),
    pytest.param("cat {src,docs}{,}{,}{,}{,}{,}{,}{,}{,}{,}{,}{,}/../toolrt.d/p.yaml", id="8192 variants"),
    pytest.param("cat toolrt.d/p.{{1..5000},yaml}", id="5000 numbers"),
    pytest.param("cat toolrt.d/p.{yaml,{1..4096}}", id="one variant over the limit"),
    pytest.param("cat toolrt.d/p.{yaml,{a..z}{a..z}{a..z}}", id="17576 letter variants"),
    pytest.param("cat {{audit},\\}}", id="an escaped closing brace"),
    pytest.param("cat {\\{,toolrt.d/p.yaml}", id="an escaped opening brace"),
]


@pytest.mark.parametrize("line", BRACES_PROTECTED)
def test_a_brace_expression_spelling_toolrt_files_is_denied(decided: Judge, line: str) -> None:
    decision = decided(line, outside="allow")
    assert decision.effect == "deny", (line, decision.effect, decision.reason)


BRACES_OUTSIDE = [
    pytest.param("cat {/etc/passwd,a.txt}", id="an absolute alternative"),
    pytest.param("cat {/,}etc/passwd", id="a slash as an alternative"),
    pytest.param("ls /{e..e}tc", id="a one-letter sequence"),
    pytest.param("cat {..,.}/outside/x", id="dot-dot as an alternative"),
    pytest.param("cat {docs/lnk,src}/x", id="a link out as an alternative"),
    pytest.param("cat {sub/back_to_ws/..,.}/outside/x", id="dot-dot after a link inside an alternative"),
    pytest.param("cat a.txt > {{root}/../outside/new,}", id="a redirection"),
    pytest.param("cat a.txt > {../outside/new,}", id="a redirection to the parent"),
    pytest.param("cat {a,{b,/etc/passwd}}", id="nested"),
    pytest.param("cat /etc/pass{v..x}d", id="a sequence inside an absolute path"),
]


@pytest.mark.parametrize("line", BRACES_OUTSIDE)
def test_a_brace_expression_spelling_an_outside_path_asks(decided: Judge, line: str) -> None:
    _assert_outside(decided, line)


def test_a_brace_list_at_the_limit_is_checked_not_denied(decided: Judge) -> None:
    assert decided(f"ls x{{1..{BRACE_LIMIT}}}").effect == "allow"
    assert decided(f"ls x{{1..{BRACE_LIMIT + 1}}}").effect == "deny"


def test_zero_padded_sequences_do_not_spell_the_unpadded_name(decided: Judge) -> None:
    # {00..3} is 00 01 02 03 in bash: none of them is audit.sqlite3 (outside: asked, not denied).
    assert decided("cat {root}/../audit.sqlite{00..3}").effect == "ask"
    assert decided("cat {root}/../audit.sqlite{03..3}").effect == "ask"


# brace_variants against bash itself: each word is expanded by `printf '%s\n' WORD`.
BASH_WORDS = [
    "{a,b}",
    "x{a,b}y",
    "{a,b}{c,d}",
    "{{a,b},{c,d}}",
    "{a,{b,{c,d}}}",
    "{a,}",
    "{,a}",
    "{,,}x",
    "a{,}b",
    "{a,b,}{1,2}",
    "{1..5}",
    "{5..1}",
    "{1..10..3}",
    "{10..1..3}",
    "{1..5..-2}",
    "{-3..3}",
    "{3..-3..2}",
    "{-5..-1}",
    "{00..3}",
    "{03..3}",
    "{1..03}",
    "{-01..2}",
    "{007..10}",
    "{a..e}",
    "{e..a}",
    "{a..z..5}",
    "{W..Z}",
    "{Z..W..2}",
    "{x..x}",
    "{1..1}",
    "p.{yaml,yml}",
    "{a..c}{1..2}",
    "x{1..3}y{a,b}",
    "${x}{a,b}",
    "{a,b}${x}",
    "a${x,y}b",
    "{a}",
    "{a..}",
    "{..b}",
    "{a,b",
    "a,b}",
    "{a..b..c}",
    "{1..2..0}",
    "{{a,b}",
    "{a,b}}",
    "{a,{b}",
    "{a..e..-2}",
    "{9..11}",
    "{-1..1}",
    "{toolrt.d,x}/p.yaml",
    "{/,}etc",
]


@pytest.mark.parametrize("word", BASH_WORDS)
def test_brace_variants_expand_as_bash_does(word: str, tmp_path: Path) -> None:
    ran = subprocess.run(
        ["bash", "-c", f"x=; printf '%s\\n' {word}"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    expected = [item.replace("$", "") for item in ran.stdout.splitlines()]
    got = brace_variants(word)
    assert got is not None
    # `${x}` (empty here) is kept as text by brace_variants; bash drops the empty words.
    words = [variant.replace("${x}", "").replace("${x,y}", "") for variant in got]
    assert [word for word in words if word] == expected


def test_brace_variants_over_the_limit_are_none() -> None:
    assert brace_variants("{1..4097}") is None
    assert brace_variants("{a,b}" * 13) is None
    assert brace_variants("{1..4096}") is not None
    assert len(brace_variants("{a,b}" * 12) or []) == BRACE_LIMIT


# =======================================================================================
# 5. The config folder of the runtime's layout (toolrt.d given as the config folder):
#    its sub-folders hold config too.
# =======================================================================================

CONFIG_DENIED = [
    pytest.param("rm -rf toolrt.d/more", id="rm -rf"),
    pytest.param("rm -r toolrt.d/more/", id="rm -r with a trailing slash"),
    pytest.param("rm -rf ./toolrt.d/more", id="rm -rf ./"),
    pytest.param("rm -rf {root}/toolrt.d/more", id="rm -rf absolute"),
    pytest.param("rm -rf sub/back_to_ws/toolrt.d/more", id="rm -rf through a link"),
    pytest.param("rm -rf docs/in_src/../toolrt.d/more", id="rm -rf through .. after a link"),
    pytest.param("rm -rf toolrt.d/m*", id="rm -rf of a glob"),
    pytest.param("rm -rf toolrt.d/{more,x}", id="rm -rf of a brace list"),
    pytest.param("cd toolrt.d && rm -rf more", id="rm -rf after cd"),
    pytest.param("cd toolrt.d/more && rm -rf ../more", id="rm -rf from inside it"),
    pytest.param("mv toolrt.d/more {root}/../moved", id="mv out of the workspace"),
    pytest.param("mv toolrt.d/more toolrt.d/less", id="mv within the config"),
    pytest.param("mv -t sub toolrt.d/more", id="mv -t"),
    pytest.param("mv toolrt.d/more/q.yaml x", id="mv of its YAML file"),
    pytest.param("chmod -R 000 toolrt.d/more", id="chmod -R"),
    pytest.param("chmod 000 toolrt.d/more/", id="chmod"),
    pytest.param("chown -R nobody toolrt.d/more", id="chown -R"),
    pytest.param("find toolrt.d/more -delete", id="find -delete"),
    pytest.param("find toolrt.d -mindepth 1 -delete", id="find -delete below the config"),
    pytest.param("truncate -s0 toolrt.d/more/q.yaml", id="truncate of its YAML file"),
    pytest.param("ln -s ../templates toolrt.d/t", id="a link in the config to YAML elsewhere"),
    pytest.param("ln templates/allow.yaml toolrt.d/more/h.yaml", id="a hard link making new config"),
    pytest.param("cp a.txt toolrt.d/more/x.yml", id="a new YAML file in a sub-folder"),
]


@pytest.mark.parametrize("line", CONFIG_DENIED)
def test_a_config_sub_folder_cannot_be_deleted_moved_or_locked(decided: Judge, line: str) -> None:
    decision = decided(line, layout="config")
    assert decision.effect == "deny", (line, decision.effect, decision.reason)


CONFIG_ASKED = [
    pytest.param("cp -r templates toolrt.d/more/x", id="cp -r into a sub-folder"),
    pytest.param("cp -a templates toolrt.d/more/", id="cp -a into a sub-folder"),
    pytest.param("cp templates/allow.yaml toolrt.d/more/", id="cp of a YAML file into a sub-folder"),
    pytest.param("cp -r templates/. toolrt.d/", id="cp -r of a folder's contents into the config"),
    pytest.param("mv templates toolrt.d/more/t", id="mv of a folder into a sub-folder"),
    pytest.param("mv a.txt toolrt.d/more/a.txt", id="mv of a file into a sub-folder"),
    pytest.param("rsync -a templates/ toolrt.d/more/", id="rsync -a"),
    pytest.param("rsync -r templates toolrt.d", id="rsync -r into the config"),
    pytest.param("tar -C toolrt.d/more -xf a.tar", id="tar -C"),
    pytest.param("tar -xf a.tar -C toolrt.d/more", id="tar -xf -C"),
    pytest.param("cd toolrt.d/more && tar xf ../../a.tar", id="tar after cd"),
    pytest.param("bsdtar -xf a.tar -C toolrt.d/more", id="bsdtar -C"),
    pytest.param("cd toolrt.d/more && cpio -id < ../../a.cpio", id="cpio after cd"),
    pytest.param("find templates | cpio -pdm toolrt.d/more", id="cpio -p into a sub-folder"),
    pytest.param(
        "find templates | cpio --pass-through --make-directories toolrt.d", id="cpio --pass-through into the config"
    ),
    pytest.param("unzip -d toolrt.d/more evil.zip", id="unzip -d first"),
    pytest.param("unzip evil.zip -d toolrt.d/more", id="unzip -d last"),
    pytest.param("patch -d toolrt.d/more -p0 < x.diff", id="patch -d"),
    pytest.param("git -C toolrt.d/more apply ../../x.diff", id="git apply"),
    pytest.param("git clone https://example.com/r.git toolrt.d/r", id="git clone into the config"),
    pytest.param("git clone https://example.com/r.git toolrt.d/more/r", id="git clone into a sub-folder"),
    pytest.param("git clone -b main --depth 1 https://example.com/r.git toolrt.d/r", id="git clone with options"),
    pytest.param("cd toolrt.d && git clone https://example.com/r.git", id="git clone named after the URL"),
    pytest.param("git -C toolrt.d clone https://example.com/r.git", id="git -C clone"),
    pytest.param("echo x > toolrt.d/more/notes.txt", id="a redirection writing a non-YAML file"),
    pytest.param("cp a.txt toolrt.d/readme.txt", id="cp of a non-YAML file"),
    pytest.param("touch toolrt.d/more/new", id="touch"),
    pytest.param("tee toolrt.d/more/n.txt < a.txt", id="tee"),
    pytest.param("mkdir toolrt.d/more/sub", id="mkdir"),
]


@pytest.mark.parametrize("line", CONFIG_ASKED)
def test_writing_into_a_config_sub_folder_asks_in_bypass_mode(decided: Judge, line: str) -> None:
    assert decided(line, layout="config").effect in ASKED


# =======================================================================================
# 6. git in a repository the agent could have made: evil2 looks like a repository (HEAD,
#    objects/, refs/); gf/.git points at it, gfo/.git outside the workspace, gl/.git is
#    a link to it; gm/.git and gw/.git point into the workspace's own .git (fine).
# =======================================================================================

GIT_MADE = [
    pytest.param("git status", "evil2", id="run in the folder"),
    pytest.param("git status", "evil2/objects", id="run in a folder below it"),
    pytest.param("git -C evil2 status", None, id="git -C"),
    pytest.param("git -C evil2/refs status", None, id="git -C a folder below it"),
    pytest.param("git -C evil2/work/src status", None, id="git -C two folders below it"),
    pytest.param("git -C evil2 -C objects status", None, id="two -C options"),
    pytest.param("git -C {root}/evil2 status", None, id="git -C absolute"),
    pytest.param("git -C sub/back_to_ws/evil2 status", None, id="git -C through a link"),
    pytest.param("cd evil2 && git status", None, id="after cd"),
    pytest.param("cd evil2; git status", None, id="after cd with ;"),
    pytest.param("(cd evil2 && git status)", None, id="in a subshell"),
    pytest.param("cd docs && cd ../evil2 && git status", None, id="after two cds"),
    pytest.param("cd sub && git -C ../evil2 status", None, id="git -C after cd"),
    pytest.param("git --git-dir=evil2 status", None, id="--git-dir="),
    pytest.param("git --git-dir evil2 status", None, id="--git-dir"),
    pytest.param("GIT_DIR=evil2 git status", None, id="GIT_DIR"),
    pytest.param("git status", "gf", id="a .git file pointing at it"),
    pytest.param("git -C gf status", None, id="git -C a .git file"),
    pytest.param("git -C gf/a/b status", None, id="git -C below a .git file"),
    pytest.param("cd gf/a && git status", None, id="cd below a .git file"),
    pytest.param("git -C gfo status", None, id="a .git file pointing outside"),
    pytest.param("git -C gl status", None, id="a .git link"),
    pytest.param("git diff", "gl", id="a .git link, run in the folder"),
]


@pytest.mark.parametrize(("line", "cwd"), GIT_MADE)
def test_git_in_a_repository_the_agent_could_have_made_is_covered_by_no_allow_rule(
    decided: Judge, line: str, cwd: str | None
) -> None:
    decision = decided(line, rules="wide", mode="default", cwd=cwd)
    assert decision.effect in ASKED, (line, decision.effect, decision.reason)


GIT_FINE = [
    pytest.param("git status", None, id="the workspace's own repository"),
    pytest.param("git -C gm status", None, id="a submodule's .git file"),
    pytest.param("git status", "gw", id="a worktree's .git file"),
    pytest.param("git -C junk status", None, id="a .git file that is no gitdir file"),
    pytest.param("git init evil3", None, id="git init"),
    pytest.param("git -C evil2 version", None, id="git version opens no repository"),
    pytest.param("git clone evil2 copy", None, id="git clone of it into a new folder"),
]


@pytest.mark.parametrize(("line", "cwd"), GIT_FINE)
def test_git_in_the_workspace_own_repository_stays_allowed(decided: Judge, line: str, cwd: str | None) -> None:
    decision = decided(line, rules="wide", mode="default", cwd=cwd)
    assert decision.effect == "allow", (line, decision.effect, decision.reason)


# =======================================================================================
# The placement cache (Where.recent): a line remembered as harmless is judged again
# once one of its names gains a hard link to toolrt's files.
# =======================================================================================


@pytest.fixture
def fresh(tmp_path: Path, snapshots: dict[str, Snapshot]) -> tuple[Place, Where, Callable[[str], Decision]]:
    made = build_place(tmp_path / "p")
    where = made.where()  # one Where, so its cache of recent lines is used
    return made, where, lambda line: judge(snapshots["wide"], line, mode="default", where=where)


def test_a_remembered_line_is_judged_again_when_its_file_gains_a_toolrt_name(
    fresh: tuple[Place, Where, Callable[[str], Decision]],
) -> None:
    made, where, decide = fresh
    (made.root / "sub" / "n.txt").write_text("n\n")
    assert decide("cat sub/n.txt").effect == "allow"
    assert decide("cat sub/n.txt").effect == "allow"
    assert where.recent, "the line was remembered"
    os.link(made.root / "sub" / "n.txt", made.root / "toolrt.d" / "n.yaml")  # now one of toolrt's files
    assert decide("cat sub/n.txt").effect == "deny"


def test_a_remembered_line_is_judged_again_when_its_name_becomes_a_hard_link(
    fresh: tuple[Place, Where, Callable[[str], Decision]],
) -> None:
    made, _, decide = fresh
    (made.root / "sub" / "m.txt").write_text("m\n")
    assert decide("head sub/m.txt").effect == "allow"
    (made.root / "sub" / "m.txt").unlink()
    os.link(made.root / "toolrt.d" / "p.yaml", made.root / "sub" / "m.txt")
    assert decide("head sub/m.txt").effect == "deny"


def test_a_remembered_line_naming_a_missing_file_is_judged_again_once_it_is_a_hard_link(
    fresh: tuple[Place, Where, Callable[[str], Decision]],
) -> None:
    made, _, decide = fresh
    assert decide("cat sub/later.txt").effect == "allow"
    os.link(made.audit, made.root / "sub" / "later.txt")
    assert decide("cat sub/later.txt").effect == "deny"


def test_a_remembered_line_is_judged_again_when_a_folder_on_its_path_becomes_a_link(
    fresh: tuple[Place, Where, Callable[[str], Decision]],
) -> None:
    made, _, decide = fresh
    (made.root / "sub" / "dir").mkdir()
    assert decide("cat sub/dir/../audit.sqlite3").effect == "allow"  # sub/audit.sqlite3, inside
    (made.root / "sub" / "dir").rmdir()
    os.symlink(made.root, made.root / "sub" / "dir")
    assert decide("cat sub/dir/../audit.sqlite3").effect == "deny"  # now the workspace's parent: the audit log


def test_two_names_for_one_workspace_file_keep_working(fresh: tuple[Place, Where, Callable[[str], Decision]]) -> None:
    _, _, decide = fresh
    for line in (
        "cat sub/a2.txt",
        "cat a.txt",
        "grep b sub/a2.txt",
        "head -n1 sub/a2.txt",
        "sed -n p sub/a2.txt",
        "cat sub/a*.txt",
        "cat sub/a2.txt",
    ):
        assert decide(line).effect == "allow", line


# =======================================================================================
# Ordinary lines touching links, copies, git and braces: allowed by a rule for their
# programs, in a workspace whose toolrt files (config, state, audit log) are outside it.
# =======================================================================================

ORDINARY_RULES = (
    "ls *",
    "cat *",
    "cp *",
    "mv *",
    "ln *",
    "rsync *",
    "tar *",
    "unzip *",
    "git *",
    "mkdir *",
    "touch *",
    "echo *",
    "cd *",
    "pushd *",
    "patch *",
    "readlink *",
    "head *",
    "diff *",
    "grep *",
    "wc *",
    "rm *",
    "find *",
    "tar -cf *",
    "unzip -o * -d *",
    "rsync -av --delete *",
)


@pytest.fixture(scope="module")
def ordinary(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Decision]:
    base = tmp_path_factory.mktemp("ordinary")
    root = base / "ws"
    for folder in ("src", "docs/api", "build", ".git/objects", ".git/refs", "vendor"):
        (root / folder).mkdir(parents=True)
    for name in (
        "src/a.py",
        "src/b.py",
        "src/app.py",
        "docs/guide.md",
        "docs/api/x.md",
        "a.txt",
        "x.diff",
        "README.md",
        ".git/HEAD",
    ):
        (root / name).write_text("x\n")
    os.symlink("../src", root / "docs" / "code")  # a link that stays inside
    os.symlink("src/app.py", root / "app.py")
    with (root / "a.tar").open("wb"):
        pass
    (base / "cfg").mkdir()
    where = Where.of(root, (base / "state", base / "audit.sqlite3"), configs=(base / "cfg",))
    snapshot = build_snapshot(base / "snap", ORDINARY_RULES)
    return lambda line: judge(snapshot, line, mode="default", where=where)


ORDINARY = [
    "ln -s src/a.py link.py",
    "ln -s ../src docs/srclink",
    "ln -sf src/app.py main.py",
    "ln -s src s && cat s/a.py",
    "ln src/a.py hard.py && cat hard.py",
    "ln -sr src/a.py docs/a.py",
    "ln -s ../src/b.py docs/",
    "readlink docs/code",
    "ls -l docs/code/",
    "cat docs/code/a.py",
    "cat docs/code/../src/a.py",
    "cat src/../a.txt",
    "cat ./src/./a.py",
    "ls docs/api/..",
    "cd src && ls",
    "cd docs/code && ls",
    "pushd src && ls",
    "cd -P docs/code && ls",
    "cat app.py",
    "cp -r src backup",
    "cp -a src backup && ls backup",
    "cp -R docs docs2",
    "cp src/a.py src/a2.py",
    "cp -p a.txt b.txt",
    "cp -P app.py app2.py",
    "cp -rP docs docs3 && cat docs3/code/a.py",
    "mv a.txt b.txt",
    "mv src lib && ls lib",
    "mkdir -p build && cp src/a.py build/",
    "rsync -a src/ backup/",
    "rsync -av --delete src/ mirror/",
    "tar -cf out.tar src",
    "tar -xf a.tar -C build",
    "tar xf a.tar",
    "unzip -o x.zip -d vendor",
    "patch -p1 -i x.diff",
    "diff -r src backup",
    "ln -sfn ../src docs/current",
    "cp -a docs/code docs/code2",
    "git status",
    "git checkout -b x",
    "git checkout main",
    "git switch -c feat",
    "git stash",
    "git stash pop",
    "git stash list",
    "git reset --hard HEAD",
    "git pull",
    "git merge feat",
    "git apply x.diff",
    "git log --oneline",
    "git diff HEAD~1",
    "git add -A && git commit -m x",
    "git -C src log",
    "git clone https://example.com/r.git vendor/r",
    "git branch -a",
    "git rebase main",
    "git restore src/a.py",
    "git checkout main && git log",
    "find src -type l",
    "rm -f link.py",
    "rm -rf build",
    "ln -s src s && ls s",
]

ORDINARY_HELD = [
    pytest.param("ls {src,docs}", id="ls {src,docs}"),
    pytest.param("cat src/{a,b}.py", id="cat src/{a,b}.py"),
    pytest.param("mkdir -p build/{lib,bin}", id="mkdir -p build/{lib,bin}"),
    pytest.param("touch f{1..3}.txt", id="touch f{1..3}.txt"),
    pytest.param("cd src && cat ../a.txt", id="cd src && cat ../a.txt"),
]


@pytest.mark.parametrize("line", [*ORDINARY, *ORDINARY_HELD])
def test_an_ordinary_line_with_links_copies_git_or_braces_is_allowed(
    ordinary: Callable[[str], Decision], line: str
) -> None:
    decision = ordinary(line)
    assert decision.effect == "allow", (line, decision.effect, decision.reason)


# =======================================================================================
# End to end: a command the Runtime runs does not run a made repository's fsmonitor.
# =======================================================================================

FSMONITOR_POLICY = INCLUDE + (
    "---\napiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: shell}\nspec:\n  rules:\n"
    "    - {name: git, effect: allow, tools: [run_command], commands: ['git *']}\n"
)


@pytest.fixture
def made_repository(tmp_path: Path) -> tuple[Runtime, Path]:
    root = tmp_path / "ws"
    (root / "toolrt.d").mkdir(parents=True)
    (root / "toolrt.d" / "packs.yaml").write_text(FSMONITOR_POLICY)
    repo = root / "evil"
    for folder in ("objects/info", "refs/heads", "work"):
        (repo / folder).mkdir(parents=True)
    (repo / "HEAD").write_text("ref: refs/heads/master\n")
    marker = root / "fsmonitor-ran"
    (repo / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = work\n"
        f'\tfsmonitor = "touch {marker}; false"\n'
    )
    runtime = Runtime(
        [root / "toolrt.d"], workspace_root=root, settings=Settings(state_dir=tmp_path / "state", hot_reload=False)
    )
    return runtime, root


def test_the_made_repository_runs_its_fsmonitor_when_git_is_run_plainly(made_repository: tuple[Runtime, Path]) -> None:
    """The repository of the tests below is a real threat: plain git runs its command."""
    _, root = made_repository
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "status"], cwd=root / "evil", capture_output=True, env=env, check=False)
    assert (root / "fsmonitor-ran").exists()


@pytest.mark.parametrize("line", ["git -C evil status", "cd evil && git status", "git -C evil/refs status"])
async def test_a_command_run_by_the_runtime_does_not_run_a_made_repository_fsmonitor(
    made_repository: tuple[Runtime, Path], line: str
) -> None:
    runtime, root = made_repository
    asked = await runtime.call("run_command", {"command": line}, Session(id="s", mode="default"))
    assert asked.status is not Status.ok  # covered by no allow rule: asked
    await runtime.call("run_command", {"command": line}, Session(id="s", mode="bypass"))
    assert not (root / "fsmonitor-ran").exists()


def test_the_corpus_lines_split_without_a_problem() -> None:
    """A line that does not even split would be asked for that reason alone, proving nothing."""
    lines = [
        p.values[0]
        for group in (
            DOTDOT_PROTECTED,
            DOTDOT_OUTSIDE,
            MADE_PROTECTED,
            MADE_OUTSIDE,
            UNPACKED,
            HARD_LINKED,
            BRACES_PROTECTED,
            CONFIG_DENIED,
            CONFIG_ASKED,
        )
        for p in group
    ]
    lines += [
        p.values[0] for p in GIT_MADE if not p.values[0].startswith("GIT_DIR=")
    ]  # a variable git reads: a problem of its own
    problems = {
        line: split_command_line(line).problem for line in lines if split_command_line(line).problem is not None
    }
    assert not problems
