"""What one turn's calls share: the captured snapshot, the session, the services."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runtime.records import Call, Session, ToolResult
from runtime.settings import Settings
from runtime.snapshot import Snapshot

if TYPE_CHECKING:
    from runtime.execution.jobs import JobRegistry
    from runtime.mcpclient.pool import McpPool
    from runtime.metrics import Metrics
    from runtime.pipeline.approval import Approver, Permitter
    from runtime.policy.grants import SessionGrants
    from runtime.policy.limits import Limits
    from runtime.shaping.artifacts import ArtifactStore
    from runtime.shaping.key_material import KeyIndex
    from runtime.tools.workspace_set import WorkspaceTools
    from runtime.versions.rollout import CanaryMonitor


class CallTracer(Protocol):
    """Runs one call of the turn inside its OpenTelemetry span (runtime.telemetry.traces)."""

    async def call(self, call: Call, env: TurnEnv) -> ToolResult: ...


#: Runs one call through every stage of the pipeline (:func:`runtime.pipeline.run_call`): handed to the parts that
#: run calls of their own (a workflow's steps) by the pipeline itself, so that they need not import it.
CallRunner = Callable[[Call, "TurnEnv"], Awaitable[ToolResult]]


#: Records one call's result in the audit log: (the turn, the call, its result, the
#: arguments that ran, or None).
AuditHook = Callable[["TurnEnv", Call, ToolResult, "Mapping[str, Any] | None"], None]


@dataclass(slots=True)
class TurnEnv:
    """Read once per turn: every call of the turn uses this same snapshot.

    Never changed after it is made (not frozen only because a frozen dataclass costs
    microseconds to build, and one is built per turn)."""

    snapshot: Snapshot
    settings: Settings
    session: Session
    permitter: Permitter
    approver: Approver | None
    artifacts: ArtifactStore | None
    workspace_root: Path
    request_id: str
    trace_id: str | None = None
    approval_timeout_s: float = 300.0
    jobs: JobRegistry | None = None  # background commands
    grants: SessionGrants | None = None  # "allow for this session" answers
    workspace_tools: WorkspaceTools | None = None  # file_read, file_edit, ...
    audit: AuditHook | None = None  # records each result in the audit log
    metrics: Metrics | None = None  # counts and latencies of the calls
    limits: Limits | None = None  # this snapshot's quotas and circuit breakers (falsy when none)
    mcp: McpPool | None = None  # sessions with the declared MCP servers (None: mcp handlers cannot run)
    canaries: CanaryMonitor | None = None  # counts outcomes per version, halts failing canaries
    tracing: CallTracer | None = None  # wraps each call in an OpenTelemetry span (None: tracing off)
    # Hears every ToolContext.progress() of the turn's python handlers as (call id, message),
    # e.g. to forward it to a client; called on the handler's thread, so it must be thread-safe.
    progress_listener: Callable[[str, str | None], None] | None = None
    # toolrt's own paths, covered in the command sandbox (empty: commands run without it).
    hide: tuple[str, ...] = ()
    # Private keys the commands could print in pieces (runtime.shaping.key_material).
    keys: KeyIndex | None = None
