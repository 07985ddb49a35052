"""What one turn's calls share: the captured snapshot, the session, the services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.records import Session
from runtime.settings import Settings
from runtime.snapshot import Snapshot

if TYPE_CHECKING:
    from runtime.pipeline.permit import Approver, Permitter


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
    artifacts: Any  # runtime.shaping.artifacts.ArtifactStore | None
    workspace_root: Path
    request_id: str
    trace_id: str | None = None
    approval_timeout_s: float = 300.0
    jobs: Any = None  # runtime.execution.jobs.JobRegistry: background commands
    grants: Any = None  # runtime.policy.grants.SessionGrants: "allow for this session" answers
    workspace_tools: Any = None  # runtime.tools.workspace_tools.WorkspaceTools: file_read, file_edit, ...
    audit: Any = None  # (env, call, result, executed args) -> None: records each result in the audit log
    metrics: Any = None  # runtime.metrics.Metrics: counts and latencies of the calls
    limits: Any = None  # runtime.policy.limits.Limits of this snapshot: quotas and circuit breakers (falsy when none)
    mcp: Any = None  # runtime.mcpclient.McpPool: sessions with the declared MCP servers (None: mcp handlers cannot run)
    canaries: Any = None  # runtime.versions.CanaryMonitor: counts outcomes per version, halts failing canaries
    tracing: Any = None  # runtime.telemetry.traces: wraps each call in an OpenTelemetry span (None: tracing off)
    # Hears every ToolContext.progress() of the turn's python handlers as (call id, message),
    # e.g. to forward it to a client; called on the handler's thread, so it must be thread-safe.
    progress_listener: Callable[[str, str | None], None] | None = None
