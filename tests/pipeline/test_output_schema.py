"""A tool's ``output_schema``: every successful result is checked against it in the shape
stage; a result that breaks it is an error whose data is withheld, and lint refuses a
schema that cannot hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pipeline_support import ConfigDir, call, make_env

from runtime.config.compile import build_snapshot
from runtime.pipeline.turn import run_turn
from runtime.records import Stage, Status
from runtime.settings import Settings

AWS = "AKIAIOSFODNN7EXAMPLE"

HANDLERS = f'''
import math
from dataclasses import dataclass

from pydantic import BaseModel

from runtime.errors import ToolError

AWS = "{AWS}"


class Weather(BaseModel):
    city: str
    celsius: float


@dataclass
class Pair:
    city: str
    celsius: float


def give(args):
    """Returns whatever the test asks for, by name."""
    return VALUES[args["what"]]


def fail(args):
    raise ToolError("the service is down")


def crash(args):
    raise ValueError("boom")


VALUES = {{
    "ok": {{"city": "Oslo", "celsius": 4.5}},
    "ok_int": {{"city": "Oslo", "celsius": 4}},
    "ok_extra_allowed_nested": {{"city": "Oslo", "celsius": 1.0, "tags": ["a", "b"]}},
    "missing": {{"city": "Oslo"}},
    "wrong_type": {{"city": "Oslo", "celsius": "warm"}},
    "bool_for_number": {{"city": "Oslo", "celsius": True}},
    "null_value": {{"city": None, "celsius": 1.0}},
    "extra": {{"city": "Oslo", "celsius": 1.0, "wind": 3}},
    "empty_city": {{"city": "", "celsius": 1.0}},
    "too_cold": {{"city": "Oslo", "celsius": -300.0}},
    "nan": {{"city": "Oslo", "celsius": math.nan}},
    "inf": {{"city": "Oslo", "celsius": math.inf}},
    "huge_int": {{"city": "Oslo", "celsius": 10**40}},
    "bad_tag": {{"city": "Oslo", "celsius": 1.0, "tags": ["a", 5]}},
    "text": "Oslo, 4.5 degrees",
    "empty_text": "",
    "none": None,
    "list": [{{"city": "Oslo", "celsius": 4.5}}],
    "number": 4.5,
    "bytes": b"Oslo",
    "model": Weather(city="Oslo", celsius=4.5),
    "dataclass": Pair(city="Oslo", celsius=4.5),
    "model_bad": Weather(city="", celsius=4.5),
    "secret_city": {{"city": "key " + AWS, "celsius": 1.0}},
    "secret_in_bad": {{"city": AWS, "celsius": "key " + AWS}},
    "many_bad": {{"city": 1, "celsius": "x", "tags": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}},
    "deep": {{"city": "Oslo", "celsius": 1.0, "tags": [[[[["x"]]]]]}},
}}
'''

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "celsius": {"type": "number", "minimum": -273.15},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "celsius"],
    "additionalProperties": False,
}
INPUT = {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]}


def _config(config: ConfigDir, **spec: Any) -> ConfigDir:
    config.handlers(HANDLERS)
    config.tool("weather", config.py("give"), input_schema=INPUT, output_schema=OUTPUT_SCHEMA, read_only=True, **spec)
    config.tool("plain", config.py("give"), input_schema=INPUT, read_only=True)
    config.tool("failing", config.py("fail"), output_schema=OUTPUT_SCHEMA, read_only=True)
    config.tool("crashing", config.py("crash"), output_schema=OUTPUT_SCHEMA, read_only=True)
    return config


async def _run(config: ConfigDir, workspace: Path, name: str, what: str) -> Any:
    env = make_env(config.snapshot(), workspace)
    (result,) = await run_turn([call(name, {"what": what})], env)
    return result


@pytest.mark.parametrize("what", ["ok", "ok_int", "ok_extra_allowed_nested", "model", "dataclass", "huge_int"])
async def test_a_result_that_matches_is_returned_with_its_data(config: ConfigDir, workspace: Path, what: str) -> None:
    result = await _run(_config(config), workspace, "weather", what)
    assert result.status is Status.ok, result.content
    assert result.structured["city"] == "Oslo"
    assert "output_schema" not in result.content


@pytest.mark.parametrize(
    "what",
    [
        "missing",
        "wrong_type",
        "bool_for_number",
        "null_value",
        "extra",
        "empty_city",
        "too_cold",
        "nan",
        "inf",
        "bad_tag",
        "text",
        "empty_text",
        "none",
        "list",
        "number",
        "bytes",
        "model_bad",
        "deep",
    ],
)
async def test_a_result_that_breaks_the_schema_is_an_error_with_the_data_withheld(
    config: ConfigDir, workspace: Path, what: str
) -> None:
    result = await _run(_config(config), workspace, "weather", what)
    assert result.status is Status.error
    assert result.code == "output_invalid" and result.stage is Stage.shape
    assert result.structured is None
    assert "does not match its declared output_schema" in result.content
    assert "report it to the operator" in result.content
    assert result.metadata["problems"], "the problems are listed for the operator"
    # The data itself is withheld: what the tool returned is not shown as a result.
    assert "Oslo, 4.5 degrees" not in result.content


async def test_the_problem_says_where_the_result_is_wrong(config: ConfigDir, workspace: Path) -> None:
    result = await _run(_config(config), workspace, "weather", "wrong_type")
    assert "/celsius" in result.content
    missing = await _run(config, workspace, "weather", "missing")
    assert "celsius" in missing.content
    text = await _run(config, workspace, "weather", "text")
    assert "the result is text" in text.content and "not a JSON object" in text.content
    listed = await _run(config, workspace, "weather", "list")
    assert "a JSON array" in listed.content


async def test_at_most_five_problems_are_listed(config: ConfigDir, workspace: Path) -> None:
    result = await _run(_config(config), workspace, "weather", "many_bad")
    assert result.code == "output_invalid"
    assert 1 <= len(result.metadata["problems"]) <= 5


async def test_a_secret_quoted_by_a_problem_is_redacted(config: ConfigDir, workspace: Path) -> None:
    result = await _run(_config(config), workspace, "weather", "secret_in_bad")
    assert result.code == "output_invalid"
    assert AWS not in result.content
    assert AWS not in repr(result.metadata["problems"])


async def test_a_matching_result_is_still_redacted(config: ConfigDir, workspace: Path) -> None:
    result = await _run(_config(config), workspace, "weather", "secret_city")
    assert result.status is Status.ok
    assert AWS not in result.content
    assert AWS not in repr(result.structured)


async def test_an_untrusted_tool_s_mismatch_is_marked_as_data(config: ConfigDir, workspace: Path) -> None:
    config.handlers(HANDLERS)
    config.tool(
        "remote", config.py("give"), input_schema=INPUT, output_schema=OUTPUT_SCHEMA, trust="untrusted", read_only=True
    )
    result = await _run(config, workspace, "remote", "wrong_type")
    assert result.code == "output_invalid"
    assert "untrusted-data" in result.content


@pytest.mark.parametrize(("name", "code"), [("failing", "tool_error"), ("crashing", "handler_error")])
async def test_a_failed_call_keeps_its_own_error(config: ConfigDir, workspace: Path, name: str, code: str) -> None:
    env = make_env(_config(config).snapshot(), workspace)
    (result,) = await run_turn([call(name, {})], env)
    assert result.status is Status.error and result.code == code
    assert "output_schema" not in result.content


async def test_a_tool_without_output_schema_returns_anything(config: ConfigDir, workspace: Path) -> None:
    _config(config)
    for what in ("text", "list", "wrong_type", "none"):
        result = await _run(config, workspace, "plain", what)
        assert result.status is Status.ok, result.content


async def test_every_call_of_a_turn_is_checked_on_its_own(config: ConfigDir, workspace: Path) -> None:
    env = make_env(_config(config).snapshot(), workspace)
    calls = [call("weather", {"what": w}, index=i) for i, w in enumerate(["ok", "text", "ok_int", "extra"])]
    results = await run_turn(calls, env)
    assert [r.code for r in results] == [None, "output_invalid", None, "output_invalid"]


# -- lint ------------------------------------------------------------------------------


def _problems(config: ConfigDir, output_schema: Any, handler: Any = None) -> list[Any]:
    config.handlers(HANDLERS)
    config.tool("weather", handler or config.py("give"), input_schema=INPUT, output_schema=output_schema)
    config.write()
    return list(build_snapshot([config.path], Settings()).problems)


@pytest.mark.parametrize(
    ("schema", "code"),
    [
        ({"type": "string"}, "schema-not-object"),
        ({"type": "array", "items": {}}, "schema-not-object"),
        ({}, "schema-not-object"),
        ({"properties": {"a": {"type": "string"}}}, "schema-not-object"),
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "schema-invalid"),
        ({"type": "object", "properties": {"a": {"minLength": -1}}}, "schema-invalid"),
        ({"type": "object", "required": "a"}, "schema-invalid"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}, None),
        ({"type": "object", "properties": {"a": {"type": "string", "maxLenght": 3}}}, None),
        ({"type": "object", "properties": {"a": {"$ref": "https://example.org/schema.json"}}}, None),
    ],
)
def test_lint_refuses_an_output_schema_that_cannot_hold(config: ConfigDir, schema: Any, code: str | None) -> None:
    problems = _problems(config, schema)
    assert problems, "an unusable output_schema must be reported"
    # The config is one JSON line per document: the problem points inside output_schema.
    line = (config.path / "tools.yaml").read_text().splitlines()[0]
    start = line.index('"output_schema"') + 1
    assert any(p.location.line == 1 and p.location.col > start for p in problems), [str(p) for p in problems]
    if code is not None:
        assert any(p.code == code for p in problems), [p.code for p in problems]


def test_the_not_an_object_message_says_what_to_do(config: ConfigDir) -> None:
    (problem,) = [p for p in _problems(config, {"type": "string"}) if p.code == "schema-not-object"]
    assert "output_schema must have `type: object`" in problem.message
    assert "declares no output_schema" in problem.message


@pytest.mark.parametrize(
    "handler",
    [{"command": {"argv": ["echo", "hi"]}}, "builtin:file_read", "builtin:run_command"],
)
def test_lint_refuses_an_output_schema_on_a_tool_that_returns_text(config: ConfigDir, handler: Any) -> None:
    problems = _problems(config, OUTPUT_SCHEMA, handler)
    found = [p for p in problems if p.code == "output-schema-on-text"]
    assert found and "Remove output_schema" in found[0].message


@pytest.mark.parametrize("bad", ["object", 3, ["type", "object"], True])
def test_an_output_schema_that_is_not_a_mapping_is_a_clear_error(config: ConfigDir, bad: Any) -> None:
    problems = _problems(config, bad)
    assert problems and all("Traceback" not in p.message for p in problems)


def test_a_sound_output_schema_lints_clean_and_is_compiled_once(config: ConfigDir) -> None:
    assert not [p for p in _problems(config, OUTPUT_SCHEMA) if p.severity.value == "error"]
    snapshot = build_snapshot([config.path], Settings()).snapshot
    assert snapshot is not None
    check = snapshot.tools["weather"].output_check
    assert check is not None and dict(check.schema) == OUTPUT_SCHEMA
    assert snapshot.tools["weather"].output_check is check
