"""What the metrics registry (runtime.metrics) and its exporters (runtime.telemetry)
share: the unlabelled counters, how a name part is made safe, and the registry as the
exporters read it (:class:`MetricsSource`). A leaf module, so that the exporters read
the registry without importing it (runtime.metrics imports the exporters, lazily)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol


class MetricsSource(Protocol):
    """A metrics registry as the exporters read it (runtime.metrics.Metrics is one)."""

    def snapshot(self) -> dict[str, Any]: ...

    def add_observer(self, observer: Callable[[Mapping[str, float]], None]) -> None: ...

    def remove_observer(self, observer: Callable[[Mapping[str, float]], None]) -> None: ...


#: (snapshot key, metric name, help) of the unlabelled counters, in exposition order.
SCALARS: tuple[tuple[str, str, str], ...] = (
    ("timeouts", "toolrt_timeouts_total", "Calls that ended in a timeout."),
    ("retries", "toolrt_retries_total", "Retries of transient handler failures."),
    ("truncations", "toolrt_truncations_total", "Calls whose output was truncated."),
    ("quota_trips", "toolrt_quota_trips_total", "Calls refused because a quota was exhausted."),
    ("breaker_trips", "toolrt_breaker_trips_total", "Calls refused because a circuit breaker was open."),
)

#: The labelled counter of staged-rule matches (``enforce: warn`` or ``audit``): the
#: snapshot key, the Prometheus name, the OpenTelemetry instrument name and the help.
#: Labels ``rule`` (policy/rule), ``effect`` (what the rule would have done) and
#: ``enforce`` (warn or audit).
STAGED: tuple[str, str, str, str] = (
    "staged",
    "toolrt_staged_matches_total",
    "toolrt.staged_matches",
    "Matches of rules under staged rollout (enforce: warn or audit), by rule, would-be effect and enforce mode.",
)


#: MCP servers whose tool listing differs from the lock file (runtime.mcpclient.lock), by
#: ``server``: (snapshot key, Prometheus name, OpenTelemetry name, help) of the counter of
#: such listings (one per listing that changed) and of the gauge of tools drifted now.
MCP_DRIFT: tuple[str, str, str, str] = (
    "mcp_lock_drift",
    "toolrt_mcp_lock_drift_total",
    "toolrt.mcp.lock_drift",
    "Tool listings of an MCP server that differed from its lock file, by server.",
)
MCP_DRIFTED: tuple[str, str, str, str] = (
    "mcp_lock_drifted_tools",
    "toolrt_mcp_lock_drifted_tools",
    "toolrt.mcp.lock_drifted_tools",
    "Tools of an MCP server whose latest listing differs from its lock file (new, gone or changed), by server.",
)


def staged_series(snap: Mapping[str, Any]) -> list[tuple[dict[str, str], int]]:
    """The staged-match counts of a metrics snapshot as (labels, count) pairs."""
    return [
        ({"rule": rule, "effect": effect, "enforce": enforce}, n)
        for rule, by_effect in snap.get(STAGED[0], {}).items()
        for effect, by_enforce in by_effect.items()
        for enforce, n in by_enforce.items()
    ]


#: The workflow counters, all labelled ``workflow`` and one more label: (key in the
#: snapshot's ``workflows[<name>]``, metric name, help, the second label), in
#: exposition order. OpenTelemetry names them ``toolrt.workflow.<key>``.
WORKFLOW_COUNTERS: tuple[tuple[str, str, str, str], ...] = (
    ("runs", "toolrt_workflow_runs_total", "Finished workflow runs by workflow and status.", "status"),
    ("steps", "toolrt_workflow_steps_total", "Steps of finished workflow runs by workflow and status.", "status"),
    (
        "compensations",
        "toolrt_workflow_compensations_total",
        "Compensations of completed steps run by workflow runs, by workflow and status.",
        "status",
    ),
    (
        "resumes",
        "toolrt_workflow_resumes_total",
        "Resumes of journaled workflow runs, by workflow and outcome (the resumed run's status, finished when it"
        " had ended already, refused when it could not be resumed).",
        "outcome",
    ),
)

#: Calls by the version of the tool that served them (``snapshot["versions"]``).
VERSION_CALLS = ("toolrt_version_calls_total", "Finished calls by tool, the version that served them, and status.")


def workflow_series(snap: Mapping[str, Any], key: str) -> Iterator[tuple[str, str, int]]:
    """``(workflow, second label value, count)`` of the workflow counter ``key``."""
    for workflow, entry in snap["workflows"].items():
        for value, n in entry.get(key, {}).items():
            yield workflow, value, n


def version_series(snap: Mapping[str, Any]) -> Iterator[tuple[str, str, str, int]]:
    """``(tool, version, status, count)`` of the calls counted by serving version."""
    for tool, by_version in snap["versions"].items():
        for version, by_status in by_version.items():
            for status, n in by_status.items():
                yield tool, version, status, n


_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")


def sanitise(part: str) -> str:
    """A metric-name part: every character outside ``[a-zA-Z0-9_]`` becomes ``_``."""
    return _NAME_UNSAFE.sub("_", part)
