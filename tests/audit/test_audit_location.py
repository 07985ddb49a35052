"""Where the audit log lives: by default in the user's state directory, one per
workspace, never inside the workspace; `toolrt audit` finds the same file a Runtime writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime import Runtime, Session
from runtime.audit import query, store_path
from runtime.audit.location import audit_dir, own_paths
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default]}
"""


def test_the_default_log_is_in_the_state_directory_outside_the_workspace(tmp_path: Path, state_home: Path) -> None:
    workspace = tmp_path / "my project"
    workspace.mkdir()
    path = store_path(workspace)
    assert path.name == "audit.sqlite3" and path.is_relative_to(state_home / "toolrt" / "audit")
    assert path.parent.name.startswith("my_project-") and not path.is_relative_to(workspace)


def test_each_workspace_has_its_own_log_and_every_spelling_of_one_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    monkeypatch.chdir(tmp_path)
    assert store_path(tmp_path / "a") != store_path(tmp_path / "b")
    assert (
        store_path(tmp_path / "a")
        == store_path("a")
        == store_path(tmp_path / "link")
        == store_path(tmp_path / "b" / ".." / "a")
    )


def test_an_absolute_setting_is_used_as_given_and_a_relative_one_goes_under_the_workspace_directory(
    tmp_path: Path,
) -> None:
    chosen = tmp_path / "logs" / "calls.db"
    assert store_path(tmp_path, Settings(audit_store=chosen)) == chosen
    assert store_path(tmp_path, Settings(audit_store=Path("calls.db"))) == audit_dir(tmp_path) / "calls.db"
    assert store_path(tmp_path, Settings(audit_sink="jsonl")) == audit_dir(tmp_path) / "audit.jsonl"
    assert (
        store_path(tmp_path, Settings(audit_sink="jsonl", audit_store=Path("audit.sqlite3"))).name == "audit.sqlite3"
    )  # set: as given


def test_an_absolute_state_dir_outside_the_workspace_holds_the_log(tmp_path: Path) -> None:
    state = tmp_path / "state"
    workspace = tmp_path / "ws"
    assert store_path(workspace, Settings(state_dir=state)).is_relative_to(state / "audit")
    # ... but not a state_dir inside the workspace, where the agent's tools reach.
    assert not store_path(workspace, Settings(state_dir=workspace / ".toolrt")).is_relative_to(workspace)


def test_a_state_home_inside_the_workspace_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".local" / "state"))  # a workspace that is the home directory
    path = store_path(tmp_path)
    assert not path.is_relative_to(tmp_path) and f"toolrt-{os.getuid()}" in path.parts


async def test_a_runtime_writes_its_log_there_and_nothing_into_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = Runtime([tmp_path / "config"], workspace_root=workspace, watch=False)
    assert runtime.settings.audit_store == runtime.audit_path() == store_path(workspace)
    assert audit_dir(workspace) in runtime.protected_paths()
    await runtime.call("list_dir", {}, Session(id="s-l"))
    await runtime.close()
    assert [row["tool"] for row in query(store_path(workspace), session="s-l")] == ["list_dir"]
    assert oct(audit_dir(workspace).stat().st_mode & 0o777) == oct(0o700)
    assert not any(workspace.rglob("*.sqlite3*"))


async def test_a_command_line_cannot_reach_the_log(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = Runtime([tmp_path / "config"], workspace_root=workspace, watch=False)
    store = runtime.audit_path()
    result = await runtime.call("run_command", {"command": f"rm -f {store}"}, Session(id="s-rm", mode="bypass"))
    await runtime.close()
    assert result.status.value == "denied", result.content
    assert store.exists()
    assert [row["status"] for row in query(store, session="s-rm")] == ["denied"]


def test_an_explicit_log_names_its_own_files_for_protection(tmp_path: Path) -> None:
    chosen = tmp_path / "logs" / "calls.jsonl"
    paths = own_paths(tmp_path / "ws", Settings(audit_store=chosen))
    assert (
        chosen in paths
        and chosen.with_name("calls.jsonl.head") in paths
        and chosen.with_name("calls.jsonl-wal") in paths
    )


def test_the_writer_childs_hand_off_folder_is_one_of_the_logs_own_files(tmp_path: Path) -> None:
    """The hand-off files hold arguments not yet redacted: the agent's tools must not reach them."""
    from runtime.audit import handoff

    chosen = tmp_path / "ws" / "audit.sqlite3"
    assert handoff.folder_of(chosen) in own_paths(tmp_path / "ws", Settings(audit_store=chosen))
