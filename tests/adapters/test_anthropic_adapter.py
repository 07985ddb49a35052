"""Anthropic Messages: tool_use blocks -> Calls, results -> one user message of tool_result blocks."""

from __future__ import annotations

import json

import pytest

from runtime.adapters import anthropic
from runtime.records import Call, Status, ToolResult


def tool_use(id="toolu_01", name="file_read", input=None, **extra):
    block = {"type": "tool_use", "id": id, "name": name, "input": {"path": "a.py"} if input is None else input}
    block.update(extra)
    return block


def message(*blocks):
    return {"role": "assistant", "content": list(blocks)}


# --- parse ---------------------------------------------------------------------


def test_each_tool_use_block_is_a_call_in_order_and_other_blocks_are_skipped():
    calls = anthropic.parse_calls(
        message(
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Reading both files."},
            tool_use("toolu_a", "file_read", {"path": "a.py"}),
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
            tool_use("toolu_b", "grep", {"pattern": "TODO"}),
        )
    )
    assert calls == [
        Call(id="toolu_a", name="file_read", args={"path": "a.py"}, index=0),
        Call(id="toolu_b", name="grep", args={"pattern": "TODO"}, index=1),
    ]


def test_a_list_of_content_blocks_is_accepted():
    assert [c.id for c in anthropic.parse_calls([tool_use("toolu_x")])] == ["toolu_x"]


def test_an_empty_input_is_an_empty_object():
    (call,) = anthropic.parse_calls([tool_use(input={})])
    assert call.args == {} and call.parse_error is None


@pytest.mark.parametrize(
    "payload",
    [
        None,
        "text",
        42,
        {"role": "assistant", "content": "just text"},
        {"role": "assistant"},
        {"content": None},
        [],
        [None, 1, "x", ["nested"]],
    ],
)
def test_payloads_without_tool_use_give_no_calls(payload):
    assert anthropic.parse_calls(payload) == []


def test_a_missing_id_gets_a_stable_placeholder_and_a_parse_error():
    calls = anthropic.parse_calls([tool_use("toolu_ok"), {"type": "tool_use", "name": "grep", "input": {}}])
    assert calls[1].id == "toolu_missing_1"
    assert calls[1].name == "grep" and calls[1].args == {}
    assert "no id" in calls[1].parse_error
    assert calls[0].parse_error is None


@pytest.mark.parametrize("bad_id", ["", None, 7, ["x"]])
def test_an_id_that_is_not_a_string_counts_as_missing(bad_id):
    (call,) = anthropic.parse_calls([tool_use(id=bad_id)])
    assert call.id == "toolu_missing_0" and "no id" in call.parse_error


@pytest.mark.parametrize("bad_name", [None, "", 3])
def test_a_missing_name_is_a_parse_error(bad_name):
    (call,) = anthropic.parse_calls([tool_use(name=bad_name)])
    assert call.name == "" and "no tool name" in call.parse_error


def test_an_absurdly_long_name_is_cut_and_flagged():
    (call,) = anthropic.parse_calls([tool_use(name="n" * 100_000)])
    assert len(call.name) == 256 and "100,000 characters" in call.parse_error


@pytest.mark.parametrize(("value", "needle"), [([1, 2], "got a list"), (5, "got a number"), (None, "no input")])
def test_input_that_is_not_an_object_is_a_parse_error(value, needle):
    (call,) = anthropic.parse_calls([{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": value}])
    assert call.args is None and needle in call.parse_error


def test_a_missing_input_is_a_parse_error():
    (call,) = anthropic.parse_calls([{"type": "tool_use", "id": "toolu_1", "name": "grep"}])
    assert call.args is None and "no input" in call.parse_error


def test_input_sent_as_a_json_string_is_decoded_and_kept():
    (call,) = anthropic.parse_calls([tool_use(input='{"path": "a.py"}')])
    assert call.args == {"path": "a.py"} and call.raw_arguments == '{"path": "a.py"}' and call.parse_error is None
    (call,) = anthropic.parse_calls([tool_use(input='{"path": ')])
    assert call.args is None and "not valid JSON" in call.parse_error


def test_hostile_input_values_give_parse_errors():
    deep: dict = {}
    node = deep
    for _ in range(10_000):
        node["a"] = {}
        node = node["a"]
    cases = {
        "nan": ({"x": float("nan")}, "NaN"),
        "surrogate": ({"path": "\ud800"}, "surrogate"),
        "deep": (deep, "nested too deeply"),
        "huge": ({"content": "x" * 10_000_000}, "too large"),
        "not json": ({"x": object()}, "not a JSON value"),
    }
    for label, (value, needle) in cases.items():
        (call,) = anthropic.parse_calls([tool_use(input=value)])
        assert call.args is None, label
        assert needle in call.parse_error, label


def test_duplicate_ids_are_kept_for_the_scheduler():
    calls = anthropic.parse_calls([tool_use("toolu_same"), tool_use("toolu_same")])
    assert [c.id for c in calls] == ["toolu_same", "toolu_same"]
    assert [c.index for c in calls] == [0, 1]


def test_args_are_a_copy_of_the_input():
    block = tool_use(input={"path": "a.py"})
    (call,) = anthropic.parse_calls([block])
    block["input"]["path"] = "changed"
    assert call.args == {"path": "a.py"}


def test_a_mapping_that_raises_on_access_gives_no_calls():
    class Broken(dict):
        def get(self, *args, **kwargs):
            raise RuntimeError("boom")

    assert anthropic.parse_calls(Broken(content=[tool_use()])) == []


# --- render ------------------------------------------------------------------------------


def test_results_become_one_user_message_of_tool_result_blocks_in_order():
    rendered = anthropic.render_results(
        [
            ToolResult("toolu_a", "file_read", "1\tprint('hi')"),
            ToolResult("toolu_b", "grep", "unknown tool 'grp'; available: file_read, grep", status=Status.invalid),
        ]
    )
    assert rendered == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "1\tprint('hi')"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_b",
                "content": "unknown tool 'grp'; available: file_read, grep",
                "is_error": True,
            },
        ],
    }


def test_text_comes_after_every_tool_result():
    rendered = anthropic.render_results([ToolResult("a", "x", "1"), ToolResult("b", "x", "2")], text="Now continue.")
    assert [b["type"] for b in rendered["content"]] == ["tool_result", "tool_result", "text"]


@pytest.mark.parametrize("status", [s for s in Status if s not in (Status.ok, Status.background)])
def test_every_error_status_sets_is_error(status):
    (block,) = anthropic.render_results([ToolResult("a", "x", "why", status=status)])["content"]
    assert block["is_error"] is True


def test_a_background_result_is_not_an_error():
    (block,) = anthropic.render_results([ToolResult("a", "x", "started; poll handle h1", status=Status.background)])[
        "content"
    ]
    assert "is_error" not in block


def test_empty_content_is_never_sent():
    (block,) = anthropic.render_results([ToolResult("a", "x", "", status=Status.error)])["content"]
    assert block["content"] == "(no output)"


def test_lone_surrogates_in_content_are_replaced():
    (block,) = anthropic.render_results([ToolResult("a", "x", "bad \ud800 text")])["content"]
    assert block["content"] == "bad \ufffd text"
    json.dumps(block, ensure_ascii=False).encode("utf-8")


# --- definitions -----------------------------------------------------------------------------


def test_definitions_list_every_tool_with_its_schema(coding_snapshot):
    definitions = anthropic.tool_definitions(coding_snapshot)
    assert [d["name"] for d in definitions] == list(coding_snapshot.tools)
    read = next(d for d in definitions if d["name"] == "file_read")
    assert read == {
        "name": "file_read",
        "description": coding_snapshot.tools["file_read"].spec.description,
        "input_schema": coding_snapshot.tools["file_read"].spec.input_schema,
    }


def test_definitions_are_copies_the_caller_may_edit(coding_snapshot):
    anthropic.tool_definitions(coding_snapshot)[0]["input_schema"]["properties"]["injected"] = {}
    assert "injected" not in anthropic.tool_definitions(coding_snapshot)[0]["input_schema"]["properties"]


def test_deferred_tools_are_left_out_unless_asked(attribute_snapshot):
    names = [d["name"] for d in anthropic.tool_definitions(attribute_snapshot)]
    assert "search_archive" not in names and "web_fetch" in names
    deferred = [
        d
        for d in anthropic.tool_definitions(attribute_snapshot, include_deferred=True)
        if d["name"] == "search_archive"
    ]
    assert deferred and deferred[0]["defer_loading"] is True
