"""Stand-ins for the model clients, for testing an agent loop without a network or a key.

:class:`ScriptedAnthropic` and :class:`ScriptedOpenAI` have the one method an agent
loop calls (``client.messages.create`` / ``client.chat.completions.create``) and return
the next scripted assistant message as the SDK's own response type, so the loop under
test runs exactly as it would against the API::

    client = ScriptedAnthropic([
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "file_read", "input": {"path": "README.md"}},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ])
    answer = my_agent_loop(client, runtime, "Summarize the README")
    assert client.requests[1]["messages"][-1]["content"][0]["type"] == "tool_result"

A reply may also be a function of the conversation so far (the ``messages`` the loop
sent), for scripts whose next turn depends on the last results. Every request's
keyword arguments are kept in ``requests``. The SDK (``anthropic`` or ``openai``)
must be installed; nothing here opens a connection.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Reply = dict[str, Any] | Callable[[Sequence[Any]], dict[str, Any]]

__all__ = ["ScriptedAnthropic", "ScriptedOpenAI"]


class _Script:
    def __init__(self, replies: Iterable[Reply] | Callable[[Sequence[Any]], dict[str, Any]]) -> None:
        self._replies = itertools.repeat(replies) if callable(replies) else iter(replies)
        self.requests: list[dict[str, Any]] = []

    def next(self, request: dict[str, Any]) -> dict[str, Any]:
        # The loop goes on appending to its messages list: keep them as they were sent.
        request = {**request, "messages": list(request.get("messages") or [])}
        self.requests.append(request)
        reply = next(self._replies, None)
        if reply is None:
            raise RuntimeError(f"the script has no reply left for request {len(self.requests)}")
        return reply(request["messages"]) if callable(reply) else reply


class _Namespace:
    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)


class ScriptedAnthropic:
    """``client.messages.create(**request)`` returns the next reply as an ``anthropic.types.Message``.

    A reply is an assistant message ``{"role": "assistant", "content": [blocks]}`` (text
    and ``tool_use`` blocks), or a function of the messages sent returning one.
    ``stop_reason`` is ``tool_use`` when the message has tool uses, else ``end_turn``.
    """

    def __init__(self, replies: Iterable[Reply] | Callable[[Sequence[Any]], dict[str, Any]]) -> None:
        self._script = _Script(replies)
        self.messages = _Namespace(create=self._create)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The keyword arguments of every request, in order, with the messages as sent."""
        return self._script.requests

    def _create(self, **request: Any) -> Any:
        from anthropic.types import Message

        reply = self._script.next(request)
        content = list(reply.get("content") or [])
        uses = any(isinstance(block, dict) and block.get("type") == "tool_use" for block in content)
        return Message.model_validate(
            {
                "id": f"msg_scripted_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": str(request.get("model", "scripted")),
                "content": content,
                "stop_reason": "tool_use" if uses else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        )


class ScriptedOpenAI:
    """``client.chat.completions.create(**request)`` returns the next reply as an
    ``openai.types.chat.ChatCompletion``.

    A reply is an assistant message ``{"role": "assistant", "content": str | None,
    "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}]}``,
    or a function of the messages sent returning one.
    """

    def __init__(self, replies: Iterable[Reply] | Callable[[Sequence[Any]], dict[str, Any]]) -> None:
        self._script = _Script(replies)
        self.chat = _Namespace(completions=_Namespace(create=self._create))

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The keyword arguments of every request, in order, with the messages as sent."""
        return self._script.requests

    def _create(self, **request: Any) -> Any:
        from openai.types.chat import ChatCompletion

        reply = self._script.next(request)
        message = {
            "role": "assistant",
            "content": reply.get("content"),
            **({"tool_calls": reply["tool_calls"]} if reply.get("tool_calls") else {}),
        }
        return ChatCompletion.model_validate(
            {
                "id": f"chatcmpl_scripted_{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": str(request.get("model", "scripted")),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                        "message": message,
                    }
                ],
            }
        )
