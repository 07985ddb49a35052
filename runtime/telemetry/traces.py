"""Spans for turns, calls and stages (imported only when tracing is on).

One span per turn (``toolrt.turn``), a child per call (``execute_tool <tool>``, as the
OpenTelemetry GenAI conventions name a tool execution), and under each call a child
per stage it reached (``toolrt.lookup``, ``toolrt.validate``, ``toolrt.permit``,
``toolrt.execute``, ``toolrt.shape``). The call's span is the active span while its
handler runs, so spans the handler makes (an instrumented HTTP client, a database
driver) nest under the call. Stage spans are laid out afterwards from the per-stage
timings the pipeline already records in ``metadata["timings_ms"]``, so no stage pays
for tracing while it runs.

Attributes carry ids, the snapshot version, the decision, the status and whether the
output was truncated; never an argument or an output value.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from runtime._version import __version__
from runtime.telemetry.traceparent import MAX_TRACEPARENT_CHARS, trace_id_from_traceparent

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv
    from runtime.records import Call, ToolResult

__all__ = ["ATTRIBUTES", "Tracing"]

SCOPE = "toolrt"

# Attribute names. The gen_ai.* ones follow the OpenTelemetry GenAI semantic
# conventions for a tool execution; error.type is the general convention.
OPERATION = "gen_ai.operation.name"
TOOL = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
ARGUMENTS = "gen_ai.tool.call.arguments"
RESULT = "gen_ai.tool.call.result"
DURATION = "toolrt.call.duration_s"
# Handlers that reach a system outside the runtime (the GenAI conventions' "extension");
# everything else runs in the runtime itself ("function").
_EXTENSION_HANDLERS = frozenset({"http", "mcp"})
_MAX_DESCRIPTION = 1024
CALL_ID = "gen_ai.tool.call.id"
ERROR_TYPE = "error.type"
REQUEST_ID = "toolrt.request_id"
SESSION_ID = "toolrt.session_id"
SNAPSHOT = "toolrt.snapshot.version"
TOOL_VERSION = "toolrt.tool.version"
EFFECT = "toolrt.decision.effect"
RULE = "toolrt.decision.rule"
STATUS = "toolrt.status"
CODE = "toolrt.code"
STAGE = "toolrt.stage"
TRUNCATED = "toolrt.truncated"
REDACTIONS = "toolrt.redactions"
ATTEMPTS = "toolrt.attempts"
TURN_CALLS = "toolrt.turn.calls"
TURN_ERRORS = "toolrt.turn.errors"
WORKFLOW = "toolrt.workflow.name"
WORKFLOW_RUN = "toolrt.workflow.run_id"
WORKFLOW_STATUS = "toolrt.workflow.status"

ATTRIBUTES = (
    OPERATION,
    TOOL,
    CALL_ID,
    ERROR_TYPE,
    REQUEST_ID,
    SESSION_ID,
    SNAPSHOT,
    TOOL_VERSION,
    EFFECT,
    RULE,
    STATUS,
    CODE,
    STAGE,
    TRUNCATED,
    REDACTIONS,
    ATTEMPTS,
    TURN_CALLS,
    TURN_ERRORS,
    WORKFLOW,
    WORKFLOW_RUN,
    WORKFLOW_STATUS,
)
"""Every attribute name toolrt sets on a span."""

_STAGES = ("lookup", "validate", "permit", "execute", "shape")
_STAGE_SPANS = {stage: (f"toolrt.{stage}", f"{stage}_ms", {STAGE: stage}) for stage in (*_STAGES, "parse")}
_MAX_NAME = 100  # a model can call a tool by any name: span names stay short
_PROPAGATOR = TraceContextTextMapPropagator()


class Tracing:
    """A runtime's tracer (from the app's provider) and how a turn is traced."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer_provider: Any) -> None:
        self._tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)

    async def run_turn(
        self,
        calls: Sequence[Call],
        make_env: Callable[[str | None], TurnEnv],
        *,
        trace_id: str | None,
        traceparent: str | None,
        tracestate: str | None,
        **options: Any,
    ) -> list[ToolResult]:
        """Run a turn inside its span: ``make_env(trace_id)`` builds the turn's
        environment once the span (and so the trace id) exists."""
        from runtime.pipeline.turn import run_turn

        span = self._tracer.start_span("toolrt.turn", context=_parent(traceparent, tracestate), kind=SpanKind.INTERNAL)
        span_context = span.get_span_context()
        # The records of the turn carry the trace id of its span, so that logs, audit
        # rows and spans agree; a span that is not sampled has none to give.
        env = make_env(
            trace.format_trace_id(span_context.trace_id)
            if span_context.is_valid
            else trace_id or trace_id_from_traceparent(traceparent)
        )
        recording = span.is_recording()
        if recording:
            span.set_attributes(
                {
                    REQUEST_ID: env.request_id,
                    SESSION_ID: env.session.id,
                    SNAPSHOT: env.snapshot.version,
                    TURN_CALLS: len(calls),
                }
            )
        # The calls run with a twin of the environment that knows how to trace them;
        # each call span then runs the pipeline with the plain one (see _Calls.call).
        traced = dataclasses.replace(env, tracing=_Calls(self._tracer, env)) if recording else env
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            results = await run_turn(calls, traced, **options)
        except BaseException as err:  # cancelled from outside: the span still ends, marked
            span.set_status(StatusCode.ERROR, type(err).__name__)
            span.end()
            raise
        finally:
            otel_context.detach(token)
        if recording:
            errors = sum(1 for result in results if result.is_error)
            span.set_attribute(TURN_ERRORS, errors)
        span.end()
        return results

    async def run_workflow(
        self, name: str, run_id: str, start: Callable[[str | None], Awaitable[Any]], *, trace_id: str | None
    ) -> Any:
        """Run a workflow inside its span (``toolrt.workflow <name>``), as a turn runs in
        its own: ``start(trace_id)`` runs it; its steps' call spans nest under it."""
        span = self._tracer.start_span(f"toolrt.workflow {name[:_MAX_NAME]}", kind=SpanKind.INTERNAL)
        span_context = span.get_span_context()
        if span.is_recording():
            span.set_attributes({WORKFLOW: name[:_MAX_NAME], WORKFLOW_RUN: run_id, REQUEST_ID: run_id})
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            result = await start(trace.format_trace_id(span_context.trace_id) if span_context.is_valid else trace_id)
        except BaseException as err:
            span.set_status(StatusCode.ERROR, type(err).__name__)
            span.end()
            raise
        finally:
            otel_context.detach(token)
        if span.is_recording():
            span.set_attribute(WORKFLOW_STATUS, result.status)
            if not result.ok:
                span.set_status(StatusCode.ERROR, result.status)
        span.end()
        return result

    def traced(self, env: TurnEnv) -> TurnEnv:
        """``env`` whose calls get spans, when the current span records (inside a workflow's)."""
        if not trace.get_current_span().is_recording():
            return env
        return dataclasses.replace(env, tracing=_Calls(self._tracer, env))


class _Calls:
    """A turn's call tracer: what ``TurnEnv.tracing`` holds while tracing is on."""

    __slots__ = ("_env", "_tracer")

    def __init__(self, tracer: trace.Tracer, env: TurnEnv) -> None:
        self._tracer = tracer
        self._env = env  # the plain environment: tracing None, so run_call does not come back here

    async def call(self, call: Call, env: TurnEnv) -> ToolResult:
        """Run ``call`` through the pipeline inside its span."""
        from runtime.pipeline import run_call

        plain = self._env
        start = time.time_ns()
        name = call.name if len(call.name) <= _MAX_NAME else call.name[:_MAX_NAME]
        attributes = {
            OPERATION: "execute_tool",
            TOOL: name,
            CALL_ID: call.id[:_MAX_NAME],
            REQUEST_ID: plain.request_id,
            SESSION_ID: plain.session.id,
            SNAPSHOT: plain.snapshot.version,
        }
        tool = plain.snapshot.tool(*_split(call.name)) if call.name else None
        if tool is not None:
            attributes[TOOL_TYPE] = "extension" if tool.handler.kind in _EXTENSION_HANDLERS else "function"
            attributes[TOOL_DESCRIPTION] = tool.spec.description[:_MAX_DESCRIPTION]
        span = self._tracer.start_span(
            f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=start
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            result = await run_call(call, plain)
        except BaseException:  # only cancellation gets here: run_call turns the rest into results
            span.set_status(StatusCode.ERROR, "cancelled")
            span.end()
            raise
        finally:
            otel_context.detach(token)
        if span.is_recording():
            _describe(self._tracer, span, result, start)
            if plain.settings.trace_content and tool is not None:
                _record_content(span, plain, call, result)
        span.end()
        return result


def _parent(traceparent: object, tracestate: object) -> otel_context.Context | None:
    """The context to start a turn's span in: the given W3C trace context when it is
    valid, otherwise None (the current context: the app's active span, if any)."""
    if not isinstance(traceparent, str) or not traceparent or len(traceparent) > MAX_TRACEPARENT_CHARS:
        return None
    carrier = {"traceparent": traceparent}
    if isinstance(tracestate, str) and tracestate:
        carrier["tracestate"] = tracestate
    try:
        extracted = _PROPAGATOR.extract(carrier, context=otel_context.get_current())
    except Exception:  # noqa: BLE001 - a hostile header is ignored, never raised into the turn
        return None
    if not trace.get_current_span(extracted).get_span_context().is_valid:
        return None
    return extracted


def _split(name: str) -> tuple[str, str | None]:
    base, _, version = name.partition("@")
    return base, version or None


def _record_content(span: trace.Span, env: TurnEnv, call: Call, result: ToolResult) -> None:
    """Opt-in (the ``trace_content`` setting): the call's arguments and result as span
    events named as the GenAI conventions name the attributes. Both are redacted: the
    arguments by every redaction pattern of the snapshot (as the audit log does), the
    result is the text the model read (redacted and truncated by the shape stage)."""
    if call.args is not None:
        try:
            text = json.dumps(call.args, ensure_ascii=False, default=str)[:_MAX_CONTENT]
            redactor = env.snapshot.redactor
            span.add_event(ARGUMENTS, {ARGUMENTS: redactor.redact(text)[0] if redactor is not None else text})
        except Exception:  # noqa: BLE001 - content is optional: failing to record it must not touch the call
            pass
    span.add_event(RESULT, {RESULT: result.content[:_MAX_CONTENT]})


_MAX_CONTENT = 65536


def _describe(tracer: trace.Tracer, span: trace.Span, result: ToolResult, start: int) -> None:
    """Set the outcome on a call's span and add its stage spans."""
    meta = result.metadata
    timings = meta.get("timings_ms") or {}
    total = timings.get("total_ms")
    attributes: dict[str, Any] = {STATUS: result.status.value, TRUNCATED: bool(meta.get("truncated"))}
    if isinstance(total, int | float):
        attributes[DURATION] = total / 1000
    effect = meta.get("decision")
    if effect:
        attributes[EFFECT] = effect
    rule = meta.get("rule")
    if rule:
        attributes[RULE] = rule
    version = meta.get("tool_version")
    if version:
        attributes[TOOL_VERSION] = version
    redactions = meta.get("redactions")
    if redactions:
        attributes[REDACTIONS] = sum(n for n in redactions.values() if isinstance(n, int))
    attempts = meta.get("attempts")
    if isinstance(attempts, int):
        attributes[ATTEMPTS] = attempts
    failed = None
    if result.code:
        attributes[CODE] = result.code
    if result.is_error:
        failed = result.stage.value if result.stage is not None else None
        attributes[ERROR_TYPE] = result.code or result.status.value
        if failed:
            attributes[STAGE] = failed
        span.set_status(StatusCode.ERROR, result.code or result.status.value)
    span.set_attributes(attributes)
    timings = meta.get("timings_ms") or {}
    parent = trace.set_span_in_context(span)
    at = start
    end_of_call = start + int(float(timings.get("total_ms") or 0.0) * 1e6)
    for stage in _STAGES if failed != "parse" else ("parse",):
        span_name, key, stage_attributes = _STAGE_SPANS[stage]
        ms = timings.get(key)
        if ms is None and stage != failed:
            continue
        # A stage that failed before timing itself (an unknown tool) lasts until the call ended.
        end = at + int(ms * 1e6) if ms is not None else max(at, end_of_call)
        child = tracer.start_span(
            span_name, context=parent, kind=SpanKind.INTERNAL, attributes=stage_attributes, start_time=at
        )
        if stage == failed:
            child.set_status(StatusCode.ERROR, result.code or result.status.value)
        child.end(end_time=end)
        at = end
