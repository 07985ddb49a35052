"""Every call the Runtime answers is in the audit log, with redacted arguments, the
decision, the status and for writes the path and hashes; `toolrt audit` reads it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from runtime import Call, Runtime, Session
from runtime.audit import query, store_path
from runtime.cli import main
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default]}
"""


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("one\n")
    return Runtime([tmp_path / "config"], workspace_root=tmp_path / "ws")


async def test_every_call_is_recorded_with_its_decision_and_status(runtime: Runtime, tmp_path: Path) -> None:
    session = Session(id="s-1", user="dev", mode="accept_edits")
    await runtime.run_turn(
        [Call("c1", "file_read", {"path": "a.txt"}), Call("c2", "file_read", {"path": ".env"}), Call("c3", "nope", {})],
        session,
    )
    await runtime.close()
    rows = query(runtime.settings.audit_store, session="s-1")
    by_call = {row["call_id"]: row for row in rows}
    assert set(by_call) == {"c1", "c2", "c3"}
    assert (by_call["c1"]["status"], by_call["c1"]["decision"], by_call["c1"]["user"]) == ("ok", "allow", "dev")
    assert (by_call["c2"]["status"], by_call["c2"]["rule"]) == ("denied", "default-permissions/deny-secret-files")
    assert by_call["c3"]["status"] == "invalid"


async def test_writes_record_the_path_and_both_hashes(runtime: Runtime, tmp_path: Path) -> None:
    result = await runtime.call(
        "file_edit", {"path": "a.txt", "mode": "append", "content": "two\n"}, Session(id="s", mode="accept_edits")
    )
    await runtime.close()
    (row,) = query(runtime.settings.audit_store, tool="file_edit")
    assert (row["path"], row["hash_before"], row["hash_after"]) == (
        "a.txt",
        result.metadata["hash_before"],
        result.metadata["hash_after"],
    )
    assert row["hash_before"] != row["hash_after"]


async def test_arguments_are_stored_redacted(runtime: Runtime, tmp_path: Path) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    await runtime.call(
        "file_edit",
        {"path": "a.txt", "mode": "append", "content": f"token {secret}\n"},
        Session(id="s", mode="accept_edits"),
    )
    await runtime.close()
    (row,) = query(runtime.settings.audit_store, tool="file_edit")
    stored = json.dumps(row["args"])
    assert secret not in stored and "[REDACTED:github_token]" in stored


async def test_the_audit_log_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    runtime = Runtime([tmp_path / "config"], workspace_root=tmp_path, settings=Settings(audit_sink="off"))
    await runtime.call("list_dir", {})
    await runtime.close()
    assert runtime.audit is None and not store_path(tmp_path, runtime.settings).exists()


async def test_toolrt_audit_lists_calls_as_a_table_and_as_json(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.call("file_read", {"path": "a.txt"}, Session(id="s-9"))
    await runtime.close()
    out = io.StringIO()
    assert main(["audit", "--workspace", str(tmp_path / "ws"), "--session", "s-9"], stdout=out) == 0
    assert "file_read" in out.getvalue() and "s-9" in out.getvalue()
    out = io.StringIO()
    assert (
        main(["audit", "--store", str(runtime.settings.audit_store), "--format", "json", "--since", "1h"], stdout=out)
        == 0
    )
    assert [row["tool"] for row in json.loads(out.getvalue())] == ["file_read"]


def test_toolrt_audit_explains_a_missing_store_and_a_bad_since(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["audit", "--store", str(tmp_path / "none.sqlite3")], stderr=err) == 2
    assert "none.sqlite3" in err.getvalue()
    err = io.StringIO()
    assert main(["audit", "--store", str(tmp_path / "none.sqlite3"), "--since", "yesterday-ish"], stderr=err) == 2


async def test_an_approved_call_is_recorded_with_the_arguments_that_ran_and_how_it_was_approved(tmp_path: Path) -> None:
    from runtime.pipeline.permit import Approval

    async def editor(call, session, decision):  # noqa: ANN001, ANN202 - an app's approver
        return Approval(True, args={"command": "echo EDITED-BY-PERSON"})

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    (tmp_path / "ws").mkdir()
    runtime = Runtime([tmp_path / "config"], workspace_root=tmp_path / "ws", approver=editor)
    result = await runtime.call("run_command", {"command": "echo ORIGINAL-FROM-MODEL"}, Session(id="s"))
    await runtime.close()
    assert "EDITED-BY-PERSON" in result.content
    (row,) = query(runtime.settings.audit_store, tool="run_command")
    assert row["args"] == {"command": "echo EDITED-BY-PERSON"}
    assert row["decision"] == "allow:approver"


async def test_a_call_that_finished_before_the_turn_was_cancelled_is_recorded(runtime: Runtime, tmp_path: Path) -> None:
    import asyncio

    session = Session(id="s-c", mode="bypass")
    turn = asyncio.ensure_future(
        runtime.run_turn(
            [
                Call("a", "file_edit", {"path": "b.txt", "mode": "replace", "content": "x"}),
                Call("b", "run_command", {"command": "touch started && sleep 30"}),
            ],
            session,
        )
    )
    # The two calls run one after the other: once b has started, a has finished.
    started = tmp_path / "ws" / "started"
    deadline = asyncio.get_running_loop().time() + 60
    while not started.exists() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await runtime.close()
    rows = {row["call_id"]: row for row in query(runtime.settings.audit_store, session="s-c")}
    assert rows["a"]["status"] == "ok" and (tmp_path / "ws" / "b.txt").exists()
    assert rows["b"]["code"] == "cancelled"


async def test_calls_that_were_not_executed_are_recorded_too(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.run_turn(
        [Call("d", "file_read", {"path": "a.txt"}), Call("d", "file_read", {"path": "a.txt"})], Session(id="s-d")
    )
    await runtime.close()
    statuses = sorted(row["status"] for row in query(runtime.settings.audit_store, session="s-d"))
    assert statuses == ["not_executed", "ok"]


async def test_toolrt_audit_reads_a_json_lines_log_too(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    runtime = Runtime(
        [tmp_path / "config"],
        workspace_root=tmp_path,
        settings=Settings(audit_sink="jsonl", audit_store=tmp_path / "audit.jsonl"),
    )
    await runtime.call("list_dir", {}, Session(id="s-j"))
    await runtime.close()
    with (tmp_path / "audit.jsonl").open("a") as log:
        log.write('{"ts": 1, "tool": "cut sho')  # a last line cut short by a crash is skipped
    out = io.StringIO()
    assert main(["audit", "--store", str(tmp_path / "audit.jsonl"), "--format", "json"], stdout=out) == 0
    assert [(row["tool"], row["session_id"]) for row in json.loads(out.getvalue())] == [("list_dir", "s-j")]


async def test_a_child_process_writer_stores_redacted_records_and_survives_its_child_dying(tmp_path: Path) -> None:
    import os
    import signal

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    (tmp_path / "ws").mkdir()
    runtime = Runtime([tmp_path / "config"], workspace_root=tmp_path / "ws", settings=Settings(audit_writer="process"))
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    edits = Session(id="s-p", mode="accept_edits")
    await runtime.call(
        "file_edit", {"path": "a.txt", "mode": "replace", "content": f"{secret} git@github.com:org/x.git\n"}, edits
    )
    assert runtime.audit is not None and runtime.audit.flush(10)
    sink = runtime.audit.sink
    os.kill(sink._proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]  # the child dies between batches
    sink._proc.wait()  # type: ignore[attr-defined]
    await runtime.call("file_read", {"path": "a.txt"}, edits)
    await runtime.close()
    rows = query(runtime.settings.audit_store, session="s-p")
    assert sorted(row["tool"] for row in rows) == ["file_edit", "file_read"]
    stored = json.dumps([row["args"] for row in rows])
    assert secret not in stored and "[REDACTED:github_token]" in stored and "git@github.com:org/x.git" in stored
