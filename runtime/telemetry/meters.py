"""The metrics registry as OpenTelemetry instruments (imported only when bound).

:func:`bind` registers asynchronous (observable) instruments on the app's meter:
their callbacks read the registry when the app's MetricReader collects, so a bound
registry costs the calls nothing. Instruments, all under the meter ``toolrt``:

===================================  =================  ==================================
instrument                           kind               attributes
===================================  =================  ==================================
``toolrt.calls``                     counter            ``tool``, ``status``
``toolrt.version.calls``             counter            ``tool``, ``version`` (that served), ``status``
``toolrt.workflow.runs``             counter            ``workflow``, ``status``
``toolrt.workflow.steps``            counter            ``workflow``, ``status``
``toolrt.workflow.compensations``    counter            ``workflow``, ``status``
``toolrt.workflow.resumes``          counter            ``workflow``, ``outcome``
``toolrt.decisions``                 counter            ``effect``
``toolrt.timeouts``                  counter
``toolrt.retries``                   counter
``toolrt.truncations``               counter
``toolrt.redactions``                counter            ``kind``
``toolrt.quota_trips``               counter
``toolrt.breaker_trips``             counter
``toolrt.reloads``                   counter            ``result`` (ok, failed)
``toolrt.staged_matches``            counter            ``rule``, ``effect``, ``enforce``: staged rules
``toolrt.mcp.lock_drift``            counter            ``server``: listings that differed from the lock
``toolrt.stage.runs``                counter            ``stage``: latency samples taken
``toolrt.stage.time``                counter (ms)       ``stage``: their sum
``toolrt.stage.latency``             gauge (ms)         ``stage``, ``quantile`` (0.5, 0.9, 0.99)
``toolrt.cache.hit_rate``            gauge              read cache hits over lookups
``toolrt.mcp.lock_drifted_tools``    gauge              ``server``: tools drifted from the lock now
``toolrt.source.value``              gauge              ``source``, ``key``: every gauge source
                                                        (read cache, file editor lock waits
                                                        and conflicts, audit writer)
``toolrt.stage.duration``            histogram (s)      ``stage``; only with ``histograms=True``
===================================  =================  ==================================

``toolrt.stage.duration`` is the one synchronous instrument: OpenTelemetry has no
asynchronous histogram, so each stage sample is recorded as the call ends, which
costs about 10 us per stage with the SDK. That is why it is opt-in; the quantile
gauges and the runs/time counters come from the registry for free.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from runtime._version import __version__
from runtime.metricnames import (
    MCP_DRIFT,
    MCP_DRIFTED,
    STAGED,
    VERSION_CALLS,
    WORKFLOW_COUNTERS,
    MetricsSource,
    staged_series,
    version_series,
    workflow_series,
)

__all__ = ["Binding", "bind"]

SCOPE = "toolrt"
# Stage latencies are tens of microseconds to minutes: the SDK's default buckets
# (0, 5, 10, ... 10000) would put every pipeline stage in the first one.
_BOUNDARIES_MS = (
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    5000.0,
    10000.0,
    30000.0,
    60000.0,
    300000.0,
)
_SCALARS = (
    ("timeouts", "toolrt.timeouts", "{call}", "Calls that ended in a timeout."),
    ("retries", "toolrt.retries", "{retry}", "Retries of transient handler failures."),
    ("truncations", "toolrt.truncations", "{call}", "Calls whose output was truncated."),
    ("quota_trips", "toolrt.quota_trips", "{call}", "Calls refused because a quota was exhausted."),
    ("breaker_trips", "toolrt.breaker_trips", "{call}", "Calls refused because a circuit breaker was open."),
)
_QUANTILES = (("p50", "0.5"), ("p90", "0.9"), ("p99", "0.99"))

Reader = Callable[[Mapping[str, Any]], Iterable[Observation]]


class Binding:
    """A registry bound to a meter. :meth:`close` stops reporting (OpenTelemetry
    cannot remove instruments: after it they report nothing)."""

    def __init__(self, registry: MetricsSource, meter: metrics.Meter, histograms: bool) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._closed = False
        # One registry snapshot per collection: the SDK hands every callback of one
        # collection the same CallbackOptions object, so it names the collection.
        self._taken_for: CallbackOptions | None = None
        self._taken: Mapping[str, Any] = {}
        self._hook: Callable[[Mapping[str, float]], None] | None = None
        for name, unit, description, read in _COUNTERS:
            meter.create_observable_counter(name, callbacks=[self._callback(read)], unit=unit, description=description)
        for key, name, unit, description in _SCALARS:
            meter.create_observable_counter(
                name, callbacks=[self._callback(_scalar(key))], unit=unit, description=description
            )
        for name, unit, description, read in _GAUGES:
            meter.create_observable_gauge(name, callbacks=[self._callback(read)], unit=unit, description=description)
        if histograms:
            # Seconds, as the OpenTelemetry conventions have durations.
            histogram = meter.create_histogram(
                "toolrt.stage.duration",
                unit="s",
                description="Pipeline stage duration.",
                explicit_bucket_boundaries_advisory=[b / 1000 for b in _BOUNDARIES_MS],
            )
            self._hook = _stage_recorder(histogram)
            registry.add_observer(self._hook)

    def close(self) -> None:
        """Stop reporting: the callbacks observe nothing and the histogram hook is removed."""
        self._closed = True
        if self._hook is not None:
            self._registry.remove_observer(self._hook)
            self._hook = None

    def _callback(self, read: Reader) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            if self._closed:
                return []
            return list(read(self._snapshot(options)))

        return observe

    def _snapshot(self, options: CallbackOptions) -> Mapping[str, Any]:
        with self._lock:
            if self._taken_for is not options:
                self._taken = self._registry.snapshot()
                self._taken_for = options
            return self._taken


def bind(registry: MetricsSource, meter_provider: Any = None, *, histograms: bool = False) -> Binding:
    """Report ``registry`` through the meter ``toolrt`` of ``meter_provider`` (default:
    the app's global MeterProvider; none is ever installed here)."""
    meter = metrics.get_meter(SCOPE, __version__, meter_provider=meter_provider)
    return Binding(registry, meter, histograms)


def _stage_recorder(histogram: metrics.Histogram) -> Callable[[Mapping[str, float]], None]:
    attributes: dict[str, dict[str, str]] = {}  # built once per stage: the hot path only looks up

    def record(timings_ms: Mapping[str, float]) -> None:
        for key, value in timings_ms.items():
            if not isinstance(value, int | float) or not key.endswith("_ms") or len(key) <= 3:
                continue
            labels = attributes.get(key)
            if labels is None:
                labels = attributes.setdefault(key, {"stage": key[:-3]})
            histogram.record(value / 1000, labels)

    return record


def _calls(snap: Mapping[str, Any]) -> Iterable[Observation]:
    for tool, by_status in snap["calls"].items():
        for status, n in by_status.items():
            yield Observation(n, {"tool": tool, "status": status})


def _version_calls(snap: Mapping[str, Any]) -> Iterable[Observation]:
    for tool, version, status, n in version_series(snap):
        yield Observation(n, {"tool": tool, "version": version, "status": status})


def _workflow(key: str, label: str) -> Reader:
    def read(snap: Mapping[str, Any]) -> Iterable[Observation]:
        for workflow, value, n in workflow_series(snap, key):
            yield Observation(n, {"workflow": workflow, label: value})

    return read


def _labelled(key: str, label: str) -> Reader:
    def read(snap: Mapping[str, Any]) -> Iterable[Observation]:
        for value, n in snap[key].items():
            yield Observation(n, {label: value})

    return read


def _scalar(key: str) -> Reader:
    def read(snap: Mapping[str, Any]) -> Iterable[Observation]:
        yield Observation(snap[key])

    return read


def _stage_field(field: str) -> Reader:
    def read(snap: Mapping[str, Any]) -> Iterable[Observation]:
        for stage, entry in snap["latency_ms"].items():
            yield Observation(entry[field], {"stage": stage})

    return read


def _quantiles(snap: Mapping[str, Any]) -> Iterable[Observation]:
    for stage, entry in snap["latency_ms"].items():
        for field, quantile in _QUANTILES:
            if entry[field] is not None:
                yield Observation(entry[field], {"stage": stage, "quantile": quantile})


def _hit_rate(snap: Mapping[str, Any]) -> Iterable[Observation]:
    rate = snap.get("cache_hit_rate")
    if rate is not None:
        yield Observation(rate)


def _staged(snap: Mapping[str, Any]) -> Iterable[Observation]:
    for labels, n in staged_series(snap):
        yield Observation(n, labels)


def _sources(snap: Mapping[str, Any]) -> Iterable[Observation]:
    for source, values in snap["sources"].items():
        for key, value in values.items():
            yield Observation(value, {"source": source, "key": key})


_WORKFLOW_UNITS = {"runs": "{run}", "steps": "{step}", "compensations": "{compensation}", "resumes": "{resume}"}
_COUNTERS: tuple[tuple[str, str, str, Reader], ...] = (
    ("toolrt.calls", "{call}", "Finished tool calls by tool and result status.", _calls),
    ("toolrt.version.calls", "{call}", VERSION_CALLS[1], _version_calls),
    *(
        (f"toolrt.workflow.{key}", _WORKFLOW_UNITS[key], help_text, _workflow(key, label))
        for key, _name, help_text, label in WORKFLOW_COUNTERS
    ),
    ("toolrt.decisions", "{decision}", "Policy decisions by effect.", _labelled("decisions", "effect")),
    (
        "toolrt.redactions",
        "{redaction}",
        "Redactions applied to outputs and records, by kind.",
        _labelled("redactions", "kind"),
    ),
    ("toolrt.reloads", "{reload}", "Snapshot reload attempts by result.", _labelled("reloads", "result")),
    (STAGED[2], "{match}", STAGED[3], _staged),
    (MCP_DRIFT[2], "{listing}", MCP_DRIFT[3], _labelled(MCP_DRIFT[0], "server")),
    ("toolrt.stage.runs", "{sample}", "Latency samples taken per pipeline stage.", _stage_field("count")),
    ("toolrt.stage.time", "ms", "Time spent per pipeline stage, summed over every sample.", _stage_field("sum")),
)
_GAUGES: tuple[tuple[str, str, str, Reader], ...] = (
    ("toolrt.stage.latency", "ms", "Pipeline stage latency quantiles over the newest retained samples.", _quantiles),
    ("toolrt.cache.hit_rate", "1", "Read cache hits over lookups.", _hit_rate),
    (MCP_DRIFTED[2], "{tool}", MCP_DRIFTED[3], _labelled(MCP_DRIFTED[0], "server")),
    (
        "toolrt.source.value",
        "1",
        "Counters kept by other parts of the runtime (read cache, file editor, audit writer).",
        _sources,
    ),
)
