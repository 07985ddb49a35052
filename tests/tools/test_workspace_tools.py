"""The workspace built-ins end to end, through the whole pipeline with the shipped
packs: reads carry the hash that edits check, secrets are refused by policy and by
the sandbox, and run_command runs a real bash line in the workspace."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.records import Session, Status

PACKS = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default, builtin-tools]}
"""

BYPASS = Session(id="s", mode="bypass")
EDITS = Session(id="s", mode="accept_edits")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / ".env").write_text("TOKEN=abc\n")
    (tmp_path / "outside.txt").write_text("outside secret\n")
    return root


@pytest.fixture
def runtime(tmp_path: Path, workspace: Path) -> Runtime:
    config = tmp_path / "config"
    config.mkdir()
    (config / "packs.yaml").write_text(PACKS)
    return Runtime([config], workspace_root=workspace)


async def test_file_read_shows_numbered_lines_and_the_hash_of_the_file(runtime: Runtime, workspace: Path) -> None:
    result = await runtime.call("file_read", {"path": "src/app.py"})
    digest = hashlib.sha256((workspace / "src/app.py").read_bytes()).hexdigest()
    assert result.status is Status.ok, result.content
    assert "     1\tdef main():" in result.content and digest in result.content
    assert result.metadata["sha256"] == digest and result.metadata["cache_hit"] is False


async def test_a_second_read_of_an_unchanged_file_is_a_cache_hit(runtime: Runtime, workspace: Path) -> None:
    target = workspace / "src" / "app.py"
    os.utime(target, (1_000_000_000, 1_000_000_000))  # out of the cache's racy window
    await runtime.call("file_read", {"path": "src/app.py"})
    again = await runtime.call("file_read", {"path": "src/app.py"})
    assert again.metadata["cache_hit"] is True


async def test_an_edit_with_the_read_hash_succeeds_and_reports_both_hashes(runtime: Runtime, workspace: Path) -> None:
    read = await runtime.call("file_read", {"path": "src/app.py"})
    edit = await runtime.call(
        "file_edit",
        {
            "path": "src/app.py",
            "old_string": "return 1",
            "new_string": "return 2",
            "expected_hash": read.metadata["sha256"],
        },
        EDITS,
    )
    assert edit.status is Status.ok, edit.content
    assert (workspace / "src/app.py").read_text() == "def main():\n    return 2\n"
    assert edit.metadata["hash_before"] == read.metadata["sha256"]
    assert edit.metadata["hash_after"] == hashlib.sha256((workspace / "src/app.py").read_bytes()).hexdigest()
    assert "-    return 1" in edit.content and "+    return 2" in edit.content


async def test_an_edit_with_a_stale_hash_is_refused_with_the_current_hash(runtime: Runtime, workspace: Path) -> None:
    read = await runtime.call("file_read", {"path": "src/app.py"})
    (workspace / "src/app.py").write_text("def main():\n    return 3\n")
    edit = await runtime.call(
        "file_edit",
        {
            "path": "src/app.py",
            "old_string": "return 3",
            "new_string": "return 4",
            "expected_hash": read.metadata["sha256"],
        },
        EDITS,
    )
    assert edit.is_error
    assert hashlib.sha256((workspace / "src/app.py").read_bytes()).hexdigest() in edit.content
    assert (workspace / "src/app.py").read_text().endswith("return 3\n")


async def test_edits_ask_in_default_mode(runtime: Runtime) -> None:
    result = await runtime.call("file_edit", {"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"})
    assert result.status is Status.denied and "no approver" in result.content


async def test_reading_dotenv_is_denied_by_policy_before_the_sandbox(runtime: Runtime) -> None:
    result = await runtime.call("file_read", {"path": ".env"})
    assert result.status is Status.denied and "deny-secret-files" in str(result.metadata.get("rule"))


async def test_the_sandbox_refuses_protected_files_that_no_policy_names(tmp_path: Path, workspace: Path) -> None:
    from runtime.settings import Settings
    from runtime.workspace import DEFAULT_DENY

    (workspace / "private").mkdir()
    (workspace / "private" / "notes.txt").write_text("hunter2\n")
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "packs.yaml").write_text(PACKS)
    runtime = Runtime(
        [config], workspace_root=workspace, settings=Settings(workspace_deny=(*DEFAULT_DENY, "private/**"))
    )
    for path in ("private/notes.txt", "PRIVATE/notes.txt", "./src/../private/notes.txt"):
        result = await runtime.call("file_read", {"path": path}, BYPASS)
        assert result.is_error and "hunter2" not in result.content, result.content
    assert "protected" in (await runtime.call("file_read", {"path": "private/notes.txt"}, BYPASS)).content


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../outside.txt"])
async def test_paths_outside_the_workspace_are_refused_without_leaking(runtime: Runtime, path: str) -> None:
    result = await runtime.call("file_read", {"path": path})
    assert result.is_error and "outside secret" not in result.content and "root:" not in result.content


async def test_list_dir_glob_and_grep_find_workspace_files_but_not_secrets(runtime: Runtime) -> None:
    listing = await runtime.call("list_dir", {"path": "."})
    found = await runtime.call("glob", {"pattern": "**/*.py"})
    hits = await runtime.call("grep", {"pattern": "return", "path": "."})
    secret = await runtime.call("grep", {"pattern": "TOKEN", "path": ".", "glob": "**"})
    assert "src/" in listing.content and ".env" not in listing.content
    assert "src/app.py" in found.content
    assert "src/app.py:2:    return 1" in hits.content
    assert "abc" not in secret.content


async def test_run_command_runs_a_bash_line_in_the_workspace(runtime: Runtime, workspace: Path) -> None:
    result = await runtime.call("run_command", {"command": "cd src && ls && echo $((1+2)) && pwd"}, BYPASS)
    assert result.status is Status.ok, result.content
    assert "app.py" in result.content and "3" in result.content and str(workspace / "src") in result.content


async def test_run_command_in_default_mode_asks(runtime: Runtime) -> None:
    result = await runtime.call("run_command", {"command": "ls"})
    assert result.status is Status.denied


async def test_run_command_that_reads_dotenv_is_denied_even_in_bypass_mode(runtime: Runtime) -> None:
    result = await runtime.call("run_command", {"command": "ls; cat .env"}, BYPASS)
    assert result.status is Status.denied and "TOKEN" not in result.content


async def test_run_command_stops_at_its_timeout_and_kills_the_tree(runtime: Runtime) -> None:
    result = await runtime.call("run_command", {"command": "sleep 30 & sleep 30; echo never", "timeout_s": 0.5}, BYPASS)
    assert result.status is Status.unknown and "timed out after 0.5 s" in result.content


async def test_run_command_refuses_a_cwd_outside_the_workspace(runtime: Runtime) -> None:
    result = await runtime.call("run_command", {"command": "ls", "cwd": "../"}, BYPASS)
    assert result.is_error and "workspace" in result.content


async def test_a_failing_command_reports_its_exit_code_and_output(runtime: Runtime) -> None:
    result = await runtime.call("run_command", {"command": "echo oops >&2; exit 3"}, BYPASS)
    assert result.status is Status.error and "exited with code 3" in result.content and "oops" in result.content


async def test_lock_files_audit_log_and_artifacts_stay_out_of_the_workspace(runtime: Runtime, workspace: Path) -> None:
    await runtime.call("file_edit", {"path": "new.txt", "mode": "replace", "content": "hi\n"}, EDITS)
    await runtime.call("run_command", {"command": "seq 1 100000"}, BYPASS)  # long enough to become an artifact
    await runtime.close()
    assert sorted(p.name for p in workspace.iterdir()) == [".env", "new.txt", "src"]
    assert not list(workspace.rglob("*.lock")) and not list(workspace.rglob(".toolrt-tmp-*"))


async def test_a_session_grant_for_a_command_line_covers_only_the_programs_approved(
    tmp_path: Path, workspace: Path
) -> None:
    from runtime.pipeline.permit import Approval

    asked: list[str] = []

    async def approver(call, session, decision):  # noqa: ANN001, ANN202 - an app's approver
        asked.append(call.args["command"])
        return Approval(True, scope="session")

    config = tmp_path / "config"
    config.mkdir()
    (config / "packs.yaml").write_text(PACKS)
    runtime = Runtime([config], workspace_root=workspace, approver=approver)
    session = Session(id="s")
    for line in ("ls src", "ls -la", "ls; touch pwned", 'eval "$(echo touch x)"', "ls | wc -l"):
        await runtime.call("run_command", {"command": line}, session)
    assert asked == ["ls src", "ls; touch pwned", 'eval "$(echo touch x)"', "ls | wc -l"]
