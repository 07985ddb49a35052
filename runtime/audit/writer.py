"""The audit writer: takes records off the caller's thread and stores them in batches.

:meth:`AuditWriter.submit` is on the hot path of every tool call, so it does a
``deque.append`` and a length check and nothing else: no I/O, no lock, no waiting;
with a sink that stores in a child, every 64th submit also encodes what was queued
since the last (CPU only, see :meth:`AuditWriter.submit`). A daemon thread drains the
queue in batches of up to ``batch_size``, every ``flush_interval_s`` or as soon as a
full batch is waiting, and hands each batch to the sink in one call (one SQLite
transaction, one ``write()`` of JSON lines, or one append to a child's hand-off file).

The writer installs no ``atexit`` or signal handler: the application owns
shutdown. It must call :meth:`AuditWriter.close` (``Runtime.close()`` does) for the
final flush; the thread is a daemon, so a process that exits without closing
loses whatever was still queued.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from loguru import logger

from runtime.audit.prepared import Prepared
from runtime.audit.record import AuditRecord
from runtime.audit.rows import rows_of
from runtime.audit.sinks import Sink

# At most one warning per this many seconds about failing writes (the rest are counted
# and summed up in the next warning), so that a broken store cannot flood the logs.
LOG_EVERY_S = 10.0
#: Records in a batch, unless the writer is given another size or the sink asks for one.
DEFAULT_BATCH_SIZE = 256
#: With a sink that prepares batches (see :meth:`AuditWriter.submit`), the calling thread
#: encodes the queued call items every this many records.
PREPARE_EVERY = 64


class AuditWriter:
    """Batches audit records to a :class:`~runtime.audit.sinks.Sink` from a background thread.

    **Never blocks the caller.** ``submit`` appends to a deque (and with a sink that
    prepares batches, encodes 64 records now and then; never I/O). When more than
    ``max_queue`` records are waiting (the sink is slower than the calls, or
    stuck) the *oldest* waiting records are dropped and counted in ``dropped``:
    the newest records are the likeliest to matter for whatever is going on now,
    and a bounded queue keeps memory bounded. Records submitted after ``close``
    are dropped and counted the same way.

    **Sink errors never reach callers.** A batch whose write raises is counted in
    ``failed_batches`` (the error in ``last_error``), kept, and written once more
    after ``retry_delay_s``; if that fails too its records are counted in ``lost``
    and the writer goes on with the next batch. (The SQLite sink retries its own
    "database is locked" errors before it ever raises.)

    **What a hard crash can lose.** A SIGKILL, an OOM kill or a power loss skips
    the final flush. Lost are: every record still in the queue, i.e. those
    submitted in about the last ``flush_interval_s`` (more if the sink had fallen
    behind, at most ``max_queue``), plus the batch being written at that moment
    (or waiting for its retry).
    Every batch whose write had returned is kept after a process crash: an SQLite
    transaction is atomic, so a batch is either all there or not there at all.
    On a power loss or OS crash, WAL mode with ``synchronous=NORMAL`` may in
    addition roll back the transactions committed since the WAL was last synced
    to disk (it is synced at each checkpoint), but the database is never
    corrupted and opens cleanly. The JSON-lines sink fsyncs each batch, so it
    loses at most the batch being written, whose last line may then be cut short
    (readers should skip a final line that does not parse; ``toolrt audit verify``
    reports it, since it cannot tell it from garbage written into the log). In SQLite
    a batch, its hash-chain links and the chain's head are one transaction, so no
    crash breaks the chain (:mod:`runtime.audit.chain`); a JSON-lines log rewrites
    its head file just after the fsync, and a crash in between makes the next batch
    repeat those positions, which verify reports. :meth:`flush` makes
    what was submitted safe from a process crash (and, with the JSON-lines sink,
    from a power loss) before going on.

    The application must call :meth:`close` (or use the writer as a context
    manager) so the records still queued are written at shutdown.
    """

    def __init__(
        self,
        sink: Sink,
        *,
        batch_size: int | None = None,
        flush_interval_s: float = 0.2,
        max_queue: int = 100_000,
        retry_delay_s: float = 0.1,
        name: str = "toolrt-audit-writer",
    ) -> None:
        if (batch_size is not None and batch_size < 1) or max_queue < 1 or flush_interval_s <= 0 or retry_delay_s < 0:
            raise ValueError("batch_size and max_queue must be >= 1, flush_interval_s > 0 and retry_delay_s >= 0")
        self.sink = sink
        self._given_batch_size = batch_size
        self.batch_size = self._batch_size()
        self.flush_interval_s = flush_interval_s
        self.max_queue = max_queue
        self.retry_delay_s = retry_delay_s
        self._queue: deque[AuditRecord | tuple[Any, ...]] = deque()
        # What the calling thread prepared (Prepared batches, or the items the sink would
        # not prepare), older than everything in _queue; and how many records it holds.
        self._prepared: deque[Prepared | AuditRecord | tuple[Any, ...]] = deque()
        self._prepared_records = 0
        # submit() looks further only from this length on: a full batch is waiting,
        # or the queue is at its bound (when max_queue is below batch_size), or it is
        # time to prepare what is queued.
        self._set_thresholds()
        self._wake = threading.Event()
        # _lock orders the two ways a record leaves the queue (taken by the writer,
        # dropped on overflow) with flush() reading the queue's extent. submit()
        # never takes it unless the queue is over max_queue.
        self._lock = threading.Lock()
        self._retired = 0  # records that left the queue, taken or dropped (under _lock)
        self._done_cond = threading.Condition(threading.Lock())
        self._done = 0  # every record below this position is written or given up
        self._closed = False
        self._stopping = False
        self._written = 0
        self._dropped = 0
        self._lost = 0
        self._failed_batches = 0
        self._last_error: str | None = None
        self._logged_at = -LOG_EVERY_S  # monotonic time of the last warning
        self._unlogged = 0  # failures since then
        self._dropped_logged = 0
        self.warnings_logged = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _batch_size(self) -> int:
        """The batch size given, else the sink's own (a sink that stores in a child asks
        for larger batches: see :data:`runtime.audit.remote.BATCH_SIZE`), else 256."""
        if self._given_batch_size is not None:
            return self._given_batch_size
        wanted = getattr(self.sink, "batch_size", None)
        return wanted if type(wanted) is int and wanted >= 1 else DEFAULT_BATCH_SIZE

    def _prepares(self) -> bool:
        """Whether the sink prepares batches now (an auto sink once it has moved)."""
        return getattr(self.sink, "prepares", False) is True and callable(getattr(self.sink, "prepare", None))

    def _set_thresholds(self) -> None:
        """Whether submit() prepares batches, and the queue length from which it looks further."""
        self._preparing = self.batch_size > PREPARE_EVERY and self._prepares()
        self._check_at = min(PREPARE_EVERY if self._preparing else self.batch_size, self.max_queue)

    # -- the caller's side ------------------------------------------------------

    def submit(self, record: AuditRecord | tuple[Any, ...]) -> None:
        """Queue ``record`` for writing. Never blocks, never raises, does no I/O.

        ``record`` is an :class:`AuditRecord` or a call item
        (:func:`~runtime.audit.record.call_item`, what the Runtime hands over: a tuple
        of values the call already holds, cheaper to make than a record). Costs one
        deque append and a length check; see the class docstring for what happens
        when the queue is full.

        With a sink that prepares batches (the writer child's: it has ``prepare`` and
        ``prepares``), every :data:`PREPARE_EVERY`-th submit also encodes the call items
        queued since the last, here: they are still in this thread's caches, and do not
        stay queued as objects the garbage collector walks (and moves to its oldest
        generation). The writer thread is woken once a whole batch is prepared, and only
        appends it. Encoding is CPU only: still no I/O, no waiting on the writer.
        """
        queue = self._queue
        queue.append(record)
        if len(queue) >= self._check_at or self._closed:
            self._busy()

    def _busy(self) -> None:
        """The rare part of submit: prepare what is queued, wake the writer for a full
        batch, keep the queue within ``max_queue``, drop what comes after close."""
        if self._preparing and not self._closed and len(self._queue) < self.max_queue:
            prepared = self._prepare_queued()
            if prepared < self.batch_size and prepared + len(self._queue) <= self.max_queue:
                return  # prepared; not a batch yet, nor over the bound
        if len(self._queue) + self._prepared_records > self.max_queue or (self._closed and not self._thread.is_alive()):
            self._shed()
        if not self._wake.is_set():  # set once per batch, not once per record
            self._wake.set()

    def _prepare_queued(self) -> int:
        """Have the sink prepare the queued items (see :meth:`submit`); the records
        prepared and waiting for the writer thread."""
        with self._lock:  # (orders this with the writer taking items, and flush() counting them)
            queue = self._queue
            items = [queue.popleft() for _ in range(len(queue))]
            if not items:  # another thread prepared them meanwhile
                return self._prepared_records
            prepared = None
            try:
                prepared = self.sink.prepare(items)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001, S110 - the writer thread sends them the careful way
                pass
            finally:  # (a KeyboardInterrupt raised in prepare goes on, the items kept)
                if type(prepared) is Prepared and prepared.records == len(items):
                    self._prepared.append(prepared)
                else:
                    self._prepared.extend(items)
                self._prepared_records += len(items)
            return self._prepared_records

    def _shed(self) -> None:
        """Drop the oldest records until the queue is within bounds (all of them once
        the writer thread has stopped)."""
        stopped = not self._thread.is_alive()
        keep = 0 if stopped else self.max_queue
        queue, prepared = self._queue, self._prepared
        with self._lock:
            while prepared and len(queue) + self._prepared_records > keep:  # the oldest first
                entry = prepared.popleft()
                count = entry.records if type(entry) is Prepared else 1
                self._prepared_records -= count
                self._retired += count
                self._dropped += count
            while len(queue) > keep:
                try:
                    queue.popleft()
                except IndexError:  # the writer took the rest meanwhile
                    break
                self._retired += 1
                self._dropped += 1
            retired = self._retired
        if stopped:
            # No writer will finish a batch to move _done on: nothing is in flight.
            with self._done_cond:
                self._done = retired
                self._done_cond.notify_all()

    def flush(self, timeout: float | None = 5.0) -> bool:
        """Wait until every record submitted before this call is written (or given
        up after its retry, or dropped). True if that happened within ``timeout``
        seconds (None: wait as long as it takes)."""
        started = time.monotonic()
        with self._lock:
            target = self._retired + len(self._queue) + self._prepared_records
        with self._done_cond:
            handed_over = self._done >= target
        if not handed_over:
            if not self._thread.is_alive():
                return False
            self._wake.set()
            with self._done_cond:
                if not (
                    self._done_cond.wait_for(lambda: self._done >= target or not self._thread.is_alive(), timeout)
                    and self._done >= target
                ):
                    return False
        sync = getattr(self.sink, "sync", None)  # a sink that stores elsewhere (another process) confirms it
        if sync is None:
            return True
        return bool(sync(None if timeout is None else max(0.0, timeout - (time.monotonic() - started))))

    def close(self, timeout: float = 5.0) -> bool:
        """Write everything still queued, stop the thread and close the sink.

        Idempotent. True when the thread stopped within ``timeout`` with the queue
        written; False if the sink was still busy (the thread is then left to
        finish on its own and the sink is not closed under it).
        """
        self._closed = True
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        self._shed()  # a submit that raced the last drain: count it as dropped
        try:
            self.sink.close()
        except Exception as err:  # noqa: BLE001 - shutdown goes on whatever the sink does
            self._last_error = f"close: {type(err).__name__}: {err}"
        return True

    def __enter__(self) -> AuditWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- counters ---------------------------------------------------------------

    @property
    def written(self) -> int:
        """Records the sink stored."""
        return self._written

    @property
    def dropped(self) -> int:
        """Records dropped unwritten: the oldest ones on queue overflow, and any submitted after close."""
        return self._dropped

    @property
    def lost(self) -> int:
        """Records given up after their batch failed twice."""
        return self._lost

    @property
    def failed_batches(self) -> int:
        """Batch writes that raised (a batch that fails, then succeeds on retry, counts once)."""
        return self._failed_batches

    @property
    def last_error(self) -> str | None:
        """The last sink error, as ``"<Type>: <message>"``; None if there was none."""
        return self._last_error

    @property
    def pending(self) -> int:
        """Records waiting in the queue."""
        return len(self._queue) + self._prepared_records

    def stats(self) -> dict[str, Any]:
        """Every counter, for health reports."""
        return {
            "written": self._written,
            "dropped": self._dropped,
            "lost": self._lost,
            "failed_batches": self._failed_batches,
            "pending": self.pending,
            "last_error": self._last_error,
        }

    # -- the writer thread ------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self.flush_interval_s)
            self._wake.clear()  # before draining: a record queued meanwhile wakes us again
            stopping = self._stopping
            self._drain()
            if stopping:
                return

    def _drain(self) -> None:
        queue, prepared = self._queue, self._prepared
        while True:
            # Under the lock, also to see it empty: a submit preparing a chunk holds the
            # lock while the chunk is in neither deque, and the last drain must not miss it.
            with self._lock:
                batch: list[Any] = []
                count = 0
                while prepared and count < self.batch_size:  # older than the queue's items
                    entry = prepared.popleft()
                    batch.append(entry)
                    count += entry.records if type(entry) is Prepared else 1
                self._prepared_records -= count
                more = min(len(queue), self.batch_size - count)
                if more > 0:
                    batch += [queue.popleft() for _ in range(more)]
                    count += more
                if not batch:
                    break
                self._retired += count
                position = self._retired
            self._write(batch, count)
            self._report_drops()
            with self._done_cond:
                self._done = position
                self._done_cond.notify_all()
        # (an auto sink asks for larger batches, and prepares them, once a child writes)
        self.batch_size = self._batch_size()
        self._set_thresholds()

    def _write(self, batch: list[Any], records: int) -> None:
        write = self._store_for(batch)
        try:
            write()
        except Exception as err:  # noqa: BLE001 - a sink error must never reach a caller or end the thread
            self._failed_batches += 1
            self._last_error = f"{type(err).__name__}: {err}"
            self._warn(
                f"toolrt audit: writing a batch of {records} record(s) failed ({self._last_error}); trying once more"
            )
        else:
            self._written += records
            return
        time.sleep(self.retry_delay_s)
        try:
            write()
        except Exception as err:  # noqa: BLE001
            self._failed_batches += 1
            self._last_error = f"{type(err).__name__}: {err}"
            self._lost += records
            self._warn(
                f"toolrt audit: a batch of {records} record(s) could not be written and is lost "
                f"({self._last_error}); {self._lost} lost so far"
            )
        else:
            self._written += records

    def _store_for(self, batch: list[AuditRecord | tuple[Any, ...]]) -> Callable[[], None]:
        """How to store ``batch`` (the same work for the write and its retry): as rows
        made once for the whole batch (:func:`~runtime.audit.rows.rows_of`) when the
        sink takes rows, else as records (call items made into records)."""
        sink = self.sink
        write_items = getattr(sink, "write_items", None)
        if write_items is not None:  # a sink that finishes the items elsewhere (another process)
            return lambda: write_items(batch)
        write_rows = getattr(sink, "write_rows", None)
        if write_rows is not None:
            rows = rows_of(batch)
            return lambda: write_rows(rows)
        records = [AuditRecord.from_call(item) if type(item) is tuple else item for item in batch]
        return lambda: sink.write_batch(records)  # type: ignore[arg-type]

    def _warn(self, message: str) -> None:
        """Log ``message`` unless a warning went out less than LOG_EVERY_S ago (then count it)."""
        now = time.monotonic()
        if now - self._logged_at < LOG_EVERY_S:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more audit failure(s) since the last warning)" if self._unlogged else ""
        self._logged_at, self._unlogged = now, 0
        self.warnings_logged += 1
        logger.bind(
            audit_lost=self._lost, audit_dropped=self._dropped, audit_failed_batches=self._failed_batches
        ).warning("{}{}", message, more)

    def _report_drops(self) -> None:
        dropped = self._dropped
        if dropped > self._dropped_logged:
            self._warn(
                f"toolrt audit: {dropped - self._dropped_logged} record(s) dropped unwritten (the queue was full: the "
                f"store is slower than the calls, or stuck); {dropped} so far"
            )
            self._dropped_logged = dropped
