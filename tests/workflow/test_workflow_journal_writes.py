"""How the journal writes: a finished run's result text is the JSON of its to_dict, rows
reach the file within the flush interval without anything flushing them, batches
survive concurrent appends, the WAL is checkpointed off the writing thread, and a
forked child journals as an owner of its own."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.records import Session, Status, ToolResult
from runtime.workflow import batches
from runtime.workflow import journal as journal_module
from runtime.workflow.journal import Journal, process_token
from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult
from runtime.workflow.rowtext import ok_format, result_text
from runtime.workflow.runlog import RunLog

HOSTILE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(
    ['"', "\\", "\n\r\t", "\x00\x1f", "é ü 漢字 🎉", "</script>", "\u2028\u2029", "null", "{}"]
)
NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,20}", fullmatch=True)
NUMBERS = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False) | st.integers(0, 10**6)


def _tool_result(call_id: str, code: str | None) -> ToolResult:
    return ToolResult(call_id, "t", "content", Status.ok, code)


STEPS = st.builds(
    StepReport,
    id=NAMES,
    tool=NAMES,
    status=st.sampled_from(["ok", "failed", "unknown", "skipped", "not_run"]),
    duration_ms=NUMBERS,
    attempts=st.integers(0, 9),
    reason=st.none() | HOSTILE_TEXT,
    result=st.none() | st.builds(_tool_result, call_id=HOSTILE_TEXT, code=st.none() | HOSTILE_TEXT),
)
COMPENSATIONS = st.builds(
    CompensationReport,
    step=NAMES,
    tool=NAMES,
    status=st.sampled_from(["ok", "failed", "refused", "not_declared", "skipped", "unknown"]),
    reason=st.none() | HOSTILE_TEXT,
    duration_ms=NUMBERS,
    result=st.none() | st.builds(_tool_result, call_id=HOSTILE_TEXT, code=st.none()),
)
RESULTS = st.builds(
    WorkflowResult,
    run_id=HOSTILE_TEXT,
    workflow=NAMES,
    status=st.sampled_from(["ok", "failed", "compensated", "compensation_failed"]),
    steps=st.lists(STEPS, max_size=6).map(tuple),
    compensations=st.lists(COMPENSATIONS, max_size=4).map(tuple),
    duration_ms=NUMBERS,
    error=st.none() | HOSTILE_TEXT,
    note=st.none() | HOSTILE_TEXT,
)


@given(RESULTS)
@settings(max_examples=300, deadline=None)
def test_the_result_text_is_the_json_of_to_dict(result: WorkflowResult) -> None:
    assert json.loads(result_text(result)) == json.loads(json.dumps(result.to_dict()))


ODD_NAMES = NAMES | st.sampled_from(["100%", "%s", "%(x)s", "%%", 'a"b', "a\\b", "é"])
OK_STEPS = st.lists(st.tuples(ODD_NAMES, ODD_NAMES), min_size=1, max_size=5)


@given(
    workflow=ODD_NAMES,
    steps=OK_STEPS,
    run_id=HOSTILE_TEXT,
    durations=st.lists(NUMBERS, min_size=6, max_size=6),
    call_ids=st.lists(HOSTILE_TEXT, min_size=5, max_size=5),
)
@settings(max_examples=300, deadline=None)
def test_the_precompiled_text_of_an_all_ok_run_is_the_json_of_to_dict(
    workflow: str, steps: list[tuple[str, str]], run_id: str, durations: list[float], call_ids: list[str]
) -> None:
    reports = tuple(
        StepReport(step, tool, "ok", durations[i + 1], 1, None, _tool_result(call_ids[i], None))
        for i, (step, tool) in enumerate(steps)
    )
    result = WorkflowResult(run_id, workflow, "ok", reports, (), durations[0])
    form = ok_format(workflow, steps)
    assert json.loads(result_text(result, form)) == json.loads(json.dumps(result.to_dict()))


@given(RESULTS)
@settings(max_examples=300, deadline=None)
def test_a_run_that_does_not_fit_the_precompiled_text_is_encoded_in_full(result: WorkflowResult) -> None:
    # Any result with any workflow's form (another shape, failed steps, retries, codes, notes): still its own JSON.
    form = ok_format(result.workflow, [(s.id, s.tool) for s in result.steps])
    other = ok_format("other", [("x", "y")])
    assert json.loads(result_text(result, form)) == json.loads(json.dumps(result.to_dict()))
    assert json.loads(result_text(result, other)) == json.loads(json.dumps(result.to_dict()))


def test_the_precompiled_text_is_not_used_for_runs_that_are_not_all_ok_once() -> None:
    form = ok_format("w", [("a", "t")])
    ok = _tool_result("wf_1.a", None)
    cases = [
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", 1.0, 2, None, ok),)),  # retried
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", 1.0, 1, None, _tool_result("wf_1.a", "c")),)),
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "skipped", 1.0, 0, "its `when` is false"),)),
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", float("inf"), 1, None, ok),)),
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", 1.0, 1, None, ok),), (), float("nan")),
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", 1.0, 1, None, ok),), note="resumed"),
        WorkflowResult("wf_1", "w", "ok", ()),  # fewer steps than the form
        WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", 1.0, 1, None, ok),) * 2),  # more
    ]
    for result in cases:
        assert json.loads(result_text(result, form)) == json.loads(json.dumps(result.to_dict()))


def test_the_result_text_of_the_same_step_names_in_other_runs_is_still_right() -> None:
    # The constant start of a step's object is kept per (id, tool): a later run with other values must not reuse them.
    first = WorkflowResult("wf_1", "w", "ok", (StepReport("a", "t", "ok", 1.0, 1),))
    second = WorkflowResult("wf_2", "w", "failed", (StepReport("a", "t", "failed", 2.5, 3, 'no "x"'),))
    assert json.loads(result_text(first))["steps"] == [first.steps[0].to_dict()]
    assert json.loads(result_text(second))["steps"] == [second.steps[0].to_dict()]


def _rows(path: Path, run_id: str) -> int:
    with sqlite3.connect(path, timeout=5) as connection:
        return int(connection.execute("SELECT count(*) FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0])


def _wait(condition: object, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_a_buffered_row_reaches_the_file_without_a_flush(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        log = RunLog(journal, "wf_alone", steps=False)
        log.started("w", "fp", Session(), {"n": 1})
        log.ended(WorkflowResult("wf_alone", "w", "ok", (StepReport("s", "t", "ok", 0.1, 1),)))
        # One row: far from a batch; the writer's timer writes it.
        _wait(lambda: _rows(journal.path, "wf_alone") == 1, "the row never reached the file")
    finally:
        journal.close()


def _run_rows(path: Path) -> dict[str, tuple[str, float, float, str | None]]:
    with sqlite3.connect(path, timeout=5) as connection:
        rows = connection.execute("SELECT run_id, status, started_at, updated_at, result FROM runs").fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def _ended(run_id: str, status: str = "ok") -> WorkflowResult:
    return WorkflowResult(run_id, "w", status, (StepReport("s", "t", status if status != "ok" else "ok", 0.1, 1),))


def test_a_read_only_run_ending_in_the_batch_of_its_start_is_written_once_as_it_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        monkeypatch.setattr(journal._batches, "notify", lambda: None)  # no writer thread: the test writes the batch
        log = RunLog(journal, "wf_fast", steps=False)
        log.started("w", "fp", Session(), {"n": 1})
        log.ended(_ended("wf_fast"))
        assert journal._connection is not None
        before = journal._connection.total_changes
        journal.write()
        assert journal._connection.total_changes - before == 1  # one row, not a start row then its replacement
        status, started, updated, result = _run_rows(journal.path)["wf_fast"]
        assert status == "ok" and updated >= started
        assert result is not None and json.loads(result)["steps"][0]["id"] == "s"
        record = journal.load("wf_fast")
        assert record.finished and record.input == {"n": 1}
    finally:
        journal.close()


def test_a_read_only_run_whose_start_row_was_written_is_replaced_by_its_end_row(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        log = RunLog(journal, "wf_slow", steps=False)
        log.started("w", "fp", Session(id="s1"), {"n": 2})
        journal.write()
        assert _run_rows(journal.path)["wf_slow"][0] == "running"
        assert not journal.load("wf_slow").finished  # a kill now leaves a run to resume
        log.ended(_ended("wf_slow", "failed"))
        journal.write()
        rows = _run_rows(journal.path)
        assert list(rows) == ["wf_slow"] and rows["wf_slow"][0] == "failed"
        record = journal.load("wf_slow")
        assert record.session["id"] == "s1" and record.input == {"n": 2} and record.events == ()
    finally:
        journal.close()


def test_interleaved_runs_in_one_batch_each_keep_their_last_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        monkeypatch.setattr(journal._batches, "notify", lambda: None)
        logs = {name: RunLog(journal, name, steps=False) for name in ("wf_a", "wf_b", "wf_c", "wf_d")}
        logs["wf_a"].started("w", "fp", Session(), {})
        logs["wf_b"].started("w", "fp", Session(), {})
        logs["wf_a"].ended(_ended("wf_a"))
        logs["wf_c"].started("w", "fp", Session(), {})
        # A run with step rows between them: its rows are other statements, in order.
        writer = RunLog(journal, "wf_w")
        writer.started("w", "fp", Session(), {})
        writer.step_started("s", {"x": 1}, None)
        logs["wf_b"].ended(_ended("wf_b", "failed"))
        logs["wf_d"].started("w", "fp", Session(), {})
        logs["wf_d"].ended(_ended("wf_d"))
        writer.ended(_ended("wf_w"))
        journal.write()
        statuses = {run: row[0] for run, row in _run_rows(journal.path).items()}
        assert statuses == {"wf_a": "ok", "wf_b": "failed", "wf_c": "running", "wf_d": "ok", "wf_w": "ok"}
        assert [e.kind for e in journal.load("wf_w").events] == ["step_start"]
    finally:
        journal.close()


def test_the_writer_thread_ends_when_idle_and_comes_back_for_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches, "IDLE_S", 0.2)
    monkeypatch.setattr(batches, "FLUSH_S", 0.05)
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()

    def running() -> bool:
        thread = journal._batches._thread
        return thread is not None and thread.is_alive()

    try:
        for n in range(2):
            run_id = f"wf_idle_{n}"
            RunLog(journal, run_id).started("w", "fp", Session(), {})
            assert running()  # started by the row
            _wait(lambda run_id=run_id: _rows(journal.path, run_id) == 1, f"{run_id} was not written")
            _wait(lambda: not running(), "the idle writer thread did not end")
    finally:
        journal.close()


def test_rows_appended_from_many_threads_while_batches_are_written_are_all_written(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:

        def append(worker: int) -> None:
            for i in range(300):
                RunLog(journal, f"wf_t{worker}_{i}").started("w", "fp", Session(), {"i": i})

        threads = [threading.Thread(target=append, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        durable = threading.Thread(target=lambda: [journal.commit() for _ in range(5)])
        durable.start()
        for thread in threads:
            thread.join()
        durable.join()
        journal.flush()
        with sqlite3.connect(journal.path) as connection:
            (count,) = connection.execute("SELECT count(*) FROM runs WHERE run_id LIKE 'wf_t%'").fetchone()
        assert count == 1800
    finally:
        journal.close()


def test_the_wal_is_checkpointed_by_a_thread_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "CHECKPOINT_BYTES", 64 * 1024)
    monkeypatch.setattr(journal_module, "CHECKPOINT_CHECK", 1)
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    checkpointers: set[str] = set()
    real = journal._checkpoint

    def watched() -> None:
        checkpointers.add(threading.current_thread().name)
        real()

    monkeypatch.setattr(journal, "_checkpoint", watched)
    try:
        size = journal.path.stat().st_size
        deadline = time.monotonic() + 120
        i = 0
        # The database file grows only when a checkpoint copies the WAL into it. Rows go on
        # being written until it has: a commit made while a checkpoint runs starts none, so
        # on a loaded machine a fixed number of rows may end with the last one still running.
        while journal.path.stat().st_size <= size + 64 * 1024:
            assert time.monotonic() < deadline, "the WAL was never checkpointed"
            log = RunLog(journal, f"wf_ck_{i:05d}")
            log.started("w", "fp", Session(), {"pad": "x" * 500})
            journal.write()  # a batch each: the WAL grows past the limit quickly
            i += 1
            if i > 400:
                time.sleep(0.005)  # enough rows: give a running checkpoint time
        assert checkpointers == {"toolrt-journal-checkpoint"}
    finally:
        journal.close()


CHILD = """
import asyncio, json, os, sys
from pathlib import Path
from runtime.records import Session
from runtime.workflow.journal import journal_for, process_token
from runtime.workflow.runlog import RunLog
from runtime.settings import Settings

settings = Settings(state_dir=Path(sys.argv[1]), audit_sink="off")
journal = journal_for(settings, sys.argv[2])
RunLog(journal, "wf_parent").started("w", "fp", Session(), {})
journal.write()
pid = os.fork()
if pid == 0:
    child = journal_for(settings, sys.argv[2])
    RunLog(child, "wf_child").started("w", "fp", Session(), {})
    child.write()
    print(json.dumps({"child": process_token(), "same": child is journal}), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({"parent": process_token()}), flush=True)
"""


def test_a_forked_child_journals_as_an_owner_of_its_own(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "state"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    said = [json.loads(line) for line in done.stdout.splitlines()]
    child = next(s for s in said if "child" in s)
    parent = next(s for s in said if "parent" in s)
    assert child["same"] is False and child["child"] != parent["parent"]
    path = next((tmp_path / "state").rglob("*.sqlite3"))
    with sqlite3.connect(path) as connection:
        owners = dict(connection.execute("SELECT run_id, owner FROM runs").fetchall())
    assert owners == {"wf_parent": parent["parent"], "wf_child": child["child"]}
    assert process_token() not in owners.values()


def test_a_read_only_run_still_running_gets_its_start_row_from_the_writer_without_a_flush(tmp_path: Path) -> None:
    # The caller encodes nothing at the start of a read-only run: the writer thread makes
    # the start row at its next tick if the run is still running then.
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        log = RunLog(journal, "wf_long", steps=False)
        log.started("w", "fp", Session(id="s9", labels={"k": "v"}), {"path": "a.txt"})
        deadline = time.monotonic() + 30
        while "wf_long" not in _run_rows(journal.path):
            assert time.monotonic() < deadline, "the writer never made the start row of a running run"
            time.sleep(0.02)
        record = journal.load("wf_long")
        assert record.status == "running" and record.input == {"path": "a.txt"}
        assert record.session["id"] == "s9" and record.session["labels"] == {"k": "v"}
        log.ended(_ended("wf_long"))
        journal.write()
        assert _run_rows(journal.path)["wf_long"][0] == "ok"
    finally:
        journal.close()


def test_a_read_only_run_that_stops_without_an_end_is_left_unfinished_in_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cancelled before the writer's tick: its start row is made then, so the journal shows
    # it unfinished (to resume), never as if it had not run.
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        monkeypatch.setattr(journal._batches, "notify", lambda: None)
        log = RunLog(journal, "wf_cut", steps=False)
        log.started("w", "fp", Session(), {"n": 3})
        log.abandoned()
        assert not journal._unwritten
        journal.write()
        record = journal.load("wf_cut")
        assert not record.finished and record.input == {"n": 3}
    finally:
        journal.close()


def test_a_run_that_ended_is_never_written_back_as_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer makes start rows before it takes the buffer, and none for a run that
    # ended: across many batches a finished run's row is always its end row.
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        monkeypatch.setattr(journal._batches, "notify", lambda: None)
        for i in range(200):
            log = RunLog(journal, f"wf_{i}", steps=False)
            log.started("w", "fp", Session(), {"n": i})
            if i % 3 == 0:
                journal.write()  # a batch while it runs: its start row is written
            log.ended(_ended(f"wf_{i}"))
            if i % 5 == 0:
                journal.write()
        journal.write()
        rows = _run_rows(journal.path)
        assert len(rows) == 200 and {row[0] for row in rows.values()} == {"ok"}
    finally:
        journal.close()


def test_a_value_the_writer_cannot_encode_does_not_fail_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.open()
    try:
        looped: dict[str, object] = {}
        looped["self"] = looped
        log = RunLog(journal, "wf_loop", steps=False)
        log.started("w", "fp", Session(), looped)
        journal.write()
        record = journal.load("wf_loop")
        assert "not_encodable" in record.input
        other = RunLog(journal, "wf_next", steps=False)
        other.started("w", "fp", Session(), {"n": 1})
        journal.write()
        assert journal.load("wf_next").input == {"n": 1}
    finally:
        journal.close()
