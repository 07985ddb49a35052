"""Stage 02, lookup: name and name@version resolve in the snapshot; anything else is an
error result listing the available names, closest first."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import ConfigDir, call, make_env

from runtime.pipeline.lookup import lookup
from runtime.pipeline.turn import run_turn
from runtime.records import BoundCall, Stage, Status, ToolResult
from runtime.snapshot import Snapshot

HANDLERS = """
def which(args):
    return "v1"

def which2(args):
    return "v2"

def plain(args):
    return "plain"
"""


@pytest.fixture
def snapshot(config: ConfigDir) -> Snapshot:
    config.handlers(HANDLERS)
    for name in ("file_read", "file_write", "file_list", "grep", "git_push", "web_fetch"):
        config.tool(name, config.py("plain"), read_only=True)
    config.tool("deploy", config.py("which"), version="1", read_only=True)
    config.tool("deploy", config.py("which2"), version="2", read_only=True)
    return config.snapshot()


def test_known_tool_binds_to_that_tool(snapshot: Snapshot) -> None:
    bound = lookup(call("grep"), snapshot)
    assert isinstance(bound, BoundCall)
    assert bound.tool.name == "grep"


def test_name_at_version_binds_to_that_version(snapshot: Snapshot) -> None:
    one = lookup(call("deploy@1"), snapshot)
    two = lookup(call("deploy@2"), snapshot)
    assert isinstance(one, BoundCall) and one.tool.version == "1"
    assert isinstance(two, BoundCall) and two.tool.version == "2"


def test_name_without_version_uses_the_highest_version(snapshot: Snapshot) -> None:
    bound = lookup(call("deploy"), snapshot)
    assert isinstance(bound, BoundCall) and bound.tool.version == "2"


async def test_versioned_call_runs_that_versions_handler_and_reports_it(snapshot: Snapshot, workspace: Path) -> None:
    results = await run_turn([call("deploy@1", id="a"), call("deploy", id="b")], make_env(snapshot, workspace))
    assert [r.content for r in results] == ["v1", "v2"]
    assert results[0].metadata["tool_version"] == "1"
    assert results[1].metadata["tool_version"] == "2"


def test_unknown_version_lists_the_versions_and_says_how_to_call_the_default(snapshot: Snapshot) -> None:
    result = lookup(call("deploy@7"), snapshot)
    assert isinstance(result, ToolResult)
    assert (result.status, result.code, result.stage) == (Status.invalid, "unknown_version", Stage.lookup)
    assert "no version `7`" in result.content
    assert "versions: 1, 2" in result.content
    assert "without a version" in result.content


def test_version_pin_on_an_unversioned_tool_is_an_unknown_version(snapshot: Snapshot) -> None:
    result = lookup(call("grep@3"), snapshot)
    assert isinstance(result, ToolResult)
    assert result.code == "unknown_version"
    assert "versions: none" in result.content


def test_unknown_tool_lists_available_names_closest_first(snapshot: Snapshot) -> None:
    result = lookup(call("file_reed"), snapshot)
    assert isinstance(result, ToolResult)
    assert (result.status, result.code, result.stage) == (Status.invalid, "unknown_tool", Stage.lookup)
    assert result.content.startswith("Unknown tool `file_reed`. Available tools: ")
    listed = result.content.split("Available tools: ", 1)[1].rstrip(".").split(", ")
    assert listed[0] == "file_read"
    assert set(listed) == set(snapshot.tools)
    assert listed.index("file_write") < listed.index("web_fetch")


def test_unknown_tool_with_a_version_suffix_is_an_unknown_tool(snapshot: Snapshot) -> None:
    result = lookup(call("nope@1"), snapshot)
    assert isinstance(result, ToolResult)
    assert result.code == "unknown_tool"


def test_empty_name_is_an_unknown_tool(snapshot: Snapshot) -> None:
    result = lookup(call(""), snapshot)
    assert isinstance(result, ToolResult)
    assert result.code == "unknown_tool"
    assert "Available tools:" in result.content


def test_a_10kb_name_is_shortened_in_the_message(snapshot: Snapshot) -> None:
    name = "x" * 10_000
    result = lookup(call(name), snapshot)
    assert isinstance(result, ToolResult)
    assert result.code == "unknown_tool"
    assert len(result.content) < 1_000
    assert "x" * 100 + "..." in result.content
    assert "x" * 101 not in result.content


def test_a_10kb_name_with_an_at_sign_stays_short_too(snapshot: Snapshot) -> None:
    result = lookup(call("grep@" + "9" * 10_000), snapshot)
    assert isinstance(result, ToolResult)
    assert result.code == "unknown_version"
    assert len(result.content) < 1_000, f"the message quotes the whole 10 KB version: {len(result.content)} characters"


def test_long_tool_lists_are_capped_with_a_count_of_the_rest(config: ConfigDir) -> None:
    config.handlers(HANDLERS)
    for i in range(40):
        config.tool(f"tool_{i:02d}", config.py("plain"), read_only=True)
    result = lookup(call("tool_05x"), config.snapshot())
    assert isinstance(result, ToolResult)
    assert result.content.count("tool_") == 31  # the called name + 30 listed
    assert "(10 more)" in result.content
