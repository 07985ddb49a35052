"""An MCP ``CallToolResult`` as an :class:`Outcome`.

``isError``: an error outcome with the server's text (the tool ran and said it
failed; the model can act on that). ``structuredContent``: that value, so it is
serialized, redacted and truncated like a native tool's result. Otherwise the content
blocks joined: text as it is, and every other block described in one line (kind,
type, size, address) rather than dropped, so the model knows something was there.
"""

from __future__ import annotations

from typing import Any

from runtime.records import Outcome, Status


def outcome_of(result: Any) -> Outcome:
    """The outcome of a ``CallToolResult``."""
    text = "\n\n".join(describe_block(block) for block in result.content or ())
    if result.is_error:
        return Outcome(error=text or "The tool reported an error without saying what it was.", status=Status.error, code="tool_error")
    if result.structured_content is not None:
        return Outcome(value=result.structured_content)
    return Outcome(value=text)


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
