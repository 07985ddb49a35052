"""Stage 02, lookup: find the called tool in the turn's snapshot."""

from __future__ import annotations

from runtime.config.suggest import ranked
from runtime.records import BoundCall, Call, Stage, Status, ToolResult, error_result
from runtime.snapshot import Snapshot

_LISTED = 30


def lookup(call: Call, snapshot: Snapshot) -> BoundCall | ToolResult:
    """The call bound to its tool (``name`` or ``name@version``), or an error result
    listing the available names, closest first."""
    name, _, version = call.name.partition("@")
    tool = snapshot.tool(name, version or None)
    if tool is not None:
        return BoundCall(call, tool)
    if version and snapshot.tool(name) is not None:
        versions = ", ".join(sorted(v for v in snapshot.tool_versions.get(name, {}) if v)) or "none"
        shown_version = version if len(version) <= 64 else version[:64] + "..."
        return error_result(call, Status.invalid, "unknown_version", Stage.lookup, f"Tool `{name}` has no version `{shown_version}` (versions: {versions}). Call `{name}` without a version to use the default.")
    names = ranked(call.name, snapshot.tools)
    listed = ", ".join(names[:_LISTED]) + (f", ... ({len(names) - _LISTED} more)" if len(names) > _LISTED else "")
    shown = call.name if len(call.name) <= 100 else call.name[:100] + "..."
    return error_result(call, Status.invalid, "unknown_tool", Stage.lookup, f"Unknown tool `{shown}`. Available tools: {listed or 'none'}.")
