"""Undoing the completed steps of a run, in reverse completion order.

Each compensation is a call through the pipeline (``<run id>.<step>.compensate``),
journaled before it runs (the row committed first: a compensation changes things)
and after it ends. Built-in compensation of file_edit/file_delete steps restores the
copy taken before the step (see :mod:`runtime.workflow.restore`).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from runtime.records import Call
from runtime.workflow.journal import JournalError
from runtime.workflow.restore import Backup, plan_restore, take_backup
from runtime.workflow.result import CompensationReport
from runtime.workflow.templates import TemplateError, evaluate

if TYPE_CHECKING:
    from runtime.workflow.compile import CompiledStep
    from runtime.workflow.runstate import RunState


async def compensate(run: RunState) -> list[CompensationReport]:
    """Undo ``run``'s completed steps (those not undone already, on a resumed run)."""
    reports: list[CompensationReport] = list(run.compensations)
    by_id = {s.id: s for s in run.workflow.steps}
    done = {c.step for c in reports}
    for step_id in reversed(run.completed):
        if step_id in done:
            continue
        step = by_id[step_id]
        report = await _one(run, step)
        if report is not None:
            if run.log is not None:
                run.log.compensation_ended(report)
                try:
                    run.log.write()
                except JournalError:
                    pass  # reported by the next compensation that needs the journal
            reports.append(report)
    return reports


async def _one(run: RunState, step: CompiledStep) -> CompensationReport | None:
    comp = step.compensation
    started = time.perf_counter()
    if comp is None:
        if step.read_only:
            return None
        return CompensationReport(
            step.id, "-", "not_declared", "the step changed something and declares no compensation"
        )
    call_id = f"{run.run_id}.{step.id}.compensate"
    if comp.builtin:
        return await restore(run, step, call_id, started)
    try:
        args = evaluate(comp.args, run.scope()) if comp.args is not None else {}
    except TemplateError as err:
        return CompensationReport(
            step.id, comp.tool, "failed", f"its arguments could not be computed: {err}", _ms(started)
        )
    refused = await _journal_start(run, step.id, comp.tool, started)
    if refused is not None:
        return refused
    result = await run.run_call(Call(call_id, comp.tool, args), run.env)
    if result.is_error:
        return CompensationReport(step.id, comp.tool, "failed", first_line(result.content), _ms(started), result)
    return CompensationReport(step.id, comp.tool, "ok", None, _ms(started), result)


async def _journal_start(run: RunState, step_id: str, tool: str, started: float) -> CompensationReport | None:
    """Write "compensation started" to disk before it runs; a report when that failed."""
    run.wrote = True
    if run.log is None:
        return None
    run.log.compensation_started(step_id)
    try:
        await run.log.barrier()
    except JournalError as err:
        return CompensationReport(step_id, tool, "failed", f"not run: {err}", _ms(started))
    return None


async def restore(run: RunState, step: CompiledStep, call_id: str, started: float) -> CompensationReport:
    """Put back the file a completed file_edit/file_delete step changed."""
    report = run.reports[step.id]
    metadata = report.result.metadata if report.result is not None else {}
    workflow = run.workflow
    plan = plan_restore(run.backups.get(step.id), step.handler, metadata, workflow.restore_tool, workflow.remove_tool)
    if plan.refused is not None:
        if plan.refused == "":
            return CompensationReport(step.id, step.tool, "skipped", "the step changed nothing", _ms(started))
        return CompensationReport(step.id, workflow.restore_tool or "-", "refused", plan.refused, _ms(started))
    assert plan.tool is not None and plan.args is not None  # noqa: S101 - a plan that is not refused has both
    if step.handler == "file_delete":
        # The file must still be gone: restoring over a file made since would lose it.
        now = await current(run, run.backups[step.id].path)
        if now is not None and (now.error is not None or now.raw is not None):
            why = now.error or "a file was created at that path after the step deleted it"
            return CompensationReport(step.id, plan.tool, "refused", f"{why}; it was left as it is", _ms(started))
    refused = await _journal_start(run, step.id, plan.tool, started)
    if refused is not None:
        return refused
    result = await run.run_call(Call(call_id, plan.tool, dict(plan.args)), run.env)
    if result.is_error:
        return CompensationReport(step.id, plan.tool, "failed", first_line(result.content), _ms(started), result)
    if plan.expect_sha256 is not None and result.metadata.get("hash_after") != plan.expect_sha256:
        return CompensationReport(
            step.id,
            plan.tool,
            "failed",
            f"the restored file's sha256 is {result.metadata.get('hash_after')},"
            f" not the {plan.expect_sha256} it had before the step",
            _ms(started),
            result,
        )
    return CompensationReport(step.id, plan.tool, "ok", None, _ms(started), result)


async def current(run: RunState, path: str) -> Backup | None:
    """The file at ``path`` now (None when the runtime has no workspace)."""
    tools = run.env.workspace_tools
    if tools is None:
        return None
    return await asyncio.to_thread(take_backup, tools, path)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 300 else line[:300] + "..."
