"""Running a compiled workflow: every step a real call through the pipeline.

Scheduling follows the rules of a turn: read-only steps whose dependencies have
finished run concurrently (at most ``max_concurrency``); any other step runs alone,
when nothing else runs. Each step is a :class:`~runtime.records.Call` handed to
:func:`runtime.pipeline.run_call` (the ``run_call`` this module is given: the pipeline
runs workflow tools, so it is not imported here) with the run's own :class:`TurnEnv` (the snapshot
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
import os
import random
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from runtime.pipeline.env import CallRunner, TurnEnv
from runtime.records import Call, HandlerOutcome, Session, Stage, Status, ToolResult, ValidatedCall
from runtime.workflow.compensate import compensate, first_line
from runtime.workflow.compile import CompiledStep, CompiledWorkflow
from runtime.workflow.journal import Journal, JournalError, journal_for
from runtime.workflow.restore import Backup, take_backup
from runtime.workflow.result import (
    CompensationReport,
    StepReport,
    WorkflowResult,
    step_report,
    workflow_result,
)
from runtime.workflow.runlog import RunLog
from runtime.workflow.runstate import RunState
from runtime.workflow.templates import Scope, TemplateError, evaluate

_RETRYABLE = (Status.error, Status.timeout)
_EMPTY_SCOPE = Scope({}, None, lambda data, reads: None)  # a step with nothing to evaluate


def new_run_id() -> str:
    """``wf_`` + the time in milliseconds (11 hex digits) + 64 random bits: unique, and
    in start order, so the journal appends run rows at the end of its index instead of
    writing a random page of it per run. The bits come from a generator of the module's
    own, seeded from the system's randomness at import and again in a forked child:
    ``os.urandom`` would let go of the interpreter lock on the event loop's thread for
    each run (a thread waiting for the lock then takes it), and an app seeding
    ``random`` must not make two processes' run ids the same."""
    return f"wf_{time.time_ns() // 1_000_000:011x}{_RANDOM.getrandbits(64):016x}"


_DEFAULT_SESSIONS: dict[str, Session] = {}  # permission mode -> the session of runs given none


def default_session(mode: str) -> Session:
    """The session of a run given none: one per permission mode, shared by every such
    run (its labels and pins cannot change), so that the journal encodes it once
    (runlog._session_text finds it by identity)."""
    session = _DEFAULT_SESSIONS.get(mode)
    if session is None:
        session = _DEFAULT_SESSIONS[mode] = Session(mode=mode, labels=MappingProxyType({}), pins=MappingProxyType({}))
    return session


_RANDOM = random.Random()  # noqa: S311 - unique ids, not secrets: nothing guesses a run id to gain anything
os.register_at_fork(after_in_child=_RANDOM.seed)


async def run_named(
    name: str, args: Mapping[str, Any] | None, env: TurnEnv, run_id: str, *, run_call: CallRunner
) -> WorkflowResult:
    """Run the workflow ``name`` of ``env``'s snapshot with ``args``, checked against its
    ``input_schema`` first (see :func:`run_workflow`): an unknown name or bad ``args``
    give a result with ``error`` set. Each step runs through ``run_call`` (the pipeline's)."""
    started = time.perf_counter()
    workflow = env.snapshot.workflows.get(name)
    if workflow is None:
        known = ", ".join(sorted(env.snapshot.workflows)) or "none"
        return WorkflowResult(run_id, name, "failed", (), error=f"no workflow named `{name}` (workflows: {known}).")
    inputs = dict(args or {})  # the run's own (the journal encodes it later)
    problems = workflow.arguments.validate(inputs) if workflow.arguments is not None else ()
    if problems:
        listed = "; ".join(p.message for p in problems[:10])
        return WorkflowResult(run_id, name, "failed", (), error=f"invalid arguments: {listed}.")
    run = _begin(workflow, inputs, env, run_id, None, run_call)
    if isinstance(run, WorkflowResult):
        return run
    return await run.start(started)


async def run_workflow(
    workflow: CompiledWorkflow,
    arguments: Mapping[str, Any],
    env: TurnEnv,
    *,
    run_call: CallRunner,
    run_id: str | None = None,
    journal: Journal | None = None,
    own_arguments: bool = False,
) -> WorkflowResult:
    """Run ``workflow`` with ``arguments`` (already valid for its input schema),
    journaled in ``journal`` (default: the one the settings name; see
    :mod:`runtime.workflow.journal`). Never raises for anything a step does
    (cancellation goes on). ``own_arguments``: ``arguments`` is a dict made for this
    run, which it may keep as it is. Each step runs through ``run_call`` (the pipeline's)."""
    started = time.perf_counter()
    # The run's own: the journal encodes it later.
    inputs = arguments if own_arguments and type(arguments) is dict else dict(arguments)
    run = _begin(workflow, inputs, env, run_id or new_run_id(), journal, run_call)
    if isinstance(run, WorkflowResult):
        return run
    return await run.start(started)


def _begin(
    workflow: CompiledWorkflow,
    inputs: dict[str, Any],
    env: TurnEnv,
    run_id: str,
    journal: Journal | None,
    run_call: CallRunner,
) -> Run | WorkflowResult:
    """A new run of ``workflow``, marked running in its journal (``journal``, else the
    one the settings name; none when they say ``off``); a result when it cannot start."""
    if journal is None:
        try:
            journal = journal_for(env.settings, env.workspace_root)
        except JournalError as err:
            return WorkflowResult(run_id, workflow.name, "failed", (), error=str(err))
        if journal is None:
            return Run(workflow, inputs, env, run_id, None, run_call)
    if not journal.activate(run_id):
        return WorkflowResult(run_id, workflow.name, "failed", (), error=f"run `{run_id}` is already running.")
    # A run that changes nothing is journaled as its start and its end only: resuming it
    # means running it again, which is safe, so its steps need no rows.
    return Run(workflow, inputs, env, run_id, RunLog(journal, run_id, steps=not workflow.read_only), run_call)


async def run_as_tool(call: ValidatedCall, env: TurnEnv, run_call: CallRunner) -> HandlerOutcome:
    """The execute stage of a workflow exposed as a tool: the run's report as the output (its steps run through
    ``run_call``, which the pipeline hands in)."""
    workflow = env.snapshot.workflows.get(call.tool.handler.target)
    if workflow is None:  # pragma: no cover - the snapshot builds both from one document
        return HandlerOutcome(
            error=f"workflow `{call.tool.handler.target}` is not in this snapshot",
            status=Status.internal,
            code="internal_error",
        )
    result = await run_workflow(workflow, call.args, env, run_call=run_call)
    meta = MappingProxyType({"workflow_run": result.run_id, "workflow_status": result.status})
    if result.ok:
        return HandlerOutcome(value=result.render(), metadata=meta)
    status = (
        Status.unknown
        if any(s.status == "unknown" for s in result.steps) and result.status != "compensated"
        else Status.error
    )
    return HandlerOutcome(error=result.render(), status=status, code="workflow_" + result.status, metadata=meta)


class Run(RunState):
    """One run: its steps scheduled, run, reported and, when the run fails so, compensated."""

    async def start(self, started: float) -> WorkflowResult:
        """Journal the run's start, run it, and mark it no longer running in this process."""
        log = self.log
        if log is None:
            return await self.execute(self.workflow.steps, started)
        try:
            log.started(self.workflow.name, self.workflow.fingerprint, self.env.session, self.input)
            result = await self.execute(self.workflow.steps, started)
        except BaseException:
            log.abandoned()
            raise
        finally:
            log.journal.deactivate(self.run_id)
        return result

    async def execute(self, pending: Sequence[CompiledStep], started: float) -> WorkflowResult:
        if not self.workflow.chain:
            await self._schedule(list(pending))
            return await self._conclude(started)
        # A chain (each step downstream of the one before): one at a time, in order,
        # with no scheduling to do.
        for step in pending:
            if self.stop_reason is not None:
                self.finish(step, StepReport(step.id, step.tool, "not_run", reason=self.stop_reason))
                continue
            if self.blocked:
                bad = self._bad_upstream(step, force=True)
                if bad is not None:
                    reason = f"upstream step `{bad}` did not complete"
                    self.finish(step, StepReport(step.id, step.tool, "not_run", reason=reason))
                    continue
            self.finish(step, await self._step(step))
        if self.compensate or self.wrote:
            return await self._conclude(started)
        return self._report(started, self.compensations)  # nothing to undo or to wait for: no coroutine

    async def _schedule(self, pending: list[CompiledStep]) -> None:
        running: dict[asyncio.Task[StepReport], CompiledStep] = {}
        limit = self.workflow.spec.max_concurrency
        try:
            while pending or running:
                if self.stop_reason is None:
                    if self.blocked:
                        self._skip_blocked(pending)
                    startable = self._startable(pending, running, limit)
                    if len(startable) == 1 and not running:
                        # Alone: run it here, without a task to schedule and wait for.
                        pending.remove(startable[0])
                        self.finish(startable[0], await self._step(startable[0]))
                        continue
                    for step in startable:
                        pending.remove(step)
                        running[asyncio.ensure_future(self._step(step))] = step
                else:
                    for step in pending:
                        self.finish(step, StepReport(step.id, step.tool, "not_run", reason=self.stop_reason))
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
                    self.finish(step, task.result())
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _conclude(self, started: float) -> WorkflowResult:
        compensations = await compensate(self) if self.compensate else self.compensations
        result = self._report(started, compensations)
        if self.log is not None and self.wrote:
            # A run that changed things is on disk as finished before it returns, so
            # that it is never resumed (and compensated) after its caller saw it end.
            try:
                await self.log.barrier()
            except JournalError:
                pass  # the steps ran; the journal keeps the run as unfinished
        return result

    def _report(self, started: float, compensations: Sequence[CompensationReport]) -> WorkflowResult:
        """The run's result, counted in the metrics and buffered as the journal's end row."""
        reports = self.reports
        steps = tuple([reports[s.id] for s in self.workflow.in_document_order])
        statuses = tuple([s.status for s in steps])
        if "failed" not in statuses and "unknown" not in statuses:
            status = "ok"
        elif self.compensate:
            status = (
                "compensated" if all(c.status in ("ok", "skipped") for c in compensations) else "compensation_failed"
            )
        else:
            status = "failed"
        result = workflow_result(
            self.run_id,
            self.workflow.name,
            status,
            steps,
            tuple(compensations),
            (time.perf_counter() - started) * 1000,
            self.note,
        )
        metrics = self.env.metrics
        if metrics is not None:
            # The compensations this process ran (a resumed run's earlier ones were counted where they ran).
            ran = tuple([c.status for c in compensations[self.replayed_compensations :]]) if compensations else ()
            metrics.record_workflow(self.workflow.name, status, statuses, ran)
        if self.log is not None:
            self.log.ended(result, self.workflow.ok_form)
        return result

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

    def _bad_upstream(self, step: CompiledStep, *, force: bool = False) -> str | None:
        """A dependency of ``step`` that did not complete (``force``: or has not ended)."""
        reports = self.reports
        for d in step.depends_on:
            report = reports.get(d)
            if report is not None and report.status != "ok" and report.status != "skipped":
                return d
        if force:
            return next((d for d in step.depends_on if d not in reports), None)
        return None

    def _skip_blocked(self, pending: list[CompiledStep], *, force: bool = False) -> None:
        """Steps with an upstream step that did not complete are not run."""
        changed = True
        while changed:
            changed = False
            for step in list(pending):
                bad = self._bad_upstream(step, force=force)
                if bad is not None:
                    pending.remove(step)
                    self.finish(
                        step,
                        StepReport(step.id, step.tool, "not_run", reason=f"upstream step `{bad}` did not complete"),
                    )
                    changed = True

    def finish(self, step: CompiledStep, report: StepReport, *, journal: bool = True) -> None:
        self.reports[step.id] = report
        if journal and self.log is not None and self.log.steps:
            self.log.step_ended(report)
            if not step.retry_allowed and report.result is not None:
                try:
                    self.log.write()  # a write that ended: a kill from here on must not find it in flight
                except JournalError:
                    pass  # the next step that changes something is refused for it
        read = self.workflow.read_steps
        # Only a step some expression reads needs more than its status.
        self.views[step.id] = (
            _view(report) if step.id in read or "*" in read else {"status": report.status, "ok": report.status == "ok"}
        )
        if report.status == "ok":
            self.completed.append(step.id)
            return
        if report.status != "skipped":
            self.blocked = True
        if report.status in ("failed", "unknown") and self.stop_reason is None:
            policy = step.on_failure.value
            if policy == "continue":
                return
            how = "failed" if report.status == "failed" else "ended with an unknown result"
            self.stop_reason = f"the run stopped after step `{step.id}` {how}"
            self.compensate = policy == "compensate"

    # -- one step ----------------------------------------------------------------------

    async def _step(self, step: CompiledStep) -> StepReport:
        started = time.perf_counter()
        try:
            if step.read_args is not None:  # plain field reads and constants, no `when`: one closure
                args = step.read_args(self.data)
            else:
                scope = self.scope(step.reads) if step.needs_activation else _EMPTY_SCOPE
                if step.when is not None:
                    outcome = step.when.evaluate(scope.activation())
                    if outcome.error is not None:
                        return StepReport(
                            step.id, step.tool, "failed", _ms(started), reason=f"its `when` failed: {outcome.error}"
                        )
                    if outcome.value is not True:
                        return StepReport(step.id, step.tool, "skipped", _ms(started), reason="its `when` is false")
                args = evaluate(step.args, scope)
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
        if self.log is not None and self.log.steps:
            self.log.step_started(step.id, args, self.backups.get(step.id))
            if not step.retry_allowed:
                # A step that is neither read-only nor idempotent runs only once its
                # "started" row is on disk: a kill from here on leaves it "in flight".
                self.wrote = True
                try:
                    await self.log.barrier()
                except JournalError as err:
                    return StepReport(step.id, step.tool, "failed", _ms(started), reason=f"not run: {err}")
        elif not step.read_only:
            self.wrote = True
        retries = step.retry.attempts if step.retry is not None and step.retry_allowed else 0
        call_id = f"{self.run_id}.{step.id}"
        timeout_s = step.timeout_s
        if timeout_s is None:
            result = await self.run_call(Call(call_id, step.tool, args), self.env)
        else:
            result = await self._call(Call(call_id, step.tool, args), timeout_s, step.read_only)
        attempt = 0
        while attempt < retries and result.is_error and result.status in _RETRYABLE:
            attempt += 1
            assert step.retry is not None  # noqa: S101 - retries > 0
            await asyncio.sleep(step.retry.backoff_s * (2 ** (attempt - 1)))
            result = await self._call(Call(f"{call_id}.retry{attempt}", step.tool, args), timeout_s, step.read_only)
        duration = (time.perf_counter() - started) * 1000
        if not result.is_error:
            return step_report(step.id, step.tool, "ok", duration, attempt + 1, None, result)
        status = "unknown" if result.status is Status.unknown else "failed"
        return step_report(step.id, step.tool, status, duration, attempt + 1, first_line(result.content), result)

    async def _call(self, call: Call, timeout_s: float | None, read_only: bool) -> ToolResult:
        if timeout_s is None:
            return await self.run_call(call, self.env)
        task = asyncio.ensure_future(self.run_call(call, self.env))
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
        message = (
            f"Result unknown: the step's time limit of {timeout_s:g} s passed, so `{call.name}` was stopped;"
            " it may or may not have taken effect."
        )
        return ToolResult(call.id, call.name, message, Status.unknown, "step_timeout", Stage.execute)


def _view(report: StepReport) -> dict[str, Any]:
    """``steps.<id>`` as expressions read it. The result's data is referenced, not
    copied: it is plain JSON data already (the pipeline's serializer made it), and a
    value read into a call's arguments is copied then (templates._copy); a CEL
    activation converts what it reads (Run._activation)."""
    status = report.status
    result = report.result
    if result is None:
        return {"status": status, "ok": status == "ok", "content": "", "data": None, "metadata": {}, "code": ""}
    structured = result.structured
    return {
        "status": status,
        "ok": status == "ok",
        "content": result.content,
        "data": structured if structured is not None else result.content,
        "metadata": {k: v for k, v in result.metadata.items() if k != "timings_ms"},
        "code": result.code or "",
    }


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
