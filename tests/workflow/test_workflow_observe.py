"""What a workflow run leaves in metrics and traces: runs and steps counted per
workflow, calls counted per serving version, and one span over the run with each
step's call span beneath it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from runtime import Runtime
from runtime.records import Session
from runtime.settings import Settings

TWO_STEPS = """
    apiVersion: toolrt/v1
    kind: Workflow
    metadata: {name: pair}
    spec:
      input_schema: {type: object, properties: {fail: {type: boolean}}}
      steps:
        - {id: first, tool: echo, args: {value: one}}
        - {id: second, tool: fail, depends_on: [first], when: "input.fail"}
"""

VERSIONED = """
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
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: hello}
spec:
  steps:
    - {id: greet, tool: greet, args: {value: hi}}
"""


async def test_runs_and_steps_are_counted_per_workflow(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(TWO_STEPS)
    assert (await runtime.run_workflow("pair", {"fail": False})).ok
    assert (await runtime.run_workflow("pair", {"fail": False})).ok
    assert (await runtime.run_workflow("pair", {"fail": True})).status == "failed"
    snap = runtime.metrics.snapshot()
    assert snap["workflows"]["pair"] == {
        "runs": {"failed": 1, "ok": 2},
        "steps": {"failed": 1, "ok": 3, "skipped": 2},
        "compensations": {},
        "resumes": {},
    }
    text = runtime.metrics.prometheus()
    assert 'toolrt_workflow_runs_total{workflow="pair",status="ok"} 2' in text
    assert 'toolrt_workflow_steps_total{workflow="pair",status="skipped"} 2' in text


async def test_calls_are_counted_by_the_version_that_served_them(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(textwrap.dedent(VERSIONED))
    await runtime.call("greet", {"value": 1})  # the highest version
    await runtime.call("greet", {"value": 1}, Session(id="pinned", pins={"greet": "1"}))
    assert (await runtime.run_workflow("hello", session=Session(id="p2", pins={"greet": "1"}))).ok
    versions = runtime.metrics.snapshot()["versions"]["greet"]
    assert versions == {"1": {"ok": 2}, "2": {"ok": 1}}
    assert 'toolrt_version_calls_total{tool="greet",version="1",status="ok"} 2' in runtime.metrics.prometheus()


async def test_a_run_opens_a_span_over_its_steps_calls(tmp_path: Path, workspace: Path) -> None:
    from wfconfig import CONFIG, TOOLS_MODULE

    config = tmp_path / "config"
    config.mkdir()
    (config / "wftools.py").write_text(TOOLS_MODULE)
    (config / "base.yaml").write_text(CONFIG)
    (config / "workflows.yaml").write_text(textwrap.dedent(TWO_STEPS))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = Settings(state_dir=tmp_path / "state", audit_sink="off", tracing="on")
    runtime = Runtime([config], workspace_root=workspace, settings=settings, tracer_provider=provider)
    try:
        result = await runtime.run_workflow("pair", {"fail": True})
    finally:
        await runtime.close()
        provider.shutdown()
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "toolrt.workflow pair"]
    assert run.attributes is not None
    assert run.attributes["toolrt.workflow.run_id"] == result.run_id
    assert run.attributes["toolrt.workflow.status"] == "failed"
    calls = [s for s in spans if s.name.startswith("execute_tool ")]
    assert sorted(s.name for s in calls) == ["execute_tool echo", "execute_tool fail"]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in calls)
    assert all(s.context.trace_id == run.context.trace_id for s in calls)
