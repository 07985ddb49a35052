"""OpenTelemetry: spans per turn, call and stage in the app's trace; the metrics
registry through the app's MeterProvider; nothing at all when tracing is off."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from runtime import Call, Runtime, Session, Settings, logs
from runtime.telemetry import trace_id_from_traceparent, tracing_for

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"

HANDLERS = """
import asyncio


def echo(args):
    return "said " + args["word"]


def whoami(args):
    # The span active while a handler runs: the call's span. (Imported here: the
    # tracing-off test checks that nothing imports OpenTelemetry.)
    from opentelemetry import trace

    return format(trace.get_current_span().get_span_context().span_id, "016x")


async def slow(args):
    await asyncio.sleep(5)
    return "too late"


def wipe(args):
    return "wiped"
"""

CONFIG = """
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: test-rules}}
spec:
  rules:
    - {{name: no-wipe, effect: deny, tools: [wipe], reason: Wiping is not allowed.}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: echo}}
spec:
  description: Echo a word.
  handler: python:{module}:echo
  read_only: true
  input_schema: {{type: object, required: [word], properties: {{word: {{type: string}}}}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: whoami}}
spec:
  description: The active span id.
  handler: python:{module}:whoami
  read_only: true
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: slow}}
spec:
  description: Never done in time.
  handler: python:{module}:slow
  read_only: true
  timeout: {{total_s: 0.1}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: wipe}}
spec:
  description: Wipes things.
  handler: python:{module}:wipe
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    module = f"toolrt_otel_h_{uuid.uuid4().hex[:12]}"
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / f"{module}.py").write_text(textwrap.dedent(HANDLERS))
    (folder / "tools.yaml").write_text(CONFIG.format(module=module))
    return folder


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()  # the app's provider, passed in: never set globally by a test
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def _runtime(config: Path, provider: Any = None, **settings: Any) -> Runtime:
    settings.setdefault("audit_sink", "off")
    return Runtime([config], workspace_root=config, settings=Settings(**settings), tracer_provider=provider)


def _by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _children(spans: tuple[ReadableSpan, ...], parent: ReadableSpan) -> list[ReadableSpan]:
    return sorted(
        (s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id),
        key=lambda s: s.start_time or 0,
    )


# -- spans ----------------------------------------------------------------------


def test_a_turn_has_a_span_per_call_and_per_stage_with_ids_and_outcome(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    runtime = _runtime(config, provider)
    results = runtime.run_turn_sync(
        [Call("c1", "echo", {"word": "secret-word"}), Call("c2", "echo", {"word": "again"})], Session(id="s-1")
    )
    assert [r.status.value for r in results] == ["ok", "ok"]
    spans = exporter.get_finished_spans()
    (turn,) = _by_name(spans)["toolrt.turn"]
    calls = _children(spans, turn)
    assert [c.name for c in calls] == ["execute_tool echo", "execute_tool echo"]
    assert (
        turn.attributes is not None
        and turn.attributes["toolrt.turn.calls"] == 2
        and turn.attributes["toolrt.turn.errors"] == 0
    )
    for call, call_id in zip(calls, ["c1", "c2"], strict=True):
        attributes = dict(call.attributes or {})
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["gen_ai.tool.name"] == "echo" and attributes["gen_ai.tool.call.id"] == call_id
        assert (
            attributes["toolrt.session_id"] == "s-1"
            and attributes["toolrt.request_id"] == turn.attributes["toolrt.request_id"]
        )
        assert attributes["toolrt.snapshot.version"] == runtime.snapshot.version
        assert attributes["toolrt.status"] == "ok" and attributes["toolrt.truncated"] is False
        assert attributes["toolrt.decision.effect"] == "allow"
        assert call.status.status_code is StatusCode.UNSET
        stages = _children(spans, call)
        assert [s.name for s in stages] == [
            "toolrt.lookup",
            "toolrt.validate",
            "toolrt.permit",
            "toolrt.execute",
            "toolrt.shape",
        ]
        assert all(s.attributes == {"toolrt.stage": s.name.removeprefix("toolrt.")} for s in stages)
        # Stages follow each other inside their call.
        assert all(a.end_time == b.start_time for a, b in zip(stages, stages[1:], strict=False))
        assert call.start_time is not None and call.end_time is not None and stages[0].start_time == call.start_time
    text = repr([dict(s.attributes or {}) for s in spans])
    assert "secret-word" not in text and "said" not in text  # never argument or output values


def test_a_denied_calls_span_carries_the_decision_and_the_rule(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    (result,) = _runtime(config, provider).run_turn_sync([Call("c1", "wipe", {})])
    assert result.status.value == "denied"
    spans = _by_name(exporter.get_finished_spans())
    (call,) = spans["execute_tool wipe"]
    attributes = dict(call.attributes or {})
    assert attributes["toolrt.decision.effect"] == "deny" and attributes["toolrt.decision.rule"] == "test-rules/no-wipe"
    assert (
        attributes["toolrt.status"] == "denied"
        and attributes["toolrt.stage"] == "permit"
        and attributes["error.type"] == attributes["toolrt.code"]
    )
    assert call.status.status_code is StatusCode.ERROR
    (permit,) = spans["toolrt.permit"]
    assert permit.status.status_code is StatusCode.ERROR
    assert "toolrt.execute" not in spans  # it never ran


def test_a_timed_out_calls_span_has_the_timeout_status(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    (result,) = _runtime(config, provider).run_turn_sync([Call("c1", "slow", {})])
    assert result.status.value == "timeout"
    spans = _by_name(exporter.get_finished_spans())
    (call,) = spans["execute_tool slow"]
    attributes = dict(call.attributes or {})
    assert (
        attributes["toolrt.status"] == "timeout"
        and attributes["toolrt.code"] == "timeout"
        and attributes["toolrt.stage"] == "execute"
    )
    assert call.status.status_code is StatusCode.ERROR and call.status.description == "timeout"
    (execute,) = spans["toolrt.execute"]
    assert execute.status.status_code is StatusCode.ERROR
    assert (
        execute.end_time is not None
        and execute.start_time is not None
        and execute.end_time - execute.start_time >= 90_000_000
    )


def test_an_unknown_tool_fails_in_a_lookup_span(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _runtime(config, provider).run_turn_sync([Call("c1", "nope", {})])
    spans = exporter.get_finished_spans()
    (call,) = _by_name(spans)["execute_tool nope"]
    assert [s.name for s in _children(spans, call)] == ["toolrt.lookup"]
    assert dict(call.attributes or {})["toolrt.code"] == "unknown_tool"


def test_the_handler_runs_inside_its_calls_span(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    (result,) = _runtime(config, provider).run_turn_sync([Call("c1", "whoami", {})])
    (call,) = _by_name(exporter.get_finished_spans())["execute_tool whoami"]
    assert result.content == format(call.context.span_id, "016x")


def test_a_traceparent_is_continued_and_records_carry_its_trace_id(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    audit = config.parent / "audit.jsonl"
    runtime = _runtime(config, provider, audit_sink="jsonl", audit_store=audit)
    sink = io.StringIO()
    handler = logs.configure(Settings(log_format="json", audit_sink="off"), sink=sink)
    try:
        runtime.run_turn_sync([Call("c1", "echo", {"word": "w"})], traceparent=TRACEPARENT, tracestate="vendor=abc")
    finally:
        assert handler is not None
        logger.remove(handler)
        logger.disable("runtime")
        logs._state["calls"] = False
        runtime.close_sync()
    spans = exporter.get_finished_spans()
    (turn,) = _by_name(spans)["toolrt.turn"]
    assert {format(s.context.trace_id, "032x") for s in spans} == {TRACE_ID}
    assert turn.parent is not None and format(turn.parent.span_id, "016x") == PARENT_ID and turn.parent.is_remote
    assert turn.context.trace_state.get("vendor") == "abc"
    (log,) = [json.loads(line)["record"]["extra"] for line in sink.getvalue().splitlines()]
    assert log["trace_id"] == TRACE_ID
    (row,) = [json.loads(line) for line in audit.read_text().splitlines()]
    assert row["trace_id"] == TRACE_ID


def test_the_apps_active_span_is_the_parent_without_a_traceparent(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    runtime = _runtime(config, provider)
    with provider.get_tracer("agent-app").start_as_current_span("agent step") as step:
        runtime.run_turn_sync([Call("c1", "echo", {"word": "w"})])
    spans = _by_name(exporter.get_finished_spans())
    (turn,) = spans["toolrt.turn"]
    assert turn.parent is not None and turn.parent.span_id == step.get_span_context().span_id
    assert turn.context.trace_id == step.get_span_context().trace_id


@pytest.mark.parametrize(
    "hostile",
    [
        "",
        "garbage",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",  # a field missing
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  # uppercase
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero parent id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # forbidden version
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  # version 00 has four fields
        "00-" + "a" * 5000,
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n" + "x" * 10,
        12345,
    ],
)
def test_a_malformed_traceparent_is_ignored_without_an_error(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter, hostile: Any
) -> None:
    runtime = _runtime(config, provider)
    with provider.get_tracer("agent-app").start_as_current_span("agent step") as step:
        (result,) = runtime.run_turn_sync(
            [Call("c1", "echo", {"word": "w"})], traceparent=hostile, tracestate="=,;" * 50
        )
    assert result.status.value == "ok"
    (turn,) = _by_name(exporter.get_finished_spans())["toolrt.turn"]
    assert turn.parent is not None and turn.parent.span_id == step.get_span_context().span_id
    assert trace_id_from_traceparent(hostile) is None


def test_tracing_off_makes_no_spans_and_never_asks_for_a_tracer(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    class RefusingProvider:
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tracing is off: no tracer may be asked for")

    runtime = _runtime(config, RefusingProvider(), tracing="off")
    assert runtime.tracing is None
    runtime.run_turn_sync([Call("c1", "echo", {"word": "w"}), Call("c2", "wipe", {})], traceparent=TRACEPARENT)
    off = _runtime(config, provider, tracing="off")
    off.run_turn_sync([Call("c1", "echo", {"word": "w"})])
    assert exporter.get_finished_spans() == ()


def test_auto_stays_off_until_the_app_configures_a_provider(config: Path) -> None:
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)  # no test sets the global provider
    assert _runtime(config).tracing is None
    assert tracing_for("auto", trace.NoOpTracerProvider()) is None
    assert tracing_for("on") is not None  # spans go to the global provider once the app sets one


def test_tracing_off_never_imports_opentelemetry(config: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from runtime import Call, Runtime, Settings
        runtime = Runtime(
            [{str(config)!r}], workspace_root={str(config)!r}, settings=Settings(tracing="off", audit_sink="off")
        )
        (result,) = runtime.run_turn_sync([Call("c1", "echo", {{"word": "w"}})], traceparent={TRACEPARENT!r})
        assert result.status.value == "ok", result.content
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_without_tracing_a_traceparents_trace_id_is_still_recorded(config: Path) -> None:
    sink = io.StringIO()
    handler = logs.configure(Settings(log_format="json", audit_sink="off"), sink=sink)
    try:
        runtime = _runtime(config, tracing="off")
        runtime.run_turn_sync([Call("c1", "echo", {"word": "w"})], traceparent=TRACEPARENT)
        runtime.run_turn_sync([Call("c2", "echo", {"word": "w"})], traceparent=TRACEPARENT, trace_id="app-chosen")
    finally:
        assert handler is not None
        logger.remove(handler)
        logger.disable("runtime")
        logs._state["calls"] = False
    ids = [json.loads(line)["record"]["extra"]["trace_id"] for line in sink.getvalue().splitlines()]
    assert ids == [TRACE_ID, "app-chosen"]


@pytest.mark.parametrize(
    ("traceparent", "expected"),
    [
        (TRACEPARENT, TRACE_ID),
        (f"  {TRACEPARENT}  ", TRACE_ID),
        (f"01-{TRACE_ID}-{PARENT_ID}-01-future-field", TRACE_ID),  # a later version may add fields
        (None, None),
    ],
)
def test_trace_id_from_traceparent_reads_valid_headers(traceparent: str | None, expected: str | None) -> None:
    assert trace_id_from_traceparent(traceparent) == expected


# -- metrics --------------------------------------------------------------------


def _points(reader: InMemoryMetricReader) -> dict[str, dict[frozenset[tuple[str, Any]], Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, dict[frozenset[tuple[str, Any]], Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "toolrt"
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found.setdefault(metric.name, {})[frozenset((point.attributes or {}).items())] = point
    return found


def _labels(**labels: str) -> frozenset[tuple[str, Any]]:
    return frozenset(labels.items())


def test_opentelemetry_metrics_match_the_registry(config: Path) -> None:
    reader = InMemoryMetricReader()
    runtime = _runtime(config)
    runtime.metrics.bind_opentelemetry(MeterProvider(metric_readers=[reader]))
    runtime.run_turn_sync(
        [
            Call("c1", "echo", {"word": "w"}),
            Call("c2", "echo", {"word": "w"}),
            Call("c3", "wipe", {}),
            Call("c4", "slow", {}),
        ]
    )
    runtime.reload()
    points = _points(reader)
    snap = runtime.metrics.snapshot()
    assert {labels: p.value for labels, p in points["toolrt.calls"].items()} == {
        _labels(tool=t, status=s): n for t, by in snap["calls"].items() for s, n in by.items()
    }
    assert {labels: p.value for labels, p in points["toolrt.decisions"].items()} == {
        _labels(effect=e): n for e, n in snap["decisions"].items()
    }
    assert points["toolrt.timeouts"][frozenset()].value == snap["timeouts"] == 1
    assert {labels: p.value for labels, p in points["toolrt.reloads"].items()} == {
        _labels(result="ok"): 1,
        _labels(result="failed"): 0,
    }
    for stage, entry in snap["latency_ms"].items():
        assert points["toolrt.stage.runs"][_labels(stage=stage)].value == entry["count"]
        assert points["toolrt.stage.time"][_labels(stage=stage)].value == pytest.approx(entry["sum"])
        assert points["toolrt.stage.latency"][_labels(stage=stage, quantile="0.99")].value == entry["p99"]
    for source, values in snap["sources"].items():
        for key, value in values.items():
            assert points["toolrt.source.value"][_labels(source=source, key=key)].value == value
    assert "toolrt.stage.duration" not in points  # histograms are opt-in


def test_stage_histograms_count_every_sample_when_asked_for(config: Path) -> None:
    reader = InMemoryMetricReader()
    runtime = _runtime(config)
    runtime.metrics.bind_opentelemetry(MeterProvider(metric_readers=[reader]), histograms=True)
    runtime.run_turn_sync([Call("c1", "echo", {"word": "w"}), Call("c2", "echo", {"word": "w"})])
    histograms = _points(reader)["toolrt.stage.duration"]
    for stage, entry in runtime.metrics.snapshot()["latency_ms"].items():
        point = histograms[_labels(stage=stage)]
        assert point.count == entry["count"] and point.sum == pytest.approx(entry["sum"] / 1000)  # seconds


def test_a_closed_binding_reports_nothing_more(config: Path) -> None:
    reader = InMemoryMetricReader()
    runtime = _runtime(config)
    binding = runtime.metrics.bind_opentelemetry(MeterProvider(metric_readers=[reader]), histograms=True)
    binding.close()
    runtime.run_turn_sync([Call("c1", "echo", {"word": "w"})])
    data = reader.get_metrics_data()
    assert data is None or all(
        not metric.data.data_points for r in data.resource_metrics for s in r.scope_metrics for metric in s.metrics
    )


# The snippet of the README's section on OpenTelemetry, as users would run it from the repository root.
README_SNIPPET = """
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from runtime import Call, Runtime, Settings

spans = InMemorySpanExporter()  # in production: BatchSpanProcessor(OTLPSpanExporter())
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
runtime = Runtime(
    ["examples/coding-agent"],
    workspace_root="examples/coding-agent/workspace",
    settings=Settings(audit_sink="off"),
    tracer_provider=provider,
)
runtime.metrics.bind_opentelemetry(MeterProvider(metric_readers=[InMemoryMetricReader()]))
runtime.run_turn_sync(
    [Call("c1", "file_read", {"path": "README.md"})],
    traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
)
print([span.name for span in spans.get_finished_spans()])  # 5 stages, execute_tool file_read, toolrt.turn
"""


def test_the_readme_snippet_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    exec(compile(README_SNIPPET, "README.md", "exec"), {})  # noqa: S102 - the documented snippet itself
    assert "execute_tool file_read" in capsys.readouterr().out


# -- GenAI conventions: tool type and description, durations in seconds, opt-in content ---


def test_a_calls_span_names_the_tool_type_description_and_duration_in_seconds(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    runtime = _runtime(config, provider)
    runtime.run_turn_sync([Call("c1", "echo", {"word": "w"}), Call("c2", "made_up", {})])
    spans = _by_name(exporter.get_finished_spans())
    (echo_span,) = spans["execute_tool echo"]
    assert echo_span.attributes["gen_ai.tool.type"] == "function"
    assert echo_span.attributes["gen_ai.tool.description"] == "Echo a word."
    assert 0 < echo_span.attributes["toolrt.call.duration_s"] < 60
    (unknown,) = spans["execute_tool made_up"]
    assert "gen_ai.tool.type" not in unknown.attributes and "gen_ai.tool.description" not in unknown.attributes
    assert not echo_span.events  # content is off by default


def test_content_is_recorded_redacted_as_span_events_only_when_asked(
    config: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    (config / "packs.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: packs}\nspec:\n  packs: [redaction-default]\n"
    )
    runtime = _runtime(config, provider, trace_content=True)
    runtime.run_turn_sync([Call("c1", "echo", {"word": "AKIAABCDEFGHIJKLMNOP"})])
    (span,) = _by_name(exporter.get_finished_spans())["execute_tool echo"]
    events = {event.name: event.attributes for event in span.events}
    arguments = events["gen_ai.tool.call.arguments"]["gen_ai.tool.call.arguments"]
    assert "AKIAABCDEFGHIJKLMNOP" not in arguments and "REDACTED" in arguments
    assert events["gen_ai.tool.call.result"]["gen_ai.tool.call.result"].startswith("said ")
