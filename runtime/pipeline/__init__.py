"""The pipeline: one call in, exactly one result out. The stages are ordered here and
nowhere else::

    01 parse     (provider adapters: runtime.adapters)   -> Call
    02 lookup    runtime.pipeline.lookup                  -> BoundCall
    03 validate  runtime.pipeline.validate                -> ValidatedCall
    04 permit    runtime.pipeline.permit                  -> Decision
    05 execute   runtime.pipeline.execute                 -> Outcome
    06 shape     runtime.pipeline.shape                   -> ToolResult
    07 respond   runtime.pipeline.turn (order, pairing)

Each stage returns the next record or a ToolResult; a ToolResult ends the call.
"""

from __future__ import annotations

import asyncio
import time
from types import MappingProxyType
from typing import Any

from runtime.logs import call_finished, calls_logged
from runtime.metrics import UNKNOWN_TOOL
from runtime.pipeline.env import TurnEnv
from runtime.pipeline.execute import execute
from runtime.pipeline.lookup import lookup
from runtime.pipeline.permit import settle
from runtime.pipeline.shape import redact_error, shape
from runtime.pipeline.validate import validate
from runtime.policy.limits import Refusal
from runtime.records import BoundCall, Call, Decision, Outcome, Stage, Status, ToolResult, ValidatedCall, error_result


async def run_call(call: Call, env: TurnEnv) -> ToolResult:
    """Run ``call`` through every stage. Never raises (except cancellation)."""
    if env.tracing is not None:  # OpenTelemetry: the call runs inside its span (runtime.telemetry)
        return await env.tracing.call(call, env)
    started = time.perf_counter()
    timings: dict[str, Any] = {}
    tool = None
    try:
        result = await _stages(call, env, timings)
        tool = timings.pop("_tool", None) or env.snapshot.tool(*_split(call.name))
    except asyncio.CancelledError:
        if env.audit is not None:  # the audit log still hears of a call cut short while it ran
            env.audit(
                env,
                call,
                error_result(
                    call,
                    Status.unknown,
                    "cancelled",
                    Stage.execute,
                    "cancelled while it ran",
                    snapshot=env.snapshot.version,
                ),
                timings.pop("executed_args", call.args),
            )
        raise
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the last line of defence: a bug becomes a result, not a crash
        result = error_result(
            call,
            Status.internal,
            "internal_error",
            Stage.execute,
            f"toolrt failed while handling this call ({type(err).__name__}); the call may not have run. This is a bug in toolrt, not in your arguments.",
        )
    executed_args = timings.pop("executed_args", call.args)
    timings["total_ms"] = (time.perf_counter() - started) * 1000
    result = _finish(result, env, timings, tool)
    if tool is not None and env.canaries is not None and tool.version and tool.name in env.snapshot.rollouts:
        failed = result.status in _FAILED
        if failed or result.status is Status.ok:
            env.canaries.record(env.snapshot.rollouts[tool.name], tool.version, failed)
    if env.audit is not None:
        env.audit(env, call, result, executed_args)
    if calls_logged():
        call_finished(env, call, result)
    if env.metrics is not None:
        meta = result.metadata
        attempts = meta.get("attempts")
        # The tool label is the snapshot's name for the tool, or one value for every name
        # the snapshot does not have: made-up names must not each become a series.
        env.metrics.record_call(
            tool.name if tool is not None else UNKNOWN_TOOL,
            result.status.value,
            timings,
            meta.get("decision"),
            result.code,
            bool(meta.get("truncated")),
            meta.get("redactions"),
            attempts - 1 if isinstance(attempts, int) else 0,
        )
    return result


async def _stages(call: Call, env: TurnEnv, timings: dict[str, Any]) -> ToolResult:
    clock = time.perf_counter
    if call.parse_error is not None:
        return error_result(call, Status.invalid, "parse_error", Stage.parse, call.parse_error)
    t0 = clock()
    bound = lookup(call, env.snapshot, env.session, env.canaries)
    if isinstance(bound, ToolResult):
        return bound
    timings["_tool"] = bound.tool  # the version that serves the call (a pin or a canary may choose it)
    t1 = clock()
    validated = validate(bound, env.session, env.snapshot)
    t2 = clock()
    timings["validate_ms"] = (t2 - t1) * 1000
    if isinstance(validated, ToolResult):
        return redact_error(validated, bound.tool)
    verdict = env.permitter.decide(validated, env.session, env.snapshot)
    decision: Decision | ToolResult = verdict
    if verdict.effect != "allow":  # allow (the common case) needs no await
        decision = await settle(validated, env.session, verdict, env.approver, env.approval_timeout_s, env.grants)
        if isinstance(decision, Decision):
            if decision.edited_args is not None:
                edited = _judge_edited(bound, decision, env)
                if isinstance(edited, ToolResult):
                    return redact_error(edited, bound.tool)
                validated = edited
                timings["executed_args"] = edited.args  # what the audit log records: what ran
            if decision.grant is not None and env.grants is not None:
                env.grants.add(env.session.id, validated, decision.grant or None, rule=verdict.rule)
    t3 = clock()
    timings["permit_ms"] = (t3 - t2) * 1000
    if isinstance(decision, ToolResult):
        return redact_error(decision, bound.tool)
    admission = None
    if env.limits:  # quotas and circuit breakers: only when some Policy declares them
        admission = env.limits.admit(validated.tool.name, env.session.id)
        if isinstance(admission, Refusal):
            code = _REFUSAL_CODES[admission.kind]
            return error_result(call, Status.denied, code, Stage.permit, admission.message, limit=admission.quota)
    try:
        outcome = await execute(validated, env)
    except BaseException:  # cancelled: give back the admission's slot, then go on cancelling
        if admission is not None:
            admission.finish(seconds=clock() - t3, failed=True)
        raise
    t4 = clock()
    timings["execute_ms"] = (t4 - t3) * 1000
    metadata: dict[str, Any] = {"decision": decision.effect}
    if decision.rule:
        metadata["rule"] = decision.rule
    if decision.approved:
        metadata["approved"] = decision.approved  # an ask, settled by a person or an earlier session grant
    if decision.warnings:
        metadata["warnings"] = decision.warnings
    if decision.edited_args is not None:
        metadata["arguments_edited_by_approver"] = True
    try:
        result = shape(call, validated.tool, outcome, env, metadata)
    except BaseException:
        if admission is not None:
            admission.finish(seconds=t4 - t3, failed=True)
        raise
    timings["shape_ms"] = (clock() - t4) * 1000
    if admission is not None:
        job = (
            env.jobs.get(outcome.metadata.get("job_id", ""))
            if outcome.status is Status.background and env.jobs is not None
            else None
        )
        if job is not None:
            # Still running in the background: its slot and seconds are counted when it ends.
            job.task.add_done_callback(
                lambda _task, started=t3: admission.finish(seconds=time.perf_counter() - started)
            )
        else:
            admission.finish(
                seconds=t4 - t3,
                output_bytes=len(result.content.encode("utf-8", "surrogatepass")),
                failed=outcome.is_error,
                counts_for_breaker=_counts_for_breaker(outcome),
            )
    timings["lookup_ms"] = (t1 - t0) * 1000
    return result


_REFUSAL_CODES = {"breaker": "circuit_open", "quota": "quota_exceeded", "store": "limit_store_unavailable"}
# Outcomes that count against a canary: the version ran and failed (a bad argument or a denial is not its fault).
_FAILED = frozenset({Status.error, Status.timeout, Status.unknown, Status.internal})
_BREAKER_CODES = frozenset({"timeout", "handler_crashed", "handler_error", "spawn_failed"})


def _counts_for_breaker(outcome: Outcome) -> bool:
    """Timeouts, crashes and transient errors count toward a circuit breaker; a tool
    that answers with an error on purpose ("ticket not found") is working fine."""
    if not outcome.is_error:
        return False
    return outcome.code in _BREAKER_CODES or outcome.status is Status.unknown or bool(outcome.metadata.get("transient"))


def _judge_edited(bound: BoundCall, approval: Decision, env: TurnEnv) -> ValidatedCall | ToolResult:
    """Arguments an approver edited: validated and judged like the model's own. A person
    approved them, so an ask stands approved; a deny still wins."""
    call = bound.call
    edited = Call(call.id, call.name, dict(approval.edited_args or {}), call.index)
    validated = validate(BoundCall(edited, bound.tool), env.session, env.snapshot)
    if isinstance(validated, ToolResult):
        return error_result(
            call,
            validated.status,
            validated.code or "invalid_arguments",
            Stage.permit,
            f"The approver's edited arguments were not accepted, so the call was not run. {validated.content}",
        )
    verdict = env.permitter.decide(validated, env.session, env.snapshot)
    if verdict.effect == "deny":
        rule = f" (rule `{verdict.rule}`)" if verdict.rule else ""
        return error_result(
            call,
            Status.denied,
            "denied",
            Stage.permit,
            f"Permission denied for `{call.name}` with the approver's edited arguments{rule}: {verdict.reason}.",
            decision="deny",
            rule=verdict.rule,
        )
    return validated


def _split(name: str) -> tuple[str, str | None]:
    base, _, version = name.partition("@")
    return base, version or None


def _finish(result: ToolResult, env: TurnEnv, timings: dict[str, Any], tool: Any) -> ToolResult:
    fresh = type(result.metadata) is dict  # shape hands over a dict no one else holds
    meta: dict[str, Any] = result.metadata if fresh else dict(result.metadata)  # type: ignore[assignment]
    meta["snapshot"] = env.snapshot.version
    meta["status"] = result.status.value
    meta["timings_ms"] = timings
    if tool is not None and tool.version:
        meta["tool_version"] = tool.version
    if fresh:
        # Seal the metadata of the result shape just built instead of building it again.
        object.__setattr__(result, "metadata", MappingProxyType(meta))
        return result
    return ToolResult(
        result.call_id,
        result.name,
        result.content,
        result.status,
        result.code,
        result.stage,
        result.structured,
        MappingProxyType(meta),
    )
