"""The MCP lock drift metrics: a counter of listings that differed from the lock file and
a gauge of the tools drifted now, by server, in every exposition (text, prometheus_client,
OpenTelemetry) and the ``mcp_drift`` reload event's shape."""

from __future__ import annotations

import json

import pytest

from runtime.mcpclient.lock import REPORTED, DriftChange, drift_changes
from runtime.mcpclient.mount import ListedTool
from runtime.metrics import Metrics
from runtime.reload.events import ReloadEvent, drift_event


def test_a_differing_listing_is_counted_and_the_gauge_follows_the_latest_listing() -> None:
    m = Metrics()
    m.record_mcp_drift("files", 2)
    m.record_mcp_drift("files", 3)
    m.record_mcp_drift("web", 0)  # compared, matches: no count, gauge 0
    snap = m.snapshot()
    assert snap["mcp_lock_drift"] == {"files": 2}
    assert snap["mcp_lock_drifted_tools"] == {"files": 3, "web": 0}
    m.record_mcp_drift("files", 0)  # back in line with the lock
    assert m.snapshot()["mcp_lock_drifted_tools"]["files"] == 0
    assert m.snapshot()["mcp_lock_drift"] == {"files": 2}
    json.dumps(m.snapshot())


def test_reset_zeroes_the_drift_counter_but_keeps_the_drift_state() -> None:
    m = Metrics()
    m.record_mcp_drift("files", 2)
    m.reset()
    snap = m.snapshot()
    assert snap["mcp_lock_drift"] == {} and snap["mcp_lock_drifted_tools"] == {"files": 2}


def test_the_text_exposition_has_the_drift_counter_and_gauge_by_server() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    m = Metrics()
    m.record_mcp_drift('we"ird\nserver', 1)
    m.record_mcp_drift("files", 4)
    text = m.prometheus()
    assert "# TYPE toolrt_mcp_lock_drift_total counter" in text
    assert "# TYPE toolrt_mcp_lock_drifted_tools gauge" in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {s.labels["server"]: s.value for s in families["toolrt_mcp_lock_drift"].samples} == {
        'we"ird\nserver': 1.0,
        "files": 1.0,
    }
    assert {s.labels["server"]: s.value for s in families["toolrt_mcp_lock_drifted_tools"].samples} == {
        'we"ird\nserver': 1.0,
        "files": 4.0,
    }


def test_an_empty_registry_exposes_the_drift_families_without_samples() -> None:
    text = Metrics().prometheus()
    assert "# TYPE toolrt_mcp_lock_drift_total counter" in text
    assert "toolrt_mcp_lock_drift_total{" not in text


def test_the_prometheus_client_collector_exposes_the_drift_families() -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from runtime.telemetry.prometheus import register

    m = Metrics()
    m.record_mcp_drift("files", 2)
    registry = prometheus_client.CollectorRegistry()
    register(m, registry)
    families = {f.name: f for f in text_string_to_metric_families(prometheus_client.generate_latest(registry).decode())}
    assert families["toolrt_mcp_lock_drift"].type == "counter"
    assert [
        (s.name, s.labels, s.value) for s in families["toolrt_mcp_lock_drift"].samples if s.name.endswith("total")
    ] == [("toolrt_mcp_lock_drift_total", {"server": "files"}, 1.0)]
    assert families["toolrt_mcp_lock_drifted_tools"].type == "gauge"
    assert [s.value for s in families["toolrt_mcp_lock_drifted_tools"].samples] == [2.0]


def test_opentelemetry_reports_the_drift_counter_and_gauge() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    m = Metrics()
    m.record_mcp_drift("files", 2)
    reader = InMemoryMetricReader()
    m.bind_opentelemetry(MeterProvider(metric_readers=[reader]))
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        metric.name: {p.attributes["server"]: p.value for p in metric.data.data_points}  # type: ignore[index]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name.startswith("toolrt.mcp.")
    }
    assert points == {"toolrt.mcp.lock_drift": {"files": 1}, "toolrt.mcp.lock_drifted_tools": {"files": 2}}


def test_a_flipped_annotation_is_named_with_its_locked_and_live_values() -> None:
    locked = ListedTool("echo", "Echo.", {"type": "object"}, read_only=True)
    live = ListedTool("echo", "Echo.", {"type": "object"}, read_only=False, destructive=True)
    (change,) = drift_changes([locked], [live])
    assert str(change) == "`echo` changed its annotations (readOnlyHint: true -> false, destructiveHint: null -> true)"
    assert change.to_dict()["annotations"] == {
        "readOnlyHint": {"locked": True, "live": False},
        "destructiveHint": {"locked": None, "live": True},
    }


def test_a_renamed_tool_is_one_new_and_one_gone() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    changes = drift_changes([ListedTool("search", "S.", schema)], [ListedTool("find", "S.", schema)])
    assert [(c.tool, c.change) for c in changes] == [("find", "added"), ("search", "removed")]


def test_a_huge_schema_change_is_reported_by_field_name_not_by_content() -> None:
    big = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(5000)}}
    (change,) = drift_changes([ListedTool("t", "T.", {"type": "object"})], [ListedTool("t", "T.", big)])
    event = drift_event("fx", [change.to_dict()])
    assert "input_schema" in str(change) and len(event.to_json()) < 1000


def test_the_event_carries_at_most_the_reported_changes_and_says_how_many_there_were() -> None:
    live = [ListedTool(f"tool{i:04}", "", {"type": "object"}) for i in range(REPORTED + 50)]
    changes = drift_changes([], live)
    line = json.loads(drift_event("fx", [c.to_dict() for c in changes]).to_json())
    assert line["event"] == "mcp_drift" and line["server"] == "fx"
    assert len(line["drift"]) == REPORTED and line["drift_count"] == REPORTED + 50


def test_a_hostile_tool_name_is_cut_in_reports() -> None:
    (change,) = drift_changes([], [ListedTool("n" * 100_000, "", {"type": "object"})])
    assert len(str(change)) < 200 and len(change.to_dict()["tool"]) <= 120


def test_only_a_drift_event_has_the_drift_keys() -> None:
    assert set(ReloadEvent("loaded", "v", None).to_dict()).isdisjoint({"server", "drift", "drift_count"})
    assert not drift_event("fx", []).ok


def test_drift_change_dicts_are_json() -> None:
    change = DriftChange("t", "changed", ("annotations",), (("readOnlyHint", True, False),))
    assert json.loads(json.dumps(change.to_dict()))["message"].endswith("(readOnlyHint: true -> false)")
