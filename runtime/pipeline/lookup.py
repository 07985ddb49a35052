"""Stage 02, lookup: find the called tool in the turn's snapshot."""

from __future__ import annotations

from typing import Any

from runtime.codes import ResultCode
from runtime.config.suggest import ranked
from runtime.records import BoundCall, Call, Session, Stage, Status, ToolResult, error_result
from runtime.snapshot import Snapshot

_LISTED = 30


def lookup(
    call: Call, snapshot: Snapshot, session: Session | None = None, canaries: Any = None
) -> BoundCall | ToolResult:
    """The call bound to its tool (``name`` or ``name@version``), or an error result
    listing the available names, closest first. Without ``@version``: the session's pin,
    else the tool's rollout (see :mod:`runtime.versions`), else the default version."""
    name, _, version = call.name.partition("@")
    pinned = None
    if not version and (snapshot.rollouts or (session is not None and session.pins)):
        version, pinned = _chosen(name, snapshot, session, canaries)
    tool = snapshot.tool(name, version or None)
    if tool is not None:
        return BoundCall(call, tool)
    if pinned and snapshot.tool(name) is not None:
        versions = ", ".join(sorted(v for v in snapshot.tool_versions.get(name, {}) if v)) or "none"
        return error_result(
            call,
            Status.invalid,
            ResultCode.unknown_version,
            Stage.lookup,
            f"This session pins `{name}` to version `{pinned[:64]}`, which is not declared (versions: {versions}). "
            "The app must change the session's pin; the call was not run.",
        )
    if version and snapshot.tool(name) is not None:
        versions = ", ".join(sorted(v for v in snapshot.tool_versions.get(name, {}) if v)) or "none"
        shown_version = version if len(version) <= 64 else version[:64] + "..."
        return error_result(
            call,
            Status.invalid,
            ResultCode.unknown_version,
            Stage.lookup,
            f"Tool `{name}` has no version `{shown_version}` (versions: {versions}). Call `{name}` without a version "
            "to use the default.",
        )
    names = ranked(call.name, snapshot.tools)
    listed = ", ".join(names[:_LISTED]) + (f", ... ({len(names) - _LISTED} more)" if len(names) > _LISTED else "")
    shown = call.name if len(call.name) <= 100 else call.name[:100] + "..."
    return error_result(
        call,
        Status.invalid,
        ResultCode.unknown_tool,
        Stage.lookup,
        f"Unknown tool `{shown}`. Available tools: {listed or 'none'}.",
    )


def _chosen(name: str, snapshot: Snapshot, session: Session | None, canaries: Any) -> tuple[str, str | None]:
    """(version to use, the pinned version if a pin chose it)."""
    if session is not None and session.pins:
        pin = session.pins.get(name)
        if isinstance(pin, str) and pin:
            return pin, pin
    table = snapshot.rollouts.get(name)
    if table is None:
        return "", None
    halted = canaries is not None and canaries.halted(table)
    return table.assign(session.id if session is not None else "default", halted), None
