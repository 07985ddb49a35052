"""The adapters registry: one entry point per provider for parse, render and definitions."""

from __future__ import annotations

import pytest

from runtime import adapters
from runtime.adapters import anthropic, openai
from runtime.records import ToolResult


def test_the_providers_are_anthropic_and_both_openai_apis():
    assert adapters.PROVIDERS == ("anthropic", "openai-chat", "openai-responses")


PAYLOADS = {
    "anthropic": {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {"pattern": "x"}}],
    },
    "openai-chat": {
        "role": "assistant",
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}}],
    },
    "openai-responses": [{"type": "function_call", "call_id": "t1", "name": "grep", "arguments": '{"pattern": "x"}'}],
}


@pytest.mark.parametrize("provider", adapters.PROVIDERS)
def test_parse_calls_dispatches_to_the_provider(provider):
    (call,) = adapters.parse_calls(provider, PAYLOADS[provider])
    assert (call.id, call.name, dict(call.args)) == ("t1", "grep", {"pattern": "x"})


def test_render_results_dispatches_to_the_provider():
    results = [ToolResult("t1", "grep", "3 matches")]
    assert adapters.render_results("anthropic", results) == anthropic.render_results(results)
    assert adapters.render_results("openai-chat", results) == openai.render_chat_results(results)
    assert adapters.render_results("openai-responses", results) == openai.render_responses_results(results)


def test_tool_definitions_dispatch_to_the_provider(coding_snapshot):
    assert adapters.tool_definitions("anthropic", coding_snapshot) == anthropic.tool_definitions(coding_snapshot)
    assert adapters.tool_definitions("openai-chat", coding_snapshot) == openai.tool_definitions_chat(coding_snapshot)
    assert adapters.tool_definitions("openai-responses", coding_snapshot) == openai.tool_definitions_responses(
        coding_snapshot
    )


def test_the_snapshot_reaches_the_openai_parsers(coding_snapshot):
    payload = [
        {
            "type": "function_call",
            "call_id": "t1",
            "name": "file_read",
            "arguments": '{"path": "a", "offset": null, "limit": null}',
        }
    ]
    (call,) = adapters.parse_calls("openai-responses", payload, snapshot=coding_snapshot)
    assert call.args == {"path": "a"}


@pytest.mark.parametrize("call", [adapters.parse_calls, adapters.render_results, adapters.tool_definitions])
def test_an_unknown_provider_is_a_value_error_naming_the_known_ones(call):
    with pytest.raises(ValueError, match="openai-chat"):
        call("gemini", [])
