"""Anthropic Messages API: ``tool_use`` blocks in, one user message of ``tool_result`` blocks out.

Shapes (``anthropic.types``):

- in: an assistant message ``{"role": "assistant", "content": [...]}`` (or an
  ``anthropic.types.Message``, or just its content list). Every ``tool_use`` block
  ``{"type": "tool_use", "id", "name", "input": {...}}`` is one :class:`Call`;
  text, thinking and server-tool blocks are not calls and are skipped.
- out: ONE ``{"role": "user", "content": [...]}`` message holding a ``tool_result``
  block per result, in order, before any text (the API requires tool results to come
  first in the user turn that follows the tool uses). ``is_error: true`` is set for
  error results and left out otherwise (it defaults to false); the content is never
  empty (the API rejects an empty error result).
- definitions: ``{"name", "description", "input_schema"}`` per tool, deferred tools
  left out (or marked ``defer_loading: true`` for tool search, when asked).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from runtime.adapters._common import (
    as_data,
    as_list,
    exported_tools,
    id_or_placeholder,
    join_problems,
    text_of,
    tool_name,
)
from runtime.adapters.arguments import check_object, decode_arguments
from runtime.records import Call, ToolResult, new_call
from runtime.snapshot import Snapshot


def parse_calls(message: Any) -> list[Call]:
    """One :class:`Call` per ``tool_use`` block, in order. Never raises.

    A malformed block (no id, no name, an ``input`` that is not a JSON object...)
    still yields a Call, with ``parse_error`` saying what is wrong and a placeholder
    id ``toolu_missing_<index>`` when the id itself is missing. Duplicate ids are kept
    (the scheduler answers the repeats). An ``input`` given as a JSON string (some
    proxies and stream accumulators do that) is decoded like OpenAI arguments.
    """
    try:
        blocks = _blocks(message)
        calls: list[Call] = []
        for block in blocks:
            block = as_data(block)
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                calls.append(_call(block, len(calls)))
        return calls
    except Exception:  # noqa: BLE001 - a hostile payload (broken mapping) yields what was parsed: nothing
        return []


def render_results(results: Sequence[ToolResult], *, text: str | None = None) -> dict[str, Any]:
    """The user message answering a turn's tool uses: every ``tool_result`` block, then ``text`` if given."""
    content: list[dict[str, Any]] = [render_result(result) for result in results]
    if text:
        content.append({"type": "text", "text": text})
    return {"role": "user", "content": content}


def render_result(result: ToolResult) -> dict[str, Any]:
    """One ``tool_result`` block."""
    text = result.content
    if type(text) is not str or not text or not text.isascii():  # non-empty ASCII text is its own text_of
        text = text_of(result)
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id, "content": text}
    if result.is_error:
        block["is_error"] = True
    return block


def tool_definitions(snapshot: Snapshot, *, include_deferred: bool = False) -> list[dict[str, Any]]:
    """Anthropic ``tools``: name, description, input_schema, for every tool without ``defer_loading``.

    With ``include_deferred=True`` deferred tools are listed too, marked
    ``defer_loading: true`` (Anthropic's tool search loads them on demand).
    """
    definitions = []
    for tool in exported_tools(snapshot, include_deferred):
        definition: dict[str, Any] = {
            "name": tool.name,
            "description": tool.spec.description,
            "input_schema": copy.deepcopy(dict(tool.spec.input_schema)),
        }
        if tool.spec.defer_loading:
            definition["defer_loading"] = True
        definitions.append(definition)
    return definitions


# ---------------------------------------------------------------------------


def _blocks(message: Any) -> list[Any]:
    data = as_data(message)
    if isinstance(data, Mapping):
        return as_list(data.get("content"))  # a plain-text message (content: str) has no calls
    return as_list(data)


def _call(block: Mapping[str, Any], index: int) -> Call:
    problems: list[str] = []
    identifier = id_or_placeholder(block.get("id"), problems, "the tool_use block has no id", f"toolu_missing_{index}")
    name = tool_name(block.get("name"), problems, "tool_use block")
    raw: str | None = None
    args: dict[str, Any] | None = None
    if "input" not in block or block["input"] is None:
        problems.append("the tool_use block has no input; send the arguments as a JSON object ({} for none)")
    elif isinstance(block["input"], str):
        raw = block["input"]
        args, problem = decode_arguments(raw)
        problems.append(problem or "")
    else:
        value = as_data(block["input"])
        problem = check_object(value)
        if problem:
            problems.append(problem)
        else:
            args = dict(value)
    return new_call(identifier, name, args, index, raw, join_problems(problems))
