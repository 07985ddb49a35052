"""Rendered shapes validate against the official SDK types, and SDK objects parse.

No network: the SDKs are used for their types only. pydantic ignores unknown keys of
a TypedDict and validates iterables lazily, so :func:`exact` materializes the result
and requires it to equal the input: a key the SDK does not know, or a value it had to
coerce, fails the test.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

import pytest
from pydantic import TypeAdapter

from runtime import adapters
from runtime.adapters import anthropic, mcp, openai
from runtime.records import Status, ToolResult

# The SDKs are imported by the tests that use them, not here: every test worker imports
# this module to collect it, and importing them cost each about 1.5 s of CPU.
pytestmark = pytest.mark.skipif(
    any(find_spec(sdk) is None for sdk in ("anthropic", "openai", "mcp")),
    reason="needs the anthropic, openai and mcp SDKs",
)

RESULTS = [
    ToolResult("call_1", "file_read", "1\tprint('hello')"),
    ToolResult("call_2", "grep", "pattern must be at least 1 character", status=Status.invalid, stage=None),
    ToolResult("call_3", "run_tests", "", status=Status.timeout),
    ToolResult("call_4", "run_tests", "started in the background; poll handle bg_1", status=Status.background),
    ToolResult("call_5", "file_read", "bad \ud800 bytes", structured={"lines": 3}),
]


def materialize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple) or hasattr(value, "__iter__"):
        return [materialize(v) for v in value]
    return value


def exact(type_: Any, value: Any) -> None:
    """``value`` validates as ``type_`` with nothing dropped or coerced."""
    adapter = TypeAdapter(type_)  # keep it alive: the lazy iterators validate through it
    validated = adapter.validate_python(value)
    assert materialize(validated) == value
    del adapter


# --- rendered results -------------------------------------------------------------------------


def test_anthropic_results_are_a_valid_user_message_param():
    from anthropic.types import MessageParam, ToolResultBlockParam

    rendered = anthropic.render_results(RESULTS, text="Continue.")
    exact(MessageParam, rendered)
    for block in rendered["content"][:-1]:
        exact(ToolResultBlockParam, block)


def test_openai_chat_results_are_valid_tool_messages():
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam

    for message in openai.render_chat_results(RESULTS):
        exact(ChatCompletionToolMessageParam, message)
        exact(ChatCompletionMessageParam, message)


def test_openai_responses_results_are_valid_input_items():
    from openai.types.responses import ResponseInputItemParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    for item in openai.render_responses_results(RESULTS):
        exact(FunctionCallOutput, item)
        exact(ResponseInputItemParam, item)


def test_mcp_results_are_valid_call_tool_results():
    from mcp.types import CallToolResult

    for result in RESULTS:
        rendered = mcp.render_result(result)
        model = CallToolResult.model_validate(rendered)
        dumped = model.model_dump(by_alias=True, exclude_none=True, mode="json")
        dumped.pop("resultType", None)
        assert dumped == rendered
        assert model.is_error is result.is_error


# --- definitions ----------------------------------------------------------------------------


@pytest.fixture(params=["coding", "attributes"])
def snapshot(request, coding_snapshot, attribute_snapshot):
    return coding_snapshot if request.param == "coding" else attribute_snapshot


def test_anthropic_definitions_are_valid_tool_params(snapshot):
    from anthropic.types import ToolParam, ToolUnionParam

    for definition in anthropic.tool_definitions(snapshot, include_deferred=True):
        exact(ToolParam, definition)
        exact(ToolUnionParam, definition)


def test_openai_chat_definitions_are_valid_tool_params(snapshot):
    from openai.types.chat import ChatCompletionToolParam, ChatCompletionToolUnionParam

    for definition in openai.tool_definitions_chat(snapshot):
        exact(ChatCompletionToolParam, definition)
        exact(ChatCompletionToolUnionParam, definition)


def test_openai_responses_definitions_are_valid_function_tools(snapshot):
    from openai.types.responses import FunctionToolParam, ToolParam

    for definition in openai.tool_definitions_responses(snapshot, include_deferred=True):
        exact(FunctionToolParam, definition)
        exact(ToolParam, definition)


def test_mcp_definitions_are_valid_tools(snapshot):
    from mcp.types import Tool

    for definition in mcp.tool_definitions(snapshot, include_deferred=True):
        model = Tool.model_validate(definition)
        assert model.model_dump(by_alias=True, exclude_none=True, mode="json") == definition
        assert (
            model.annotations is not None
            and model.annotations.read_only_hint is snapshot.tools[definition["name"]].spec.read_only
        )


# --- SDK objects in -----------------------------------------------------------------------------

ANTHROPIC_MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "Two reads.", "signature": "sig"},
        {"type": "text", "text": "Reading the files."},
        {"type": "tool_use", "id": "toolu_01", "name": "file_read", "input": {"path": "src/auth.ts"}},
        {"type": "tool_use", "id": "toolu_02", "name": "grep", "input": {"pattern": "login", "limit": 10}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 100, "output_tokens": 50},
}


def test_an_anthropic_sdk_message_parses_dumped_or_as_an_object():
    from anthropic.types import Message

    message = Message.model_validate(ANTHROPIC_MESSAGE)
    for payload in (message.model_dump(), message, message.content):
        calls = anthropic.parse_calls(payload)
        assert [(c.id, c.name, dict(c.args), c.index) for c in calls] == [
            ("toolu_01", "file_read", {"path": "src/auth.ts"}, 0),
            ("toolu_02", "grep", {"pattern": "login", "limit": 10}, 1),
        ]
        assert all(c.parse_error is None for c in calls)


def test_an_openai_chat_completion_message_parses():
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

    raw = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {
                    "name": "file_read",
                    "arguments": '{"path": "src/auth.ts", "offset": null, "limit": null}',
                },
            },
            {"id": "call_b", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "login"'}},
        ],
    }
    message = ChatCompletionMessage.model_validate(raw)
    for payload in (message.model_dump(), message):
        calls = openai.parse_chat_calls(payload)
        assert [c.id for c in calls] == ["call_a", "call_b"]
        assert calls[0].args == {"path": "src/auth.ts", "offset": None, "limit": None}
        assert calls[1].args is None and "not valid JSON" in calls[1].parse_error
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-5",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": raw, "logprobs": None}],
        }
    )
    assert [c.id for c in openai.parse_chat_calls(completion.choices[0].message)] == ["call_a", "call_b"]


def test_openai_responses_output_items_parse():
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseReasoningItem

    items = [
        ResponseReasoningItem.model_validate({"id": "rs_1", "type": "reasoning", "summary": []}),
        ResponseOutputMessage.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
            }
        ),
        ResponseFunctionToolCall.model_validate(
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_a",
                "name": "file_read",
                "arguments": '{"path": "a.py"}',
                "status": "completed",
            }
        ),
    ]
    for payload in (items, [item.model_dump() for item in items]):
        (call,) = openai.parse_responses_calls(payload)
        assert (call.id, call.name, dict(call.args)) == ("call_a", "file_read", {"path": "a.py"})


# --- a whole turn -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", adapters.PROVIDERS)
def test_a_turn_round_trips_through_the_sdk_types(provider, coding_snapshot):
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionToolMessageParam
    from openai.types.responses import ResponseInputItemParam

    payload = {
        "anthropic": ANTHROPIC_MESSAGE,
        "openai-chat": {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "file_read", "arguments": '{"path": "a.py"}'}}
            ],
        },
        "openai-responses": [
            {"type": "function_call", "call_id": "call_a", "name": "file_read", "arguments": '{"path": "a.py"}'}
        ],
    }[provider]
    calls = adapters.parse_calls(provider, payload, snapshot=coding_snapshot)
    results = [ToolResult(call.id, call.name, f"result of {call.name}") for call in calls]
    rendered = adapters.render_results(provider, results)
    if provider == "anthropic":
        exact(MessageParam, rendered)
        assert [b["tool_use_id"] for b in rendered["content"]] == [c.id for c in calls]
    elif provider == "openai-chat":
        for message in rendered:
            exact(ChatCompletionToolMessageParam, message)
    else:
        for item in rendered:
            exact(ResponseInputItemParam, item)
