"""Reload events: what one load or reload attempt did, what changed, and what it
would take away (a reload that weakens the config is held back; see :mod:`runtime.reload`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loguru import logger

from runtime.config.compile import BuildResult
from runtime.lockdrift import REPORTED
from runtime.snapshot import CompiledTool, Snapshot

EventKind = Literal["loaded", "reloaded", "error", "held", "mcp_drift"]
PublishMode = Literal["settle", "marker"]

_LOGGED_ERRORS = 10


@dataclass(frozen=True)
class ReloadEvent:
    """One load or reload attempt, in the shape ``toolrt watch`` prints.

    ``version`` is the version that was built (None when the build failed),
    ``previous`` the version serving before the attempt, ``serving`` the version
    serving after it, ``changed`` the sorted names of tools added, removed or changed,
    ``errors`` the build's errors (``file``, ``line``, ``col``, ``code``, ``message``),
    ``mode`` the publish mode of the watcher that made the attempt.

    An ``mcp_drift`` event is not an attempt: a build's mount step found that MCP server
    ``server`` lists tools that differ from the lock file. ``drift`` holds the changes
    (at most ``runtime.lockdrift.REPORTED``, 100; ``drift_count`` says how many there were), each with ``tool``,
    ``change`` (added, removed or changed), ``message`` and, when changed, ``fields``
    and ``annotations`` (``{hint: {"locked": .., "live": ..}}``); ``serving`` is the
    version serving once the build that found it was done.
    """

    event: EventKind
    version: str | None
    previous: str | None
    changed: tuple[str, ...] = ()
    errors: tuple[Mapping[str, Any], ...] = ()
    serving: str | None = None
    duration_ms: float = 0.0
    mode: PublishMode | None = None  # the watcher's publish mode (settle or marker)
    server: str | None = None  # mcp_drift: the MCP server that differs from the lock file
    drift: tuple[Mapping[str, Any], ...] = ()  # mcp_drift: how (see runtime.lockdrift.DriftChange)
    drift_count: int = 0

    @property
    def ok(self) -> bool:
        """True when the attempt produced a clean snapshot that now serves."""
        return self.event in ("loaded", "reloaded")

    def to_dict(self) -> dict[str, Any]:
        """The contract's keys, in order, plus ``duration_ms`` (and an ``mcp_drift`` event's own)."""
        return {
            "event": self.event,
            "version": self.version,
            "previous": self.previous,
            "changed": list(self.changed),
            "errors": [dict(e) for e in self.errors],
            "serving": self.serving,
            "duration_ms": self.duration_ms,
            **({"mode": self.mode} if self.mode is not None else {}),
            **(
                {"server": self.server, "drift": [dict(d) for d in self.drift], "drift_count": self.drift_count}
                if self.event == "mcp_drift"
                else {}
            ),
        }

    def to_json(self) -> str:
        """One line of JSON (no newlines inside, whatever the messages hold)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_build(
        cls, result: BuildResult, previous: Snapshot | None, serving: Snapshot | None, duration_ms: float
    ) -> ReloadEvent:
        """The event for one build: ``previous`` served before it, ``serving`` after."""
        previous_version = previous.version if previous is not None else None
        serving_version = serving.version if serving is not None else None
        duration = round(duration_ms, 1)
        if result.snapshot is None:
            errors = tuple(
                {
                    "file": p.location.file,
                    "line": p.location.line,
                    "col": p.location.col,
                    "code": p.code,
                    "message": p.message,
                }
                for p in result.errors
            )
            return cls("error", None, previous_version, (), errors, serving_version, duration)
        kind: EventKind = "loaded" if previous is None else "reloaded"
        return cls(
            kind,
            result.snapshot.version,
            previous_version,
            tuple(diff_tools(previous, result.snapshot)),
            (),
            serving_version,
            duration,
        )


def drift_event(server: str, changes: Sequence[Mapping[str, Any]]) -> ReloadEvent:
    """The ``mcp_drift`` event of ``server`` whose listing differs from the lock by ``changes``."""
    return ReloadEvent(
        "mcp_drift", None, None, server=server, drift=tuple(changes[:REPORTED]), drift_count=len(changes)
    )


def diff_tools(old: Snapshot | None, new: Snapshot) -> list[str]:
    """Sorted names of the tools added, removed or changed between two snapshots.

    A tool counts as changed when any of its versions differs in its document
    (metadata and spec), resolved handler, output limits or redaction patterns.
    Policy edits change the snapshot version but no tool's own definition, so they do
    not list tools here. With no ``old`` snapshot every tool is new.
    """
    before: Mapping[str, Mapping[str, CompiledTool]] = old.tool_versions if old is not None else {}
    after = new.tool_versions
    return sorted(name for name in set(before) | set(after) if not _same_versions(before.get(name), after.get(name)))


def _same_versions(a: Mapping[str, CompiledTool] | None, b: Mapping[str, CompiledTool] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(_same_tool(a[v], b[v]) for v in a)


def _same_tool(a: CompiledTool, b: CompiledTool) -> bool:
    # Unchanged documents come back from the compile cache as the same model objects,
    # so the identity checks make comparing 1,000 unchanged tools cheap.
    return (
        (a.metadata is b.metadata or a.metadata == b.metadata)
        and (a.spec is b.spec or a.spec == b.spec)
        and a.output == b.output
        and a.handler == b.handler
        and _redaction_key(a) == _redaction_key(b)
    )


def _redaction_key(tool: CompiledTool) -> tuple[Any, ...]:
    # Compiled RE2 objects compare by identity: compare their pattern text instead.
    return tuple(
        (r.name, tuple((p.name, p.replacement, p.validator, getattr(p.regex, "pattern", None)) for p in r.patterns))
        for r in tool.redaction
    )


def weakenings(old: Snapshot | None, new: Snapshot) -> list[str]:
    """What ``new`` takes away from ``old``: removed tools and Policy documents, deny and
    ask rules removed or changed, tools whose business rules were removed or changed.

    These are what a file caught half-written or deleted looks like, and what would let
    a call through that was stopped before: such a reload is held back (see the module).
    """
    if old is None:
        return []
    found = [f"tool {name}" for name in sorted(set(old.tool_versions) - set(new.tool_versions))]
    found += [f"Policy {name}" for name in sorted({p.name for p in old.policies} - {p.name for p in new.policies})]
    kept = {_rule_key(rule) for rule in new.policy_rules}
    found += [
        f"{rule.effect.value} rule {rule.policy}/{rule.name}"
        for rule in old.policy_rules
        if rule.effect.value in ("deny", "ask") and _rule_key(rule) not in kept
    ]
    for name, versions in old.tool_versions.items():
        after = new.tool_versions.get(name, {})
        for version, tool in versions.items():
            other = after.get(version)
            if other is not None and not set(tool.spec.rules) <= set(other.spec.rules):
                found.append(f"business rules of tool {name}")
    return found


def _rule_key(rule: Any) -> tuple[Any, ...]:
    when = (
        rule.when.source
        if rule.when is not None and hasattr(rule.when, "source")
        else repr(rule.when)
        if rule.when is not None
        else None
    )
    commands = repr(rule.command_patterns) if rule.command_patterns is not None else None
    return (rule.policy, rule.name, rule.effect, rule.tool_globs, when, commands, rule.enforce, rule.on_error)


def held_event(
    snapshot: Snapshot, previous: Snapshot | None, removed: tuple[str, ...], duration_ms: float, settle_ms: int
) -> ReloadEvent:
    """The ``held`` event of a clean build that removes ``removed`` (see :func:`weakenings`)."""
    previous_version = previous.version if previous is not None else None
    shown = ", ".join(removed[:_LOGGED_ERRORS]) + (
        f" and {len(removed) - _LOGGED_ERRORS} more" if len(removed) > _LOGGED_ERRORS else ""
    )
    message = (
        f"held back: the new config removes or changes {shown};"
        f" it goes live if the files stay as they are for another {settle_ms} ms"
    )
    error = {"file": "", "line": 0, "col": 0, "code": "reload-held", "message": message}
    return ReloadEvent(
        "held",
        snapshot.version,
        previous_version,
        tuple(diff_tools(previous, snapshot)),
        (error,),
        previous_version,
        round(duration_ms, 1),
    )


def log_event(event: ReloadEvent, changes: Sequence[str]) -> None:
    """Log one attempt (info when it went live, warning when held or failed) with its fields as extras."""
    extra = {
        "reload_event": event.event,
        "version": event.version,
        "previous": event.previous,
        "serving": event.serving,
        "changed": list(event.changed),
        "duration_ms": event.duration_ms,
        "paths": list(changes),
    }
    if event.event == "held":
        logger.bind(**extra, errors=[dict(e) for e in event.errors]).warning(
            "config reload {} -> {} {}", event.previous, event.version, event.errors[0]["message"]
        )
        return
    if event.ok:
        logger.bind(**extra).info(
            "config {}: {} -> {} ({} changed tools: {}) in {} ms",
            event.event,
            event.previous,
            event.version,
            len(event.changed),
            ", ".join(event.changed) or "none",
            event.duration_ms,
        )
        return
    lines = [f"{_where(e)}: {e['code']}: {e['message']}" for e in event.errors[:_LOGGED_ERRORS]]
    more = f"\n... and {len(event.errors) - _LOGGED_ERRORS} more" if len(event.errors) > _LOGGED_ERRORS else ""
    logger.bind(**extra, errors=[dict(e) for e in event.errors]).warning(
        "config reload failed with {} error(s), still serving {}:\n{}{}",
        len(event.errors),
        event.serving,
        "\n".join(lines),
        more,
    )


def _where(error: Mapping[str, Any]) -> str:
    """``file:line:col``, or just the file for a problem with the whole file (line 0)."""
    return f"{error['file']}:{error['line']}:{error['col']}" if error["line"] > 0 else str(error["file"])
