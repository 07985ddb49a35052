"""The metrics registry's snapshot in the Prometheus text exposition format 0.0.4
(:meth:`runtime.metrics.Metrics.prometheus`); the ``prometheus_client`` collector of
:mod:`runtime.telemetry.prometheus` exposes the same families."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from runtime.metricnames import (
    MCP_DRIFT,
    MCP_DRIFTED,
    SCALARS,
    STAGED,
    VERSION_CALLS,
    WORKFLOW_COUNTERS,
    sanitise,
    staged_series,
    version_series,
    workflow_series,
)


def render(snap: Mapping[str, Any]) -> str:
    """``snap`` (a :meth:`~runtime.metrics.Metrics.snapshot`) as exposition text."""
    out = _Exposition()
    out.family("toolrt_calls_total", "counter", "Finished tool calls by tool and result status.")
    for tool, by_status in snap["calls"].items():
        for status, n in by_status.items():
            out.sample("toolrt_calls_total", {"tool": tool, "status": status}, n)
    name, help_text = VERSION_CALLS
    out.family(name, "counter", help_text)
    for tool, version, status, n in version_series(snap):
        out.sample(name, {"tool": tool, "version": version, "status": status}, n)
    for key, name, help_text, label in WORKFLOW_COUNTERS:
        out.family(name, "counter", help_text)
        for workflow, value, n in workflow_series(snap, key):
            out.sample(name, {"workflow": workflow, label: value}, n)
    out.family("toolrt_decisions_total", "counter", "Policy decisions by effect.")
    for effect, n in snap["decisions"].items():
        out.sample("toolrt_decisions_total", {"effect": effect}, n)
    for name, metric, help_text in SCALARS:
        out.family(metric, "counter", help_text)
        out.sample(metric, {}, snap[name])
    out.family(STAGED[1], "counter", STAGED[3])
    for labels, n in staged_series(snap):
        out.sample(STAGED[1], labels, n)
    out.family("toolrt_redactions_total", "counter", "Redactions applied to outputs and records, by kind.")
    for kind, n in snap["redactions"].items():
        out.sample("toolrt_redactions_total", {"kind": kind}, n)
    out.family("toolrt_reloads_total", "counter", "Snapshot reload attempts by result.")
    for result in ("ok", "failed"):
        out.sample("toolrt_reloads_total", {"result": result}, snap["reloads"][result])
    out.family(MCP_DRIFT[1], "counter", MCP_DRIFT[3])
    for server, n in snap[MCP_DRIFT[0]].items():
        out.sample(MCP_DRIFT[1], {"server": server}, n)
    out.family(MCP_DRIFTED[1], "gauge", MCP_DRIFTED[3])
    for server, n in snap[MCP_DRIFTED[0]].items():
        out.sample(MCP_DRIFTED[1], {"server": server}, n)

    durations = snap["durations_s"]
    out.family("toolrt_tool_call_duration_seconds", "histogram", "Whole tool call duration in seconds, by tool.")
    for tool, hist in durations["tools"].items():
        out.histogram("toolrt_tool_call_duration_seconds", {"tool": tool}, hist)
    out.family(
        "toolrt_stage_duration_seconds",
        "histogram",
        "Pipeline stage duration in seconds, by stage (total: the whole call).",
    )
    for stage, hist in durations["stages"].items():
        out.histogram("toolrt_stage_duration_seconds", {"stage": stage}, hist)

    if "cache_hit_rate" in snap and snap["cache_hit_rate"] is not None:
        out.family("toolrt_cache_hit_rate", "gauge", "Read cache hits over lookups.")
        out.sample("toolrt_cache_hit_rate", {}, snap["cache_hit_rate"])

    for name, labels in sorted(snap["info"].items()):
        metric = f"toolrt_{sanitise(name)}_info"
        if out.family(metric, "gauge", f"The {name} this process serves (labels; the value is always 1)."):
            out.sample(metric, labels, 1)

    source_names = sorted(set(snap["sources"]) | set(snap["errors"]))
    if source_names:
        out.family("toolrt_source_up", "gauge", "1 if the gauge source was read at this scrape, 0 if it failed.")
        for source in source_names:
            out.sample("toolrt_source_up", {"source": source}, 0 if source in snap["errors"] else 1)
    for source, values in snap["sources"].items():
        for key, value in values.items():
            metric = f"toolrt_{sanitise(source)}_{sanitise(key)}"
            # A sanitised name can collide with another family; a second family of
            # the same name would make the whole exposition invalid, so skip it.
            if out.family(metric, "gauge", f"{key} reported by the {source} source."):
                out.sample(metric, {}, value)
    return out.text()


def _escape_label(value: str) -> str:
    """A label value escaped as the text format requires: backslash, quote, newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    """HELP text escaped as the text format requires: backslash and newline."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _format_value(value: float | int | None) -> str:
    """A sample value as the text format spells it (Go float syntax)."""
    if value is None:
        return "NaN"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _Exposition:
    """Accumulates exposition lines, writing each family's HELP and TYPE exactly once."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._families: set[str] = set()

    def family(self, name: str, kind: str, help_text: str) -> bool:
        """Open family ``name``; False (and nothing written) if it already exists."""
        if name in self._families:
            return False
        self._families.add(name)
        self._lines.append(f"# HELP {name} {_escape_help(help_text)}")
        self._lines.append(f"# TYPE {name} {kind}")
        return True

    def sample(self, name: str, labels: Mapping[str, str], value: float | int | None) -> None:
        """One sample line ``name{labels} value``."""
        if labels:
            rendered = ",".join(f'{key}="{_escape_label(str(val))}"' for key, val in labels.items())
            self._lines.append(f"{name}{{{rendered}}} {_format_value(value)}")
        else:
            self._lines.append(f"{name} {_format_value(value)}")

    def histogram(self, name: str, labels: Mapping[str, str], hist: Mapping[str, Any]) -> None:
        """The ``_bucket`` (one per ``le``, cumulative), ``_sum`` and ``_count`` samples."""
        for bound, count in zip(hist["le"], hist["cumulative"], strict=True):
            self.sample(f"{name}_bucket", {**labels, "le": repr(bound)}, count)
        self.sample(f"{name}_bucket", {**labels, "le": "+Inf"}, hist["count"])
        self.sample(f"{name}_sum", labels, hist["sum"])
        self.sample(f"{name}_count", labels, hist["count"])

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"
