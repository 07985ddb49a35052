"""Resuming a journaled run that a killed process left unfinished.

The run's rows are replayed in order: a step that ended keeps its report and result
(later steps read the recorded result; it is not run again), a backup taken before a
step is restored for built-in compensation. A step that started and never ended
("in flight" when the process died) runs again only if its tool is read-only or
idempotent; otherwise its result is *unknown*: the run stops and compensates its
completed steps, as it does when a step fails with ``on_failure: compensate``. For a
file_edit/file_delete step in flight, the file is compared with the copy taken before
the step: unchanged means the step did not take effect; changed is left as it is and
reported. A compensation in flight is checked the same way (built-in) or run again
only when its tool is idempotent.

Only one process resumes a run: it must not be active here, its owner process must
be gone (a pid and its start time), and taking it over is a compare-and-set on the
journal row. A finished run is not resumed again: the answer says it finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.pipeline.env import CallRunner, TurnEnv
from runtime.records import Session
from runtime.workflow.compensate import current
from runtime.workflow.journal import (
    COMP_END,
    COMP_START,
    STEP_END,
    STEP_START,
    Journal,
    JournalError,
    RunRecord,
    journal_for,
    journal_path,
)
from runtime.workflow.owners import owner_alive
from runtime.workflow.restore import Backup
from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult
from runtime.workflow.run import Run
from runtime.workflow.runlog import RunLog, decode_compensation, decode_step, session_of

if TYPE_CHECKING:
    from runtime.metrics import Metrics

UNKNOWN_WORKFLOW = "(unknown)"  # the workflow label of a resume that found no run

UNKNOWN = (
    "result unknown: the process running the workflow stopped while this step ran, and its tool is neither"
    " read-only nor idempotent, so it was not run again; it may or may not have taken effect"
)


async def resume_run(
    settings: Any,
    workspace_root: Any,
    run_id: str,
    make_env: Callable[[Session], TurnEnv],
    *,
    run_call: CallRunner,
    metrics: Metrics | None = None,
) -> WorkflowResult:
    """Resume the run ``run_id`` of the journal ``settings`` name; ``make_env(session)``
    builds the environment for the run's own session. Never raises: a result with
    ``error`` says why it cannot be resumed (no journal, a corrupt one, no such run).
    ``metrics`` counts the resume by its outcome (see :meth:`Metrics.record_resume`). The steps left run through
    ``run_call`` (the pipeline's)."""
    record: RunRecord | None = None
    try:
        path = journal_path(settings, workspace_root)
        if path is None:
            raise JournalError("workflow runs are not journaled (the workflow_journal setting is off)")
        if not path.exists():
            raise JournalError(f"no workflow journal at {path}: no run has been journaled for this workspace")
        journal = journal_for(settings, workspace_root)
        assert journal is not None  # noqa: S101 - the path is set
        record = journal.load(run_id)
        result = await resume(journal, record, make_env(session_of(record.session)), run_call)
    except JournalError as err:
        result = WorkflowResult(run_id, "", "failed", (), error=f"run {run_id} cannot be resumed: {err}")
    if metrics is not None:
        if result.error:
            outcome = "refused"
        else:
            outcome = "finished" if record is not None and record.finished else result.status
        metrics.record_resume(result.workflow or UNKNOWN_WORKFLOW, outcome)
    return result


async def resume(journal: Journal, record: RunRecord, env: TurnEnv, run_call: CallRunner) -> WorkflowResult:
    """Go on with ``record`` (loaded from ``journal``) in ``env`` (built with the run's
    session). A result with ``error`` set when it cannot be resumed."""
    run_id = record.run_id
    if record.finished:
        return finished_result(record)
    workflow = env.snapshot.workflows.get(record.workflow)
    if workflow is None:
        return _refused(record, f"the config no longer has a workflow named `{record.workflow}`.")
    if workflow.fingerprint != record.fingerprint:
        return _refused(
            record,
            f"workflow `{record.workflow}` changed since this run started; its steps cannot be matched safely."
            " Restore the workflow's previous definition to resume it.",
        )
    if not journal.activate(run_id):
        return _refused(record, "this process is running it right now.")
    try:
        if record.owner != journal.owner and owner_alive(record.owner):
            pid = record.owner.partition(":")[0]
            return _refused(record, f"it is still running in process {pid}.")
        if not journal.claim(record, journal.owner):
            return _refused(record, "another process took it over first.")
        started = time.perf_counter()
        seq = record.events[-1].seq if record.events else 0
        run = Run(workflow, dict(record.input), env, run_id, RunLog(journal, run_id, seq), run_call)
        pending = await _replay(run, record)
        return await run.execute(pending, started)
    finally:
        journal.deactivate(run_id)


async def _replay(run: Run, record: RunRecord) -> list[Any]:
    """Restore ``run`` from the rows; the steps still to run."""
    workflow = run.workflow
    by_id = {s.id: s for s in workflow.steps}
    started: dict[str, Any] = {}
    ended: list[str] = []
    compensating: dict[str, Any] = {}
    for event in record.events:
        step = by_id.get(event.step)
        if step is None:
            raise JournalError(f"run {record.run_id} names a step `{event.step}` its workflow does not have")
        if event.kind == STEP_START:
            started[step.id] = step
            backup = event.data.get("backup")
            if backup is not None:
                run.backups[step.id] = Backup(backup["path"], event.backup, backup.get("sha256"), backup.get("error"))
        elif event.kind == STEP_END:
            run.finish(step, decode_step(event.data), journal=False)
            ended.append(step.id)
        elif event.kind == COMP_START:
            compensating[step.id] = step
        elif event.kind == COMP_END:
            run.compensations.append(decode_compensation(event.data))
            compensating.pop(step.id, None)
    run.replayed_compensations = len(run.compensations)
    if compensating or run.compensations or any(r.reason == UNKNOWN for r in run.reports.values()):
        run.compensate = True  # it was compensating, or an earlier resume found a result unknown
    in_flight = [s for sid, s in started.items() if sid not in run.reports]
    again = [s for s in in_flight if s.retry_allowed]
    doubtful = [s for s in in_flight if not s.retry_allowed]
    for step in doubtful:
        run.finish(step, StepReport(step.id, step.tool, "unknown", reason=UNKNOWN))
        run.compensate = True  # whatever its on_failure says: an unknown write is undone around
        if step.compensation is not None and step.compensation.builtin:
            await _doubtful_file(run, step)
    for step in compensating.values():
        await _compensation_in_flight(run, step)
    notes = [f"Resumed run {record.run_id}"]
    if ended:
        notes.append(f"{len(ended)} step(s) had ended before the process stopped ({', '.join(ended)})")
    if again:
        notes.append(f"run again (read-only or idempotent): {', '.join(s.id for s in again)}")
    if doubtful:
        notes.append(f"result unknown: {', '.join(s.id for s in doubtful)}")
    run.note = "; ".join(notes) + "."
    if run.compensate and run.stop_reason is None:
        run.stop_reason = "the run stopped: a step's result is unknown after the process running it stopped"
    done = set(run.reports)
    return [s for s in workflow.steps if s.id not in done]


async def _doubtful_file(run: Run, step: Any) -> None:
    """A file_edit/file_delete step in flight: did it change the file?"""
    backup = run.backups.get(step.id)
    now = await current(run, backup.path) if backup is not None and backup.error is None else None
    if backup is None or now is None or now.error is not None:
        report = CompensationReport(
            step.id, step.tool, "refused", "the file could not be compared with the copy taken before the step"
        )
    elif now.sha256 == backup.sha256:
        report = CompensationReport(
            step.id, step.tool, "skipped", "the file is as it was before the step: the step did not take effect"
        )
    else:
        report = CompensationReport(
            step.id,
            step.tool,
            "refused",
            "the file differs from the copy taken before the step: the step may have taken effect (or someone"
            " else changed the file); it was left as it is",
        )
    _record(run, report)


async def _compensation_in_flight(run: Run, step: Any) -> None:
    """A compensation that started and never ended: checked, run again, or unknown."""
    comp = step.compensation
    if comp is not None and comp.builtin:
        backup = run.backups.get(step.id)
        now = await current(run, backup.path) if backup is not None and backup.error is None else None
        if backup is not None and now is not None and now.error is None and now.sha256 == backup.sha256:
            _record(run, CompensationReport(step.id, comp.tool, "ok", "restored before the process stopped"))
        return  # otherwise restored again: the expected hash refuses a file that changed since
    tool = run.env.snapshot.tools.get(comp.tool) if comp is not None else None
    if tool is not None and (tool.spec.read_only or tool.spec.idempotent):
        return  # run again
    why = "the process stopped while this compensation ran; it may or may not have taken effect"
    _record(run, CompensationReport(step.id, comp.tool if comp is not None else "-", "unknown", why))


def _record(run: Run, report: CompensationReport) -> None:
    run.compensations.append(report)
    if run.log is not None:
        run.log.compensation_ended(report)


def _refused(record: RunRecord, why: str) -> WorkflowResult:
    return WorkflowResult(
        record.run_id, record.workflow, "failed", (), error=f"run {record.run_id} cannot be resumed: {why}"
    )


def finished_result(record: RunRecord) -> WorkflowResult:
    """What a finished run returned, as the journal holds it (without step outputs)."""
    data = record.result or {}
    steps = tuple(
        StepReport(s["id"], s["tool"], s["status"], s.get("duration_ms", 0.0), s.get("attempts", 0), s.get("reason"))
        for s in data.get("steps", ())
    )
    compensations = tuple(
        CompensationReport(c["step"], c["tool"], c["status"], c.get("reason"), c.get("duration_ms", 0.0))
        for c in data.get("compensations", ())
    )
    return WorkflowResult(
        record.run_id,
        record.workflow,
        record.status,
        steps,
        compensations,
        float(data.get("duration_ms", 0.0)),
        note=f"Run {record.run_id} already finished ({record.status}); there is nothing to resume.",
    )


def summary(record: RunRecord, *, alive: bool | None = None) -> dict[str, Any]:
    """``record`` as ``toolrt workflow status`` shows it: the run, and each step's state
    (the recorded result of a finished run; for an unfinished one, what its rows say:
    ended with a status, or started and never ended, "in_flight")."""
    out: dict[str, Any] = {
        "run_id": record.run_id,
        "workflow": record.workflow,
        "status": record.status,
        "started_at": record.started_at,
        "updated_at": record.updated_at,
        "session": record.session.get("id"),
    }
    if record.finished:
        out["steps"] = [
            {"id": s["id"], "status": s["status"], **({"reason": s["reason"]} if s.get("reason") else {})}
            for s in (record.result or {}).get("steps", ())
        ]
        out["compensations"] = [
            {"step": c["step"], "status": c["status"]} for c in (record.result or {}).get("compensations", ())
        ]
        return out
    states: dict[str, str] = {}
    for event in record.events:
        if event.kind == STEP_START:
            states[event.step] = "in_flight"
        elif event.kind == STEP_END:
            states[event.step] = str(event.data.get("status"))
        elif event.kind == COMP_START:
            states[event.step] = states.get(event.step, "ok") + ", compensating"
        elif event.kind == COMP_END:
            states[event.step] = (
                states.get(event.step, "ok").split(",")[0] + f", compensation {event.data.get('status')}"
            )
    out["steps"] = [{"id": step, "status": state} for step, state in states.items()]
    owner_pid = record.owner.partition(":")[0]
    running = owner_alive(record.owner) if alive is None else alive
    out["owner"] = {"pid": owner_pid, "alive": running}
    out["resumable"] = not running
    return out
