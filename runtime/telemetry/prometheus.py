"""toolrt's metrics in a ``prometheus_client`` registry: a custom collector.

::

    from prometheus_client import REGISTRY, start_http_server
    from runtime.telemetry.prometheus import register

    register(runtime.metrics)          # or register(runtime.metrics, registry=my_registry)
    start_http_server(9100)

The collector reads :meth:`runtime.metrics.Metrics.snapshot` at each scrape (calls are
counted in batches on the hot path; a scrape counts what is queued first), so nothing
is recorded twice. Families, by the Prometheus naming conventions: counters
``toolrt_calls_total{tool,status}``, ``toolrt_decisions_total{effect}``,
``toolrt_timeouts_total`` (writes that timed out included), ``toolrt_retries_total``,
``toolrt_truncations_total``, ``toolrt_redactions_total{kind}``,
``toolrt_quota_trips_total``, ``toolrt_breaker_trips_total``,
``toolrt_staged_matches_total{rule,effect,enforce}`` (rules under staged rollout),
``toolrt_reloads_total{result}``, ``toolrt_mcp_lock_drift_total{server}`` (MCP listings that
differed from the lock file); the gauge ``toolrt_mcp_lock_drifted_tools{server}``; histograms in seconds
``toolrt_tool_call_duration_seconds{tool}`` and ``toolrt_stage_duration_seconds{stage}``;
gauges ``toolrt_<source>_<key>`` for the gauge sources. The ``tool`` label holds only
the snapshot's tool names, and ``(unknown)`` for every other name a model made up.

Requires the ``prometheus`` extra (``prometheus-client``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from runtime.metricnames import (
    MCP_DRIFT,
    MCP_DRIFTED,
    SCALARS,
    STAGED,
    VERSION_CALLS,
    WORKFLOW_COUNTERS,
    MetricsSource,
    sanitise,
    staged_series,
    version_series,
    workflow_series,
)

__all__ = ["ToolrtCollector", "register"]


class ToolrtCollector(Collector):
    """Reads one :class:`~runtime.metrics.Metrics` registry at every scrape."""

    def __init__(self, metrics: MetricsSource) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        snap = self.metrics.snapshot()
        calls = CounterMetricFamily(
            "toolrt_calls", "Finished tool calls by tool and result status.", labels=["tool", "status"]
        )
        for tool, by_status in snap["calls"].items():
            for status, n in by_status.items():
                calls.add_metric([tool, status], n)
        yield calls
        name, help_text = VERSION_CALLS
        versions = CounterMetricFamily(name.removesuffix("_total"), help_text, labels=["tool", "version", "status"])
        for tool, version, status, n in version_series(snap):
            versions.add_metric([tool, version, status], n)
        yield versions
        for key, name, help_text, label in WORKFLOW_COUNTERS:
            family = CounterMetricFamily(name.removesuffix("_total"), help_text, labels=["workflow", label])
            for workflow, value, n in workflow_series(snap, key):
                family.add_metric([workflow, value], n)
            yield family
        decisions = CounterMetricFamily("toolrt_decisions", "Policy decisions by effect.", labels=["effect"])
        for effect, n in snap["decisions"].items():
            decisions.add_metric([effect], n)
        yield decisions
        for key, metric, help_text in SCALARS:
            yield CounterMetricFamily(metric.removesuffix("_total"), help_text, value=snap[key])
        staged = CounterMetricFamily(STAGED[1].removesuffix("_total"), STAGED[3], labels=["rule", "effect", "enforce"])
        for labels, n in staged_series(snap):
            staged.add_metric([labels["rule"], labels["effect"], labels["enforce"]], n)
        yield staged
        redactions = CounterMetricFamily(
            "toolrt_redactions", "Redactions applied to outputs and records, by kind.", labels=["kind"]
        )
        for kind, n in snap["redactions"].items():
            redactions.add_metric([kind], n)
        yield redactions
        reloads = CounterMetricFamily("toolrt_reloads", "Snapshot reload attempts by result.", labels=["result"])
        for result in ("ok", "failed"):
            reloads.add_metric([result], snap["reloads"][result])
        yield reloads
        drift = CounterMetricFamily(MCP_DRIFT[1].removesuffix("_total"), MCP_DRIFT[3], labels=["server"])
        for server, n in snap[MCP_DRIFT[0]].items():
            drift.add_metric([server], n)
        yield drift
        drifted = GaugeMetricFamily(MCP_DRIFTED[1], MCP_DRIFTED[3], labels=["server"])
        for server, n in snap[MCP_DRIFTED[0]].items():
            drifted.add_metric([server], n)
        yield drifted
        durations = snap["durations_s"]
        yield _histogram(
            "toolrt_tool_call_duration_seconds",
            "Whole tool call duration in seconds, by tool.",
            "tool",
            durations["tools"],
        )
        yield _histogram(
            "toolrt_stage_duration_seconds",
            "Pipeline stage duration in seconds, by stage (total: the whole call).",
            "stage",
            durations["stages"],
        )
        seen: set[str] = set()
        for source, values in snap["sources"].items():
            for key, value in values.items():
                name = f"toolrt_{sanitise(source)}_{sanitise(key)}"
                if name not in seen:  # a sanitised name can collide with another: keep the first
                    seen.add(name)
                    yield GaugeMetricFamily(name, f"{key} reported by the {source} source.", value=value)


def _histogram(name: str, help_text: str, label: str, series: dict[str, Any]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, help_text, labels=[label])
    for value, hist in series.items():
        buckets = [(repr(bound), count) for bound, count in zip(hist["le"], hist["cumulative"], strict=True)]
        buckets.append(("+Inf", hist["count"]))
        family.add_metric([value], buckets, sum_value=hist["sum"])
    return family


def register(metrics: MetricsSource, registry: CollectorRegistry | None = None) -> ToolrtCollector:
    """Register a collector for ``metrics`` in ``registry`` (default: prometheus_client's
    global ``REGISTRY``); unregister it with ``registry.unregister(collector)``."""
    collector = ToolrtCollector(metrics)
    (registry if registry is not None else REGISTRY).register(collector)
    return collector
