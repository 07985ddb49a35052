"""file_delete end to end, through the whole pipeline with the shipped packs: it removes
one regular file and nothing else, under every protection of the other file tools."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.records import Session, Status
from runtime.settings import Settings

PACKS = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default, builtin-tools]}
"""

EDITS = Session(id="s", mode="accept_edits")
BYPASS = Session(id="s", mode="bypass")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "deep" / "x.txt").write_text("x\n")
    (root / ".env").write_text("TOKEN=abc\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    return root


@pytest.fixture
def runtime(tmp_path: Path, workspace: Path) -> Runtime:
    config = tmp_path / "config"
    config.mkdir()
    (config / "packs.yaml").write_text(PACKS)
    settings = Settings(state_dir=tmp_path / "state", audit_sink="sqlite")
    return Runtime([config], workspace_root=workspace, settings=settings)


async def test_file_delete_removes_the_file_and_reports_its_hash(runtime: Runtime, workspace: Path) -> None:
    digest = hashlib.sha256((workspace / "src/app.py").read_bytes()).hexdigest()
    result = await runtime.call("file_delete", {"path": "src/app.py"}, EDITS)
    assert result.status is Status.ok, result.content
    assert not (workspace / "src/app.py").exists()
    assert result.metadata["hash_before"] == digest and digest in result.content


async def test_file_delete_records_the_hash_before_in_the_audit_log(runtime: Runtime, workspace: Path) -> None:
    digest = hashlib.sha256((workspace / "src/app.py").read_bytes()).hexdigest()
    await runtime.call("file_delete", {"path": "src/app.py"}, EDITS)
    await runtime.close()
    with sqlite3.connect(runtime.audit_path()) as db:
        rows = db.execute("SELECT path, hash_before, status FROM calls WHERE tool = 'file_delete'").fetchall()
    assert len(rows) == 1 and rows[0][1:] == (digest, "ok") and rows[0][0].endswith("src/app.py")


async def test_file_delete_with_the_read_hash_succeeds(runtime: Runtime, workspace: Path) -> None:
    read = await runtime.call("file_read", {"path": "src/app.py"})
    result = await runtime.call("file_delete", {"path": "src/app.py", "expected_hash": read.metadata["sha256"]}, EDITS)
    assert result.status is Status.ok, result.content
    assert not (workspace / "src/app.py").exists()


async def test_file_delete_with_a_stale_hash_keeps_the_file(runtime: Runtime, workspace: Path) -> None:
    read = await runtime.call("file_read", {"path": "src/app.py"})
    (workspace / "src/app.py").write_text("changed\n")
    result = await runtime.call("file_delete", {"path": "src/app.py", "expected_hash": read.metadata["sha256"]}, EDITS)
    assert result.is_error and "changed since you read it" in result.content
    assert (workspace / "src/app.py").read_text() == "changed\n"


async def test_file_delete_asks_in_default_mode(runtime: Runtime, workspace: Path) -> None:
    result = await runtime.call("file_delete", {"path": "src/app.py"}, Session(id="s"))
    assert result.status is Status.denied
    assert (workspace / "src/app.py").exists()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src", "directory"),
        ("src/deep", "directory"),
        ("src/", "directory"),
        (".", "directory"),
        ("", "empty|at least 1|too short|non-empty|characters"),
        ("../outside.txt", "above the workspace"),
        ("/etc/passwd", "outside the workspace"),
        (".env", "protected|off limits"),
        (".git/config", "protected|off limits"),
        (".git", "protected|off limits"),
        ("src/missing.py", "not found"),
        ("src/app.py\x00.txt", "NUL"),
        ("~/x", "home"),
        ("src/../../outside.txt", "above the workspace"),
    ],
    ids=[
        "directory",
        "nested-directory",
        "trailing-slash-directory",
        "the-root",
        "empty-path",
        "dotdot-escape",
        "absolute-outside",
        "dotenv",
        "git-internals",
        "git-folder",
        "missing-file",
        "nul-byte",
        "home-tilde",
        "dotdot-after-folder",
    ],
)
async def test_file_delete_refuses_what_it_must_not_remove(
    runtime: Runtime, workspace: Path, path: str, expected: str
) -> None:
    before = sorted(p.relative_to(workspace.parent).as_posix() for p in workspace.parent.rglob("*"))
    result = await runtime.call("file_delete", {"path": path}, BYPASS)
    assert result.is_error
    assert re.search(expected, result.content, re.IGNORECASE), result.content
    after = sorted(p.relative_to(workspace.parent).as_posix() for p in workspace.parent.rglob("*"))
    assert before == after


async def test_file_delete_refuses_a_link_to_a_file_outside(runtime: Runtime, workspace: Path) -> None:
    (workspace / "out").symlink_to(workspace.parent / "outside.txt")
    result = await runtime.call("file_delete", {"path": "out"}, BYPASS)
    assert result.is_error and "outside the workspace" in result.content
    assert (workspace.parent / "outside.txt").exists() and (workspace / "out").is_symlink()


async def test_file_delete_refuses_a_link_to_a_file_inside(runtime: Runtime, workspace: Path) -> None:
    (workspace / "alias.py").symlink_to(workspace / "src" / "app.py")
    result = await runtime.call("file_delete", {"path": "alias.py"}, BYPASS)
    assert result.is_error and "symbolic link" in result.content and "src/app.py" in result.content
    assert (workspace / "src/app.py").exists() and (workspace / "alias.py").is_symlink()


async def test_file_delete_refuses_a_path_through_a_linked_folder_that_leads_outside(
    runtime: Runtime, workspace: Path
) -> None:
    (workspace / "up").symlink_to(workspace.parent)
    result = await runtime.call("file_delete", {"path": "up/outside.txt"}, BYPASS)
    assert result.is_error and "outside the workspace" in result.content
    assert (workspace.parent / "outside.txt").exists()


async def test_file_delete_refuses_a_link_to_a_protected_file(runtime: Runtime, workspace: Path) -> None:
    (workspace / "innocent.txt").symlink_to(workspace / ".env")
    result = await runtime.call("file_delete", {"path": "innocent.txt"}, BYPASS)
    assert result.is_error
    assert (workspace / ".env").exists()


async def test_file_delete_refuses_a_dangling_link(runtime: Runtime, workspace: Path) -> None:
    (workspace / "dangling").symlink_to(workspace / "nowhere.txt")
    result = await runtime.call("file_delete", {"path": "dangling"}, BYPASS)
    assert result.is_error
    assert (workspace / "dangling").is_symlink()


async def test_file_delete_refuses_a_link_loop(runtime: Runtime, workspace: Path) -> None:
    (workspace / "a").symlink_to(workspace / "b")
    (workspace / "b").symlink_to(workspace / "a")
    result = await runtime.call("file_delete", {"path": "a"}, BYPASS)
    assert result.is_error and "symbolic links" in result.content


async def test_file_delete_refuses_a_fifo(runtime: Runtime, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    result = await runtime.call("file_delete", {"path": "pipe"}, BYPASS)
    assert result.is_error and "not a regular file" in result.content
    assert (workspace / "pipe").exists()


async def test_file_delete_refuses_the_config_inside_the_workspace(tmp_path: Path, workspace: Path) -> None:
    config = workspace / "toolrt"
    config.mkdir()
    (config / "packs.yaml").write_text(PACKS)
    runtime = Runtime(
        [config], workspace_root=workspace, settings=Settings(state_dir=tmp_path / "state", audit_sink="off")
    )
    result = await runtime.call("file_delete", {"path": "toolrt/packs.yaml"}, BYPASS)
    assert result.is_error and "protected" in result.content
    assert (config / "packs.yaml").exists()


async def test_file_delete_refuses_the_state_dir_inside_the_workspace(tmp_path: Path, workspace: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "packs.yaml").write_text(PACKS)
    runtime = Runtime(
        [config], workspace_root=workspace, settings=Settings(state_dir=Path(".toolrt-state"), audit_sink="sqlite")
    )
    await runtime.call("file_read", {"path": "src/app.py"})
    await runtime.close()
    store = runtime.audit_path()
    if store.resolve().is_relative_to(workspace.resolve()):
        relative = store.resolve().relative_to(workspace.resolve()).as_posix()
        result = await runtime.call("file_delete", {"path": relative}, BYPASS)
        assert result.is_error
        assert store.exists()


async def test_file_delete_removes_a_hard_link_name_but_not_the_outside_file(runtime: Runtime, workspace: Path) -> None:
    os.link(workspace.parent / "outside.txt", workspace / "hard.txt")
    result = await runtime.call("file_delete", {"path": "hard.txt"}, BYPASS)
    # Whether the sandbox refuses hard links or removes only this name, the outside file survives.
    assert (workspace.parent / "outside.txt").read_text() == "outside\n"
    if result.status is Status.ok:
        assert not (workspace / "hard.txt").exists()


async def test_file_delete_twice_reports_not_found_the_second_time(runtime: Runtime, workspace: Path) -> None:
    first = await runtime.call("file_delete", {"path": "src/deep/x.txt"}, BYPASS)
    second = await runtime.call("file_delete", {"path": "src/deep/x.txt"}, BYPASS)
    assert first.status is Status.ok and second.is_error and "not found" in second.content
    assert (workspace / "src" / "deep").is_dir()


async def test_file_delete_rejects_a_malformed_expected_hash(runtime: Runtime, workspace: Path) -> None:
    result = await runtime.call("file_delete", {"path": "src/app.py", "expected_hash": "abc"}, BYPASS)
    assert result.is_error and (workspace / "src/app.py").exists()


async def test_file_delete_rejects_unknown_arguments(runtime: Runtime, workspace: Path) -> None:
    result = await runtime.call("file_delete", {"path": "src/app.py", "recursive": True}, BYPASS)
    assert result.status is Status.invalid and (workspace / "src/app.py").exists()


async def test_file_delete_invalidates_the_read_cache(runtime: Runtime, workspace: Path) -> None:
    await runtime.call("file_read", {"path": "src/app.py"})
    await runtime.call("file_delete", {"path": "src/app.py"}, BYPASS)
    again = await runtime.call("file_read", {"path": "src/app.py"})
    assert again.is_error and "not found" in again.content


async def test_file_delete_waits_for_the_lock_an_edit_holds_and_keeps_the_file_when_it_times_out(
    runtime: Runtime, workspace: Path
) -> None:
    # The same cross-process lock as file_edit: held by another writer, the delete does
    # not happen (a clear "busy" error) and the file is intact; released, it goes ahead.
    import hashlib
    import os

    import filelock

    await runtime.call("file_read", {"path": "src/app.py"}, BYPASS)  # the workspace tools are made
    tools = runtime.workspace_tools
    assert tools is not None
    editor = tools.editor
    editor.lock_timeout_s = 0.3
    target = (workspace / "src" / "app.py").resolve()
    held = filelock.FileLock(str(editor.lock_dir / (hashlib.sha256(os.fsencode(str(target))).hexdigest() + ".lock")))
    held.acquire()
    try:
        result = await runtime.call("file_delete", {"path": "src/app.py"}, BYPASS)
        assert result.is_error and "busy" in result.content, result.content
        assert target.read_text() == "print('hi')\n"
    finally:
        held.release()
    result = await runtime.call("file_delete", {"path": "src/app.py"}, BYPASS)
    assert not result.is_error, result.content
    assert not target.exists()
