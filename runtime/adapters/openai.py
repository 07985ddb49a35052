"""OpenAI: Chat Completions (``tool_calls`` -> ``role: tool``) and Responses
(``function_call`` -> ``function_call_output``).

Shapes (``openai.types``):

- Chat in: an assistant message with ``tool_calls`` (or a ``ChatCompletionMessage``,
  or the list itself), each ``{"id", "type": "function", "function": {"name",
  "arguments": "<JSON string>"}}``. Chat out: one ``{"role": "tool", "tool_call_id",
  "content"}`` message per result, in order.
- Responses in: the output items (a ``Response``, its ``output`` list, or a dict
  with ``output``); each ``{"type": "function_call", "call_id", "name",
  "arguments"}`` is a call, every other item (reasoning, messages, built-in tools) is
  skipped. Responses out: ``{"type": "function_call_output", "call_id", "output"}``.
- definitions: Chat ``{"type": "function", "function": {name, description,
  parameters, strict}}``; Responses ``{"type": "function", name, description,
  parameters, strict}``. ``strict`` is true where :mod:`runtime.adapters.strict_schema`
  can express the input schema faithfully.

Arguments are decoded by :func:`runtime.adapters.arguments.decode_arguments`: a
problem becomes ``Call.parse_error`` and the raw string is kept in
``Call.raw_arguments``. Pass the ``snapshot`` the definitions came from to the
parsers so that the ``null`` a strict-mode model sends for an optional argument is
turned back into "not given" before validation (see
:func:`runtime.adapters.strict_schema.strip_strict_nulls`).

Neither API has an error flag on tool results, so an error result's text starts
with ``Error:`` (unless it already says so) for the model to tell.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from runtime.adapters._common import (
    MAX_NAME_CHARS,
    as_data,
    as_list,
    exported_tools,
    id_or_placeholder,
    join_problems,
    text_of,
    tool_name,
)
from runtime.adapters.arguments import decode_noting_nulls, quick_decode
from runtime.adapters.strict_schema import StrictSchema, strip_strict_nulls, to_strict
from runtime.records import Call, Status, ToolResult, new_call
from runtime.snapshot import CompiledTool, Snapshot

ERROR_PREFIX = "Error: "
_OK = Status.ok

# ---------------------------------------------------------------------------
# Chat Completions


def parse_chat_calls(message: Any, *, snapshot: Snapshot | None = None) -> list[Call]:
    """One :class:`Call` per entry of ``tool_calls``, in order. Never raises.

    Every entry yields a Call, since every tool call id must be answered: an entry
    that is not an object, has no id (placeholder ``call_missing_<index>``), no
    function, or a custom (free-form) tool call gets ``parse_error`` set.
    """
    try:
        if type(message) is dict and type(entries := message.get("tool_calls")) is list:  # the usual message
            entries = entries.copy()  # no conversion
        else:
            data = as_data(message)
            entries = (
                as_list(data.get("tool_calls")) if type(data) is dict or isinstance(data, Mapping) else as_list(data)
            )
        calls = []
        for index, entry in enumerate(entries):  # a loop, not a comprehension and a helper: two frames less a call
            calls.append(_quick_chat_call(entry, index, snapshot) or _full_chat_call(as_data(entry), index, snapshot))
        return calls
    except Exception:  # noqa: BLE001 - a hostile payload yields nothing rather than an exception
        return []


def render_chat_results(results: Sequence[ToolResult], *, mark_errors: bool = True) -> list[dict[str, Any]]:
    """One ``{"role": "tool", "tool_call_id", "content"}`` message per result, in order."""
    rendered = []
    for result in results:
        text = result.content
        # A successful result's non-empty ASCII text is its own text (see _text), the usual case.
        if type(text) is not str or not text or not text.isascii() or result.status is not _OK:
            text = _text(result, mark_errors)
        rendered.append({"role": "tool", "tool_call_id": result.call_id, "content": text})
    return rendered


def tool_definitions_chat(snapshot: Snapshot, *, strict: bool = True) -> list[dict[str, Any]]:
    """Chat Completions ``tools`` for every tool without ``defer_loading``.

    ``strict=False`` turns strict mode off for all of them (original schemas).
    """
    definitions = []
    for tool in exported_tools(snapshot):
        form = _strict_form(snapshot, tool, strict)
        function = {
            "name": tool.name,
            "description": tool.spec.description,
            "parameters": form.schema,
            "strict": form.strict,
        }
        definitions.append({"type": "function", "function": function})
    return definitions


def _quick_chat_call(entry: Any, index: int, snapshot: Snapshot | None) -> Call | None:
    """The usual entry (a dict with an ASCII id and name and plain arguments), read in a
    few exact-type tests; None for anything else, which :func:`_full_chat_call` reads
    (both give the same Call wherever this one answers)."""
    if type(entry) is not dict:
        return None
    function = entry.get("function")
    identifier = entry.get("id")
    kind = entry.get("type")
    if type(function) is not dict or type(identifier) is not str or not identifier or not identifier.isascii():
        return None
    if kind != "function" and kind is not None:
        return None
    name = function.get("name")
    if type(name) is not str or not name or not name.isascii() or len(name) > MAX_NAME_CHARS:
        return None
    raw = function.get("arguments")
    decoded = quick_decode(raw)
    if decoded is None:
        return None
    args, maybe_null = decoded
    if maybe_null and snapshot is not None:
        args = _strict_nulls_undone(args, name, snapshot)
    return new_call(identifier, name, args, index, raw, None)


def _full_chat_call(entry: Any, index: int, snapshot: Snapshot | None) -> Call:
    if type(entry) is not dict and not isinstance(entry, Mapping):
        return Call(
            id=f"call_missing_{index}",
            name="",
            args=None,
            index=index,
            parse_error=f"tool call #{index} is not an object",
        )
    problems: list[str] = []
    identifier = id_or_placeholder(entry.get("id"), problems, "the tool call has no id", f"call_missing_{index}")
    kind = entry.get("type") or "function"
    if kind == "custom":
        custom = as_data(entry.get("custom"))
        name = tool_name(custom.get("name") if isinstance(custom, Mapping) else None, problems, "custom tool call")
        problems.append(
            "custom (free-form) tool calls are not supported; call the tool as a function with JSON arguments"
        )
        raw = custom.get("input") if isinstance(custom, Mapping) else None
        return Call(
            id=identifier,
            name=name,
            args=None,
            index=index,
            raw_arguments=raw if isinstance(raw, str) else None,
            parse_error=join_problems(problems),
        )
    function = as_data(entry.get("function"))
    if kind != "function" or (type(function) is not dict and not isinstance(function, Mapping)):
        problems.append(
            f"tool call #{index} is not a function call (type {kind!r})"
            if kind != "function"
            else "the tool call has no function"
        )
        return Call(id=identifier, name="", args=None, index=index, parse_error=join_problems(problems))
    name = tool_name(function.get("name"), problems, "tool call")
    return _with_arguments(identifier, name, function.get("arguments"), index, problems, snapshot)


# ---------------------------------------------------------------------------
# Responses


def parse_responses_calls(items: Any, *, snapshot: Snapshot | None = None) -> list[Call]:
    """One :class:`Call` per ``function_call`` output item, in order. Never raises.

    ``items`` is the list of output items, or a ``Response`` (object or dict) whose
    ``output`` is used. A missing ``call_id`` gets the placeholder ``call_missing_<index>``.
    """
    try:
        data = as_data(items)
        entries = as_list(data.get("output")) if isinstance(data, Mapping) else as_list(data)
        calls: list[Call] = []
        for entry in entries:
            entry = as_data(entry)
            if isinstance(entry, Mapping) and entry.get("type") == "function_call":
                calls.append(_responses_call(entry, len(calls), snapshot))
        return calls
    except Exception:  # noqa: BLE001
        return []


def render_responses_results(results: Sequence[ToolResult], *, mark_errors: bool = True) -> list[dict[str, Any]]:
    """One ``function_call_output`` input item per result, in order."""
    rendered = []
    for result in results:
        text = result.content
        if type(text) is not str or not text or not text.isascii() or result.status is not _OK:  # as in chat
            text = _text(result, mark_errors)
        rendered.append({"type": "function_call_output", "call_id": result.call_id, "output": text})
    return rendered


def tool_definitions_responses(
    snapshot: Snapshot, *, strict: bool = True, include_deferred: bool = False
) -> list[dict[str, Any]]:
    """Responses API ``tools`` (function tools) for every tool without ``defer_loading``.

    With ``include_deferred=True`` deferred tools are listed with ``defer_loading: true``
    (loaded through tool search).
    """
    definitions = []
    for tool in exported_tools(snapshot, include_deferred):
        form = _strict_form(snapshot, tool, strict)
        definition: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.spec.description,
            "parameters": form.schema,
            "strict": form.strict,
        }
        if tool.spec.defer_loading:
            definition["defer_loading"] = True
        definitions.append(definition)
    return definitions


def _responses_call(entry: Mapping[str, Any], index: int, snapshot: Snapshot | None) -> Call:
    problems: list[str] = []
    identifier = id_or_placeholder(
        entry.get("call_id"), problems, "the function call has no call_id", f"call_missing_{index}"
    )
    name = tool_name(entry.get("name"), problems, "function call")
    return _with_arguments(identifier, name, entry.get("arguments"), index, problems, snapshot)


# ---------------------------------------------------------------------------
# shared


def strict_form(snapshot: Snapshot, tool: CompiledTool) -> StrictSchema:
    """The strict-mode form of ``tool``'s input schema, computed once per snapshot version."""
    key = (snapshot.version, tool.key)
    form = _STRICT_CACHE.get(key)
    if form is None:
        form = to_strict(tool.spec.input_schema)
        with _STRICT_LOCK:
            if len(_STRICT_CACHE) >= _STRICT_CACHE_SIZE:
                _STRICT_CACHE.clear()
            _STRICT_CACHE[key] = form
    return form


_STRICT_CACHE: dict[tuple[str, str], StrictSchema] = {}
_STRICT_CACHE_SIZE = 4096
_STRICT_LOCK = threading.Lock()


def _strict_form(snapshot: Snapshot, tool: CompiledTool, strict: bool) -> StrictSchema:
    form = (
        strict_form(snapshot, tool)
        if strict
        else StrictSchema(dict(tool.spec.input_schema), False, "strict mode turned off")
    )
    # A copy per export: callers may edit what they get without touching the cache.
    return StrictSchema(copy.deepcopy(form.schema), form.strict, form.reason)


def _with_arguments(
    identifier: str, name: str, arguments: Any, index: int, problems: list[str], snapshot: Snapshot | None
) -> Call:
    raw = arguments if isinstance(arguments, str) else None
    args, problem, maybe_null = decode_noting_nulls(arguments)
    if problem:
        problems.append(problem)
    if maybe_null and args is not None and snapshot is not None and name:  # no null: nothing to undo
        args = _strict_nulls_undone(args, name, snapshot)
    return new_call(identifier, name, args, index, raw, join_problems(problems))


def _strict_nulls_undone(args: dict[str, Any], name: str, snapshot: Snapshot) -> dict[str, Any]:
    """``args`` without the nulls strict mode made the model send for optional arguments."""
    tool = snapshot.tools.get(name)
    if tool is not None and strict_form(snapshot, tool).strict:
        return strip_strict_nulls(args, tool.spec.input_schema)
    return args


def _text(result: ToolResult, mark_errors: bool) -> str:
    text = result.content
    if type(text) is not str or not text or not text.isascii():  # ASCII text is its own text_of
        text = text_of(result)
    if mark_errors and result.is_error and not text[:6].lower().startswith("error"):
        return ERROR_PREFIX + text
    return text
