"""The journal of workflow runs: what resume, status and list say for finished,
unknown, changed, corrupt and missing runs, the retention of old runs, and that a
workflow called as a tool is journaled too. (Killing real processes mid-run is in
test_workflow_crash.py.)"""

from __future__ import annotations

import io
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.cli import main
from runtime.records import Call, Session
from runtime.settings import Settings
from runtime.workflow.journal import Journal, JournalError, journal_path
from runtime.workflow.runlog import RunLog

EDIT_THEN_FAIL = """
    apiVersion: toolrt/v1
    kind: Workflow
    metadata: {name: edit}
    spec:
      input_schema: {type: object, properties: {fail: {type: boolean}}}
      steps:
        - {id: read, tool: file_read, args: {path: notes.txt}}
        - id: change
          tool: file_edit
          depends_on: [read]
          args: {path: notes.txt, old_string: beta, new_string: BETA}
          compensate: builtin
        - {id: gate, tool: fail, depends_on: [change], when: "input.fail", on_failure: compensate}
"""


def _journal(runtime: Runtime) -> Path:
    path = journal_path(runtime.settings, runtime.workspace_root)
    assert path is not None
    return path


def _cli(*argv: str, state: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setenv("TOOLRT_STATE_DIR", str(state))
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


async def test_a_finished_run_is_journaled_and_resuming_it_says_it_finished(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    result = await runtime.run_workflow("edit", {"fail": False})
    assert result.ok, result.render()
    record = runtime.workflow_journal().load(result.run_id)
    assert record.status == "ok" and record.workflow == "edit" and record.input == {"fail": False}
    assert [(e.kind, e.step) for e in record.events] == [
        ("step_start", "read"),
        ("step_end", "read"),
        ("step_start", "change"),
        ("step_end", "change"),
        ("step_end", "gate"),
    ]
    again = await runtime.resume_workflow(result.run_id)
    assert again.note is not None and "already finished (ok)" in again.note
    assert again.status == "ok" and [s.status for s in again.steps] == ["ok", "ok", "skipped"]
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\n"  # nothing ran again
    twice = await runtime.resume_workflow(result.run_id)
    assert twice.to_dict() == again.to_dict()


async def test_a_compensated_run_is_finished_too(make_runtime: Callable[..., Runtime], workspace: Path) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    result = await runtime.run_workflow("edit", {"fail": True})
    assert result.status == "compensated", result.render()
    again = await runtime.resume_workflow(result.run_id)
    assert again.status == "compensated" and "already finished" in (again.note or "")
    assert [(c.step, c.status) for c in again.compensations] == [("change", "ok")]
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"


@pytest.mark.parametrize("run_id", ["wf_nosuchrun", "", "x' OR 1=1 --", "wf_" + "a" * 500])
async def test_an_unknown_run_id_is_a_clear_error(make_runtime: Callable[..., Runtime], run_id: str) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    await runtime.run_workflow("edit", {"fail": False})  # the journal exists
    result = await runtime.resume_workflow(run_id)
    assert result.error is not None and "no run" in result.error and "toolrt workflow list" in result.error
    assert result.steps == ()


async def test_resuming_without_a_journal_is_a_clear_error(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    result = await runtime.resume_workflow("wf_0123456789abcdef")
    assert result.error is not None
    assert "no workflow journal at" in result.error and str(_journal(runtime)) in result.error


@pytest.mark.parametrize(
    "garbage",
    [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000, b"\x00" * 8192],
)
async def test_a_corrupt_journal_is_a_clear_error_for_run_and_resume(
    make_runtime: Callable[..., Runtime], workspace: Path, garbage: bytes
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    path = _journal(runtime)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(garbage)
    result = await runtime.run_workflow("edit", {"fail": False})
    assert result.error is not None and "not a readable journal" in result.error and "Move it aside" in result.error
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"  # nothing ran without its journal
    resumed = await runtime.resume_workflow("wf_0123456789abcdef")
    assert resumed.error is not None and "not a readable journal" in resumed.error


async def test_a_database_that_is_not_a_journal_is_refused(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    path = _journal(runtime)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE runs (x)")
    result = await runtime.run_workflow("edit", {"fail": False})
    assert result.error is not None and "not a readable journal" in result.error


async def test_with_the_journal_off_runs_work_and_resume_says_why_it_cannot(
    make_runtime: Callable[..., Runtime], tmp_path: Path, workspace: Path
) -> None:
    make_runtime(EDIT_THEN_FAIL).close_sync()
    settings = Settings(state_dir=tmp_path / "state-off", audit_sink="off", workflow_journal="off")
    runtime = Runtime([tmp_path / "config"], workspace_root=workspace, settings=settings)
    try:
        result = await runtime.run_workflow("edit", {"fail": False})
        assert result.ok, result.render()
        resumed = await runtime.resume_workflow(result.run_id)
        assert resumed.error is not None and "not journaled" in resumed.error
        assert not (tmp_path / "state-off").exists() or not list((tmp_path / "state-off").rglob("*.sqlite3"))
    finally:
        await runtime.close()


async def test_a_run_of_a_workflow_that_changed_since_is_not_resumed(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    journal = runtime.workflow_journal()
    run_id = "wf_changed00000000"
    log = RunLog(journal, run_id)
    log.started("edit", "an-older-definition", Session(id="s1"), {"fail": False})
    journal.write()
    result = await runtime.resume_workflow(run_id)
    assert result.error is not None and "changed since this run started" in result.error


async def test_a_run_this_process_is_running_is_not_resumed_beside_it(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    journal = runtime.workflow_journal()
    result = await runtime.run_workflow("edit", {"fail": False})
    record = journal.load(result.run_id)
    # The same run, as if it were unfinished and running here.
    log = RunLog(journal, "wf_here000000000")
    log.started("edit", runtime.snapshot.workflows["edit"].fingerprint, Session(), {"fail": False})
    journal.write()
    assert journal.activate("wf_here000000000")
    try:
        refused = await runtime.resume_workflow("wf_here000000000")
        assert refused.error is not None and "this process is running it right now" in refused.error
    finally:
        journal.deactivate("wf_here000000000")
    assert record.finished


async def test_an_unfinished_run_with_no_step_started_runs_every_step_on_resume(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    journal = runtime.workflow_journal()
    log = RunLog(journal, "wf_fresh00000000")
    log.started("edit", runtime.snapshot.workflows["edit"].fingerprint, Session(id="kept"), {"fail": False})
    journal.write()
    result = await runtime.resume_workflow("wf_fresh00000000")
    assert result.status == "ok", result.render()
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\n"
    assert journal.load("wf_fresh00000000").status == "ok"
    assert (await runtime.resume_workflow("wf_fresh00000000")).note is not None


def test_finished_runs_are_pruned_after_the_retention_and_unfinished_ones_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    journal = Journal(path, retention_days=30)
    journal.open()
    for run_id, status in (("wf_old_done", "ok"), ("wf_old_open", "running"), ("wf_new_done", "failed")):
        log = RunLog(journal, run_id)
        log.started("w", "fp", Session(), {})
        journal.write()
        if status != "running":
            with sqlite3.connect(path) as connection:
                connection.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))
    with sqlite3.connect(path) as connection:
        old = time.time() - 31 * 86400
        connection.execute("UPDATE runs SET updated_at = ? WHERE run_id LIKE 'wf_old%'", (old,))
    journal.close()
    reopened = Journal(path, retention_days=30)
    reopened.open()
    assert sorted(r.run_id for r in reopened.runs()) == ["wf_new_done", "wf_old_open"]
    reopened.close()


def test_reading_a_journal_that_is_not_there_says_where_it_looked(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "missing" / "journal.sqlite3")
    with pytest.raises(JournalError, match="no workflow journal at .*missing"):
        journal.load("wf_x")
    with pytest.raises(JournalError, match="no workflow journal"):
        journal.runs()


async def test_a_workflow_called_as_a_tool_is_journaled(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    (result,) = await runtime.run_turn([Call("c1", "edit", {"fail": False})])
    assert result.metadata["workflow_status"] == "ok", result.content
    run_id = result.metadata["workflow_run"]
    assert runtime.workflow_journal().load(run_id).status == "ok"


def test_cli_status_list_and_resume(
    make_runtime: Callable[..., Runtime], tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    runtime = make_runtime(EDIT_THEN_FAIL)
    result = runtime.run_workflow_sync("edit", {"fail": True})
    runtime.close_sync()
    ws = str(workspace)
    code, out, _ = _cli("workflow", "status", result.run_id, "--workspace", ws, state=state, monkeypatch=monkeypatch)
    assert code == 0 and f"run {result.run_id}  workflow edit  compensated" in out
    assert "  - change: ok" in out and "  undone change: ok" in out
    code, out, _ = _cli(
        "workflow", "status", result.run_id, "--workspace", ws, "--format", "json", state=state, monkeypatch=monkeypatch
    )
    assert code == 0 and json.loads(out)["status"] == "compensated"
    code, out, _ = _cli("workflow", "list", "--workspace", ws, state=state, monkeypatch=monkeypatch)
    assert code == 0 and result.run_id in out and "compensated" in out
    config = str(tmp_path / "config")
    code, out, _ = _cli(
        "workflow", "resume", result.run_id, "--config", config, "--workspace", ws, "--format", "text",
        state=state, monkeypatch=monkeypatch,
    )  # fmt: skip
    assert code == 1 and "already finished (compensated)" in out
    code, _, err = _cli("workflow", "status", "wf_nope", "--workspace", ws, state=state, monkeypatch=monkeypatch)
    assert code == 1 and "no run `wf_nope`" in err
    other = tmp_path / "elsewhere"
    other.mkdir()
    code, _, err = _cli(
        "workflow", "status", "wf_nope", "--workspace", str(other), state=state, monkeypatch=monkeypatch
    )
    assert code == 1 and "no workflow journal at" in err
    code, out, _ = _cli("workflow", "list", "--workspace", str(other), state=state, monkeypatch=monkeypatch)
    assert code == 0 and "no journaled runs" in out
    code, _, err = _cli(
        "workflow", "resume", "wf_nope", "--config", config, "--workspace", ws, state=state, monkeypatch=monkeypatch
    )
    assert code == 1 and "cannot be resumed" in err
