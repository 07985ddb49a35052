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

A tool that declares ``output_schema`` lists it as ``outputSchema``. MCP then requires
every successful result to carry ``structuredContent`` that matches it (the official
client raises otherwise), so :func:`render_result` checks what it is about to send:
when redaction or truncation has changed or dropped the data, the result goes out as
an error that keeps the text and says why the data is missing, never as a success
the client would reject.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from runtime.adapters._common import enum_value, exported_tools, text_of
from runtime.adapters.arguments import check_object
from runtime.records import ToolResult
from runtime.snapshot import CompiledTool, Snapshot
from runtime.validation.output import OutputCheck

# Structured content larger than this is left out (the text content still has it all).
MAX_STRUCTURED_CHARS = 10_000_000
_OPEN_WORLD_HANDLERS = frozenset({"http", "mcp"})


def tool_definitions(snapshot: Snapshot, *, include_deferred: bool = False) -> list[dict[str, Any]]:
    """MCP ``Tool`` objects for every tool without ``defer_loading`` (all with ``include_deferred``)."""
    return [tool_definition(tool) for tool in exported_tools(snapshot, include_deferred)]


def tool_definition(tool: CompiledTool) -> dict[str, Any]:
    """One MCP ``Tool``: name, title, description, inputSchema, outputSchema when declared, annotations."""
    title = _title(tool)
    definition = {
        "name": tool.name,
        "title": title,
        "description": tool.spec.description,
        "inputSchema": copy.deepcopy(dict(tool.spec.input_schema)),
        "annotations": tool_annotations(tool, title),
    }
    if tool.output_check is not None:
        definition["outputSchema"] = tool.output_check.listing()
    return definition


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


def render_result(result: ToolResult, output_check: OutputCheck | None = None) -> dict[str, Any]:
    """A ``CallToolResult``: the text content, ``isError``, and ``structuredContent`` when structured is an object.

    ``structuredContent`` is sent only when ``result.structured`` is a JSON object
    that passes the argument checks (finite numbers, valid Unicode, bounded depth and
    size); it must be what the model may see, i.e. already redacted and truncated
    like ``content`` (the shape stage clears it when it cannot guarantee that).

    ``output_check`` is the ``outputSchema`` the client was given for this tool: a
    successful result whose data is missing or no longer matches it is sent as an error
    (see the module docstring).
    """
    rendered: dict[str, Any] = {"content": [{"type": "text", "text": text_of(result)}], "isError": result.is_error}
    structured = result.structured
    if isinstance(structured, Mapping) and check_object(structured, max_bytes=MAX_STRUCTURED_CHARS) is None:
        rendered["structuredContent"] = copy.deepcopy(dict(structured))
    if output_check is not None and not result.is_error:
        why = _withheld(rendered.get("structuredContent"), output_check, result)
        if why is not None:
            rendered.pop("structuredContent", None)
            rendered["isError"] = True
            rendered["content"].append({"type": "text", "text": why})
    return rendered


def _withheld(structured: Any, output_check: OutputCheck, result: ToolResult) -> str | None:
    """Why a successful result cannot carry data matching its outputSchema; None when it can."""
    if structured is None:
        if result.metadata.get("truncated"):
            reason = "the result is larger than this tool's output limit, so only the cut text above is sent"
        elif result.metadata.get("redactions"):
            reason = "secrets were redacted from the text in a way the data could not follow"
        else:
            reason = "the tool's data could not be sent as structured content"
    elif output_check.problems(structured):
        reason = "redaction changed values that the tool's outputSchema constrains"
    else:
        return None
    return (
        f"[toolrt: the call ran, but its structured result is not sent: {reason}. The text above is what it returned.]"
    )


def _title(tool: CompiledTool) -> str:
    labels = tool.metadata.labels or {}
    title = labels.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    words = tool.name.replace("_", " ").replace("-", " ").replace(".", " ").split()
    text = " ".join(words) or tool.name
    return text[:1].upper() + text[1:]
