"""What one worker process of the fleet tests does: its own Runtime, pointed at the
shared Redis (and PostgreSQL), started from multiprocessing's forkserver so that nothing
of the test process is inherited."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any


def _runtime(config: str, workspace: str, settings: dict[str, Any], approver: Any = None) -> Any:
    os.environ["TOOLRT_HOT_RELOAD"] = "false"
    from runtime import Runtime
    from runtime.settings import Settings

    return Runtime([Path(config)], workspace_root=Path(workspace), settings=Settings(**settings), approver=approver)


def calls(
    config: str,
    workspace: str,
    settings: dict[str, Any],
    go: Any,
    session: str,
    tool: str,
    count: int,
    results: Any,
    skew_s: float = 0.0,
) -> None:
    """Make ``count`` calls of ``tool`` in ``session`` once ``go`` is set; put (pid, [(status, code)...])."""
    if skew_s:
        # This worker's wall clock is off: nothing shared may depend on it.
        real = time.time
        time.time = lambda: real() + skew_s  # type: ignore[assignment]
    from runtime.records import Session

    runtime = _runtime(config, workspace, settings)
    try:
        go.wait(120)
        outcomes = []
        for _ in range(count):
            result = runtime.run_turn_sync([_call(tool)], Session(id=session))[0]
            outcomes.append((result.status.value, result.code))
        results.put((os.getpid(), outcomes))
    finally:
        runtime.close_sync()


def sessions(
    config: str,
    workspace: str,
    settings: dict[str, Any],
    go: Any,
    session_ids: list[str],
    per_session: int,
    results: Any,
) -> None:
    """Interleave ``per_session`` calls of ``ping`` in each of ``session_ids`` once ``go`` is set;
    put (pid, [(session, call id, status, code)...]) after the audit log is flushed."""
    from runtime.records import Session

    runtime = _runtime(config, workspace, settings)
    try:
        go.wait(120)
        outcomes = []
        for _ in range(per_session):
            for session in session_ids:
                call = _call("ping")
                result = runtime.run_turn_sync([call], Session(id=session))[0]
                outcomes.append((session, call.id, result.status.value, result.code))
        runtime.close_sync()
        results.put((os.getpid(), outcomes))
    finally:
        runtime.close_sync()


def hold_slot(config: str, workspace: str, settings: dict[str, Any], session: str, release: str, started: str) -> None:
    """Call ``hold``, which keeps its concurrency slot until ``release`` exists (the test kills us first)."""
    from runtime.records import Session

    runtime = _runtime(config, workspace, settings)
    runtime.run_turn_sync([_call("hold", {"release": release, "started": started})], Session(id=session))
    sys.exit(3)  # not reached when the test kills this worker


def grant(config: str, workspace: str, settings: dict[str, Any], session: str, results: Any) -> None:
    """Call ``ask_me``; the approver approves it for the session."""
    from runtime.pipeline.permit import Approval
    from runtime.records import Session

    async def approve(call: Any, session: Any, decision: Any) -> Approval:
        return Approval(approved=True, scope="session")

    runtime = _runtime(config, workspace, settings, approver=approve)
    try:
        result = runtime.run_turn_sync([_call("ask_me")], Session(id=session))[0]
        results.put((result.status.value, result.code, result.metadata.get("approved")))
    finally:
        runtime.close_sync()


def _call(tool: str, args: dict[str, Any] | None = None) -> Any:
    import uuid

    from runtime.records import Call

    return Call(id=f"call_{uuid.uuid4().hex[:12]}", name=tool, args=args or {})
