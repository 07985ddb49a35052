"""Running a compiled workflow: every step a real call through the pipeline.

Scheduling follows the rules of a turn: read-only steps whose dependencies have
finished run concurrently (at most ``max_concurrency``); any other step runs alone,
when nothing else runs. Each step is a :class:`~runtime.records.Call` handed to
:func:`runtime.pipeline.run_call` with the run's own :class:`TurnEnv` (the snapshot
the run started with, the caller's session and approver): validation, business
rules, policy (an ``ask`` goes to the same approver), timeouts, shaping, audit,
metrics and traces all apply. The run id is the ``request_id`` of every step's call
(so audit records, logs and spans carry it) and the call id is ``<run id>.<step>``
(``.<step>.retry<n>`` for retries, ``.<step>.compensate`` for compensations).

Failure: a step that fails (any error result, including a denial or a timeout) does
what its ``on_failure`` says: ``stop`` (start nothing more), ``continue`` (only the
steps downstream of it are not run), ``compensate`` (start nothing more, let running
steps finish, then undo the completed steps in reverse completion order, each
through the pipeline; their outcomes are part of the result).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runtime.pipeline import run_call
from runtime.pipeline.env import TurnEnv
from runtime.policy.cel import get_engine
from runtime.records import Call, Outcome, Stage, Status, ToolResult, ValidatedCall
from runtime.workflow.compile import CompiledStep, CompiledWorkflow
from runtime.workflow.restore import Backup, plan_restore, take_backup
from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult
from runtime.workflow.templates import WORKFLOW_VARIABLES, TemplateError, evaluate

_RETRYABLE = (Status.error, Status.timeout)


def new_run_id() -> str:
    return f"wf_{uuid.uuid4().hex[:16]}"


async def run_workflow(
    workflow: CompiledWorkflow, arguments: Mapping[str, Any], env: TurnEnv, *, run_id: str | None = None
) -> WorkflowResult:
    """Run ``workflow`` with ``arguments`` (already valid for its input schema).
    Never raises for anything a step does (cancellation goes on)."""
    run = _Run(workflow, dict(arguments), env, run_id or new_run_id())
    return await run.execute()


async def run_as_tool(call: ValidatedCall, env: TurnEnv) -> Outcome:
    """The execute stage of a workflow exposed as a tool: the run's report as the output."""
    workflow = env.snapshot.workflows.get(call.tool.handler.target)
    if workflow is None:  # pragma: no cover - the snapshot builds both from one document
        return Outcome(
            error=f"workflow `{call.tool.handler.target}` is not in this snapshot",
            status=Status.internal,
            code="internal",
        )
    result = await run_workflow(workflow, call.args, env)
    meta = MappingProxyType({"workflow_run": result.run_id, "workflow_status": result.status})
    if result.ok:
        return Outcome(value=result.render(), metadata=meta)
    status = (
        Status.unknown
        if any(s.status == "unknown" for s in result.steps) and result.status != "compensated"
        else Status.error
    )
    return Outcome(error=result.render(), status=status, code="workflow_" + result.status, metadata=meta)


class _Run:
    def __init__(self, workflow: CompiledWorkflow, arguments: dict[str, Any], env: TurnEnv, run_id: str) -> None:
        self.workflow = workflow
        self.input = arguments
        self.run_id = run_id
        self.env = dataclasses.replace(env, request_id=run_id)
        self.engine = get_engine(env.snapshot.cel_engine)
        self.reports: dict[str, StepReport] = {}
        self.views: dict[str, dict[str, Any]] = {}  # what `steps.<id>` reads
        self.completed: list[str] = []  # ok steps, in completion order
        self.backups: dict[str, Backup] = {}
        self.stop_reason: str | None = None
        self.compensate = False

    def activation(self, reads: frozenset[str] | None = None) -> Any:
        """What expressions see; only the steps in ``reads`` when given (smaller to convert)."""
        views = self.views if reads is None or "*" in reads else {k: self.views[k] for k in reads if k in self.views}
        return self.engine.activation({"input": self.input, "steps": views}, WORKFLOW_VARIABLES)

    async def execute(self) -> WorkflowResult:
        started = time.perf_counter()
        pending = list(self.workflow.steps)
        running: dict[asyncio.Task[StepReport], CompiledStep] = {}
        limit = self.workflow.spec.max_concurrency
        try:
            while pending or running:
                if self.stop_reason is None:
                    self._skip_blocked(pending)
                    startable = self._startable(pending, running, limit)
                    if len(startable) == 1 and not running:
                        # Alone: run it here, without a task to schedule and wait for.
                        pending.remove(startable[0])
                        self._finish(startable[0], await self._step(startable[0]))
                        continue
                    for step in startable:
                        pending.remove(step)
                        running[asyncio.ensure_future(self._step(step))] = step
                else:
                    for step in pending:
                        self._finish(step, StepReport(step.id, step.tool, "not_run", reason=self.stop_reason))
                    pending = []
                if not running:
                    if pending and self.stop_reason is None and not self._startable(pending, running, limit):
                        # Nothing runs and nothing can start: only steps behind failures are left.
                        self._skip_blocked(pending, force=True)
                        pending = []
                    continue
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    step = running.pop(task)
                    self._finish(step, task.result())
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        compensations: list[CompensationReport] = []
        if self.compensate:
            compensations = await self._compensate()
        steps = tuple(self.reports[s.id] for s in sorted(self.workflow.steps, key=lambda s: s.index))
        failed = any(s.status in ("failed", "unknown") for s in steps)
        if not failed:
            status = "ok"
        elif self.compensate:
            status = (
                "compensated" if all(c.status in ("ok", "skipped") for c in compensations) else "compensation_failed"
            )
        else:
            status = "failed"
        return WorkflowResult(
            self.run_id, self.workflow.name, status, steps, tuple(compensations), (time.perf_counter() - started) * 1000
        )

    # -- scheduling ------------------------------------------------------------------

    def _startable(
        self, pending: list[CompiledStep], running: Mapping[Any, CompiledStep], limit: int
    ) -> list[CompiledStep]:
        if any(not s.read_only for s in running.values()):
            return []  # a write runs alone
        ready = [s for s in pending if all(d in self.reports for d in s.depends_on)]
        reads = [s for s in ready if s.read_only][: max(limit - len(running), 0)]
        if reads:
            return reads
        if not running and ready:
            return [ready[0]]
        return []

    def _skip_blocked(self, pending: list[CompiledStep], *, force: bool = False) -> None:
        """Steps with an upstream step that did not complete are not run."""
        changed = True
        while changed:
            changed = False
            for step in list(pending):
                bad = next(
                    (
                        d
                        for d in step.depends_on
                        if d in self.reports and self.reports[d].status not in ("ok", "skipped")
                    ),
                    None,
                )
                if bad is None and force:
                    bad = next((d for d in step.depends_on if d not in self.reports), None)
                if bad is not None:
                    pending.remove(step)
                    self._finish(
                        step,
                        StepReport(step.id, step.tool, "not_run", reason=f"upstream step `{bad}` did not complete"),
                    )
                    changed = True

    def _finish(self, step: CompiledStep, report: StepReport) -> None:
        self.reports[step.id] = report
        result = report.result
        read = self.workflow.read_steps
        # Only a step some expression reads needs its result converted for CEL.
        self.views[step.id] = (
            _view(report, result)
            if step.id in read or "*" in read
            else {"status": report.status, "ok": report.status == "ok"}
        )
        if report.status == "ok":
            self.completed.append(step.id)
        elif report.status in ("failed", "unknown") and self.stop_reason is None:
            policy = step.on_failure.value
            if policy == "continue":
                return
            self.stop_reason = f"the run stopped after step `{step.id}` {report.status if report.status == 'failed' else 'ended with an unknown result'}"
            self.compensate = policy == "compensate"

    # -- one step ----------------------------------------------------------------------

    async def _step(self, step: CompiledStep) -> StepReport:
        started = time.perf_counter()
        activation = self.activation(step.reads) if step.needs_activation else None
        if step.when is not None:
            outcome = step.when.evaluate(activation)
            if outcome.error is not None:
                return StepReport(
                    step.id, step.tool, "failed", _ms(started), reason=f"its `when` failed: {outcome.error}"
                )
            if outcome.value is not True:
                return StepReport(step.id, step.tool, "skipped", _ms(started), reason="its `when` is false")
        try:
            args = evaluate(step.args, activation)
        except TemplateError as err:
            return StepReport(
                step.id, step.tool, "failed", _ms(started), reason=f"its arguments could not be computed: {err}"
            )
        if not isinstance(args, dict):
            return StepReport(step.id, step.tool, "failed", _ms(started), reason="its arguments are not a map")
        if step.compensation is not None and step.compensation.builtin:
            tools = self.env.workspace_tools
            if tools is None:
                from runtime.tools.workspace_tools import tools_for

                try:
                    tools = tools_for(self.env)
                except Exception as err:  # noqa: BLE001 - no workspace: the backup says why, the step still runs
                    tools = None
                    self.backups[step.id] = Backup(str(args.get("path")), error=str(err))
            if tools is not None:
                self.backups[step.id] = await asyncio.to_thread(take_backup, tools, args.get("path"))
        attempts = 1 + (step.retry.attempts if step.retry is not None and step.retry_allowed else 0)
        result: ToolResult | None = None
        for attempt in range(attempts):
            if attempt:
                backoff = step.retry.backoff_s * (2 ** (attempt - 1)) if step.retry is not None else 0.0
                await asyncio.sleep(backoff)
            call_id = f"{self.run_id}.{step.id}" + (f".retry{attempt}" if attempt else "")
            result = await self._call(Call(call_id, step.tool, args), step.timeout_s, step.read_only)
            if not (result.is_error and result.status in _RETRYABLE):
                break
        assert result is not None  # noqa: S101 - attempts >= 1
        status = "ok" if not result.is_error else ("unknown" if result.status is Status.unknown else "failed")
        reason = None if status == "ok" else _first_line(result.content)
        return StepReport(step.id, step.tool, status, _ms(started), attempt + 1, reason, result)

    async def _call(self, call: Call, timeout_s: float | None, read_only: bool) -> ToolResult:
        if timeout_s is None:
            return await run_call(call, self.env)
        task = asyncio.ensure_future(run_call(call, self.env))
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if task in done:
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if read_only:
            return ToolResult(
                call.id,
                call.name,
                f"Stopped: the step's time limit of {timeout_s:g} s passed.",
                Status.timeout,
                "step_timeout",
                Stage.execute,
            )
        message = f"Result unknown: the step's time limit of {timeout_s:g} s passed, so `{call.name}` was stopped; it may or may not have taken effect."
        return ToolResult(call.id, call.name, message, Status.unknown, "step_timeout", Stage.execute)

    # -- compensation --------------------------------------------------------------------

    async def _compensate(self) -> list[CompensationReport]:
        reports: list[CompensationReport] = []
        by_id = {s.id: s for s in self.workflow.steps}
        for step_id in reversed(self.completed):
            step = by_id[step_id]
            comp = step.compensation
            started = time.perf_counter()
            if comp is None:
                if not step.read_only:
                    reports.append(
                        CompensationReport(
                            step.id, "-", "not_declared", "the step changed something and declares no compensation"
                        )
                    )
                continue
            call_id = f"{self.run_id}.{step.id}.compensate"
            if comp.builtin:
                reports.append(await self._restore(step, call_id, started))
                continue
            try:
                args = evaluate(comp.args, self.activation()) if comp.args is not None else {}
            except TemplateError as err:
                reports.append(
                    CompensationReport(
                        step.id, comp.tool, "failed", f"its arguments could not be computed: {err}", _ms(started)
                    )
                )
                continue
            result = await run_call(Call(call_id, comp.tool, args), self.env)
            status = "ok" if not result.is_error else "failed"
            reports.append(
                CompensationReport(
                    step.id,
                    comp.tool,
                    status,
                    None if status == "ok" else _first_line(result.content),
                    _ms(started),
                    result,
                )
            )
        return reports

    async def _restore(self, step: CompiledStep, call_id: str, started: float) -> CompensationReport:
        report = self.reports[step.id]
        metadata = report.result.metadata if report.result is not None else {}
        plan = plan_restore(
            self.backups.get(step.id), step.handler, metadata, self.workflow.restore_tool, self.workflow.remove_tool
        )
        if plan.refused is not None:
            if plan.refused == "":
                return CompensationReport(step.id, step.tool, "skipped", "the step changed nothing", _ms(started))
            return CompensationReport(step.id, self.workflow.restore_tool or "-", "refused", plan.refused, _ms(started))
        assert plan.tool is not None and plan.args is not None  # noqa: S101 - a plan that is not refused has both
        if step.handler == "file_delete":
            # The file must still be gone: restoring over a file made since would lose it.
            backup = self.backups[step.id]
            tools = self.env.workspace_tools
            now = await asyncio.to_thread(take_backup, tools, backup.path) if tools is not None else None
            if now is not None and (now.error is not None or now.raw is not None):
                why = now.error or "a file was created at that path after the step deleted it"
                return CompensationReport(step.id, plan.tool, "refused", f"{why}; it was left as it is", _ms(started))
        result = await run_call(Call(call_id, plan.tool, dict(plan.args)), self.env)
        if result.is_error:
            return CompensationReport(step.id, plan.tool, "failed", _first_line(result.content), _ms(started), result)
        if plan.expect_sha256 is not None and result.metadata.get("hash_after") != plan.expect_sha256:
            return CompensationReport(
                step.id,
                plan.tool,
                "failed",
                f"the restored file's sha256 is {result.metadata.get('hash_after')}, not the {plan.expect_sha256} it had before the step",
                _ms(started),
                result,
            )
        return CompensationReport(step.id, plan.tool, "ok", None, _ms(started), result)


def _view(report: StepReport, result: ToolResult | None) -> dict[str, Any]:
    """``steps.<id>`` as expressions read it: plain values only (CEL takes no proxies)."""
    view: dict[str, Any] = {
        "status": report.status,
        "ok": report.status == "ok",
        "content": "",
        "data": None,
        "metadata": {},
        "code": "",
    }
    if result is not None:
        view["content"] = result.content
        view["data"] = _plain(result.structured) if result.structured is not None else result.content
        view["metadata"] = {k: _plain(v) for k, v in result.metadata.items() if k != "timings_ms"}
        view["code"] = result.code or ""
    return view


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` with read-only mappings and tuples turned into dicts and lists."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if depth > 32:
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v, depth + 1) for v in value]
    return str(value)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 300 else line[:300] + "..."
