"""An MCP ``CallToolResult`` as a :class:`HandlerOutcome`.

``isError``: an error outcome with the server's text (the tool ran and said it
failed; the model can act on that). ``structuredContent``: that value, so it is
serialized, redacted and truncated like a native tool's result. Otherwise the content
blocks joined: text as it is, and every other block described in one line (kind,
type, size, address) rather than dropped, so the model knows something was there.

A remote server is not trusted to keep its answers small: at most
:data:`MAX_BLOCKS` blocks and :data:`MAX_CHARS` characters of them are kept (the
same ceiling as a child process's output), and a line says what was left out.
Shaping then truncates what is kept to the tool's own output limits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime.records import HandlerOutcome, Status

MAX_BLOCKS = 1000
MAX_CHARS = 16 * 1024 * 1024
_SEPARATOR = "\n\n"


def outcome_of(result: Any) -> HandlerOutcome:
    """The outcome of a ``CallToolResult``."""
    if result.is_error:
        text = joined(result.content or ())
        return HandlerOutcome(
            error=text or "The tool reported an error without saying what it was.",
            status=Status.error,
            code="tool_error",
        )
    if result.structured_content is not None:
        return HandlerOutcome(value=result.structured_content)
    return HandlerOutcome(value=joined(result.content or ()))


def joined(blocks: Iterable[Any]) -> str:
    """The content blocks as one text, within :data:`MAX_BLOCKS` and :data:`MAX_CHARS`."""
    parts: list[str] = []
    size = 0
    cut = False
    left_out = 0
    for block in blocks:
        if len(parts) >= MAX_BLOCKS or size >= MAX_CHARS:
            left_out += 1
            continue
        text = describe_block(block)
        room = MAX_CHARS - size
        if len(text) > room:
            text, cut = text[:room], True
        parts.append(text)
        size += len(text) + len(_SEPARATOR)
    if cut:
        parts.append(f"[cut at {MAX_CHARS:,} characters: the MCP server sent more, which is not kept]")
    if left_out:
        parts.append(f"[{left_out:,} more content block(s) from the MCP server not kept]")
    return _SEPARATOR.join(parts)


def describe_block(block: Any) -> str:
    """One content block as text the model can read."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} content: {block.mime_type}, {_size(block.data)}; not shown]"
    if kind == "resource_link":
        label = block.title or block.name
        mime = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {label} <{block.uri}>{mime}]"
    if kind == "resource":
        resource = block.resource
        mime = f" ({resource.mime_type})" if resource.mime_type else ""
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource <{resource.uri}>{mime}]\n{text}"
        return f"[resource <{resource.uri}>{mime}: binary, {_size(getattr(resource, 'blob', ''))}; not shown]"
    return f"[{kind or 'unknown'} content; not shown]"


def _size(data: str) -> str:
    """The decoded size of base64 ``data``, e.g. "12,345 bytes" (counted, not decoded)."""
    payload = len(data) - data.count("\n") - data.count("\r") - data.count("=")
    return f"{payload * 3 // 4:,} bytes"
