"""Provider adapters: stage 01 (parse) and stage 07 (return) for each model API.

Each provider module turns that API's tool calls into :class:`runtime.records.Call`
records, renders :class:`runtime.records.ToolResult` records back in the shape the API
expects, and exports the snapshot's tools as that API's tool definitions:

- :mod:`runtime.adapters.anthropic`: Messages API (``tool_use`` -> ``tool_result``);
- :mod:`runtime.adapters.openai`: Chat Completions and Responses, with strict mode
  (:mod:`runtime.adapters.strict_schema`);
- :mod:`runtime.adapters.mcp`: MCP ``Tool`` definitions and ``CallToolResult``.

Framework bridges put the whole pipeline inside an agent framework's own tool loop, each
in its own module with its own extra (imported only when used):
:mod:`runtime.adapters.openai_agents` (``FunctionTool``), :mod:`runtime.adapters.langchain`
(``BaseTool`` and a ``ToolNode``), :mod:`runtime.adapters.pydantic_ai` (a toolset) and
:mod:`runtime.adapters.claude_agent` (an in-process MCP server); what they share is in
:mod:`runtime.adapters.bridge`.

Parsers never raise on what a model or a provider sent: a malformed call becomes a
Call with ``parse_error`` set. This module is a small registry over them::

    calls = adapters.parse_calls("openai-chat", message, snapshot=snapshot)
    reply = adapters.render_results("openai-chat", results)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.adapters import anthropic, openai
from runtime.adapters.arguments import check_object, decode_arguments
from runtime.records import Call, ToolResult
from runtime.snapshot import Snapshot

PROVIDERS = ("anthropic", "openai-chat", "openai-responses")

__all__ = ["PROVIDERS", "check_object", "decode_arguments", "parse_calls", "render_results", "tool_definitions"]


def parse_calls(provider: str, payload: Any, *, snapshot: Snapshot | None = None) -> list[Call]:
    """The calls in ``payload`` (an assistant message, or the provider's list of calls/items).

    ``snapshot`` (the one the definitions were exported from) lets the OpenAI parsers
    undo strict mode's nullable optionals; the Anthropic parser does not need it.
    """
    if provider == "anthropic":
        return anthropic.parse_calls(payload)
    if provider == "openai-chat":
        return openai.parse_chat_calls(payload, snapshot=snapshot)
    if provider == "openai-responses":
        return openai.parse_responses_calls(payload, snapshot=snapshot)
    raise ValueError(_unknown(provider))


def render_results(provider: str, results: Sequence[ToolResult]) -> dict[str, Any] | list[dict[str, Any]]:
    """The results in the provider's shape: one user message (anthropic) or a list of messages/items (openai)."""
    if provider == "anthropic":
        return anthropic.render_results(results)
    if provider == "openai-chat":
        return openai.render_chat_results(results)
    if provider == "openai-responses":
        return openai.render_responses_results(results)
    raise ValueError(_unknown(provider))


def tool_definitions(provider: str, snapshot: Snapshot) -> list[dict[str, Any]]:
    """The snapshot's tools as the provider's tool definitions."""
    if provider == "anthropic":
        return anthropic.tool_definitions(snapshot)
    if provider == "openai-chat":
        return openai.tool_definitions_chat(snapshot)
    if provider == "openai-responses":
        return openai.tool_definitions_responses(snapshot)
    raise ValueError(_unknown(provider))


def _unknown(provider: str) -> str:
    return f"unknown provider {provider!r}; expected one of: {', '.join(PROVIDERS)}"
