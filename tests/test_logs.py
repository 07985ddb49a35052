"""Logs: nothing is emitted until the app asks; then JSON lines (or text) with the
ids, tool, status, stage and duration of each call, never its arguments or output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from loguru import logger

from runtime import Call, Runtime, Session, logs
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: echo}
spec:
  description: Echo a word.
  handler: python:echo_handlers:echo
  read_only: true
  input_schema: {type: object, properties: {word: {type: string}}}
"""


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "echo_handlers.py").write_text("def echo(args):\n    return 'said ' + args['word']\n")
    return Runtime([tmp_path], workspace_root=tmp_path, settings=Settings(audit_sink="off"))


@pytest.fixture(autouse=True)
def _restore() -> object:
    yield
    logger.disable("runtime")
    logs._state["calls"] = False


def test_nothing_is_logged_until_the_app_configures_it(runtime: Runtime) -> None:
    seen = io.StringIO()
    handler = logger.add(seen, level="TRACE")  # the app's own handler
    try:
        runtime.run_turn_sync([Call("c1", "echo", {"word": "psst"})])
        logger.bind(x=1).warning("from the app")  # the app's records still flow
    finally:
        logger.remove(handler)
    assert "from the app" in seen.getvalue()
    assert "echo" not in seen.getvalue()


def test_configured_json_logs_carry_the_ids_and_never_the_arguments(runtime: Runtime) -> None:
    sink = io.StringIO()
    handler = logs.configure(Settings(log_format="json", log_level="INFO", audit_sink="off"), sink=sink)
    try:
        runtime.run_turn_sync(
            [Call("c1", "echo", {"word": "topsecret"}), Call("c2", "nope", {})], Session(id="s-1"), trace_id="t-9"
        )
    finally:
        assert handler is not None
        logger.remove(handler)
    records = [json.loads(line)["record"] for line in sink.getvalue().splitlines()]
    extras = [r["extra"] for r in records]
    assert [(e["call_id"], e["tool"], e["status"], e["stage"]) for e in extras] == [
        ("c1", "echo", "ok", "respond"),
        ("c2", "nope", "invalid", "lookup"),
    ]
    assert all(
        e["session_id"] == "s-1" and e["trace_id"] == "t-9" and e["request_id"] and e["duration_ms"] >= 0
        for e in extras
    )
    assert records[1]["level"]["name"] == "WARNING"
    assert "topsecret" not in sink.getvalue() and "said" not in sink.getvalue()


def _json_records(runtime: Runtime, settings: Settings, sink: object) -> None:
    handler = logs.configure(settings, sink=sink)
    try:
        runtime.run_turn_sync([Call("c1", "echo", {"word": "x"}), Call("c2", "nope", {})], Session(id="s-1"))
    finally:
        assert handler is not None
        logger.remove(handler)


def test_per_call_json_records_have_the_shape_loguru_would_give_them(runtime: Runtime) -> None:
    lean = io.StringIO()
    _json_records(runtime, Settings(log_format="json", audit_sink="off"), lean)
    through_loguru: list[str] = []
    _json_records(
        runtime, Settings(log_format="json", audit_sink="off"), lambda message: through_loguru.append(str(message))
    )  # a plain callable: loguru's serializer
    lean_records = [json.loads(line) for line in lean.getvalue().splitlines()]
    loguru_records = [json.loads(line) for line in through_loguru]
    assert len(lean_records) == len(loguru_records) == 2
    for mine, theirs in zip(lean_records, loguru_records, strict=True):
        assert mine["text"] == theirs["text"] and mine["record"]["message"] == theirs["record"]["message"]
        assert mine["record"]["level"].items() <= theirs["record"]["level"].items()  # all but the icon
        assert set(mine["record"]) <= set(theirs["record"])
        assert {k: v for k, v in mine["record"]["extra"].items() if k not in ("request_id", "duration_ms")} == {
            k: v for k, v in theirs["record"]["extra"].items() if k not in ("request_id", "duration_ms")
        }
        assert abs(mine["record"]["time"]["timestamp"] - theirs["record"]["time"]["timestamp"]) < 60


def test_the_log_level_filters_per_call_records_and_a_removed_handler_gets_none(runtime: Runtime) -> None:
    sink = io.StringIO()
    _json_records(runtime, Settings(log_format="json", log_level="WARNING", audit_sink="off"), sink)
    assert [json.loads(line)["record"]["extra"]["call_id"] for line in sink.getvalue().splitlines()] == [
        "c2"
    ]  # the error result only
    written = sink.getvalue()
    runtime.run_turn_sync([Call("c3", "nope", {})])  # the handler is gone: nothing more, and no error
    assert sink.getvalue() == written


def test_json_logs_to_a_path_are_complete_after_the_handler_is_removed(runtime: Runtime, tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    _json_records(runtime, Settings(log_format="json", audit_sink="off"), str(path))
    assert [json.loads(line)["record"]["extra"]["call_id"] for line in path.read_text().splitlines()] == ["c1", "c2"]
