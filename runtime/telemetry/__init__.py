"""OpenTelemetry traces and metrics, for apps that install the ``otel`` extra.

This module never imports OpenTelemetry itself: a runtime whose tracing is off (or
that runs without the extra) pays one ``is None`` check per turn and per call, and
nothing else. The parts that need OpenTelemetry live in :mod:`runtime.telemetry.traces`
and :mod:`runtime.telemetry.meters` and are imported only when they are switched on.

Tracing is chosen by the ``tracing`` setting (``TOOLRT_TRACING``):

``auto`` (default)
    on when OpenTelemetry is importable and the app has configured a TracerProvider
    (``trace.set_tracer_provider``, or ``OTEL_PYTHON_TRACER_PROVIDER``) before the
    :class:`~runtime.Runtime` is built, or passes one as ``Runtime(tracer_provider=...)``.
``on``
    always: spans go to the given provider, else to the global one (a no-op proxy
    until the app configures it).
``off``
    never; OpenTelemetry is not even imported.

The library never configures a provider, an exporter or a propagator of its own: it
asks the app's provider for the tracer ``toolrt``.

The W3C trace context of the agent's step can be handed to a turn
(``run_turn(..., traceparent=..., tracestate=...)``); without one, the span active in
the app is the parent. A malformed ``traceparent`` is ignored. Logs, audit records
and the handlers' :class:`~runtime.context.ToolContext` then carry the trace id of the
turn's span, so every record of a call can be found from its trace. With tracing off,
a valid ``traceparent``'s trace id is still recorded (an explicit ``trace_id`` wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

# re-exported: the W3C parsing lives below this module and the traces it lazily imports
from runtime.telemetry.traceparent import MAX_TRACEPARENT_CHARS as MAX_TRACEPARENT_CHARS
from runtime.telemetry.traceparent import trace_id_from_traceparent

if TYPE_CHECKING:
    from runtime.telemetry.traces import Tracing

__all__ = ["TracingMode", "trace_id_from_traceparent", "tracing_for"]

TracingMode = Literal["auto", "on", "off"]


def tracing_for(mode: TracingMode, tracer_provider: Any = None) -> Tracing | None:
    """What a runtime traces with: a :class:`~runtime.telemetry.traces.Tracing`, or
    None when tracing is off (by ``mode``, by a missing extra, or, for ``auto``, by
    no TracerProvider being configured)."""
    if mode == "off":
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        return None  # the otel extra is not installed: tracing stays off, whatever the mode
    if tracer_provider is None:
        tracer_provider = trace.get_tracer_provider()
        if mode == "auto" and not _configured(tracer_provider):
            return None
    elif mode == "auto" and isinstance(tracer_provider, trace.NoOpTracerProvider):
        return None
    from runtime.telemetry.traces import Tracing

    return Tracing(tracer_provider)


def _configured(provider: Any) -> bool:
    """Whether ``provider`` is one the app set up (not the API's proxy or no-op default)."""
    from opentelemetry import trace

    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
