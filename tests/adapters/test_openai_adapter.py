"""OpenAI Chat Completions and Responses: calls in, results out, definitions with strict mode."""

from __future__ import annotations

import pytest

from runtime.adapters import openai
from runtime.records import Call, Status, ToolResult


def chat_call(id="call_1", name="file_read", arguments='{"path": "a.py"}'):
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def fc(call_id="call_1", name="file_read", arguments='{"path": "a.py"}'):
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


# --- Chat Completions: parse -----------------------------------------------------------


def test_chat_tool_calls_become_calls_in_order():
    msg = {
        "role": "assistant",
        "content": None,
        "tool_calls": [chat_call("call_a"), chat_call("call_b", "grep", '{"pattern": "x"}')],
    }
    assert openai.parse_chat_calls(msg) == [
        Call(id="call_a", name="file_read", args={"path": "a.py"}, index=0, raw_arguments='{"path": "a.py"}'),
        Call(id="call_b", name="grep", args={"pattern": "x"}, index=1, raw_arguments='{"pattern": "x"}'),
    ]


def test_chat_accepts_the_bare_list_of_tool_calls():
    assert [c.id for c in openai.parse_chat_calls([chat_call("call_z")])] == ["call_z"]


@pytest.mark.parametrize(
    "payload", [None, {"role": "assistant", "content": "hi"}, {"role": "assistant", "tool_calls": None}, "text", 3]
)
def test_chat_messages_without_tool_calls_give_no_calls(payload):
    assert openai.parse_chat_calls(payload) == []


def test_empty_arguments_mean_an_empty_object():
    (call,) = openai.parse_chat_calls([chat_call(arguments="")])
    assert call.args == {} and call.parse_error is None and call.raw_arguments == ""


def test_bad_arguments_keep_the_raw_string_and_say_why():
    (call,) = openai.parse_chat_calls([chat_call(arguments='{"path": "a" "b"}')])
    assert call.args is None
    assert call.raw_arguments == '{"path": "a" "b"}'
    assert call.parse_error.startswith("arguments are not valid JSON: Expecting ',' delimiter")


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ("[1]", "got a list"),
        ('{"a": NaN}', "NaN"),
        ('{"a": "\\ud800"}', "surrogate"),
        ("[" * 10_000, "nested too deeply"),
        ('{"c": "' + "x" * 10_000_000 + '"}', "too large"),
    ],
)
def test_hostile_arguments_are_parse_errors(arguments, needle):
    (call,) = openai.parse_chat_calls([chat_call(arguments=arguments)])
    assert call.args is None and needle in call.parse_error


def test_every_chat_entry_yields_a_call_so_that_every_id_is_answered():
    calls = openai.parse_chat_calls(
        [
            chat_call("call_ok"),
            None,
            {"type": "function", "function": {"name": "grep", "arguments": "{}"}},
            {"id": "call_f", "type": "function"},
            "junk",
        ]
    )
    assert [c.id for c in calls] == ["call_ok", "call_missing_1", "call_missing_2", "call_f", "call_missing_4"]
    assert [c.index for c in calls] == [0, 1, 2, 3, 4]
    assert calls[0].parse_error is None
    assert "not an object" in calls[1].parse_error
    assert "no id" in calls[2].parse_error and calls[2].name == "grep"
    assert "no function" in calls[3].parse_error


def test_a_custom_tool_call_is_answered_with_an_error():
    (call,) = openai.parse_chat_calls([{"id": "call_c", "type": "custom", "custom": {"name": "grep", "input": "TODO"}}])
    assert call.id == "call_c" and call.name == "grep" and call.args is None
    assert call.raw_arguments == "TODO" and "custom" in call.parse_error


def test_duplicate_chat_ids_are_kept():
    assert [c.id for c in openai.parse_chat_calls([chat_call("call_d"), chat_call("call_d")])] == ["call_d", "call_d"]


def test_arguments_already_decoded_by_a_client_are_accepted():
    (call,) = openai.parse_chat_calls(
        [{"id": "c", "type": "function", "function": {"name": "grep", "arguments": {"pattern": "x"}}}]
    )
    assert call.args == {"pattern": "x"} and call.raw_arguments is None


def test_strict_mode_nulls_are_removed_when_the_snapshot_is_given(coding_snapshot):
    entry = chat_call(arguments='{"path": "a.py", "offset": null, "limit": null}')
    (plain,) = openai.parse_chat_calls([entry])
    assert plain.args == {"path": "a.py", "offset": None, "limit": None}
    (stripped,) = openai.parse_chat_calls([entry], snapshot=coding_snapshot)
    assert stripped.args == {"path": "a.py"}
    assert stripped.raw_arguments == entry["function"]["arguments"]


def test_strict_nulls_are_kept_for_tools_that_are_not_strict(attribute_snapshot):
    (call,) = openai.parse_chat_calls(
        [chat_call(name="set_labels", arguments='{"labels": null}')], snapshot=attribute_snapshot
    )
    assert call.args == {"labels": None}


def test_unknown_tools_pass_through_for_lookup_to_answer(coding_snapshot):
    (call,) = openai.parse_chat_calls(
        [chat_call(name="no_such_tool", arguments='{"x": null}')], snapshot=coding_snapshot
    )
    assert call.name == "no_such_tool" and call.args == {"x": None}


# --- Chat Completions: render and definitions ----------------------------------------------------


def test_chat_results_are_tool_messages_in_order():
    rendered = openai.render_chat_results(
        [ToolResult("call_a", "file_read", "ok"), ToolResult("call_b", "grep", "no matches")]
    )
    assert rendered == [
        {"role": "tool", "tool_call_id": "call_a", "content": "ok"},
        {"role": "tool", "tool_call_id": "call_b", "content": "no matches"},
    ]


def test_error_results_say_error_since_the_api_has_no_flag():
    rendered = openai.render_chat_results(
        [
            ToolResult("c", "x", "path must be a string", status=Status.invalid),
            ToolResult("d", "x", "Error: already said", status=Status.error),
        ]
    )
    assert rendered[0]["content"] == "Error: path must be a string"
    assert rendered[1]["content"] == "Error: already said"
    assert (
        openai.render_chat_results([ToolResult("c", "x", "bad", status=Status.denied)], mark_errors=False)[0]["content"]
        == "bad"
    )


def test_chat_definitions_are_strict_where_the_schema_allows(coding_snapshot):
    definitions = openai.tool_definitions_chat(coding_snapshot)
    assert [d["function"]["name"] for d in definitions] == list(coding_snapshot.tools)
    read = next(d for d in definitions if d["function"]["name"] == "file_read")
    assert read["type"] == "function"
    assert set(read["function"]) == {"name", "description", "parameters", "strict"}
    assert read["function"]["strict"] is True
    assert read["function"]["parameters"]["required"] == ["path", "offset", "limit"]


def test_a_schema_strict_mode_cannot_express_is_sent_as_is_without_strict(attribute_snapshot):
    definitions = {d["function"]["name"]: d["function"] for d in openai.tool_definitions_chat(attribute_snapshot)}
    labels = definitions["set_labels"]
    assert labels["strict"] is False
    assert labels["parameters"] == attribute_snapshot.tools["set_labels"].spec.input_schema
    assert "search_archive" not in definitions  # deferred


def test_strict_can_be_turned_off(coding_snapshot):
    for definition in openai.tool_definitions_chat(coding_snapshot, strict=False):
        function = definition["function"]
        assert function["strict"] is False
        assert function["parameters"] == coding_snapshot.tools[function["name"]].spec.input_schema


def test_exported_parameters_are_copies(coding_snapshot):
    openai.tool_definitions_chat(coding_snapshot)[0]["function"]["parameters"]["properties"].clear()
    assert openai.tool_definitions_chat(coding_snapshot)[0]["function"]["parameters"]["properties"]


# --- Responses ---------------------------------------------------------------------------------------


def test_function_call_items_become_calls_and_other_items_are_skipped():
    items = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Reading."}],
        },
        fc("call_a"),
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        fc("call_b", "grep", '{"pattern": "x"}'),
    ]
    calls = openai.parse_responses_calls(items)
    assert [(c.id, c.name, c.index) for c in calls] == [("call_a", "file_read", 0), ("call_b", "grep", 1)]
    assert calls[1].args == {"pattern": "x"}


def test_a_response_with_output_is_accepted():
    assert [
        c.id for c in openai.parse_responses_calls({"id": "resp_1", "object": "response", "output": [fc("call_q")]})
    ] == ["call_q"]


def test_the_call_id_not_the_item_id_is_used_and_a_missing_one_is_a_placeholder():
    (call,) = openai.parse_responses_calls([{"type": "function_call", "id": "fc_9", "name": "grep", "arguments": "{}"}])
    assert call.id == "call_missing_0" and "no call_id" in call.parse_error


def test_truncated_responses_arguments_are_a_parse_error():
    (call,) = openai.parse_responses_calls([fc(arguments='{"path": "a.p')])
    assert call.args is None and "not valid JSON" in call.parse_error


@pytest.mark.parametrize("payload", [None, [], [None, 3, "x"], {"output": None}, {"output": "x"}])
def test_responses_payloads_without_function_calls_give_no_calls(payload):
    assert openai.parse_responses_calls(payload) == []


def test_responses_results_are_function_call_outputs_in_order():
    rendered = openai.render_responses_results(
        [ToolResult("call_a", "x", "ok"), ToolResult("call_b", "x", "timed out", status=Status.timeout)]
    )
    assert rendered == [
        {"type": "function_call_output", "call_id": "call_a", "output": "ok"},
        {"type": "function_call_output", "call_id": "call_b", "output": "Error: timed out"},
    ]


def test_responses_definitions_are_flat_function_tools(coding_snapshot, attribute_snapshot):
    read = next(d for d in openai.tool_definitions_responses(coding_snapshot) if d["name"] == "file_read")
    assert set(read) == {"type", "name", "description", "parameters", "strict"}
    assert read["type"] == "function" and read["strict"] is True
    names = [d["name"] for d in openai.tool_definitions_responses(attribute_snapshot)]
    assert "search_archive" not in names
    deferred = [
        d
        for d in openai.tool_definitions_responses(attribute_snapshot, include_deferred=True)
        if d["name"] == "search_archive"
    ]
    assert deferred[0]["defer_loading"] is True
