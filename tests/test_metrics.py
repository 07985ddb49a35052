"""The metrics registry: counts, quantiles, gauge sources, Prometheus text, threads."""

from __future__ import annotations

import json
import math
import re
import threading

import pytest

import runtime.metrics as metrics_module
from runtime.metrics import Metrics


def _call(m: Metrics, tool: str = "read_file", status: str = "ok", **overrides: object) -> None:
    kwargs: dict[str, object] = {
        "timings_ms": {"validate_ms": 0.1, "execute_ms": 2.0, "total_ms": 2.5},
        "decision": "allow",
        "code": None,
        "truncated": False,
        "redactions": None,
    }
    kwargs.update(overrides)
    m.record_call(tool, status, **kwargs)  # type: ignore[arg-type]


# -- a tiny parser of the text exposition format 0.0.4 ------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def _parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        match = _LABEL.match(text, pos)
        assert match, f"bad labels at {text[pos:]!r}"
        raw = match.group(2)
        labels[match.group(1)] = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), raw)
        pos = match.end()
    return labels


def _parse_exposition(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every non-comment line is ``name{labels} value`` with a float value, and each
    sample belongs to a family whose HELP and TYPE came before it, once each."""
    assert text.endswith("\n")
    helps: set[str] = set()
    types: dict[str, str] = {}
    samples: list[tuple[str, dict[str, str], float]] = []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            assert name not in helps, f"HELP twice for {name}"
            assert name not in types, f"HELP after TYPE for {name}"
            helps.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name not in types, f"TYPE twice for {name}"
            assert name in helps
            assert kind in {"counter", "gauge", "summary", "histogram", "untyped"}
            types[name] = kind
        else:
            assert not line.startswith("#"), line
            match = _SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            name, labels, value = match.group(1), match.group(2), match.group(3)
            family = name
            for suffix in ("_sum", "_count", "_bucket"):
                if (
                    name.endswith(suffix)
                    and name[: -len(suffix)] in types
                    and types[name[: -len(suffix)]] in ("summary", "histogram")
                ):
                    family = name[: -len(suffix)]
            assert family in types, f"sample {name} before its TYPE"
            samples.append((name, _parse_labels(labels or ""), float(value)))
    return samples


def _value(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    found = [v for n, ls, v in samples if n == name and ls == labels]
    assert len(found) == 1, (name, labels, found)
    return found[0]


# -- counts -------------------------------------------------------------------


def test_record_call_counts_calls_decisions_and_trips():
    m = Metrics()
    _call(m)
    _call(m)
    _call(m, status="error", decision="deny", code="quota_exceeded")
    _call(m, tool="shell", status="timeout", retries=2, truncated=True, redactions={"aws_key": 2, "email": 1})
    _call(m, tool="shell", status="error", decision=None, code="circuit_open", redactions={"email": 3})
    _call(m, tool="shell", status="error", code="handler_error")
    snap = m.snapshot()
    assert snap["calls"] == {"read_file": {"error": 1, "ok": 2}, "shell": {"error": 2, "timeout": 1}}
    assert snap["decisions"] == {"allow": 4, "deny": 1}
    assert snap["timeouts"] == 1
    assert snap["retries"] == 2
    assert snap["truncations"] == 1
    assert snap["redactions"] == {"aws_key": 2, "email": 4}
    assert snap["quota_trips"] == 1
    assert snap["breaker_trips"] == 1
    assert snap["reloads"] == {"ok": 0, "failed": 0}
    assert snap["errors"] == {}
    assert "cache_hit_rate" not in snap


def test_record_reload_counts_successes_and_failures():
    m = Metrics()
    m.record_reload(True)
    m.record_reload(True)
    m.record_reload(False)
    assert m.snapshot()["reloads"] == {"ok": 2, "failed": 1}


def test_each_ms_timing_is_a_stage_sample_and_other_keys_are_ignored():
    m = Metrics()
    m.record_call("t", "ok", {"validate_ms": 1.0, "total_ms": 3.0, "attempts": 2, "ms": 9.0}, None, None, False, None)
    m.record_call("t", "ok", {"validate_ms": 2.0, "total_ms": 5.0}, None, None, False, None)
    latency = m.snapshot()["latency_ms"]
    assert set(latency) == {"validate", "total"}
    assert latency["validate"] == {"count": 2, "sum": 3.0, "p50": 1.0, "p90": 2.0, "p99": 2.0, "max": 2.0}
    assert latency["total"]["count"] == 2
    assert latency["total"]["sum"] == 8.0


def test_snapshot_is_plain_json_data():
    m = Metrics()
    _call(m, redactions={"token": 1})
    m.record_reload(False)
    m.gauge_source("read_cache", lambda: {"hits": 0, "misses": 0})
    snap = m.snapshot()
    assert json.loads(json.dumps(snap)) == snap


def test_reset_zeroes_counters_and_samples_but_keeps_sources():
    m = Metrics()
    _call(m)
    m.record_reload(True)
    m.gauge_source("editor", lambda: {"conflicts": 4})
    m.reset()
    snap = m.snapshot()
    assert snap["calls"] == {}
    assert snap["latency_ms"] == {}
    assert snap["reloads"] == {"ok": 0, "failed": 0}
    assert snap["sources"] == {"editor": {"conflicts": 4}}
    _call(m)
    assert m.snapshot()["calls"] == {"read_file": {"ok": 1}}


def test_there_is_no_process_wide_registry_each_runtime_counts_its_own_calls(tmp_path):
    from runtime.records import Call
    from runtime.runtime import Runtime
    from runtime.settings import Settings

    assert not hasattr(metrics_module, "METRICS") and not hasattr(metrics_module, "snapshot")
    (tmp_path / "tools.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: echo}\n"
        "spec: {description: Echo., handler: 'python:json:dumps', read_only: true, input_schema: {type: object}}\n"
    )
    first, second = (
        Runtime([tmp_path], workspace_root=tmp_path, settings=Settings(audit_sink="off")) for _ in range(2)
    )
    try:
        first.run_turn_sync([Call("c1", "echo", {})])
        assert sum(first.metrics.snapshot()["calls"].get("echo", {}).values()) == 1
        assert second.metrics.snapshot()["calls"] == {}
    finally:
        first.close_sync()
        second.close_sync()


# -- quantiles and the reservoir ---------------------------------------------


def test_quantiles_of_one_to_one_hundred_are_the_nearest_ranks():
    m = Metrics()
    for v in range(100, 0, -1):  # order of arrival must not matter
        m.record_call("t", "ok", {"execute_ms": float(v)}, None, None, False, None)
    entry = m.snapshot()["latency_ms"]["execute"]
    assert entry["p50"] == 50.0
    assert entry["p90"] == 90.0
    assert entry["p99"] == 99.0
    assert entry["max"] == 100.0
    assert entry["count"] == 100
    assert entry["sum"] == 5050.0


def test_reservoir_keeps_only_the_newest_samples_while_count_and_sum_cover_all():
    m = Metrics(reservoir_size=10)
    for v in range(1, 1001):
        m.record_call("t", "ok", {"execute_ms": float(v)}, None, None, False, None)
    assert len(next(s for s in m._stages.values() if s and s.name == "execute").samples) == 10
    entry = m.snapshot()["latency_ms"]["execute"]
    assert entry["p50"] == 995.0  # newest ten are 991..1000
    assert entry["max"] == 1000.0
    assert entry["count"] == 1000
    assert entry["sum"] == sum(range(1, 1001))


def test_reservoir_size_must_be_positive():
    with pytest.raises(ValueError):
        Metrics(reservoir_size=0)


# -- gauge sources ------------------------------------------------------------


def test_gauge_sources_are_read_at_snapshot_time():
    m = Metrics()
    state = {"lock_wait_seconds": 0.0, "lock_timeouts": 0, "conflicts": 0}
    m.gauge_source("file_editor", lambda: dict(state))
    assert m.snapshot()["sources"]["file_editor"] == {"lock_wait_seconds": 0.0, "lock_timeouts": 0, "conflicts": 0}
    state.update(lock_wait_seconds=1.25, conflicts=3)
    assert m.snapshot()["sources"]["file_editor"] == {"lock_wait_seconds": 1.25, "lock_timeouts": 0, "conflicts": 3}


def test_failing_source_is_reported_under_errors_not_raised():
    m = Metrics()

    def broken() -> dict[str, float]:
        raise RuntimeError("stats unavailable")

    m.gauge_source("broken", broken)
    m.gauge_source("wrong_type", lambda: {"hits": "many"})  # type: ignore[dict-item]
    m.gauge_source("fine", lambda: {"n": 1})
    snap = m.snapshot()
    assert snap["errors"]["broken"] == "RuntimeError: stats unavailable"
    assert snap["errors"]["wrong_type"].startswith("TypeError:")
    assert snap["sources"] == {"fine": {"n": 1}}
    samples = _parse_exposition(m.prometheus())
    assert _value(samples, "toolrt_source_up", source="broken") == 0
    assert _value(samples, "toolrt_source_up", source="fine") == 1


def test_removed_source_is_no_longer_read():
    m = Metrics()
    m.gauge_source("s", lambda: {"n": 1})
    m.remove_source("s")
    m.remove_source("never_registered")
    assert m.snapshot()["sources"] == {}


def test_cache_hit_rate_is_derived_from_the_read_cache_source():
    m = Metrics()
    stats = {"hits": 0, "misses": 0}
    m.gauge_source("read_cache", lambda: dict(stats))
    assert m.snapshot()["cache_hit_rate"] is None  # no lookups yet: no rate, not 0
    stats.update(hits=3, misses=1)
    assert m.snapshot()["cache_hit_rate"] == 0.75
    samples = _parse_exposition(m.prometheus())
    assert _value(samples, "toolrt_cache_hit_rate") == 0.75
    assert _value(samples, "toolrt_read_cache_hits") == 3


# -- Prometheus text exposition -----------------------------------------------


def test_prometheus_output_parses_and_carries_every_family():
    m = Metrics()
    _call(m, redactions={"aws_key": 2})
    _call(m, tool="shell", status="timeout", decision="deny", retries=1, truncated=True, code="quota_exceeded")
    _call(m, tool="shell", status="error", code="circuit_open")
    m.record_reload(True)
    m.record_reload(False)
    m.gauge_source("file_editor", lambda: {"lock_wait_seconds": 0.5, "lock_timeouts": 1, "conflicts": 2})
    text = m.prometheus()
    samples = _parse_exposition(text)
    assert _value(samples, "toolrt_calls_total", tool="read_file", status="ok") == 1
    assert _value(samples, "toolrt_calls_total", tool="shell", status="timeout") == 1
    assert _value(samples, "toolrt_decisions_total", effect="allow") == 2
    assert _value(samples, "toolrt_decisions_total", effect="deny") == 1
    assert _value(samples, "toolrt_timeouts_total") == 1
    assert _value(samples, "toolrt_retries_total") == 1
    assert _value(samples, "toolrt_truncations_total") == 1
    assert _value(samples, "toolrt_redactions_total", kind="aws_key") == 2
    assert _value(samples, "toolrt_quota_trips_total") == 1
    assert _value(samples, "toolrt_breaker_trips_total") == 1
    assert _value(samples, "toolrt_reloads_total", result="ok") == 1
    assert _value(samples, "toolrt_reloads_total", result="failed") == 1
    assert _value(samples, "toolrt_stage_duration_seconds_bucket", stage="execute", le="0.001") == 0
    assert _value(samples, "toolrt_stage_duration_seconds_bucket", stage="execute", le="0.0025") == 3  # 2 ms each
    assert _value(samples, "toolrt_stage_duration_seconds_bucket", stage="execute", le="+Inf") == 3
    assert _value(samples, "toolrt_stage_duration_seconds_count", stage="total") == 3
    assert _value(samples, "toolrt_stage_duration_seconds_sum", stage="total") == 0.0075
    assert _value(samples, "toolrt_file_editor_lock_wait_seconds") == 0.5
    assert _value(samples, "toolrt_file_editor_conflicts") == 2
    assert "# TYPE toolrt_calls_total counter" in text
    assert "# TYPE toolrt_stage_duration_seconds histogram" in text
    assert "# TYPE toolrt_tool_call_duration_seconds histogram" in text
    assert "# TYPE toolrt_file_editor_conflicts gauge" in text


def test_prometheus_escapes_label_values_with_quotes_newlines_and_backslashes():
    m = Metrics()
    nasty = 'evil"tool\nname\\x'
    _call(m, tool=nasty)
    text = m.prometheus()
    assert 'tool="evil\\"tool\\nname\\\\x"' in text
    samples = _parse_exposition(text)  # the raw newline did not split a line
    assert _value(samples, "toolrt_calls_total", tool=nasty, status="ok") == 1


def test_prometheus_sanitises_source_names_and_skips_colliding_families():
    m = Metrics()
    m.gauge_source("read-cache.v2", lambda: {"hit rate": 0.5})
    m.gauge_source("a", lambda: {"b_c": 1})
    m.gauge_source("a_b", lambda: {"c": 2})  # sanitises to toolrt_a_b_c as well
    samples = _parse_exposition(m.prometheus())
    assert _value(samples, "toolrt_read_cache_v2_hit_rate") == 0.5
    assert _value(samples, "toolrt_a_b_c") == 1


def test_prometheus_spells_non_finite_values_as_the_format_does():
    m = Metrics()
    m.gauge_source("s", lambda: {"up": math.inf, "down": -math.inf, "nan": math.nan})
    text = m.prometheus()
    assert "toolrt_s_up +Inf" in text
    assert "toolrt_s_down -Inf" in text
    assert "toolrt_s_nan NaN" in text
    _parse_exposition(text)


def test_prometheus_of_an_empty_registry_parses():
    samples = _parse_exposition(Metrics().prometheus())
    assert _value(samples, "toolrt_timeouts_total") == 0
    assert _value(samples, "toolrt_reloads_total", result="failed") == 0


# -- threads and cost -----------------------------------------------------------


def test_concurrent_recording_from_eight_threads_loses_no_counts():
    m = Metrics()
    threads_n, per_thread = 8, 10_000
    start = threading.Barrier(threads_n)
    timings = {"validate_ms": 0.1, "total_ms": 1.0}

    def work() -> None:
        start.wait()
        for _ in range(per_thread):
            m.record_call("t", "ok", timings, "allow", None, True, {"email": 1}, 1)

    threads = [threading.Thread(target=work) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = m.snapshot()
    total = threads_n * per_thread
    assert snap["calls"] == {"t": {"ok": total}}
    assert snap["decisions"] == {"allow": total}
    assert snap["truncations"] == total
    assert snap["retries"] == total
    assert snap["redactions"] == {"email": total}
    assert snap["latency_ms"]["total"]["count"] == total


def test_calls_still_queued_are_counted_at_every_reading():
    m = Metrics()
    for _ in range(metrics_module.FOLD_AT - 1):  # fewer than a batch: nothing counted yet on the hot path
        m.record_call("t", "ok", {"total_ms": 1.0}, "allow", None, False, None)
    assert m.snapshot()["calls"] == {"t": {"ok": metrics_module.FOLD_AT - 1}}
    m.record_call("t", "error", {"total_ms": 1.0}, None, "tool_error", False, None)
    assert 'toolrt_calls_total{tool="t",status="error"} 1' in m.prometheus()


def test_recording_never_waits_for_a_reader_holding_the_lock():
    m = Metrics()
    recorded = threading.Event()

    def record() -> None:
        for _ in range(metrics_module.FOLD_AT * 3):
            m.record_call("t", "ok", {"total_ms": 1.0}, "allow", None, False, None)
        recorded.set()

    with m._lock:  # as a snapshot in progress would
        threading.Thread(target=record).start()
        assert recorded.wait(30), "record_call blocked on the registry lock"
    snap = m.snapshot()
    assert (
        snap["calls"] == {"t": {"ok": metrics_module.FOLD_AT * 3}}
        and snap["latency_ms"]["total"]["count"] == metrics_module.FOLD_AT * 3
    )


def test_reset_also_drops_calls_not_counted_yet():
    m = Metrics()
    m.record_call("t", "ok", {"total_ms": 1.0}, "allow", None, False, None)
    m.reset()
    assert m.snapshot()["calls"] == {}


def test_a_runtime_counts_its_calls_and_reloads_and_reads_its_sources(tmp_path) -> None:
    from runtime import Call, Runtime, Session

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: p}\nspec: {packs: [workspace-tools, output-default, "
        "redaction-default, permissions-default]}\n"
    )
    (tmp_path / "a.txt").write_text("x\n")
    runtime = Runtime([tmp_path / "config"], workspace_root=tmp_path)
    runtime.run_turn_sync(
        [Call("1", "file_read", {"path": "a.txt"}), Call("2", "file_read", {"path": ".env"}), Call("3", "nope", {})],
        Session(),
    )
    runtime.reload()
    data = runtime.metrics.snapshot()
    assert data["calls"]["file_read"] == {"ok": 1, "denied": 1} and data["calls"]["(unknown)"] == {"invalid": 1}
    assert data["decisions"].get("allow") == 1 and data["reloads"]["ok"] == 1
    assert data["latency_ms"]["total"]["count"] == 3
    assert "read_cache" in data["sources"] and "file_edit" in data["sources"]
    assert 'toolrt_calls_total{tool="file_read",status="ok"} 1' in runtime.metrics.prometheus()


# -- conventions: histograms in seconds, a bounded tool label, timeouts of writes --------


def test_call_durations_are_histograms_in_seconds_per_tool():
    m = Metrics()
    for total in (0.5, 3.0, 40.0, 2_000.0, 400_000.0):  # ms
        m.record_call("slow", "ok", {"total_ms": total}, None, None, False, None)
    hist = m.snapshot()["durations_s"]["tools"]["slow"]
    assert hist["count"] == 5 and abs(hist["sum"] - 402.0435) < 1e-9
    cumulative = dict(zip(hist["le"], hist["cumulative"], strict=True))
    assert (cumulative[0.001], cumulative[0.005], cumulative[0.05], cumulative[2.5], cumulative[300.0]) == (
        1,
        2,
        3,
        4,
        4,
    )
    samples = _parse_exposition(m.prometheus())
    assert _value(samples, "toolrt_tool_call_duration_seconds_bucket", tool="slow", le="+Inf") == 5
    assert _value(samples, "toolrt_tool_call_duration_seconds_count", tool="slow") == 5


def test_a_value_on_a_bucket_bound_counts_in_that_bucket():
    m = Metrics()
    m.record_call("t", "ok", {"total_ms": 10.0}, None, None, False, None)  # exactly 0.01 s: le="0.01" holds it
    cumulative = dict(zip(*[m.snapshot()["durations_s"]["tools"]["t"][k] for k in ("le", "cumulative")], strict=True))
    assert (cumulative[0.005], cumulative[0.01]) == (0, 1)


@pytest.mark.parametrize(
    ("status", "code", "counted"),
    [("timeout", "timeout", 1), ("unknown", "timeout", 1), ("unknown", "cancelled", 0), ("error", "handler_error", 0)],
)
def test_a_write_that_timed_out_counts_as_a_timeout(status, code, counted):
    m = Metrics()
    m.record_call("w", status, {"total_ms": 1.0}, "allow", code, False, None)
    assert m.snapshot()["timeouts"] == counted


def test_made_up_tool_names_share_one_series(tmp_path):
    from runtime import Call, Runtime, Session

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tools.yaml").write_text(_ONE_TOOL)
    runtime = Runtime([tmp_path / "config"], workspace_root=tmp_path)
    try:
        calls = [Call(f"c{i}", f"made_up_{i}", {}) for i in range(500)] + [Call("ok", "echo_it", {})]
        runtime.run_turn_sync(calls, Session())
        data = runtime.metrics.snapshot()
        assert data["calls"] == {"(unknown)": {"invalid": 500}, "echo_it": {"ok": 1}}
        text = runtime.metrics.prometheus()
        assert text.count('toolrt_calls_total{tool="') == 2
        assert "made_up" not in text
    finally:
        runtime.close_sync()


_ONE_TOOL = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: echo_it}
spec:
  description: Says hi.
  handler: {command: {argv: [echo, hi]}}
  read_only: true
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - {name: run, effect: allow, tools: [echo_it]}
"""


def test_the_prometheus_client_collector_exposes_the_same_families():
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from runtime.telemetry.prometheus import register

    m = Metrics()
    m.record_call("read_file", "ok", {"total_ms": 3.0, "execute_ms": 2.0}, "allow", None, False, {"aws_key": 1})
    m.record_call("deploy", "unknown", {"total_ms": 30_000.0}, "allow", "timeout", False, None)
    m.gauge_source("read_cache", lambda: {"hits": 3, "misses": 1})
    registry = prometheus_client.CollectorRegistry()
    collector = register(m, registry)
    families = {f.name: f for f in text_string_to_metric_families(prometheus_client.generate_latest(registry).decode())}
    assert families["toolrt_calls"].type == "counter"
    assert {
        (s.labels["tool"], s.labels["status"], s.value)
        for s in families["toolrt_calls"].samples
        if s.name == "toolrt_calls_total"
    } == {("read_file", "ok", 1.0), ("deploy", "unknown", 1.0)}
    assert [s.value for s in families["toolrt_timeouts"].samples if s.name == "toolrt_timeouts_total"] == [1.0]
    hist = families["toolrt_tool_call_duration_seconds"]
    assert hist.type == "histogram"
    deploy = {
        s.labels["le"]: s.value for s in hist.samples if s.name.endswith("_bucket") and s.labels["tool"] == "deploy"
    }
    assert (deploy["10.0"], deploy["30.0"], deploy["+Inf"]) == (0.0, 1.0, 1.0)
    assert families["toolrt_stage_duration_seconds"].type == "histogram"
    assert [s.value for s in families["toolrt_read_cache_hits"].samples] == [3.0]
    registry.unregister(collector)
