"""One run's rows in the journal, and the reports rebuilt from them on resume.

A step's rows are encoded in the journal's writer thread (the objects handed over are
immutable); a run's own rows (its start and its end) are made on the run's thread, of
text and numbers only. A step that changes something waits for :meth:`RunLog.barrier`
before it runs (see :mod:`.journal`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from runtime.records import Session, Stage, Status, ToolResult
from runtime.workflow.journal import COMP_END, COMP_START, RUN_ROW, RUNNING, STEP_END, STEP_START, Journal, Row, dumps
from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult, plain
from runtime.workflow.rowtext import result_text

if TYPE_CHECKING:
    from runtime.workflow.restore import Backup

_EVENT = "INSERT INTO events (run_id, seq, kind, step, at, data, backup) VALUES (?, ?, ?, ?, ?, ?, ?)"


_END = "UPDATE runs SET status = ?, updated_at = ?, result = ? WHERE run_id = ?"


class RunLog:
    """What one run writes to the journal."""

    __slots__ = ("journal", "run_id", "seq", "steps", "_start")

    def __init__(self, journal: Journal, run_id: str, seq: int = 0, *, steps: bool = True) -> None:
        self.journal = journal
        self.run_id = run_id
        self.seq = seq
        # False: the run changes nothing. Its steps get no rows: resuming it runs them all
        # again, which is safe. Its end row replaces its start row.
        self.steps = steps
        self._start: tuple[Any, ...] = ()

    def started(self, workflow: str, fingerprint: str, session: Session, arguments: Mapping[str, Any]) -> None:
        """Buffer the run's start row. It is made here, of text and numbers only (so the
        buffer keeps no objects of the run alive until the writer runs, nor makes the
        collector walk them), and kept for the end row of a run without step rows."""
        at = time.time()
        journal = self.journal
        text = _session_text(session)
        row = (self.run_id, workflow, fingerprint, text, dumps(arguments), RUNNING, journal.owner, at, at, None)
        self._start = row
        journal.add((RUN_ROW, row))

    def _event(self, kind: str, step: str, data: Any, backup: bytes | None = None) -> None:
        if not self.steps:
            return
        self.seq += 1
        values = (self.run_id, self.seq, kind, step, time.time(), data, backup)

        def rows() -> list[Row]:
            run_id, seq, k, s, at, d, b = values
            return [(_EVENT, (run_id, seq, k, s, at, dumps(d() if callable(d) else d), b))]

        self.journal.submit(rows)

    def step_started(self, step: str, args: Any, backup: Backup | None) -> None:
        data: dict[str, Any] = {"args": args}
        raw = None
        if backup is not None:
            data["backup"] = {"path": backup.path, "sha256": backup.sha256, "error": backup.error}
            raw = backup.raw
        self._event(STEP_START, step, lambda: data, raw)

    def step_ended(self, report: StepReport) -> None:
        self._event(STEP_END, report.id, lambda: encode_step(report))

    def compensation_started(self, step: str) -> None:
        self._event(COMP_START, step, {})

    def compensation_ended(self, report: CompensationReport) -> None:
        self._event(COMP_END, report.step, lambda: encode_compensation(report))

    def ended(self, result: WorkflowResult, ok_form: str = "") -> None:
        """Buffer the run's end row (made here, as the start row). ``ok_form``: the
        workflow's :func:`~runtime.workflow.rowtext.ok_format`."""
        start = self._start
        if not self.steps and start:
            # The whole row again: it replaces the start row (INSERT OR REPLACE), and when
            # both are in one batch the writer writes this one only (Journal._write).
            row = start[:5] + (result.status, start[6], start[7], time.time(), result_text(result, ok_form))
            self.journal.add((RUN_ROW, row))
            return
        self.journal.add((_END, (result.status, time.time(), result_text(result, ok_form), result.run_id)))

    async def barrier(self) -> None:
        """Return once every row so far is on disk (:class:`JournalError` if it cannot be)."""
        await asyncio.to_thread(self.journal.commit)

    def write(self) -> None:
        """Write every row so far, without fsync (after a write step: a kill from here on
        finds it ended, not in flight). :class:`JournalError` if it cannot be."""
        self.journal.write()


_LAST_SESSION: list[Any] = [None, ""]  # the last session encoded: runs of one session in a row encode it once


def _session_text(session: Session) -> str:
    last = _LAST_SESSION
    known = last[0]
    if known is session or (known is not None and known == session):
        text: str = last[1]
        return text
    text = dumps(_session(session))
    last[0], last[1] = session, text
    return text


def _session(session: Session) -> dict[str, Any]:
    return {
        "id": session.id,
        "user": session.user,
        "mode": session.mode,
        "labels": dict(session.labels),
        "pins": dict(session.pins),
    }


def session_of(data: Mapping[str, Any]) -> Session:
    return Session(
        id=str(data.get("id", "default")),
        user=data.get("user"),
        mode=str(data.get("mode", "default")),
        labels=dict(data.get("labels") or {}),
        pins=dict(data.get("pins") or {}),
    )


def _result(result: ToolResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "call_id": result.call_id,
        "name": result.name,
        "content": result.content,
        "status": result.status.value,
        "code": result.code,
        "stage": result.stage.value if result.stage is not None else None,
        "structured": plain(result.structured),
        "metadata": {k: plain(v) for k, v in result.metadata.items() if k != "timings_ms"},
    }


def _decode_result(data: Mapping[str, Any] | None) -> ToolResult | None:
    if data is None:
        return None
    return ToolResult(
        call_id=data["call_id"],
        name=data["name"],
        content=data["content"],
        status=Status(data["status"]),
        code=data.get("code"),
        stage=Stage(data["stage"]) if data.get("stage") else None,
        structured=data.get("structured"),
        metadata=MappingProxyType(dict(data.get("metadata") or {})),
    )


def encode_step(report: StepReport) -> dict[str, Any]:
    return {
        "id": report.id,
        "tool": report.tool,
        "status": report.status,
        "duration_ms": report.duration_ms,
        "attempts": report.attempts,
        "reason": report.reason,
        "result": _result(report.result),
    }


def decode_step(data: Mapping[str, Any]) -> StepReport:
    return StepReport(
        id=data["id"],
        tool=data["tool"],
        status=data["status"],
        duration_ms=float(data.get("duration_ms") or 0.0),
        attempts=int(data.get("attempts") or 0),
        reason=data.get("reason"),
        result=_decode_result(data.get("result")),
    )


def encode_compensation(report: CompensationReport) -> dict[str, Any]:
    return {
        "step": report.step,
        "tool": report.tool,
        "status": report.status,
        "reason": report.reason,
        "duration_ms": report.duration_ms,
        "result": _result(report.result),
    }


def decode_compensation(data: Mapping[str, Any]) -> CompensationReport:
    return CompensationReport(
        step=data["step"],
        tool=data["tool"],
        status=data["status"],
        reason=data.get("reason"),
        duration_ms=float(data.get("duration_ms") or 0.0),
        result=_decode_result(data.get("result")),
    )
