"""Calls counted in batches (grouped by labels, latencies by column) read exactly as the
calls made: every counter, every stage's count, sum, samples and buckets, per tool, from
one thread or several, with readings taken at any moment in between."""

from __future__ import annotations

import bisect
import math
import random
import threading
from collections import Counter
from typing import Any

import pytest

import runtime.metrics as metrics_module
from runtime.metrics import BUCKETS_S, Metrics

BOUNDS_MS = [bound * 1000 for bound in BUCKETS_S]
TOOLS = ["read", "write", "search", "(unknown)"]
STATUSES = ["ok", "error", "timeout", "unknown", "denied", "invalid"]
CODES = [None, None, None, "timeout", "quota_exceeded", "circuit_open", "handler_error", "denied"]
STAGES = ["lookup_ms", "validate_ms", "permit_ms", "execute_ms", "shape_ms"]


def a_call(rng: random.Random) -> dict[str, Any]:
    """One call's facts, drawn to cover every branch of the counting."""
    timings: dict[str, Any] = {}
    for stage in STAGES:
        roll = rng.random()
        if roll < 0.7:
            timings[stage] = rng.choice([rng.uniform(0, 0.2), rng.choice(BOUNDS_MS), rng.uniform(0, 400_000)])
        elif roll < 0.8:
            timings[stage] = None  # a stage that did not run
    if rng.random() < 0.9:
        timings["total_ms"] = rng.choice([rng.uniform(0, 50), rng.choice(BOUNDS_MS), 10.0 * rng.randint(0, 40_000)])
    if rng.random() < 0.1:
        timings["attempts"] = 2  # not a stage timing: ignored
    staged = rng.choice([None, (), (("p/w", "deny", "warn"),), (("p/w", "deny", "warn"), ("p/a", "ask", "audit"))])
    return {
        "tool": rng.choice(TOOLS),
        "status": rng.choice(STATUSES),
        "timings_ms": timings if rng.random() < 0.95 else {},
        "decision": rng.choice([None, "allow", "ask", "deny"]),
        "code": rng.choice(CODES),
        "truncated": rng.random() < 0.2,
        "redactions": rng.choice([None, {}, {"email": 1}, {"email": 2, "aws_key": 1}, {"phone": rng.randint(1, 5)}]),
        "retries": rng.choice([0, 0, 0, 1, 3]),
        "version": rng.choice([None, None, "v1", "v2"]),
        "staged": staged,
    }


def expected(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """What the snapshot must say, counted one call at a time by the plain rules."""
    calls_by: dict[str, Counter[str]] = {}
    versions: dict[str, dict[str, Counter[str]]] = {}
    decisions: Counter[str] = Counter()
    redactions: Counter[str] = Counter()
    staged: Counter[tuple[str, str, str]] = Counter()
    scalars = Counter(timeouts=0, retries=0, truncations=0, quota_trips=0, breaker_trips=0)
    stages: dict[str, list[float]] = {}
    tools: dict[str, list[float]] = {}
    for call in calls:
        calls_by.setdefault(call["tool"], Counter())[call["status"]] += 1
        if call["version"]:
            versions.setdefault(call["tool"], {}).setdefault(call["version"], Counter())[call["status"]] += 1
        scalars["timeouts"] += call["status"] == "timeout" or call["code"] == "timeout"
        scalars["quota_trips"] += call["code"] == "quota_exceeded"
        scalars["breaker_trips"] += call["code"] == "circuit_open"
        scalars["truncations"] += call["truncated"]
        scalars["retries"] += call["retries"]
        if call["decision"] is not None:
            decisions[call["decision"]] += 1
        redactions.update(call["redactions"] or {})
        staged.update(call["staged"] or ())
        for key, value in call["timings_ms"].items():
            if key.endswith("_ms") and value is not None:
                stages.setdefault(key[:-3], []).append(value)
        if call["timings_ms"].get("total_ms") is not None:
            tools.setdefault(call["tool"], []).append(call["timings_ms"]["total_ms"])
    return {
        "calls": calls_by,
        "versions": versions,
        "decisions": decisions,
        "redactions": redactions,
        "staged": staged,
        "scalars": scalars,
        "stages": stages,
        "tools": tools,
    }


def cumulative(values: list[float]) -> list[int]:
    per_bucket = [0] * (len(BOUNDS_MS) + 1)
    for value in values:
        per_bucket[bisect.bisect_left(BOUNDS_MS, value)] += 1
    out, running = [], 0
    for n in per_bucket[:-1]:
        running += n
        out.append(running)
    return out


def assert_reads_as(snap: dict[str, Any], want: dict[str, Any], *, ordered: bool) -> None:
    assert snap["calls"] == {tool: dict(by) for tool, by in want["calls"].items()}
    assert snap["versions"] == {
        tool: {version: dict(by) for version, by in per.items()} for tool, per in want["versions"].items()
    }
    assert snap["decisions"] == dict(want["decisions"])
    assert snap["redactions"] == {kind: n for kind, n in want["redactions"].items() if n}
    staged: dict[str, dict[str, dict[str, int]]] = {}
    for (rule, effect, enforce), n in want["staged"].items():
        staged.setdefault(rule, {}).setdefault(effect, {})[enforce] = n
    assert snap["staged"] == staged
    for name, n in want["scalars"].items():
        assert snap[name] == n, name
    assert set(snap["latency_ms"]) == set(want["stages"])
    for stage, values in want["stages"].items():
        entry, hist = snap["latency_ms"][stage], snap["durations_s"]["stages"][stage]
        assert entry["count"] == hist["count"] == len(values), stage
        assert math.isclose(entry["sum"], math.fsum(values), rel_tol=1e-9, abs_tol=1e-9), stage
        assert hist["cumulative"] == cumulative(values), stage
        if ordered:  # the newest samples kept are the last calls' (the reservoir holds 4096)
            assert entry["max"] == max(values[-4096:]), stage
    assert set(snap["durations_s"]["tools"]) == set(want["tools"])
    for tool, totals in want["tools"].items():
        hist = snap["durations_s"]["tools"][tool]
        assert hist["count"] == len(totals)
        assert hist["cumulative"] == cumulative(totals)
        assert math.isclose(hist["sum"], math.fsum(totals) / 1000, rel_tol=1e-9, abs_tol=1e-12)


def record(m: Metrics, call: dict[str, Any]) -> None:
    m.record_call(
        call["tool"],
        call["status"],
        call["timings_ms"],
        call["decision"],
        call["code"],
        call["truncated"],
        call["redactions"],
        call["retries"],
        call["version"],
        call["staged"],
    )


@pytest.mark.parametrize("seed", range(12))
def test_batched_counting_reads_exactly_as_the_calls_made_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    m = Metrics()
    calls = [a_call(rng) for _ in range(rng.choice([1, 7, metrics_module.FOLD_AT, 500, 3000]))]
    made: list[dict[str, Any]] = []
    for call in calls:
        record(m, call)
        made.append(call)
        if rng.random() < 0.01:  # a scrape in between: what is queued is counted first
            assert_reads_as(m.snapshot(), expected(made), ordered=True)
    assert_reads_as(m.snapshot(), expected(calls), ordered=True)


def test_the_newest_samples_are_kept_in_the_order_the_calls_ended() -> None:
    m = Metrics(reservoir_size=100)
    for i in range(1, 1001):
        m.record_call("t", "ok", {"execute_ms": float(i)}, None, None, False, None)
    entry = m.snapshot()["latency_ms"]["execute"]
    assert (entry["count"], entry["sum"], entry["max"], entry["p50"]) == (1000, 500500.0, 1000.0, 950.0)


@pytest.mark.parametrize("threads_n", [2, 4, 8])
def test_calls_from_several_threads_with_scrapes_between_read_exactly_as_made(threads_n: int) -> None:
    m = Metrics()
    per_thread = [[a_call(random.Random(threads_n * 100 + t)) for _ in range(2000)] for t in range(threads_n)]
    start = threading.Barrier(threads_n + 1)
    done = threading.Event()

    def work(calls: list[dict[str, Any]]) -> None:
        start.wait()
        for call in calls:
            record(m, call)

    def scrape() -> None:
        start.wait()
        while not done.is_set():
            m.snapshot()
            m.prometheus()

    workers = [threading.Thread(target=work, args=(calls,)) for calls in per_thread]
    reader = threading.Thread(target=scrape)
    for thread in (*workers, reader):
        thread.start()
    for thread in workers:
        thread.join()
    done.set()
    reader.join()
    everything = [call for calls in per_thread for call in calls]
    assert_reads_as(m.snapshot(), expected(everything), ordered=False)


def test_labels_that_cannot_be_grouped_are_still_counted_call_by_call() -> None:
    m = Metrics()
    for _ in range(metrics_module.FOLD_AT + 3):
        m.record_call(
            "t", "ok", {"total_ms": 1.0}, "allow", None, False, {"email": 1}, staged=[("p/w", "deny", "warn")]
        )  # type: ignore[arg-type]  # a list where a tuple is due: not hashable
    snap = m.snapshot()
    n = metrics_module.FOLD_AT + 3
    assert snap["calls"] == {"t": {"ok": n}} and snap["staged"] == {"p/w": {"deny": {"warn": n}}}
    assert snap["redactions"] == {"email": n} and snap["durations_s"]["tools"]["t"]["count"] == n


def test_a_nan_timing_is_counted_without_disturbing_the_other_buckets() -> None:
    m = Metrics()
    values = [0.5, 3.0, float("nan"), 40.0] * 5
    for value in values:
        m.record_call("t", "ok", {"execute_ms": value, "total_ms": 1.0}, None, None, False, None)
    hist = m.snapshot()["durations_s"]["stages"]["execute"]
    assert hist["count"] == 20 and hist["cumulative"] == cumulative(values)
