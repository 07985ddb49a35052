"""What every provider adapter shares: reading payloads defensively, writing safe text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from runtime.records import ToolResult
from runtime.shaping._unicode import clean

if TYPE_CHECKING:
    from runtime.snapshot import CompiledTool, Snapshot

# What a result with no text says: some providers reject empty tool results (Anthropic
# does for is_error), and "(no output)" tells the model more than nothing.
EMPTY_OUTPUT = "(no output)"
# A tool name longer than this is certainly wrong (providers allow 64): keep it short
# in the Call so that logs and messages stay readable.
MAX_NAME_CHARS = 256


def as_data(payload: Any) -> Any:
    """``payload`` as plain data: SDK (pydantic) objects are dumped, anything else is returned."""
    kind = type(payload)
    if kind is dict or kind is list or kind is str:  # the usual payloads, without the slower checks below
        return payload
    dump = getattr(payload, "model_dump", None)
    if callable(dump) and not isinstance(payload, Mapping | list | tuple | str | bytes):
        try:
            return dump(mode="python")
        except Exception:  # noqa: BLE001 - a broken object is treated as no data
            return None
    return payload


def as_list(value: Any) -> list[Any]:
    """``value`` as a list of items; anything that is not a list or tuple gives []."""
    value = as_data(value)
    if type(value) is list:
        return value.copy()
    return list(value) if isinstance(value, list | tuple) else []


def text_of(result: ToolResult) -> str:
    """The text a provider receives for ``result``: valid Unicode, never empty."""
    content = result.content
    if not isinstance(content, str):
        content = "" if content is None else str(content)
    content = clean(content)
    return content if content else EMPTY_OUTPUT


def call_id(value: Any) -> str | None:
    """A provider call id as a usable string, or None when it is missing or not a string."""
    if isinstance(value, str) and value:
        return clean(value)
    return None


def id_or_placeholder(value: Any, problems: list[str], problem: str, placeholder: str) -> str:
    """The call id, or ``placeholder`` (noting ``problem``) when it is missing: every call
    must still be answered, and the answer must carry some id."""
    identifier = call_id(value)
    if identifier is None:
        problems.append(problem)
        return placeholder
    return identifier


def tool_name(value: Any, problems: list[str], what: str) -> str:
    """A tool name as a string; a missing or odd name adds a problem and gives a best effort."""
    if not isinstance(value, str) or not value:
        problems.append(f"the {what} has no tool name; call one of the declared tools by name")
        return ""
    name = clean(value)
    if len(name) > MAX_NAME_CHARS:
        problems.append(f"the tool name is {len(name):,} characters long; tool names are at most 64")
        return name[:MAX_NAME_CHARS]
    return name


def join_problems(problems: Iterable[str]) -> str | None:
    if type(problems) is list and not problems:
        return None  # the usual call: nothing wrong
    text = "; ".join(p for p in problems if p)
    return text or None


def exported_tools(snapshot: Snapshot, include_deferred: bool = False) -> list[CompiledTool]:
    """The tools to show a model, in the snapshot's order; deferred ones only when asked."""
    return [tool for tool in snapshot.tools.values() if include_deferred or not tool.spec.defer_loading]


def enum_value(value: Any) -> str:
    """The string of an enum member (``Risk.high`` -> ``"high"``) or of a plain string."""
    return str(getattr(value, "value", value))
