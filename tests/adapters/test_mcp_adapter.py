"""MCP: Tool definitions with annotations derived from attributes, CallToolResult rendering."""

from __future__ import annotations

import pytest

from runtime.adapters import mcp
from runtime.records import Status, ToolResult


def by_name(snapshot, **kwargs):
    return {d["name"]: d for d in mcp.tool_definitions(snapshot, **kwargs)}


def test_definitions_have_the_mcp_tool_keys(coding_snapshot):
    definition = by_name(coding_snapshot)["file_read"]
    assert set(definition) == {"name", "title", "description", "inputSchema", "annotations"}
    assert definition["inputSchema"] == coding_snapshot.tools["file_read"].spec.input_schema
    assert set(definition["annotations"]) == {
        "title",
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    }


@pytest.mark.parametrize(
    ("name", "read_only", "destructive", "idempotent", "open_world"),
    [
        ("web_fetch", True, False, True, True),  # read-only, http handler, untrusted output
        ("append_note", False, False, False, False),  # writable but declared low risk: additive
        ("drop_table", False, True, True, False),  # critical
        ("set_labels", False, True, False, False),  # default medium risk: destructive, as MCP assumes
    ],
)
def test_annotations_follow_the_declared_attributes(
    attribute_snapshot, name, read_only, destructive, idempotent, open_world
):
    hints = by_name(attribute_snapshot)[name]["annotations"]
    assert hints["readOnlyHint"] is read_only
    assert hints["destructiveHint"] is destructive
    assert hints["idempotentHint"] is idempotent
    assert hints["openWorldHint"] is open_world


def test_example_tools_get_the_expected_hints(coding_snapshot):
    tools = by_name(coding_snapshot)
    assert tools["file_read"]["annotations"]["readOnlyHint"] is True
    assert tools["file_read"]["annotations"]["destructiveHint"] is False
    assert tools["file_edit"]["annotations"]["destructiveHint"] is True  # medium risk, overwrites files
    assert tools["git_push"]["annotations"]["destructiveHint"] is True  # high risk


def test_the_title_comes_from_the_title_label_or_the_name(attribute_snapshot):
    tools = by_name(attribute_snapshot)
    assert tools["web_fetch"]["title"] == tools["web_fetch"]["annotations"]["title"] == "Fetch a web page"
    assert tools["append_note"]["title"] == "Append note"


def test_deferred_tools_are_left_out_unless_asked(attribute_snapshot):
    assert "search_archive" not in by_name(attribute_snapshot)
    assert "search_archive" in by_name(attribute_snapshot, include_deferred=True)


def test_a_result_is_text_content_with_is_error():
    assert mcp.render_result(ToolResult("c", "x", "hello")) == {
        "content": [{"type": "text", "text": "hello"}],
        "isError": False,
    }
    assert mcp.render_result(ToolResult("c", "x", "denied by rule", status=Status.denied))["isError"] is True


def test_structured_content_is_sent_when_it_is_an_object():
    rendered = mcp.render_result(ToolResult("c", "x", '{"n": 1}', structured={"n": 1}))
    assert rendered["structuredContent"] == {"n": 1}


@pytest.mark.parametrize("structured", [None, [1, 2], "text", 3, {"bad": float("nan")}, {"bad": "\ud800"}])
def test_structured_content_that_is_not_a_clean_object_is_left_out(structured):
    assert "structuredContent" not in mcp.render_result(ToolResult("c", "x", "text", structured=structured))


def test_empty_text_and_surrogates_are_made_safe():
    assert mcp.render_result(ToolResult("c", "x", ""))["content"][0]["text"] == "(no output)"
    assert mcp.render_result(ToolResult("c", "x", "a\udc00"))["content"][0]["text"] == "a\ufffd"
