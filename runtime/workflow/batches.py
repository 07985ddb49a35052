"""The journal's writer thread: buffered rows written in batches, off the event loop.

A run appends its rows to the journal's buffer (a deque: no lock); this thread writes
them, one transaction a batch, when :data:`BATCH` rows are waiting or
:data:`FLUSH_S` after the first of them, whichever comes first. It sleeps otherwise,
and ends after :data:`IDLE_S` without rows (the next row starts it again), so an idle
journal holds no thread.

Why a thread: the SQLite part of a batch (the insert, the commit's writes to the
WAL) runs without the interpreter lock, so the event loop never waits for the disk.
A batch is a handful of SQLite calls (multi-row statements), because each call lets
go of the lock and the thread then waits for the running code's switch interval to
get it back. Waking the thread costs the event loop too (the thread then takes the
interpreter lock from it, and on a busy machine waits for a core while the loop waits
for the lock), so it is woken only for a large batch: most batches are written by its
timer. Rows that must be on disk before something happens never wait for this
thread: :meth:`Journal.write` and :meth:`Journal.commit` write them where they are
called.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

BATCH = 1024  # rows that wake the thread (fewer wait for its timer); one statement (sqlrows.statements)
FLUSH_S = 0.5  # the longest a buffered row waits (a killed process loses at most this much of them)
IDLE_S = 30.0  # the thread ends after this long without rows


class BatchWriter:
    """Writes ``buffer`` with ``write()`` (which takes what the buffer holds) in a
    thread of its own. :meth:`notify` after each append; :meth:`stop` before the
    journal closes."""

    def __init__(
        self, buffer: deque[Any], write: Callable[[], None], name: str, others: Callable[[], bool] | None = None
    ) -> None:
        self._buffer = buffer
        self._write = write
        # Work that is not in the buffer (the journal's runs whose start row is still to be
        # made: see runlog.RunLog.started): a timer tick writes when it says so.
        self._others = others or (lambda: False)
        self._name = name
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # starting and ending the thread
        self._writing = False
        self._stopped = False
        # No thread runs: the next row must call notify() to start one. While one runs,
        # a row needs notify() only when it makes a whole batch (the timer takes the rest).
        self.waiting = True

    def notify(self) -> None:
        """Called after a row was appended: start the thread if none runs, and wake it
        when a whole batch waits (else its timer writes the rows)."""
        if self._thread is None:
            self._start()
        elif len(self._buffer) >= BATCH and not self._writing and not self._wake.is_set():
            if not self._thread.is_alive():  # a fork's child: the parent's thread is not here
                self._start()
            self._wake.set()

    def _start(self) -> None:
        with self._lock:
            thread = self._thread
            if self._stopped or (thread is not None and thread.is_alive()):
                return
            thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread = thread
            thread.start()
            self.waiting = False

    def _run(self) -> None:
        wake, buffer, others = self._wake, self._buffer, self._others
        idle = 0.0
        while True:
            woken = wake.wait(FLUSH_S)
            wake.clear()
            if self._stopped:
                return
            if not buffer and not others():
                idle = 0.0 if woken else idle + FLUSH_S
                if idle >= IDLE_S:
                    with self._lock:
                        if not buffer and not others() and not wake.is_set():
                            self._thread = None  # the next notify() starts another
                            self.waiting = True
                            if not buffer and not others():
                                return
                            # A row came between the look above and `waiting`: its notify()
                            # may have seen this thread still running. Go on writing.
                            self._thread = threading.current_thread()
                            self.waiting = False
                continue
            idle = 0.0
            self._writing = True  # notify() need not wake it: it looks at the buffer again when done
            try:
                self._write()  # the buffer, and what others() said is waiting
                while len(buffer) >= BATCH and not self._stopped:
                    self._write()
            finally:
                self._writing = False

    def stop(self) -> None:
        """End the thread (what it was writing is written); a later notify() starts another."""
        with self._lock:
            self._stopped = True
            thread, self._thread = self._thread, None
            self.waiting = True
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            self._wake.set()
            thread.join(30)
        with self._lock:
            self._stopped = False
            self._wake.clear()
