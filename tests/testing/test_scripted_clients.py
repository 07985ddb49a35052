"""runtime.testing: scripted model clients return the SDKs' own response types and
keep every request as it was sent."""

from __future__ import annotations

import pytest

from runtime import adapters
from runtime.testing import ScriptedAnthropic, ScriptedOpenAI

USE = {"type": "tool_use", "id": "toolu_1", "name": "file_read", "input": {"path": "a"}}


def test_scripted_anthropic_returns_messages_with_the_stop_reason_their_content_implies() -> None:
    from anthropic.types import Message  # imported here: only the worker running this pays for the SDK

    client = ScriptedAnthropic(
        [{"role": "assistant", "content": [USE]}, {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    )
    first = client.messages.create(model="m", messages=[{"role": "user", "content": "hi"}])
    second = client.messages.create(model="m", messages=[])
    assert isinstance(first, Message) and (first.stop_reason, second.stop_reason) == ("tool_use", "end_turn")
    assert [(c.id, c.name, c.args) for c in adapters.parse_calls("anthropic", first)] == [
        ("toolu_1", "file_read", {"path": "a"})
    ]


def test_scripted_anthropic_keeps_the_messages_as_sent_and_feeds_them_to_reply_functions() -> None:
    seen: list[int] = []

    def reply(messages: list) -> dict:
        seen.append(len(messages))
        return {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}

    client = ScriptedAnthropic(reply)
    messages: list = [{"role": "user", "content": "hi"}]
    client.messages.create(model="m", messages=messages)
    messages.append({"role": "assistant", "content": "later"})
    client.messages.create(model="m", messages=messages)
    assert seen == [1, 2]
    assert [len(r["messages"]) for r in client.requests] == [1, 2]


def test_scripted_clients_say_when_the_script_has_run_out() -> None:
    client = ScriptedOpenAI([])
    with pytest.raises(RuntimeError, match="no reply left for request 1"):
        client.chat.completions.create(model="m", messages=[])


def test_scripted_openai_returns_chat_completions_the_adapter_parses() -> None:
    from openai.types.chat import ChatCompletion

    call = {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}}
    client = ScriptedOpenAI(
        [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "assistant", "content": "done"}]
    )
    first = client.chat.completions.create(model="m", messages=[])
    second = client.chat.completions.create(model="m", messages=[])
    assert isinstance(first, ChatCompletion)
    assert (first.choices[0].finish_reason, second.choices[0].finish_reason, second.choices[0].message.content) == (
        "tool_calls",
        "stop",
        "done",
    )
    assert [(c.id, c.name, c.args) for c in adapters.parse_calls("openai-chat", first.choices[0].message)] == [
        ("call_1", "grep", {"pattern": "x"})
    ]
