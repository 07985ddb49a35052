"""The MCP lock file: mounted tools visible offline, to CI.

``toolrt mcp lock --config DIR`` connects once to each declared McpServer and writes
what it lists (names, descriptions, input schemas, annotations) to
``DIR/toolrt-mcp.lock.json``. ``toolrt lint``, ``test``, ``explain`` and ``tools``,
which never connect, mount the tools from the lock exactly as the runtime mounts the
live ones (:func:`runtime.mcpclient.mount.mount_server`), so a policy rule or a
PolicyTest naming a mounted tool is checked in CI. At run time the live listing is
what is mounted, and the policy applies to the live tool; where it differs from the
lock, the drift is reported once per changed listing (:mod:`runtime.mcpclient.lockcheck`):
a warning naming the server and the tools, and to a drift listener (the Runtime counts it
in the metrics ``toolrt_mcp_lock_drift_total{server}`` and
``toolrt_mcp_lock_drifted_tools{server}`` and hands an ``mcp_drift`` reload event to its
watcher; ``toolrt watch`` prints that event).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loguru import logger

from runtime.config.load import LoadedDocument
from runtime.config.models import McpServerDocument
from runtime.lockdrift import REPORTED, DriftChange  # defined there for the reload side too; used here
from runtime.mcpclient.mount import ConfigFacts, ListedTool, mount_server

LOCK_FILE = "toolrt-mcp.lock.json"
_FORMAT = 1

Listings = Mapping[str, Sequence[ListedTool]]

_COMPARED = ("description", "input_schema", "output_schema", "annotations")
_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint")


def lock_path(paths: Sequence[Path | str]) -> Path:
    """Where the lock of the config at ``paths`` lives: in its first folder."""
    first = Path(paths[0])
    return (first if first.is_dir() else first.parent) / LOCK_FILE


def write_lock(path: Path, listings: Listings) -> None:
    """Write ``listings`` (server -> tools) to ``path``, atomically, in a stable order."""
    body = {
        "format": _FORMAT,
        "servers": {
            server: [_tool_json(tool) for tool in sorted(tools, key=lambda t: t.name)]
            for server, tools in sorted(listings.items())
        },
    }
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".toolrt-mcp-lock-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_lock(paths: Sequence[Path | str]) -> dict[str, tuple[ListedTool, ...]] | None:
    """The locked listings of the config at ``paths``, or None when it has no lock.
    An unreadable lock is logged and treated as absent (lint then warns as without one)."""
    if not paths:
        return None
    path = lock_path(paths)
    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        servers = body["servers"]
        return {str(server): tuple(_tool_of(item) for item in tools) for server, tools in servers.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("MCP lock file {} cannot be read ({}); mounted tools are not known offline", path, err)
        return None


class LockedMounter:
    """A mount step (see ``build_snapshot(mount=...)``) that mounts the locked tools: no network."""

    def __init__(self, listings: Listings) -> None:
        self._listings = listings

    def __call__(self, documents: Sequence[LoadedDocument]) -> list[LoadedDocument]:
        servers = {e.model.metadata.name: e.model.spec for e in documents if isinstance(e.model, McpServerDocument)}
        config = ConfigFacts.of(documents)
        mounted: list[LoadedDocument] = []
        for name, spec in servers.items():
            tools = self._listings.get(name)
            if tools is not None:
                mounted.extend(mount_server(name, spec, tools, config, taken={d.model.metadata.name for d in mounted}))
        return mounted


def drift_changes(locked: Sequence[ListedTool], live: Sequence[ListedTool]) -> list[DriftChange]:
    """How the live listing differs from the locked one, tool by tool (empty: none).

    A renamed tool is one gone and one new; an annotation that changed is named with
    its locked and live values (``readOnlyHint: true -> false``)."""
    before = {t.name: t for t in locked}
    after = {t.name: t for t in live}
    changes = [DriftChange(name, "added") for name in sorted(after.keys() - before.keys())]
    changes += [DriftChange(name, "removed") for name in sorted(before.keys() - after.keys())]
    for name in sorted(before.keys() & after.keys()):
        old, new = _tool_json(before[name]), _tool_json(after[name])
        fields = tuple(key for key in _COMPARED if old.get(key) != new.get(key))
        if fields:
            hints = tuple(
                (hint, old["annotations"][hint], new["annotations"][hint])
                for hint in _HINTS
                if old["annotations"][hint] != new["annotations"][hint]
            )
            changes.append(DriftChange(name, "changed", fields, hints))
    return changes


def drift(locked: Sequence[ListedTool], live: Sequence[ListedTool]) -> list[str]:
    """:func:`drift_changes` as sentences (`` `echo` is new``)."""
    return [str(change) for change in drift_changes(locked, live)]


def report_drift(server: str, locked: Sequence[ListedTool], live: Sequence[ListedTool]) -> list[DriftChange]:
    """Log the drift of ``server`` from its lock (a warning; call it once per listing); return the changes."""
    changes = drift_changes(locked, live)
    if changes:
        shown = [str(change) for change in changes[:REPORTED]]
        more = f"; and {len(changes) - REPORTED} more" if len(changes) > REPORTED else ""
        logger.bind(event="mcp_lock_drift", server=server, changes=shown, count=len(changes)).warning(
            "MCP server {} differs from its lock file ({}{}); the live tools are mounted and the policy applies to "
            "them. Run `toolrt mcp lock` again and review the change.",
            server,
            "; ".join(shown),
            more,
        )
    return changes


def _tool_json(tool: ListedTool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": json.loads(json.dumps(tool.input_schema, default=str)),
        "annotations": {
            "readOnlyHint": tool.read_only,
            "destructiveHint": tool.destructive,
            "idempotentHint": tool.idempotent,
        },
    }
    if tool.output_schema is not None:  # absent, not null, so locks written before it still match
        data["output_schema"] = json.loads(json.dumps(tool.output_schema, default=str))
    return data


def _tool_of(item: Mapping[str, Any]) -> ListedTool:
    hints = item.get("annotations") or {}
    schema = item["input_schema"]
    if not isinstance(schema, dict):
        raise TypeError(f"tool {item.get('name')!r}: input_schema is not an object")
    output_schema = item.get("output_schema")
    if output_schema is not None and not isinstance(output_schema, dict):
        raise TypeError(f"tool {item.get('name')!r}: output_schema is not an object")
    return ListedTool(
        name=str(item["name"]),
        description=str(item.get("description") or ""),
        input_schema=schema,
        read_only=hints.get("readOnlyHint"),
        destructive=hints.get("destructiveHint"),
        idempotent=hints.get("idempotentHint"),
        output_schema=output_schema,
    )
