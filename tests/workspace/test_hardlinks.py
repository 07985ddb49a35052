"""Hard links to toolrt's own files: other names for the config, state or audit log.

A hard link made in an earlier call (``ln toolrt.d/packs.yaml notes.txt``, or an
archive's hard-link entry) is the config under a name no path check sees. The file
tools of a real Runtime must not show its content (file_read, grep, glob, list_dir,
file_edit), command lines must not read it, and files with several names that are not
toolrt's keep working.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import Runtime, Session
from runtime.records import Status
from runtime.settings import Settings
from runtime.workspace import hardlinks
from runtime.workspace.hardlinks import ProtectedInodes

CONFIG = """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default]}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: shell}
spec:
  rules:
    - {name: reads, effect: allow, tools: [run_command], commands: ['cat *', 'grep *', 'head *', 'sed *']}
"""
MARK = "kind: Include"  # a line of the config, which must not be shown under another name
EXTRA = "apiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: extra}\nspec: {rules: []}\n"


# ---------------------------------------------------------------------------------------
# ProtectedInodes on its own.


def test_a_second_name_for_a_file_in_a_protected_folder_is_found(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "db").write_text("s")
    os.link(tmp_path / "state" / "db", tmp_path / "other")
    inodes = ProtectedInodes([(tmp_path / "state", False)])
    assert inodes.holds(os.stat(tmp_path / "other"))
    assert inodes.holds(os.stat(tmp_path / "state" / "db"))


def test_a_second_name_for_a_protected_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "audit.sqlite3").write_text("a")
    os.link(tmp_path / "audit.sqlite3", tmp_path / "copy")
    assert ProtectedInodes([(tmp_path / "audit.sqlite3", False)]).holds(os.stat(tmp_path / "copy"))


def test_files_with_one_name_or_several_names_outside_protected_paths_are_not_held(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "one").write_text("1")
    (tmp_path / "two").write_text("2")
    os.link(tmp_path / "two", tmp_path / "two-again")
    inodes = ProtectedInodes([(tmp_path / "state", False)])
    assert not inodes.holds(os.stat(tmp_path / "one"))
    assert not inodes.holds(os.stat(tmp_path / "two"))
    assert not inodes.holds(os.stat(tmp_path / "two-again"))


def test_in_a_yaml_only_folder_only_yaml_files_are_held(tmp_path: Path) -> None:
    config = tmp_path / "ws"
    (config / "src").mkdir(parents=True)
    (config / "policy.yaml").write_text("p")
    (config / "rules.YML").write_text("r")
    (config / "src" / "a.py").write_text("a")
    for name in ("policy.yaml", "rules.YML", "src/a.py"):
        os.link(config / name, tmp_path / name.replace("/", "-"))
    inodes = ProtectedInodes([(config, True)])
    assert inodes.holds(os.stat(tmp_path / "policy.yaml"))
    assert inodes.holds(os.stat(tmp_path / "rules.YML"))
    assert not inodes.holds(os.stat(tmp_path / "src-a.py"))


def test_a_remembered_answer_changes_when_the_file_gains_a_protected_name(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "f").write_text("f")
    os.link(tmp_path / "f", tmp_path / "g")
    inodes = ProtectedInodes([(tmp_path / "state", False)])
    assert not inodes.holds(os.stat(tmp_path / "f"))
    os.link(tmp_path / "f", tmp_path / "state" / "f")
    assert inodes.holds(os.stat(tmp_path / "f"))


def test_links_and_folders_are_not_held(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "db").write_text("s")
    os.symlink(tmp_path / "state" / "db", tmp_path / "sym")
    inodes = ProtectedInodes([(tmp_path / "state", False)])
    assert not inodes.holds(os.lstat(tmp_path / "sym"))  # the link itself; following it is the path check's job
    assert not inodes.holds(os.stat(tmp_path / "state"))


def test_too_many_entries_to_look_through_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardlinks, "_MAX_ENTRIES", 10)
    (tmp_path / "state").mkdir()
    for n in range(20):
        (tmp_path / "state" / f"f{n}").write_text("x")
    (tmp_path / "mine").write_text("m")
    os.link(tmp_path / "mine", tmp_path / "mine-too")
    assert ProtectedInodes([(tmp_path / "state", False)]).holds(os.stat(tmp_path / "mine"))


# ---------------------------------------------------------------------------------------
# Through a real Runtime (toolrt.d, inside the workspace, is the config folder).


@pytest.fixture
def runtime_place(tmp_path: Path) -> Iterator[tuple[Runtime, Path]]:
    root = tmp_path / "ws"
    for folder in ("src", "sub", "toolrt.d/more"):
        (root / folder).mkdir(parents=True)
    (root / "toolrt.d" / "packs.yaml").write_text(CONFIG)
    (root / "toolrt.d" / "more" / "extra.yaml").write_text(EXTRA)
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "app.py").write_text("print('app')\n")
    os.link(root / "toolrt.d" / "packs.yaml", root / "sub" / "hard.txt")
    os.link(root / "toolrt.d" / "more" / "extra.yaml", root / "src" / "notes.md")
    os.symlink("hard.txt", root / "sub" / "soft")  # a symbolic link to the hard link
    os.link(root / "a.txt", root / "sub" / "a2.txt")  # two names for a workspace file
    runtime = Runtime(
        [root / "toolrt.d"], workspace_root=root, settings=Settings(state_dir=tmp_path / "state", hot_reload=False)
    )
    yield runtime, root
    runtime.close_sync()


EDITS = Session(id="s", mode="accept_edits")


@pytest.mark.parametrize(
    "args",
    [
        {"path": "sub/hard.txt"},
        {"path": "sub/hard.txt", "offset": 2, "limit": 1},
        {"path": "./sub/../sub/hard.txt"},
        {"path": "sub/soft"},
        {"path": "src/notes.md"},
    ],
    ids=["plain", "a window", "with dot-dot", "through a symbolic link", "a config sub-folder's file"],
)
async def test_file_read_does_not_show_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path], args: dict[str, object]
) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("file_read", args, EDITS)
    assert result.status is not Status.ok, result.content
    assert MARK not in result.content and "metadata: {name: extra}" not in result.content


@pytest.mark.parametrize("output", ["content", "files", "count"])
async def test_grep_does_not_search_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path], output: str
) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("grep", {"pattern": "kind", "output": output}, EDITS)
    assert MARK not in result.content
    assert "hard.txt" not in result.content and "notes.md" not in result.content, result.content


async def test_grep_of_the_hard_link_by_name_shows_nothing(runtime_place: tuple[Runtime, Path]) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("grep", {"pattern": "kind", "path": "sub/hard.txt"}, EDITS)
    assert MARK not in result.content


@pytest.mark.parametrize("args", [{"pattern": "**/*"}, {"pattern": "sub/*.txt"}, {"pattern": "**/*.md"}])
async def test_glob_does_not_offer_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path], args: dict[str, object]
) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("glob", args, EDITS)
    assert result.status is Status.ok, result.content
    assert "hard.txt" not in result.content and "notes.md" not in result.content, result.content


@pytest.mark.parametrize("args", [{"path": "sub"}, {"path": ".", "depth": 3}, {"path": "src"}])
async def test_list_dir_does_not_show_the_content_of_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path], args: dict[str, object]
) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("list_dir", args, EDITS)
    assert result.status is Status.ok, result.content
    assert MARK not in result.content and "name: extra" not in result.content
    assert "a2.txt" in result.content or "app.py" in result.content  # the listing itself works


@pytest.mark.parametrize(
    "args",
    [
        {"path": "sub/hard.txt", "mode": "str_replace", "old_string": "kind: Include", "new_string": "kind: Other"},
        {"path": "sub/hard.txt", "mode": "append", "content": "more\n"},
        {"path": "sub/hard.txt", "mode": "replace", "content": "gone\n"},
        {"path": "sub/soft", "mode": "append", "content": "more\n"},
    ],
    ids=["str_replace", "append", "replace", "append through a symbolic link"],
)
async def test_file_edit_does_not_read_or_change_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path], args: dict[str, object]
) -> None:
    runtime, root = runtime_place
    result = await runtime.call("file_edit", args, EDITS)
    assert result.status is not Status.ok, result.content
    assert MARK not in result.content
    assert (root / "toolrt.d" / "packs.yaml").read_text() == CONFIG
    assert (root / "sub" / "hard.txt").read_text() == CONFIG


async def test_the_audit_log_under_another_name_is_not_read(runtime_place: tuple[Runtime, Path]) -> None:
    runtime, root = runtime_place
    await runtime.call("file_read", {"path": "a.txt"}, EDITS)  # the audit log now exists
    logs = [
        file
        for top in runtime.protected_paths()
        for file in ([top] if top.is_file() else top.rglob("audit*.sqlite3"))
        if file.is_file()
    ]
    assert logs, "the audit log was written"
    os.link(logs[0], root / "sub" / "log.txt")
    result = await runtime.call("file_read", {"path": "sub/log.txt"}, EDITS)
    assert result.status is not Status.ok, result.content
    found = await runtime.call("grep", {"pattern": "file_read", "output": "files"}, EDITS)
    assert "log.txt" not in found.content


@pytest.mark.parametrize(
    "line",
    [
        "cat sub/hard.txt",
        "grep kind sub/hard.txt",
        "sed -n p sub/hard.txt",
        "head sub/hard.txt",
        "cat < sub/hard.txt",
        "cat sub/soft",
        "cat src/notes.md",
        "cat sub/*.txt",
    ],
)
@pytest.mark.parametrize("mode", ["default", "bypass"])
async def test_a_command_line_does_not_show_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path], line: str, mode: str
) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("run_command", {"command": line}, Session(id="s", mode=mode))
    assert result.status is not Status.ok, result.content
    assert MARK not in result.content and "metadata: {name: extra}" not in result.content


async def test_a_recursive_grep_over_a_folder_does_not_show_toolrt_files_under_another_name(
    runtime_place: tuple[Runtime, Path],
) -> None:
    runtime, _ = runtime_place
    result = await runtime.call("run_command", {"command": "grep -r -v zzz sub"}, Session(id="s", mode="default"))
    assert MARK not in result.content


async def test_a_command_line_is_judged_again_once_its_file_gains_a_toolrt_name(
    runtime_place: tuple[Runtime, Path],
) -> None:
    runtime, root = runtime_place
    (root / "sub" / "later.txt").write_text("later\n")
    first = await runtime.call("run_command", {"command": "cat sub/later.txt"}, Session(id="s", mode="default"))
    assert first.status is Status.ok and "later" in first.content, first.content
    (root / "sub" / "later.txt").unlink()
    os.link(root / "toolrt.d" / "packs.yaml", root / "sub" / "later.txt")
    again = await runtime.call("run_command", {"command": "cat sub/later.txt"}, Session(id="s", mode="default"))
    assert again.status is not Status.ok and MARK not in again.content, again.content


async def test_two_names_for_a_workspace_file_keep_working(runtime_place: tuple[Runtime, Path]) -> None:
    runtime, root = runtime_place
    for path in ("a.txt", "sub/a2.txt"):
        read = await runtime.call("file_read", {"path": path}, EDITS)
        assert read.status is Status.ok and "alpha" in read.content, read.content
    found = await runtime.call("grep", {"pattern": "alpha", "output": "files"}, EDITS)
    assert "a.txt" in found.content and "a2.txt" in found.content, found.content
    listed = await runtime.call("glob", {"pattern": "**/*.txt"}, EDITS)
    assert "a2.txt" in listed.content, listed.content
    shown = await runtime.call("run_command", {"command": "cat sub/a2.txt"}, Session(id="s", mode="default"))
    assert shown.status is Status.ok and "alpha" in shown.content, shown.content
    edited = await runtime.call(
        "file_edit", {"path": "sub/a2.txt", "mode": "str_replace", "old_string": "alpha", "new_string": "beta"}, EDITS
    )
    assert edited.status is Status.ok, edited.content
    assert (root / "sub" / "a2.txt").read_text() == "beta\n"
