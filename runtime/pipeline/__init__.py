"""The pipeline: one call in, exactly one result out. The stages are ordered here and
nowhere else::

    01 parse     (provider adapters: runtime.adapters)   -> Call
    02 lookup    runtime.pipeline.lookup                  -> BoundCall
    03 validate  runtime.pipeline.validate                -> ValidatedCall
    04 permit    runtime.pipeline.permit                  -> Permit
    05 execute   runtime.pipeline.execute                 -> HandlerOutcome
    06 shape     runtime.pipeline.shape                   -> ToolResult
    07 respond   runtime.pipeline.turn (order, pairing)

Each stage returns the next record or a ToolResult; a ToolResult ends the call.
"""

from __future__ import annotations

import asyncio
import time
from types import MappingProxyType
from typing import Any

from runtime.codes import ResultCode
from runtime.execution.python import Started
from runtime.logs import call_finished, calls_logged
from runtime.metrics import UNKNOWN_TOOL
from runtime.pipeline.env import TurnEnv
from runtime.pipeline.execute import execute, resume, start
from runtime.pipeline.lookup import lookup
from runtime.pipeline.permit import permit
from runtime.pipeline.shape import redact_error, shape
from runtime.pipeline.validate import validate
from runtime.records import Call, Stage, Status, ToolResult, error_result, set_metadata


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
                    ResultCode.cancelled,
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
            ResultCode.internal_error,
            Stage.execute,
            (
                f"toolrt failed while handling this call ({type(err).__name__}); the call may not have run. This is "
                "a bug in toolrt, not in your arguments."
            ),
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
            tool.version if tool is not None else None,
            meta.get("staged"),
        )
    return result


async def _stages(call: Call, env: TurnEnv, timings: dict[str, Any]) -> ToolResult:
    clock = time.perf_counter
    if call.parse_error is not None:  # 01 parse
        return error_result(call, Status.invalid, ResultCode.parse_error, Stage.parse, call.parse_error)
    t0 = clock()
    bound = lookup(call, env.snapshot, env.session, env.canaries)  # 02 lookup
    if isinstance(bound, ToolResult):
        return bound
    tool = timings["_tool"] = bound.tool  # the version that serves the call (a pin or a canary may choose it)
    t1 = clock()
    validated = validate(bound, env.session, env.snapshot)  # 03 validate
    t2 = clock()
    timings["validate_ms"] = (t2 - t1) * 1000
    if isinstance(validated, ToolResult):
        return redact_error(validated, tool)
    permitted = await permit(validated, env)  # 04 permit: decide, ask, re-judge, grant, admit
    t3 = clock()
    timings["permit_ms"] = (t3 - t2) * 1000
    if isinstance(permitted, ToolResult):
        return redact_error(permitted, tool)
    if permitted.edited:
        timings["executed_args"] = permitted.call.args  # what the audit log records: what ran
    try:
        started = start(permitted.call)  # 05 execute: most in-process handlers finish without an await
        if started is None:
            outcome = await execute(permitted.call, env, run_call)
        elif isinstance(started, Started):
            outcome = await resume(permitted.call, started)
        else:
            outcome = started
    except BaseException:  # cancelled: give back the admission's slot, then go on cancelling
        permitted.abandon(clock() - t3)
        raise
    t4 = clock()
    timings["execute_ms"] = (t4 - t3) * 1000
    try:
        result = shape(call, tool, outcome, env, permitted.metadata())  # 06 shape
    except BaseException:
        permitted.abandon(t4 - t3)
        raise
    timings["shape_ms"] = (clock() - t4) * 1000
    permitted.settle(outcome, result, env, started=t3, ended=t4)
    timings["lookup_ms"] = (t1 - t0) * 1000
    return result  # 07 respond: runtime.pipeline.turn orders and pairs the results


# Outcomes that count against a canary: the version ran and failed (a bad argument or a denial is not its fault).
_FAILED = frozenset({Status.error, Status.timeout, Status.unknown, Status.internal})


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
        set_metadata(result, MappingProxyType(meta))
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
