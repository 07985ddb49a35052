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

import json
import math
import os
import sys
import threading
import time
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from loguru import logger

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv
    from runtime.records import Call, ToolResult
    from runtime.settings import Settings

logger.disable("runtime")

_TEXT_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {message} | {extra}"
# "calls": a record per finished call is wanted; "direct": (the JSON-lines writer, its
# level number) that takes per-call records without loguru, or None.
_state: dict[str, Any] = {"calls": False, "direct": None}
_LEVELS = {"INFO": 20, "WARNING": 30}
#: How often queued per-call records are written (seconds).
CALL_LOG_INTERVAL_S = 0.05


def configure(
    settings: Settings | None = None, *, sink: TextIO | Any | None = sys.stderr, calls: bool = True
) -> int | None:
    """Emit toolrt's log records: to ``sink`` (a stream, a path or any loguru sink;
    None: only enable them for the app's own loguru handlers) in the ``log_format``
    (``json`` or ``text``) and at the ``log_level`` of ``settings``. Returns the id of
    the handler added (``logger.remove(id)`` takes it away), or None."""
    from runtime.settings import Settings

    settings = settings or Settings()
    logger.enable("runtime")
    _state["calls"] = calls
    _state["direct"] = None
    if sink is None:
        return None
    if settings.log_format == "json":
        lines = _JsonLines.for_sink(sink)
        if lines is not None:  # a stream or a path: toolrt's lean JSON lines (see _JsonLines)
            handler: int = logger.add(lines, level=settings.log_level, filter="runtime", format="{message}")
            # Per-call records skip loguru's record building (most of a record's cost)
            # and go straight to this writer, in the same shape.
            _state["direct"] = (lines, logger.level(settings.log_level).no)
            return handler
        return logger.add(sink, level=settings.log_level, serialize=True, filter="runtime", format="{message}")
    return logger.add(sink, level=settings.log_level, filter="runtime", format=_TEXT_FORMAT)


class _JsonLines:
    """JSON lines shaped like loguru's ``serialize=True`` output (``{"text", "record":
    {time, level, message, name, function, line, extra, exception}}``), minus the fields
    that cost the most to build (elapsed, file, module, process, thread).

    Why: loguru's own serializer takes about as long as the whole pipeline of a cheap
    call (it builds and encodes every field of the record, with ``default=str``); this
    writer halves the cost of a record. Like loguru, a stream is flushed after every
    record and a file opened from a path is not (loguru's file sink buffers too).

    Per-call records (:meth:`write_call`) cost the call only a tuple put in a queue: a
    writer thread encodes and writes them in batches, every :data:`CALL_LOG_INTERVAL_S`
    seconds, so they reach the sink up to that much later. Removing the handler
    (``logger.remove``, which loguru also does at exit) writes the ones still queued.
    """

    def __init__(self, stream: Any, owned: bool) -> None:
        self._lock = threading.Lock()  # loguru's handler lock does not cover write_call()
        self._write = stream.write
        self._flush = None if owned else getattr(stream, "flush", None)
        self._stream = stream if owned else None
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
        self._queued: deque[tuple[float, bool, tuple[Any, ...]]] = deque()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    @classmethod
    def for_sink(cls, sink: Any) -> _JsonLines | None:
        """A writer for a path or a stream; None for any other loguru sink."""
        if isinstance(sink, str | os.PathLike):
            return cls(open(sink, "a", encoding="utf-8"), owned=True)  # closed by stop()
        if callable(getattr(sink, "write", None)):
            return cls(sink, owned=False)
        return None

    def write(self, message: Any) -> None:
        """Called by loguru (under its handler lock) with each formatted record."""
        record = message.record
        when = record["time"]
        exception = record["exception"]
        line = {
            "text": str(message),
            "record": {
                "time": {"repr": str(when), "timestamp": when.timestamp()},
                "level": {"name": record["level"].name, "no": record["level"].no},
                "message": record["message"],
                "name": record["name"],
                "function": record["function"],
                "line": record["line"],
                "extra": record["extra"],
                "exception": None
                if exception is None
                else {"type": getattr(exception.type, "__name__", None), "value": str(exception.value)},
            },
        }
        self._emit(self._encode(line) + "\n")

    def write_call(self, is_error: bool, facts: tuple[Any, ...]) -> None:
        """Queue a per-call record's raw facts (see :func:`call_finished`) for the writer
        thread; it is written without loguru, shaped as :meth:`write` shapes one."""
        if self._thread is None:
            self._start()
        self._queued.append((time.time(), is_error, facts))

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, name="toolrt-call-log", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(CALL_LOG_INTERVAL_S):
            self._drain()

    def _drain(self) -> None:
        """Encode and write every queued per-call record, in one write."""
        queued = self._queued
        lines = []
        while queued:
            now, is_error, facts = queued.popleft()
            lines.append(_call_line(now, *_call_record(is_error, facts)))
        if lines:
            self._emit("".join(lines))

    def _emit(self, text: str) -> None:
        with self._lock:
            self._write(text)
            if self._flush is not None:
                self._flush()

    def stop(self) -> None:
        """Called by loguru when the handler is removed: no more per-call records here,
        and a file opened here is closed."""
        direct = _state["direct"]
        if direct is not None and direct[0] is self:
            _state["direct"] = None
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        self._drain()
        if self._stream is not None:
            with self._lock:
                self._stream.close()


_second: list[Any] = [-1, "", ""]  # (a whole second, its local date and time, its UTC offset)


def _time_repr(now: float) -> str:
    """``str(datetime)`` of ``now`` in local time, as loguru writes it, with the date,
    time and offset worked out once per second (building a datetime per record costs
    more than the rest of the record)."""
    second = int(now)
    if second != _second[0]:
        when = datetime.fromtimestamp(second).astimezone()
        offset = when.strftime("%z")
        _second[1:] = [when.strftime("%Y-%m-%d %H:%M:%S"), f"{offset[:3]}:{offset[3:]}" if offset else ""]
        _second[0] = second
    return f"{_second[1]}.{min(round((now - second) * 1_000_000), 999_999):06d}{_second[2]}"


def _call_line(now: float, level: str, message: str, values: tuple[Any, ...]) -> str:
    """One per-call record as a JSON line: the fixed parts laid out here, each value
    encoded alone (they are strings, None and one float)."""
    extra = _CALL_EXTRA % tuple(map(_json_scalar, values))
    return (
        f'{{"text":{_json_string(message + chr(10))},'
        f'"record":{{"time":{{"repr":"{_time_repr(now)}","timestamp":{now!r}}},'
        f'"level":{{"name":"{level}","no":{_LEVELS[level]}}},'
        f'"message":{_json_string(message)},"name":"{__name__}","function":"call_finished","line":0,'
        f'"extra":{extra},"exception":null}}}}\n'
    )


def calls_logged() -> bool:
    """Whether a record per finished call is wanted (checked once per call)."""
    return _state["calls"]


#: The ids and facts of a per-call record, in the order they are written.
CALL_FIELDS = (
    "request_id",
    "session_id",
    "trace_id",
    "call_id",
    "tool",
    "status",
    "code",
    "stage",
    "duration_ms",
    "decision",
    "snapshot",
)
_CALL_EXTRA = "{" + ",".join(f'"{name}":%s' for name in CALL_FIELDS) + "}"
_json_string = json.encoder.encode_basestring  # type: ignore[attr-defined]  # the C encoder of one str, as json.dumps(ensure_ascii=False) writes it


def _json_scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _json_string(value)  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if kind is float and math.isfinite(value):
        return repr(value)  # what json.dumps writes, without its set-up cost
    return json.dumps(value, ensure_ascii=False, default=str)


def call_finished(env: TurnEnv, call: Call, result: ToolResult) -> None:
    """One record for a finished call: ids, tool, status, stage and duration; never
    arguments or output."""
    meta = result.metadata
    timings = meta.get("timings_ms") or {}
    is_error = result.is_error
    facts = (
        env.request_id,
        env.session.id,
        env.trace_id,
        call.id,
        result.name,
        result.status,
        result.code,
        result.stage,
        timings.get("total_ms"),
        meta.get("decision"),
        env.snapshot.version,
    )
    direct = _state["direct"]
    if direct is not None:
        writer, threshold = direct
        if _LEVELS["WARNING" if is_error else "INFO"] >= threshold:
            writer.write_call(is_error, facts)  # raw facts only: the writer thread words and encodes them
        return
    level, message, values = _call_record(is_error, facts)
    logger.bind(**dict(zip(CALL_FIELDS, values, strict=True))).log(level, message)


def _call_record(is_error: bool, facts: tuple[Any, ...]) -> tuple[str, str, tuple[Any, ...]]:
    """(level, message, values in :data:`CALL_FIELDS` order) of a per-call record."""
    request_id, session_id, trace_id, call_id, tool, status, code, stage, total_ms, decision, snapshot = facts
    values = (
        request_id,
        session_id,
        trace_id,
        call_id,
        tool,
        status.value,
        code,
        stage.value if stage is not None else "respond",
        round(float(total_ms or 0.0), 3),
        decision,
        snapshot,
    )
    return ("WARNING" if is_error else "INFO"), f"call {tool} {status.value} {code or ''}", values
