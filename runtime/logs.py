"""Logs: loguru records, emitted only when the embedding app asks for them.

A library must not decide where an application's logs go, so toolrt's records are
disabled on import (``logger.disable("runtime")``, as loguru advises for libraries)
and no handler is ever added behind the app's back. :func:`configure` turns them
on: it enables the ``runtime`` records, adds one handler (JSON lines or text) that
takes only them, and, with ``calls=True``, one record per finished call carrying
the request, session and trace ids, the tool, the stage that ended it, the duration
and the status. Arguments and outputs are never logged.

An app that already uses loguru can instead call ``logger.enable("runtime")`` and
keep its own handlers; per-call records still need ``configure(..., sink=None)``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from loguru import logger

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv
    from runtime.records import Call, ToolResult
    from runtime.settings import Settings

logger.disable("runtime")

_TEXT_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {message} | {extra}"
_state = {"calls": False}


def configure(settings: Settings | None = None, *, sink: TextIO | Any | None = sys.stderr, calls: bool = True) -> int | None:
    """Emit toolrt's log records: to ``sink`` (a stream, a path or any loguru sink;
    None: only enable them for the app's own loguru handlers) in the ``log_format``
    (``json`` or ``text``) and at the ``log_level`` of ``settings``. Returns the id of
    the handler added (``logger.remove(id)`` takes it away), or None."""
    from runtime.settings import Settings

    settings = settings or Settings()
    logger.enable("runtime")
    _state["calls"] = calls
    if sink is None:
        return None
    serialize = settings.log_format == "json"
    return logger.add(sink, level=settings.log_level, serialize=serialize, filter="runtime", format="{message}" if serialize else _TEXT_FORMAT)


def calls_logged() -> bool:
    """Whether a record per finished call is wanted (checked once per call)."""
    return _state["calls"]


def call_finished(env: TurnEnv, call: Call, result: ToolResult) -> None:
    """One record for a finished call: ids, tool, status, stage and duration; never
    arguments or output."""
    timings = result.metadata.get("timings_ms") or {}
    level = "INFO" if not result.is_error else "WARNING"
    logger.bind(
        request_id=env.request_id,
        session_id=env.session.id,
        trace_id=env.trace_id,
        call_id=call.id,
        tool=result.name,
        status=result.status.value,
        code=result.code,
        stage=result.stage.value if result.stage is not None else "respond",
        duration_ms=round(float(timings.get("total_ms", 0.0)), 3),
        decision=result.metadata.get("decision"),
        snapshot=env.snapshot.version,
    ).log(level, "call {} {} {}", result.name, result.status.value, result.code or "")
