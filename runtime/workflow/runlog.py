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

    __slots__ = ("journal", "run_id", "seq", "steps", "_start", "_ended")

    def __init__(self, journal: Journal, run_id: str, seq: int = 0, *, steps: bool = True) -> None:
        self.journal = journal
        self.run_id = run_id
        self.seq = seq
        # False: the run changes nothing. Its steps get no rows: resuming it runs them all
        # again, which is safe. Its end row replaces its start row.
        self.steps = steps
        self._start: tuple[Any, ...] = ()
        self._ended = False

    def started(self, workflow: str, fingerprint: str, session: Session, arguments: Mapping[str, Any]) -> None:
        """Journal the run's start.

        A run with step rows buffers its start row, made here of text and numbers only (so
        the buffer keeps no objects of the run alive until the writer runs). A run without
        (it changes nothing) makes none here: the writer makes it if the run is still
        running when it next writes a batch (:meth:`Journal.defer_start`), and a run that
        ends before that is written once, by its end row made in the writer (see
        :meth:`ended`): its caller encodes nothing."""
        at = time.time()
        journal = self.journal
        if not self.steps:
            self._start = (workflow, fingerprint, session, arguments, at)
            journal.defer_start(self.run_id, self._start_row)
            return
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

    def _start_row(self) -> Row | None:
        """The start row of a run without step rows, made in the writer thread; None once
        the run ended (its end row is the whole row)."""
        if self._ended:
            return None
        workflow, fingerprint, session, arguments, at = self._start
        owner = self.journal.owner
        return (
            RUN_ROW,
            (
                self.run_id,
                workflow,
                fingerprint,
                _session_text(session),
                _text(arguments),
                RUNNING,
                owner,
                at,
                at,
                None,
            ),
        )

    def ended(self, result: WorkflowResult, ok_form: str = "") -> None:
        """Buffer the run's end row. ``ok_form``: the workflow's
        :func:`~runtime.workflow.rowtext.ok_format`.

        A run without step rows writes its whole row (made here, of text and numbers
        only, so that nothing of the run stays alive in the buffer): it replaces the
        start row, if the writer made one (INSERT OR REPLACE), and when both are in one
        batch only this one is written (Journal._write). Another run's end row updates
        its status and result."""
        start = self._start
        if not self.steps and start:
            self._ended = True  # before the start row is dropped: the writer may be making it now
            journal = self.journal
            journal.drop_start(self.run_id)
            workflow, fingerprint, session, arguments, at = start
            row = (
                self.run_id,
                workflow,
                fingerprint,
                _session_text(session),
                dumps(arguments),
                result.status,
                journal.owner,
                at,
                time.time(),
                result_text(result, ok_form),
            )
            journal.add((RUN_ROW, row))
            return
        self.journal.add((_END, (result.status, time.time(), result_text(result, ok_form), result.run_id)))

    def abandoned(self) -> None:
        """The run stopped without an end (cancelled, or an error in toolrt): a run
        without step rows whose start row was not made yet gets it now, so that the
        journal shows it unfinished, as any other run."""
        if not self.steps and not self._ended and self.journal.drop_start(self.run_id):
            row = self._start_row()
            if row is not None:
                self.journal.add(row)

    async def barrier(self) -> None:
        """Return once every row so far is on disk (:class:`JournalError` if it cannot be)."""
        await asyncio.to_thread(self.journal.commit)

    def write(self) -> None:
        """Write every row so far, without fsync (after a write step: a kill from here on
        finds it ended, not in flight). :class:`JournalError` if it cannot be."""
        self.journal.write()


# The last session encoded (runs of one session in a row encode it once), as one tuple
# replaced whole: the run's thread and the writer thread both read and set it.
_LAST_SESSION: tuple[Any, str] = (None, "")


def _session_text(session: Session) -> str:
    global _LAST_SESSION
    known, text = _LAST_SESSION
    if known is session or (known is not None and known == session):
        return text
    text = _text(_session(session))
    _LAST_SESSION = (session, text)
    return text


def _text(value: Any) -> str:
    """``value`` as JSON for a row made in the writer thread: a value that cannot be
    encoded (it changed while it was read, or holds itself) must not fail the batch and
    with it the journal, so it is stored as a note saying why."""
    try:
        return dumps(value)
    except Exception as err:  # noqa: BLE001 - the row is still written, with the reason
        return dumps({"not_encodable": f"{type(err).__name__}: {err}"})


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
