"""``audit_writer=auto`` (the default): the writer thread stores the records itself until
the calls come fast, then a child process takes over.

Redacting, encoding and storing a record on the writer thread costs about 15-25 us of
CPU under the interpreter lock the calls use: nothing to a Runtime making a few calls
a second, a large share of each call for one making hundreds (the lock goes back and
forth between the calls and the writer). A child process (:class:`~runtime.audit.remote.ProcessSink`)
does that work on another core, at the price of a process (its interpreter and imports:
tens of MB, and a second or so of CPU to start). So a Runtime starts on the thread, and
:class:`AutoSink` moves its writing to a child once the calls come fast: twice within
:data:`WINDOW_S` seconds, a batch of at least :data:`FAST_BATCH` records made at
:data:`MOVE_RATE` calls a second or more (by the records' own times), when the process
may run on at least two CPUs (``os.sched_getaffinity``) and fewer than that many
Runtimes of this process have moved already. A one-shot ``toolrt call``, an agent making
a turn of calls now and then, or a test making a few calls never starts a process.

The move happens on the writer thread between two batches: every batch before it is
committed by the thread, every batch after it is appended to the hand-off file, so the
hash chain goes on in call order. The batch that makes the calls fast enough is the
first one appended (storing it on the thread first would cost that thread as much CPU
as the calls it describes), and the child is given the store the thread's sink made
and wrote to, without opening it again to check it. From then on the guarantees of ``audit_writer=process``
hold (what was handed over survives a crash of the app). If the child cannot be kept
running, the thread takes the writing back, first storing what the hand-off file still
held, and stays on it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loguru import logger

from runtime.audit import handoff
from runtime.audit.prepared import Prepared
from runtime.audit.remote import ProcessSink
from runtime.audit.rows import rows_of
from runtime.errors import ToolrtError

#: Calls a second (by the records' own times) at which a batch counts as fast.
MOVE_RATE = 1000.0
#: The fewest records in a batch that counts as fast.
FAST_BATCH = 128
#: Fast batches within :data:`WINDOW_S` seconds that move the writing to a child.
FAST_BATCHES = 2
WINDOW_S = 10.0

_moved_lock = threading.Lock()
_moved = 0  # Runtimes of this process whose writing is in a child now


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class AutoSink:
    """Stores through ``direct`` (a :class:`~runtime.audit.sinks.SqliteSink` or
    :class:`~runtime.audit.jsonl.JsonlSink` of ``path``) on the writer thread, and through
    a child process once batches of ``batch`` records or more made at ``rate`` calls a second
    or more come twice within ``window_s`` seconds (see the module docstring). ``kind``
    is ``"sqlite"`` or ``"jsonl"``."""

    def __init__(
        self,
        kind: str,
        path: str | os.PathLike[str],
        direct: Any,
        *,
        rate: float = MOVE_RATE,
        batch: int = FAST_BATCH,
        window_s: float = WINDOW_S,
        untrusted: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        self.kind = kind
        self.path = Path(path)
        self.direct = direct
        self.rate = rate
        self.batch = batch
        self.window_s = window_s
        self.untrusted = tuple(untrusted)  # (for the child: see ProcessSink)
        self.process: ProcessSink | None = None
        self.moved_at: float | None = None  # monotonic time of the move, if it happened
        self.last_error: str | None = None
        self._stay = False  # the thread writes for good (a child could not be kept)
        self._fast_at: list[float] = []  # monotonic times of the recent fast batches
        self._counted = False  # this sink counts in _moved
        self._encoder: ProcessSink | None = None  # the child's sink that prepared batches, once there was one

    @property
    def child_pid(self) -> int | None:
        """The pid of the writer child, once the writing has moved to one."""
        process = self.process
        return process.child_pid if process is not None else None

    @property
    def prepares(self) -> bool:
        """Whether the writer's calling thread encodes the call items (once a child writes)."""
        return self.process is not None

    def prepare(self, items: Sequence[Any]) -> Prepared | None:
        """``items`` encoded for the child (:meth:`ProcessSink.prepare`); None before the move."""
        process = self.process
        return process.prepare(items) if process is not None else None

    @property
    def batch_size(self) -> int | None:
        """The child's batch size once the writing has moved (see :attr:`ProcessSink.batch_size`);
        None before (the writer's own)."""
        process = self.process
        return process.batch_size if process is not None else None

    def stats(self) -> dict[str, Any]:
        """Whether the writing is in a child now (1) or on the thread (0), and the
        child's errors, for the Runtime's metrics."""
        process = self.process
        return {
            "writer_process": 0 if process is None else 1,
            "child_errors": 0 if process is None else process.child_errors,
        }

    def write_items(self, items: Sequence[Any]) -> None:
        """Store a batch of call items or records (what the writer thread hands over).
        The batch that makes the calls fast enough to move is the child's first: the
        thread does not store it first (that would cost it as much CPU as the calls)."""
        process = self.process
        if process is None and self._fast(items):
            self._move()
            process = self.process
        if process is not None:
            try:
                process.write_items(items)
            except OSError as err:  # the child keeps dying, or no process can be started
                self._take_back(f"{type(err).__name__}: {err}")
            else:
                return
        self.direct.write_rows(rows_of(self._unprepared(items)))

    def _unprepared(self, items: Sequence[Any]) -> Sequence[Any]:
        """``items`` with each prepared batch (made for a child that could not be kept)
        read back into its call items."""
        encoder = self._encoder
        if encoder is None or Prepared not in set(map(type, items)):
            return items
        plain: list[Any] = []
        for item in items:
            if type(item) is Prepared:
                plain += encoder.items_of(item)
            else:
                plain.append(item)
        return plain

    def write_batch(self, records: Sequence[Any]) -> None:
        """Store ``records`` (the :class:`~runtime.audit.sinks.Sink` protocol)."""
        self.write_items(records)

    def sync(self, timeout: float | None = None) -> bool:
        """Wait until the child (once there is one) has stored every batch handed to it."""
        process = self.process
        return True if process is None else process.sync(timeout)

    def close(self) -> None:
        """Let the child store what it has and exit, and close the store."""
        process, self.process = self.process, None
        if process is not None:
            process.close()
        self._uncount()
        self.direct.close()

    # -- the move -----------------------------------------------------------------

    def _fast(self, items: Sequence[Any]) -> bool:
        """Note whether ``items`` came fast (see :data:`FAST_BATCH`); True when they are
        the :data:`FAST_BATCHES`-th fast batch within :data:`WINDOW_S` (time to move)."""
        if self._stay or len(items) < self.batch:
            return False
        try:
            first, last = _made_at(items[0]), _made_at(items[-1])
        except (AttributeError, IndexError, TypeError):
            return False
        if not 0 <= last - first <= len(items) / self.rate:  # (a clock set back is not "fast")
            return False
        now = time.monotonic()
        self._fast_at = [at for at in self._fast_at if now - at <= self.window_s]
        self._fast_at.append(now)
        return len(self._fast_at) >= FAST_BATCHES

    def _move(self) -> None:
        global _moved
        with _moved_lock:
            if _moved >= cpus():  # more children than cores would only queue behind each other
                self._fast_at.clear()
                return
            _moved += 1
            self._counted = True
        try:
            # The thread's own sink made the store and has written to it: no need to open it again to check.
            process = ProcessSink(self.kind, self.path, prepared=True, untrusted=self.untrusted)
            process.start()
        except (OSError, ToolrtError, sqlite3.Error) as err:
            self._uncount()
            self._stay = True
            self.last_error = f"{type(err).__name__}: {err}"
            logger.warning("toolrt audit: no writer process could be started ({}); the writer thread goes on", err)
            return
        self.direct.close()  # the child writes the store now; the thread's connection would only sit open
        self.process = self._encoder = process
        self.moved_at = time.monotonic()

    def _take_back(self, error: str) -> None:
        """The child could not be kept running: stop it, store what its hand-off file still
        holds, and write on the thread from now on."""
        process, self.process = self.process, None
        self._stay = True
        self.last_error = error
        self._uncount()
        logger.warning("toolrt audit: the writer process keeps exiting ({}); the writer thread takes over", error)
        if process is None:
            return
        left = process.handoff_path
        process.close()
        if left is not None:
            finish_here(left, self.direct)

    def _uncount(self) -> None:
        global _moved
        if self._counted:
            with _moved_lock:
                _moved -= 1
            self._counted = False


def _made_at(item: Any) -> float:
    """When a call item or a record was made (its ``ts``)."""
    return float(item[0] if type(item) is tuple else item.ts)


def finish_here(path: Path, sink: Any) -> None:
    """Store with ``sink`` what the hand-off file ``path`` (and the files it leads to)
    still holds, as a child would, and remove it; nothing when another process holds it."""
    from runtime.audit.child import Server  # the child's own reading, here (imports the redaction)

    reader = handoff.Reader.take(path)
    if reader is not None:
        Server(sink, None).finish(reader, ack=False)
