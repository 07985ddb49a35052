"""Model Context Protocol: tools as MCP ``Tool`` definitions, results as ``CallToolResult``.

The shapes are the MCP wire format (camelCase keys), as ``mcp.types.Tool`` and
``mcp.types.CallToolResult`` dump them with ``by_alias=True``.

Annotations are derived from a tool's declared attributes. They are *hints* to the
client (it may auto-approve a call that is read-only or not destructive), so every
rule below errs on the side of the MCP defaults, which assume the worst
(``destructiveHint`` and ``openWorldHint`` default to true):

``title``
    ``metadata.labels["title"]`` when set, else the name made readable
    (``file_read`` -> ``File read``).
``readOnlyHint``
    ``spec.read_only``.
``destructiveHint``
    false for a read-only tool (it changes nothing); for any other tool it is
    ``risk != low``. Only a tool declared both writable and low risk is advertised as
    making additive updates only. A writable tool of the default ``medium`` risk (for
    example ``file_edit``, which overwrites files) stays destructive, as the MCP
    default says; ``high`` and ``critical`` are destructive.
``idempotentHint``
    ``spec.idempotent``.
``openWorldHint``
    true when the handler reaches outside the runtime's own world (``http`` or ``mcp``
    handlers) or the tool's output is declared ``trust: untrusted``; false otherwise.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from runtime.adapters._common import enum_value, exported_tools, text_of
from runtime.adapters.arguments import check_object
from runtime.records import ToolResult
from runtime.snapshot import CompiledTool, Snapshot

# Structured content larger than this is left out (the text content still has it all).
MAX_STRUCTURED_CHARS = 10_000_000
_OPEN_WORLD_HANDLERS = frozenset({"http", "mcp"})


def tool_definitions(snapshot: Snapshot, *, include_deferred: bool = False) -> list[dict[str, Any]]:
    """MCP ``Tool`` objects for every tool without ``defer_loading`` (all with ``include_deferred``)."""
    return [tool_definition(tool) for tool in exported_tools(snapshot, include_deferred)]


def tool_definition(tool: CompiledTool) -> dict[str, Any]:
    """One MCP ``Tool``: name, title, description, inputSchema, annotations."""
    title = _title(tool)
    return {
        "name": tool.name,
        "title": title,
        "description": tool.spec.description,
        "inputSchema": copy.deepcopy(dict(tool.spec.input_schema)),
        "annotations": tool_annotations(tool, title),
    }


def tool_annotations(tool: CompiledTool, title: str | None = None) -> dict[str, Any]:
    """The MCP ``ToolAnnotations`` of ``tool`` (rules in the module docstring)."""
    spec = tool.spec
    read_only = bool(spec.read_only)
    return {
        "title": title or _title(tool),
        "readOnlyHint": read_only,
        "destructiveHint": (not read_only) and enum_value(spec.risk) != "low",
        "idempotentHint": bool(spec.idempotent),
        "openWorldHint": tool.handler.kind in _OPEN_WORLD_HANDLERS or enum_value(spec.trust) == "untrusted",
    }


def render_result(result: ToolResult) -> dict[str, Any]:
    """A ``CallToolResult``: the text content, ``isError``, and ``structuredContent`` when structured is an object.

    ``structuredContent`` is sent only when ``result.structured`` is a JSON object
    that passes the argument checks (finite numbers, valid Unicode, bounded depth and
    size); it must be what the model may see, i.e. already redacted and truncated
    like ``content`` (the shape stage clears it when it cannot guarantee that).
    """
    rendered: dict[str, Any] = {"content": [{"type": "text", "text": text_of(result)}], "isError": result.is_error}
    structured = result.structured
    if isinstance(structured, Mapping) and check_object(structured, max_bytes=MAX_STRUCTURED_CHARS) is None:
        rendered["structuredContent"] = copy.deepcopy(dict(structured))
    return rendered


def _title(tool: CompiledTool) -> str:
    labels = tool.metadata.labels or {}
    title = labels.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    words = tool.name.replace("_", " ").replace("-", " ").replace(".", " ").split()
    text = " ".join(words) or tool.name
    return text[:1].upper() + text[1:]
