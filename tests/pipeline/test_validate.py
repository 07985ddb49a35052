"""Stage 03, validate: schema problems listed with JSON pointers, defaults filled in for
the handler, business rules (CEL) that fail or error, and unreadable arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import ConfigDir, FakeApprover, call, make_env

from runtime.pipeline.turn import run_turn
from runtime.records import Call, Stage, Status
from runtime.snapshot import Snapshot

HANDLERS = """
def echo(args):
    return {"seen": args}
"""

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "count": {"type": "integer", "minimum": 1, "default": 3},
        "mode": {"enum": ["fast", "slow"], "default": "fast"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "path": {"type": "string"},
    },
}


@pytest.fixture
def snapshot(config: ConfigDir) -> Snapshot:
    config.handlers(HANDLERS)
    config.tool("echo", config.py("echo"), read_only=True, input_schema=SCHEMA)
    config.tool(
        "ruled",
        config.py("echo"),
        read_only=True,
        input_schema=SCHEMA,
        rules=[
            {
                "name": "not-admin",
                "expression": 'args.name != "admin"',
                "message": "Pick a user other than admin; admin is reserved.",
            }
        ],
    )
    config.tool(
        "strict_rule",
        config.py("echo"),
        read_only=True,
        input_schema=SCHEMA,
        rules=[
            {"name": "path-in-src", "expression": 'args.path.startsWith("src/")', "message": "Pass a path under src/."}
        ],
    )
    config.tool(
        "lenient_rule",
        config.py("echo"),
        read_only=True,
        input_schema=SCHEMA,
        rules=[
            {
                "name": "path-in-src",
                "expression": 'args.path.startsWith("src/")',
                "message": "Pass a path under src/.",
                "on_error": "ignore",
            }
        ],
    )
    config.tool(
        "two_rules",
        config.py("echo"),
        read_only=True,
        input_schema=SCHEMA,
        rules=[
            {"name": "count-small", "expression": "args.count < 10", "message": "Use a count below 10."},
            {"name": "session-user", "expression": 'session.user == "alice"', "message": "Only alice may call this."},
        ],
    )
    return config.snapshot()


async def run_one(snapshot: Snapshot, workspace: Path, name: str, args: dict | None, **kw):
    (result,) = await run_turn([call(name, args, **kw)], make_env(snapshot, workspace))
    return result


async def test_schema_problems_are_all_listed_with_pointers(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "echo", {"count": "x", "extra": 1, "tags": ["a", 3]})
    assert (result.status, result.code, result.stage) == (Status.invalid, "invalid_arguments", Stage.validate)
    problems = result.metadata["problems"]
    assert {p["pointer"] for p in problems} == {"", "/count", "/extra", "/tags/1"}
    for problem in problems:
        assert problem["message"] in result.content
    assert "missing required argument `name`" in result.content
    assert "Fix the arguments and call `echo` again." in result.content


async def test_many_schema_problems_are_capped_in_the_text_but_all_kept_in_metadata(
    config: ConfigDir, workspace: Path
) -> None:
    config.handlers(HANDLERS)
    props = {f"f{i:02d}": {"type": "integer"} for i in range(30)}
    config.tool("wide", config.py("echo"), read_only=True, input_schema={"type": "object", "properties": props})
    snapshot = config.snapshot()
    result = await run_one(snapshot, workspace, "wide", {k: "no" for k in props})
    assert len(result.metadata["problems"]) == 30
    assert result.content.count("\n- ") == 21  # 20 problems + the "... and 10 more" line
    assert "... and 10 more" in result.content


async def test_schema_defaults_are_filled_in_for_the_handler(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "echo", {"name": "bob"})
    assert result.status is Status.ok
    assert result.structured == {"seen": {"name": "bob", "count": 3, "mode": "fast"}}


async def test_given_values_win_over_defaults(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "echo", {"name": "bob", "count": 9, "mode": "slow"})
    assert result.structured == {"seen": {"name": "bob", "count": 9, "mode": "slow"}}


async def test_a_failing_rule_gives_its_message_and_name(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "ruled", {"name": "admin"})
    assert (result.status, result.code, result.stage) == (Status.invalid, "rule_failed", Stage.validate)
    assert result.content == "`ruled` refused these arguments: Pick a user other than admin; admin is reserved."
    assert result.metadata["rule"] == "not-admin"


async def test_a_passing_rule_lets_the_call_run(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "ruled", {"name": "carol"})
    assert result.status is Status.ok


async def test_rules_see_defaults_and_the_session(snapshot: Snapshot, workspace: Path) -> None:
    # count defaults to 3 (< 10), so the first rule passes; the session has no user.
    result = await run_one(snapshot, workspace, "two_rules", {"name": "x"})
    assert result.metadata["rule"] == "session-user"
    assert "Only alice may call this." in result.content


async def test_a_rule_that_errors_fails_closed_by_default(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "strict_rule", {"name": "x"})  # no `path`: the expression errors
    assert (result.status, result.code) == (Status.invalid, "rule_failed")
    assert "Pass a path under src/." in result.content
    assert "could not be checked" in result.content
    assert result.metadata["rule"] == "path-in-src"


async def test_a_rule_that_errors_passes_with_on_error_ignore(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "lenient_rule", {"name": "x"})
    assert result.status is Status.ok
    assert result.structured["seen"]["name"] == "x"


async def test_on_error_ignore_still_enforces_a_rule_that_evaluates_false(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "lenient_rule", {"name": "x", "path": "etc/passwd"})
    assert result.code == "rule_failed"
    assert "could not be checked" not in result.content


async def test_unparsable_arguments_end_at_the_parse_stage_with_the_parse_error(
    snapshot: Snapshot, workspace: Path
) -> None:
    result = await run_one(
        snapshot, workspace, "echo", None, parse_error="Arguments are not valid JSON: Expecting value at char 0."
    )
    assert (result.status, result.code, result.stage) == (Status.invalid, "parse_error", Stage.parse)
    assert result.content == "Arguments are not valid JSON: Expecting value at char 0."


async def test_missing_arguments_without_a_parse_error_are_reported_by_validate(
    snapshot: Snapshot, workspace: Path
) -> None:
    (result,) = await run_turn([Call(id="c1", name="echo", args=None)], make_env(snapshot, workspace))
    assert (result.status, result.code, result.stage) == (Status.invalid, "bad_arguments", Stage.validate)
    assert "could not be read: missing" in result.content


async def test_validation_runs_before_permission_so_a_bad_write_call_never_asks(
    config: ConfigDir, workspace: Path
) -> None:
    config.handlers(HANDLERS)
    config.tool("writer", config.py("echo"), input_schema=SCHEMA)
    approver = FakeApprover()
    (result,) = await run_turn(
        [call("writer", {"count": 0})], make_env(config.snapshot(), workspace, approver=approver)
    )
    assert result.code == "invalid_arguments"
    assert approver.asked == []
