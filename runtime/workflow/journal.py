"""The journal of workflow runs: one SQLite file (WAL), one row per step transition.

A run writes a ``runs`` row when it starts and when it ends, and an ``events`` row
before each step runs (with its computed arguments and, for built-in compensation,
the copy of the file it is about to change) and after it ends (its report and
result); compensations likewise. :mod:`runtime.workflow.resume` rebuilds a run
killed mid-way from these rows.

A run whose steps all only read gets its start row and its end row only (resuming
it means running it again, which is safe): its steps get no rows, and its end row
replaces its start row. Its caller makes no start row: the writer thread makes it,
when it writes a batch, for each such run still running then (:meth:`Journal.defer_start`);
a run that ends before that is written once, by its end row (made by the caller, of
text). A run killed after its start row reached the file is resumed by running its
steps again; one killed before leaves no row (it changed nothing).

The guarantee, exactly. The file is in WAL mode with ``synchronous=NORMAL``: a
committed transaction is in the WAL through the kernel, so it survives the process
being killed (SIGKILL included), not the machine losing power. Three commits are
waited for:

* before a step that is neither read-only nor idempotent runs, every row so far (its
  "started" row included) is committed with ``synchronous=FULL``, an fsync of the
  WAL, and the step waits for it: whatever happens later, even a power cut, the
  journal shows the step as started, and resume reports it ``unknown`` and
  compensates instead of running it twice;
* when such a step ends, its "ended" row is committed at once (no fsync): a killed
  process leaves it ended, not in flight;
* a run that changed something commits its last row with an fsync before it
  returns, so a run its caller saw end is never resumed.

Every other row (a read-only or idempotent step starting or ending, a run starting,
a read-only run ending) is made on the run's thread as text and numbers, so nothing
of the run stays alive in the buffer, and written by the journal's writer thread in
batches, one transaction each (one statement for a batch of runs' rows), at most
``batches.FLUSH_S`` after it was made: a kill loses at
most the rows of that interval, and resume then runs those read-only or idempotent
steps again, which is safe. Nothing waits for these commits.

Checkpoints (copying the WAL into the database, which fsyncs both) run in a thread
of their own once the WAL passes :data:`CHECKPOINT_BYTES`, never on the thread that
writes the rows.

Retention: a finished run is deleted ``retention_days`` after it ended (checked when
the journal opens); an unfinished run stays until it is resumed to its end.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from runtime.errors import ToolrtError
from runtime.workflow.batches import BATCH, BatchWriter
from runtime.workflow.owners import process_token
from runtime.workflow.sqlrows import statements as _statements

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    session TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT NOT NULL,
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    result TEXT
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    step TEXT NOT NULL,
    at REAL NOT NULL,
    data TEXT NOT NULL,
    backup BLOB,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (updated_at);
"""

RUNNING = "running"
CHECKPOINT_CHECK = 8  # batches between looks at the WAL's size
CHECKPOINT_BYTES = 4 << 20  # a WAL this large is checkpointed (SQLite's own default: 1,000 pages)
#: Event kinds: a step (or a compensation) about to run, and one that ended.
STEP_START, STEP_END, COMP_START, COMP_END = "step_start", "step_end", "comp_start", "comp_end"

#: A run's row, written whole when it starts and again when it ends (a run whose steps
#: get no rows: see runlog.RunLog.ended); the later row of a run replaces the earlier.
RUN_ROW = (
    "INSERT OR REPLACE INTO runs (run_id, workflow, fingerprint, session, input, status, owner, started_at,"
    " updated_at, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
Row = tuple[str, tuple[Any, ...]]  # (SQL, parameters)
Encoder = Callable[[], Sequence[Row]]  # rows made in the writer thread (encoding off the run's path)


class JournalError(ToolrtError):
    """The workflow journal cannot be used: missing, corrupt, or no such run."""


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    kind: str
    step: str
    at: float
    data: dict[str, Any]
    backup: bytes | None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as the journal holds it."""

    run_id: str
    workflow: str
    fingerprint: str
    session: dict[str, Any]
    input: dict[str, Any]
    status: str
    owner: str
    started_at: float
    updated_at: float
    result: dict[str, Any] | None
    events: tuple[Event, ...] = ()

    @property
    def finished(self) -> bool:
        return self.status != RUNNING


# One encoder for every row: json.dumps with options builds a new encoder per call,
# which costs more than encoding a step's small report. The C encoder made once is
# faster still (JSONEncoder.encode makes one per call); it keeps no record of the
# containers it is in (a circular value recurses until Python's limit), so a value it
# cannot encode goes to the full encoder, which says what is wrong.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None where the C accelerator is missing
_C_ENCODER = (
    None if _MAKE_ENCODER is None else _MAKE_ENCODER(None, str, encode_basestring, None, ":", ",", False, False, True)
)


def dumps(value: Any) -> str:
    if _C_ENCODER is not None:
        try:
            return "".join(_C_ENCODER(value, 0))
        except (RecursionError, ValueError, TypeError):
            pass
    return _ENCODER.encode(value)


class Journal:
    """One journal file, shared by every run of a runtime. Thread-safe.

    Rows are buffered (a step's rows as callables that make them, so its arguments and
    result are encoded off the run's path; a run's end row made already) and written
    in one transaction per batch: by the journal's writer thread
    (:mod:`runtime.workflow.batches`), after a write step ends by :meth:`write` (no
    fsync: a killed process loses nothing the kernel has), and durably (fsync) by
    :meth:`commit`, which a write step awaits (in a worker thread) before it runs."""

    def __init__(self, path: Path, *, retention_days: float = 30.0) -> None:
        self.path = Path(path)
        self.retention_days = retention_days
        self._buffer: deque[Row | Encoder] = deque()
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # the connection (held by a write, an fsync included)
        self._failure: BaseException | None = None
        self._active: dict[str, object] = {}  # runs this process is running now (see activate)
        # Read-only runs whose start row is not made yet: run id -> what makes it (None
        # once the run ended). The writer makes them for the runs still running when it
        # writes a batch; a run that ends before that is written once, by its end row.
        self._unwritten: dict[str, Callable[[], Row | None]] = {}
        self._commits = 0
        self._variables = 999  # parameters a statement may have (SQLite's own limit, read when the file opens)
        self._checkpointing = False
        self._batches = BatchWriter(
            self._buffer, self._write_batch, "toolrt-journal-writer", lambda: bool(self._unwritten)
        )
        self.owner = process_token()

    # -- opening ---------------------------------------------------------------------

    def _connect(self, *, create: bool) -> sqlite3.Connection:
        if not create and not self.path.exists():
            raise JournalError(
                f"no workflow journal at {self.path}: no run has been journaled there."
                " Check --workspace and the state directory (or the workflow_journal setting)."
            )
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            connection.execute("PRAGMA journal_mode=WAL")
            # A commit reaches the kernel (a killed process loses nothing); commit()
            # switches to FULL for the commits a write step waits for (fsync).
            connection.execute("PRAGMA synchronous=NORMAL")
            self._variables = connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
            if create:
                connection.executescript(_SCHEMA)
                connection.execute("PRAGMA wal_autocheckpoint=0")  # the writer: see _maybe_checkpoint
            _check_schema(connection)
        except sqlite3.DatabaseError as err:
            raise JournalError(self._corrupt(err)) from None
        except OSError as err:
            raise JournalError(f"the workflow journal at {self.path} cannot be opened: {err}") from None
        return connection

    def _corrupt(self, err: object) -> str:
        return (
            f"the workflow journal at {self.path} is not a readable journal ({err})."
            " Move it aside to start a new one; the runs it held cannot be resumed."
        )

    def open(self) -> None:
        """Create the file if needed and prune old runs (once).
        Raises :class:`JournalError` when the file cannot be used."""
        if self._connection is not None:
            return
        with self._lock:
            if self._connection is not None:
                return
            connection = self._connect(create=True)
            self._prune(connection)
            self._connection = connection
            self._failure = None

    def _prune(self, connection: sqlite3.Connection) -> None:
        cutoff = time.time() - self.retention_days * 86400
        try:
            connection.execute("BEGIN IMMEDIATE")
            stale = "SELECT run_id FROM runs WHERE status != ? AND updated_at < ?"
            connection.execute(f"DELETE FROM events WHERE run_id IN ({stale})", (RUNNING, cutoff))
            connection.execute("DELETE FROM runs WHERE status != ? AND updated_at < ?", (RUNNING, cutoff))
            connection.execute("COMMIT")
        except sqlite3.DatabaseError as err:
            connection.close()
            raise JournalError(self._corrupt(err)) from None

    # -- writing ---------------------------------------------------------------------

    def submit(self, rows: Encoder) -> None:
        """Buffer rows (made by ``rows()`` when written); the writer thread writes them
        with the next batch (see :mod:`runtime.workflow.batches`)."""
        self._buffer.append(rows)  # a deque: appends and the writer's pops never lose a row
        self._batches.notify()

    def defer_start(self, run_id: str, start_row: Callable[[], Row | None]) -> None:
        """Have the writer make a run's start row with ``start_row()`` when it next writes,
        if the run is still running then (``start_row()`` returns None once it ended; its
        end row, written whole, stands for both). A run that ends within a batch costs
        its caller no encoding and the file one row."""
        self._unwritten[run_id] = start_row
        if self._batches.waiting:
            self._batches.notify()

    def drop_start(self, run_id: str) -> bool:
        """Forget the deferred start row of ``run_id``: True when it was not made yet."""
        return self._unwritten.pop(run_id, None) is not None

    def add(self, row: Row | Encoder) -> None:
        """Buffer one row made already (text and numbers: nothing for the writer to
        encode), or a callable that makes rows in the writer."""
        buffer = self._buffer
        buffer.append(row)
        batches = self._batches
        if batches.waiting or len(buffer) >= BATCH:  # else the running writer's timer takes it
            batches.notify()

    def _write_batch(self) -> None:
        with self._lock:
            try:
                self._write(durable=False)
            except JournalError:
                pass  # kept in _failure: the next step that needs the journal is refused

    def write(self) -> None:
        """Write what is buffered now, without fsync (it survives a killed process)."""
        with self._lock:
            self._write(durable=False)

    def commit(self) -> None:
        """Write what is buffered and fsync it; :class:`JournalError` when it cannot be.
        Blocks for the fsync: call it from a worker thread in async code."""
        with self._lock:
            self._write(durable=True)

    def _write(self, *, durable: bool) -> None:
        if self._failure is not None:
            raise JournalError(f"the workflow journal at {self.path} failed: {self._failure}")
        buffer = self._buffer
        starts: list[Row] = []
        unwritten = self._unwritten
        if unwritten:
            # Before the buffer: a run that ended since is then written as it started and,
            # in this batch or a later one, as it ended (its end row replaces this one).
            for run_id in list(unwritten):
                make = unwritten.pop(run_id, None)
                row = make() if make is not None else None
                if row is not None:
                    starts.append(row)
        if not buffer and not starts and not durable:
            return
        if self._connection is None:
            self.open_locked()
        connection = self._connection
        assert connection is not None  # noqa: S101 - opened above
        try:
            if durable:
                connection.execute("PRAGMA synchronous=FULL")
            # Everything is encoded before the transaction starts, and written in one
            # transaction of a few statements (see _statements).
            sql_of = ""
            params: list[tuple[Any, ...]] = []
            groups: list[tuple[str, list[tuple[Any, ...]]]] = []
            latest: dict[Any, int] = {}  # run id -> where its row is in params (a run of RUN_ROW rows)
            while starts or buffer:
                item = starts.pop(0) if starts else buffer.popleft()
                for sql, values in (item,) if isinstance(item, tuple) else item():
                    if sql is not sql_of:
                        sql_of, params = sql, []
                        groups.append((sql, params))
                        latest = {}
                    if sql is RUN_ROW:
                        # A run's later row replaces its earlier one: a run that ends within
                        # a batch of its start is written once, as it ended.
                        at = latest.get(values[0])
                        if at is not None:
                            params[at] = values
                            continue
                        latest[values[0]] = len(params)
                    params.append(values)
            variables = self._variables
            statements = [statement for sql, rows in groups for statement in _statements(sql, rows, variables)]
            if len(statements) == 1 and (not statements[0][2] or len(statements[0][1]) == 1):
                # One statement is a transaction of its own: the batch is one SQLite call.
                connection.execute(statements[0][0], statements[0][1][0] if statements[0][2] else statements[0][1])
            else:
                connection.execute("BEGIN")
                for statement, values, many in statements:
                    if many:
                        connection.executemany(statement, values)
                    else:
                        connection.execute(statement, values)
                connection.execute("COMMIT")
            if durable:
                connection.execute("PRAGMA synchronous=NORMAL")
        except Exception as err:  # noqa: BLE001 - a full disk or a broken file: every later write fails
            self._failure = err
            try:
                connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise JournalError(f"the workflow journal at {self.path} failed: {err}") from None
        self._commits += 1
        if self._commits % CHECKPOINT_CHECK == 0:
            self._maybe_checkpoint()

    def _maybe_checkpoint(self) -> None:
        """Start a checkpoint in a thread of its own once the WAL has grown.

        The writing connection never checkpoints (``wal_autocheckpoint=0``): with
        ``synchronous=NORMAL`` a checkpoint fsyncs the WAL and the database, which
        would stall the event loop that writes the batches for milliseconds. A
        PASSIVE checkpoint never blocks the writer; the thread spends its time in
        SQLite and fsync, without the interpreter lock."""
        if self._checkpointing:
            return
        try:
            size = os.stat(f"{self.path}-wal").st_size
        except OSError:
            return
        if size < CHECKPOINT_BYTES:
            return
        self._checkpointing = True
        threading.Thread(target=self._checkpoint, name="toolrt-journal-checkpoint", daemon=True).start()

    def _checkpoint(self) -> None:
        try:
            connection = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            try:
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                connection.close()
        except sqlite3.Error:
            pass  # the next one tries again; the WAL only grows meanwhile
        finally:
            self._checkpointing = False

    def open_locked(self) -> None:
        connection = self._connect(create=True)
        self._prune(connection)
        self._connection = connection

    def close(self) -> None:
        """Write what is buffered and close the file (a later write opens it again)."""
        self._batches.stop()
        with self._lock:
            try:
                if self._buffer or self._unwritten:
                    self._write(durable=True)
            finally:
                connection, self._connection = self._connection, None
                if connection is not None:
                    connection.close()

    def flush(self) -> None:
        """Write what is buffered, and wait for a batch the writer thread is writing (a
        failure is left for the run that needs the journal)."""
        try:
            self.write()  # takes the lock: a batch in progress ends first
        except JournalError:
            pass

    # -- runs this process owns ------------------------------------------------------

    def activate(self, run_id: str) -> bool:
        """Mark ``run_id`` as running in this process; False if it already is. One
        ``setdefault`` on a dict of str keys: atomic, no lock to take per run."""
        mark = object()
        return self._active.setdefault(run_id, mark) is mark

    def deactivate(self, run_id: str) -> None:
        self._active.pop(run_id, None)

    def claim(self, record: RunRecord, owner: str) -> bool:
        """Take over ``record`` for ``owner`` if no one else did since it was read."""
        self.flush()
        with self._reader() as connection:
            connection.execute("BEGIN IMMEDIATE")
            changed = connection.execute(
                "UPDATE runs SET owner = ?, updated_at = ? WHERE run_id = ? AND owner = ? AND status = ?",
                (owner, time.time(), record.run_id, record.owner, RUNNING),
            ).rowcount
            connection.execute("COMMIT")
        return changed == 1

    # -- reading ---------------------------------------------------------------------

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect(create=False)
        try:
            yield connection
        except sqlite3.DatabaseError as err:
            raise JournalError(self._corrupt(err)) from None
        finally:
            connection.close()

    def load(self, run_id: str) -> RunRecord:
        """The run ``run_id`` with its events; :class:`JournalError` when there is none."""
        self.flush()
        with self._reader() as connection:
            row = connection.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise JournalError(
                    f"no run `{run_id}` in the workflow journal at {self.path};"
                    " `toolrt workflow list` shows the runs it holds."
                )
            events = connection.execute(
                "SELECT seq, kind, step, at, data, backup FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        try:
            return _record(row, tuple(Event(s, k, st, at, json.loads(d), b) for s, k, st, at, d, b in events))
        except (ValueError, TypeError, IndexError) as err:
            raise JournalError(self._corrupt(f"run {run_id}: {err}")) from None

    def runs(self, limit: int = 50) -> list[RunRecord]:
        """The newest runs first (without their events)."""
        self.flush()
        with self._reader() as connection:
            rows = connection.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY started_at DESC LIMIT ?", (limit,)
            ).fetchall()
        try:
            return [_record(row, ()) for row in rows]
        except (ValueError, TypeError, IndexError) as err:
            raise JournalError(self._corrupt(err)) from None


_RUN_COLUMNS = "run_id, workflow, fingerprint, session, input, status, owner, started_at, updated_at, result"


def _record(row: Sequence[Any], events: tuple[Event, ...]) -> RunRecord:
    run_id, workflow, fingerprint, session, arguments, status, owner, started, updated, result = row
    return RunRecord(
        run_id=run_id,
        workflow=workflow,
        fingerprint=fingerprint,
        session=json.loads(session),
        input=json.loads(arguments),
        status=status,
        owner=owner,
        started_at=started,
        updated_at=updated,
        result=json.loads(result) if result else None,
        events=events,
    )


def _check_schema(connection: sqlite3.Connection) -> None:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"runs", "events"} <= tables:
        raise sqlite3.DatabaseError("it has no runs and events tables")


_SHARED: dict[Path, Journal] = {}
_SHARED_LOCK = threading.Lock()
_FOUND: dict[tuple[int, Any], tuple[Any, Journal | None]] = {}  # (settings, workspace) -> its journal
_LAST_FOUND: tuple[Any, Any, Journal | None] = (None, None, None)  # the last (settings, workspace, journal) found


def journal_path(settings: Any, workspace_root: Path | str) -> Path | None:
    """Where the ``workflow_journal`` setting puts the journal of the workspace at
    ``workspace_root`` (None: ``off``). By default in a folder of the workspace's own in
    the state directory, outside the workspace (as the audit log: the agent's tools must
    not reach it); a path given is used as it is."""
    from runtime.audit.location import workspace_dir

    where = str(settings.workflow_journal or "").strip()
    if where == "off":
        return None
    if where:
        return Path(where).expanduser()
    return workspace_dir(workspace_root, "workflows", settings) / "journal.sqlite3"


def journal_for(settings: Any, workspace_root: Path | str) -> Journal | None:
    """The journal the settings name, shared by every runtime of this process that
    names the same file, opened (and pruned) on first use; None when it is ``off``.
    Raises :class:`JournalError` when the file cannot be used."""
    global _LAST_FOUND
    last = _LAST_FOUND  # one read of a tuple: another thread replacing it never mixes two entries
    if last[0] is settings and last[1] is workspace_root:
        return last[2]  # the same runtime as the last run: no lookup at all
    found = _FOUND.get((id(settings), workspace_root))
    if found is not None and found[0] is settings:
        _LAST_FOUND = (settings, workspace_root, found[1])
        return found[1]  # the path takes a resolve and a hash to find: once per runtime, not per run
    path = journal_path(settings, workspace_root)
    journal = None
    with _SHARED_LOCK:
        if path is not None:
            key = path.absolute()
            journal = _SHARED.get(key)
            if journal is None:
                journal = Journal(key, retention_days=settings.workflow_retention_days)
            journal.open()
            _SHARED[key] = journal
        if len(_FOUND) > 256:
            _FOUND.clear()
        _FOUND[(id(settings), workspace_root)] = (settings, journal)
        _LAST_FOUND = (settings, workspace_root, journal)
    return journal


def _forget_after_fork() -> None:
    # A forked child is another owner (its own pid): it opens the journal again, with
    # its own connection (SQLite connections must not cross a fork), locks and thread.
    global _SHARED_LOCK, _LAST_FOUND
    _SHARED_LOCK = threading.Lock()
    _SHARED.clear()
    _FOUND.clear()
    _LAST_FOUND = (None, None, None)


os.register_at_fork(after_in_child=_forget_after_fork)


def flush_journal(settings: Any, workspace_root: Path | str) -> None:
    """Commit what the journal the settings name has queued, if this process opened it."""
    path = journal_path(settings, workspace_root)
    journal = _SHARED.get(path.absolute()) if path is not None else None
    if journal is not None:
        journal.flush()
