"""Workflow counters (runs, steps, compensations, resumes) and calls by serving version,
in the registry, its Prometheus text, the prometheus_client collector and
OpenTelemetry (the real SDK's in-memory reader), all reading the same numbers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from runtime import Runtime
from runtime.metrics import Metrics
from runtime.records import Session
from runtime.workflow.runlog import RunLog

EDIT_THEN_FAIL = """
    apiVersion: toolrt/v1
    kind: Workflow
    metadata: {name: edit}
    spec:
      input_schema: {type: object, properties: {fail: {type: boolean}}}
      steps:
        - {id: read, tool: file_read, args: {path: notes.txt}}
        - id: change
          tool: file_edit
          depends_on: [read]
          args: {path: notes.txt, old_string: beta, new_string: BETA}
          compensate: builtin
        - {id: gate, tool: fail, depends_on: [change], when: "input.fail", on_failure: compensate}
    ---
    apiVersion: toolrt/v1
    kind: Tool
    metadata: {name: greet, version: "1"}
    spec:
      description: Greets.
      handler: python:wftools:echo
      read_only: true
      input_schema: {type: object, properties: {value: {}}}
    ---
    apiVersion: toolrt/v1
    kind: Tool
    metadata: {name: greet, version: "2"}
    spec:
      description: Greets.
      handler: python:wftools:echo
      read_only: true
      input_schema: {type: object, properties: {value: {}}}
"""


async def _exercise(runtime: Runtime) -> None:
    """Two ok runs, a compensated one, three resumes (finished, unfinished, unknown) and
    calls served by two versions."""
    notes = runtime.workspace_root / "notes.txt"
    assert (await runtime.run_workflow("edit", {"fail": False})).ok
    notes.write_text("alpha\nbeta\n")
    compensated = await runtime.run_workflow("edit", {"fail": True})
    assert compensated.status == "compensated", compensated.render()
    assert (await runtime.resume_workflow(compensated.run_id)).note is not None  # finished already
    journal = runtime.workflow_journal()
    log = RunLog(journal, "wf_metrics_unfinished")
    log.started("edit", runtime.snapshot.workflows["edit"].fingerprint, Session(id="m"), {"fail": False})
    journal.write()
    resumed = await runtime.resume_workflow("wf_metrics_unfinished")
    assert resumed.status == "ok", resumed.render()  # resumed to its end
    notes.write_text("alpha\nbeta\n")
    assert (await runtime.resume_workflow("wf_no_such_run")).error is not None
    await runtime.call("greet", {"value": 1})
    await runtime.call("greet", {"value": 1}, Session(id="pinned", pins={"greet": "1"}))


async def test_compensations_and_resumes_are_counted_by_workflow_and_outcome(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime(EDIT_THEN_FAIL)
    await _exercise(runtime)
    edit = runtime.metrics.snapshot()["workflows"]["edit"]
    # The resumed run counts as a run too: it ended, here.
    assert edit["runs"] == {"compensated": 1, "ok": 2}
    assert edit["compensations"] == {"ok": 1}
    assert edit["resumes"] == {"finished": 1, "ok": 1}
    unknown = runtime.metrics.snapshot()["workflows"]["(unknown)"]
    assert unknown["resumes"] == {"refused": 1} and unknown["runs"] == {}
    text = runtime.metrics.prometheus()
    assert 'toolrt_workflow_compensations_total{workflow="edit",status="ok"} 1' in text
    assert 'toolrt_workflow_resumes_total{workflow="edit",outcome="finished"} 1' in text
    assert 'toolrt_workflow_resumes_total{workflow="(unknown)",outcome="refused"} 1' in text
    assert "# TYPE toolrt_workflow_resumes_total counter" in text


async def test_the_prometheus_client_collector_exposes_workflow_and_version_families(
    make_runtime: Callable[..., Runtime],
) -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from runtime.telemetry.prometheus import register

    runtime = make_runtime(EDIT_THEN_FAIL)
    await _exercise(runtime)
    registry = prometheus_client.CollectorRegistry()
    collector = register(runtime.metrics, registry)
    try:
        text = prometheus_client.generate_latest(registry).decode()
    finally:
        registry.unregister(collector)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    snap = runtime.metrics.snapshot()

    def samples(family: str, *labels: str) -> dict[tuple[str, ...], float]:
        assert families[family].type == "counter"
        return {
            tuple(s.labels[label] for label in labels): s.value
            for s in families[family].samples
            if s.name == family + "_total"
        }

    for key, label in (("runs", "status"), ("steps", "status"), ("compensations", "status"), ("resumes", "outcome")):
        expected = {(w, v): float(n) for w, entry in snap["workflows"].items() for v, n in entry[key].items()}
        assert samples(f"toolrt_workflow_{key}", "workflow", label) == expected, key
        assert expected  # every family has something to show here
    versions = samples("toolrt_version_calls", "tool", "version", "status")
    assert versions[("greet", "1", "ok")] == 1.0 and versions[("greet", "2", "ok")] == 1.0


async def test_opentelemetry_reports_workflow_and_version_counters(make_runtime: Callable[..., Runtime]) -> None:
    reader = InMemoryMetricReader()
    runtime = make_runtime(EDIT_THEN_FAIL)
    runtime.metrics.bind_opentelemetry(MeterProvider(metric_readers=[reader]))
    await _exercise(runtime)
    points = _points(reader)
    snap = runtime.metrics.snapshot()
    for key, label in (("runs", "status"), ("steps", "status"), ("compensations", "status"), ("resumes", "outcome")):
        assert {labels: p.value for labels, p in points[f"toolrt.workflow.{key}"].items()} == {
            frozenset({("workflow", w), (label, v)}): n
            for w, entry in snap["workflows"].items()
            for v, n in entry[key].items()
        }, key
    assert {labels: p.value for labels, p in points["toolrt.version.calls"].items()} == {
        frozenset({("tool", "greet"), ("version", "1"), ("status", "ok")}): 1,
        frozenset({("tool", "greet"), ("version", "2"), ("status", "ok")}): 1,
    }
    assert all(p.is_monotonic for p in _metrics(reader, "toolrt.workflow.runs"))
    # Counters only grow: one more run shows at the next collection.
    assert (await runtime.run_workflow("edit", {"fail": False})).ok, "notes.txt is as the fixture made it"
    runs = _points(reader)["toolrt.workflow.runs"]
    assert runs[frozenset({("workflow", "edit"), ("status", "ok")})].value == 3


def _points(reader: InMemoryMetricReader) -> dict[str, dict[frozenset[tuple[str, Any]], Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, dict[frozenset[tuple[str, Any]], Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found.setdefault(metric.name, {})[frozenset((point.attributes or {}).items())] = point
    return found


def _metrics(reader: InMemoryMetricReader, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    assert data is not None
    return [
        metric.data
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
    ]


def test_workflow_counts_from_many_threads_are_exact_and_reset_drops_them() -> None:
    metrics = Metrics()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            metrics.snapshot()

    reader = threading.Thread(target=read)
    reader.start()

    def record(worker: int) -> None:
        for i in range(500):
            metrics.record_workflow(f"w{worker % 2}", "ok", ("ok", "skipped"), ("ok",) if i % 5 == 0 else ())
            if i % 10 == 0:
                metrics.record_resume(f"w{worker % 2}", "finished")

    threads = [threading.Thread(target=record, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    reader.join()
    workflows = metrics.snapshot()["workflows"]
    for name in ("w0", "w1"):
        assert workflows[name] == {
            "runs": {"ok": 2000},
            "steps": {"ok": 2000, "skipped": 2000},
            "compensations": {"ok": 400},
            "resumes": {"finished": 200},
        }
    metrics.record_workflow("w0", "failed", ("failed",))
    metrics.reset()
    assert metrics.snapshot()["workflows"] == {}


def test_workflow_runs_recorded_with_lists_of_statuses_are_counted_like_tuples() -> None:
    # Runs are grouped before counting; statuses given as lists (not hashable) must not break the fold.
    metrics = Metrics()
    for i in range(200):
        steps: list[str] | tuple[str, ...] = ["ok", "failed"] if i % 2 else ("ok", "failed")
        metrics.record_workflow("w", "failed", steps, ["ok"] if i % 4 == 0 else ())
    assert metrics.snapshot()["workflows"]["w"] == {
        "runs": {"failed": 200},
        "steps": {"ok": 200, "failed": 200},
        "compensations": {"ok": 50},
        "resumes": {},
    }


def test_workflow_and_version_families_are_in_the_exposition_even_when_empty() -> None:
    text = Metrics().prometheus()
    for name in (
        "toolrt_version_calls_total",
        "toolrt_workflow_runs_total",
        "toolrt_workflow_steps_total",
        "toolrt_workflow_compensations_total",
        "toolrt_workflow_resumes_total",
    ):
        assert f"# TYPE {name} counter" in text
