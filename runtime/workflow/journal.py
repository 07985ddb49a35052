"""The journal of workflow runs: one SQLite file (WAL), one row per step transition.

A run writes a ``runs`` row when it starts and when it ends, and an ``events`` row
before each step runs (with its computed arguments and, for built-in compensation,
the copy of the file it is about to change) and after it ends (its report and
result); compensations likewise. :mod:`runtime.workflow.resume` rebuilds a run
killed mid-way from these rows.

When a row must be on disk: before a step that is neither read-only nor idempotent
runs, every row of the run so far is committed with ``synchronous=FULL`` (an fsync)
and the step waits for it, so a kill at any later moment leaves its "started" row
behind. The other rows (a read-only step starting or ending, a run that changed
nothing ending) are committed in batches by the journal's writer thread without the
run waiting: losing them to a kill only means resume runs that read-only step again,
which is safe. A run that changed something waits for its last rows before it
returns, so a finished write run is never resumed.

Retention: a finished run is deleted ``retention_days`` after it ended (checked when
the journal opens); an unfinished run stays until it is resumed to its end.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import ToolrtError

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
BATCH = 64  # buffered rows written together when no write step asks sooner
#: Event kinds: a step (or a compensation) about to run, and one that ended.
STEP_START, STEP_END, COMP_START, COMP_END = "step_start", "step_end", "comp_start", "comp_end"

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


def process_token() -> str:
    """This process as a run owner: its pid and start time (a reused pid is another owner)."""
    return f"{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(token: str) -> bool:
    """Whether the process ``token`` names still runs (a zombie does not)."""
    pid_text, _, ticks = token.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rpartition(")")[2].split()
    except OSError:
        if not Path("/proc/self/stat").exists():  # no /proc: the pid alone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        return False
    return fields[0] != "Z" and fields[19] == ticks


def _start_ticks(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return "0"


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class Journal:
    """One journal file, shared by every run of a runtime. Thread-safe.

    Rows are buffered (as callables that make them, so nothing is encoded on a run's
    path until it is written) and written by whichever thread flushes: every
    :data:`BATCH` rows, after a write step ends (:meth:`write`, no fsync: a killed
    process loses nothing the kernel has), and durably (fsync) by :meth:`commit`,
    which a write step awaits (in a worker thread) before it runs. There is no
    writer thread: a second Python thread busy beside the event loop would cost every
    call a GIL hand-over."""

    def __init__(self, path: Path, *, retention_days: float = 30.0) -> None:
        self.path = Path(path)
        self.retention_days = retention_days
        self._buffer: list[Encoder] = []
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # the connection and the hand-over of the buffer
        self._failure: BaseException | None = None
        self._active: set[str] = set()  # runs this process is running now
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
            if create:
                connection.executescript(_SCHEMA)
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
        """Buffer rows (made by ``rows()`` when written); written with the next batch."""
        buffer = self._buffer
        buffer.append(rows)
        if len(buffer) >= BATCH and self._lock.acquire(blocking=False):  # busy: the next one writes
            try:
                self._write(durable=False)
            except JournalError:
                pass  # kept in _failure: the next step that needs the journal is refused
            finally:
                self._lock.release()

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
        buffer, self._buffer = self._buffer, []
        if not buffer and not durable:
            return
        if self._connection is None:
            self.open_locked()
        connection = self._connection
        assert connection is not None  # noqa: S101 - opened above
        try:
            if durable:
                connection.execute("PRAGMA synchronous=FULL")
            connection.execute("BEGIN")
            for make in buffer:
                for sql, params in make():
                    connection.execute(sql, params)
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

    def open_locked(self) -> None:
        connection = self._connect(create=True)
        self._prune(connection)
        self._connection = connection

    def close(self) -> None:
        """Write what is buffered and close the file (a later write opens it again)."""
        with self._lock:
            try:
                if self._buffer:
                    self._write(durable=True)
            finally:
                connection, self._connection = self._connection, None
                if connection is not None:
                    connection.close()

    def flush(self) -> None:
        """Write what is buffered (a failure is left for the run that needs the journal)."""
        if not self._buffer:
            return
        try:
            self.write()
        except JournalError:
            pass

    # -- runs this process owns ------------------------------------------------------

    def activate(self, run_id: str) -> bool:
        with self._lock:
            if run_id in self._active:
                return False
            self._active.add(run_id)
            return True

    def deactivate(self, run_id: str) -> None:
        with self._lock:
            self._active.discard(run_id)

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
_FOUND: dict[tuple[int, str], tuple[Any, Journal]] = {}  # (settings, workspace) -> its journal


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
    known = _FOUND.get((id(settings), str(workspace_root)))
    if known is not None and known[0] is settings:
        return known[1]  # the path takes a resolve and a hash to find: once per runtime, not per run
    path = journal_path(settings, workspace_root)
    if path is None:
        return None
    key = path.absolute()
    with _SHARED_LOCK:
        journal = _SHARED.get(key)
        if journal is None:
            journal = Journal(key, retention_days=settings.workflow_retention_days)
        journal.open()
        _SHARED[key] = journal
        if len(_FOUND) > 256:
            _FOUND.clear()
        _FOUND[(id(settings), str(workspace_root))] = (settings, journal)
    return journal


def flush_journal(settings: Any, workspace_root: Path | str) -> None:
    """Commit what the journal the settings name has queued, if this process opened it."""
    path = journal_path(settings, workspace_root)
    journal = _SHARED.get(path.absolute()) if path is not None else None
    if journal is not None:
        journal.flush()
