"""Where audit records are stored: an SQLite database (the default) or a JSON-lines file.

Both are written from the :class:`~runtime.audit.writer.AuditWriter` thread only, a
batch at a time, and both may be shared by several processes at once:

- :class:`SqliteSink` uses WAL mode (readers never block the writer and the other
  way round), ``synchronous=NORMAL`` (a commit does not wait for the disk; see the
  writer's docstring for what that can lose), a busy timeout, ``BEGIN IMMEDIATE``
  so a writer takes the write lock before doing anything, and a retry with backoff
  when another process still holds the lock after the busy timeout.
- :class:`JsonlSink` writes a whole batch with one ``write()`` on an ``O_APPEND``
  descriptor and fsyncs it. On a local file system an appending write is placed at
  the end of the file in one piece, so lines from several processes never
  interleave (this does not hold on NFS).

Both files are created readable by their owner only: arguments are redacted, but an
audit log is still a record of what an agent did.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from runtime.audit.record import COLUMNS, AuditRecord, scrub_row
from runtime.errors import ToolrtError

#: The layout version this module writes, kept in ``PRAGMA user_version``.
SCHEMA_VERSION = 1

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS calls (
    id           INTEGER PRIMARY KEY,
    ts           REAL    NOT NULL,
    session_id   TEXT,
    user         TEXT,
    request_id   TEXT,
    trace_id     TEXT,
    call_id      TEXT,
    tool         TEXT,
    tool_version TEXT,
    args         TEXT,
    decision     TEXT,
    rule         TEXT,
    status       TEXT,
    code         TEXT,
    duration_ms  REAL,
    truncated    INTEGER NOT NULL DEFAULT 0,
    artifact     TEXT,
    path         TEXT,
    hash_before  TEXT,
    hash_after   TEXT,
    snapshot     TEXT
);
CREATE INDEX IF NOT EXISTS calls_ts ON calls (ts);
CREATE INDEX IF NOT EXISTS calls_session_ts ON calls (session_id, ts);
CREATE INDEX IF NOT EXISTS calls_tool_ts ON calls (tool, ts);
PRAGMA user_version = {SCHEMA_VERSION};
"""

_INSERT_HEAD = f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES "
_ROW_MARKS = f"({', '.join('?' for _ in COLUMNS)})"
#: Rows per INSERT statement (fewer when the SQLite build allows fewer parameters).
ROWS_PER_STATEMENT = 256


class AuditStoreError(ToolrtError):
    """The audit store cannot be used (written by a newer toolrt, or not an audit database)."""


@runtime_checkable
class Sink(Protocol):
    """Stores batches of audit records. Called from one thread at a time."""

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        """Store ``records`` durably enough, all or (on an exception) preferably none."""
        ...

    def close(self) -> None:
        """Release the file; later writes may reopen it."""
        ...


def _is_busy(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


class SqliteSink:
    """Audit records in an SQLite database (table ``calls``), shared safely by processes.

    The schema is created (idempotently) when the sink is made, so a bad path fails
    here rather than in the writer thread. The connection used for writing is
    opened on first use and again after a fork (a connection must not cross one).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 5000, lock_retries: int = 8) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.lock_retries = lock_retries
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._guard = threading.Lock()  # close() may come from another thread than write_batch()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        conn = self._open()
        try:
            self._retry(lambda: self._create_schema(conn))
        finally:
            conn.close()

    def _open(self) -> sqlite3.Connection:
        opened: list[sqlite3.Connection] = []
        # Switching to WAL takes a lock too, so it can meet another process's transaction.
        self._retry(lambda: opened.append(self._connect()))
        return opened[0]

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are begun and ended here, explicitly.
        # check_same_thread=False: made in one thread, written in the writer thread,
        # closed from whichever calls close(); never used by two at once (_guard).
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise AuditStoreError(f"{self.path}: could not switch the audit database to WAL mode (it is in {mode!r} mode)")
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise AuditStoreError(f"{self.path}: audit database has schema version {version}, newer than this toolrt understands ({SCHEMA_VERSION})")
        if version == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version == 0 and tables - {"calls"}:
                raise AuditStoreError(f"{self.path}: is an SQLite database but not a toolrt audit database (tables: {', '.join(sorted(tables))})")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _retry(self, action: Callable[[], None]) -> None:
        """Run ``action`` and again, with growing jittered sleeps, while the database
        stays locked past the busy timeout (another process in a long transaction)."""
        delay = 0.01
        for attempt in range(self.lock_retries + 1):
            try:
                action()
                return
            except sqlite3.OperationalError as err:
                if not _is_busy(err) or attempt == self.lock_retries:
                    raise
            # Jitter, so processes that met on the lock do not retry in step.
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        """Insert ``records`` in one transaction (all or none)."""
        if not records:
            return
        rows = [record.to_row() for record in records]  # encode once, outside the retries
        with self._guard:
            conn = self._connection()

            def insert() -> None:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._insert(conn, rows)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise

            try:
                try:
                    self._retry(insert)
                except (UnicodeEncodeError, OverflowError, sqlite3.InterfaceError):
                    # One value SQLite cannot bind (a lone surrogate, a huge int) must
                    # not cost the whole batch: scrub every row and insert again.
                    rows = [scrub_row(row) for row in rows]
                    self._retry(insert)
            except BaseException:
                # Start the writer's retry on a fresh connection, in case this one
                # is what broke (I/O error, file replaced underneath).
                self._drop()
                raise

    def _insert(self, conn: sqlite3.Connection, rows: list[tuple[object, ...]]) -> None:
        # Multi-row INSERTs rather than executemany: the sqlite3 module lets go of the
        # GIL around every statement step and must win it back from the calls'
        # thread each time, so one step per row would slow the calls down and the
        # writer most of all. One statement per chunk keeps that to a few handovers.
        step = self._rows_per_statement(conn)
        for start in range(0, len(rows), step):
            chunk = rows[start : start + step]
            conn.execute(_INSERT_HEAD + ", ".join([_ROW_MARKS] * len(chunk)), [value for row in chunk for value in row])

    def _rows_per_statement(self, conn: sqlite3.Connection) -> int:
        try:
            limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except (AttributeError, sqlite3.Error):  # Python built without getlimit
            limit = 999  # the smallest default any SQLite build has had
        return max(1, min(ROWS_PER_STATEMENT, limit // len(COLUMNS)))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            # After a fork the parent's connection is left alone (closing it here
            # could disturb the parent's locks); this process opens its own.
            self._conn = self._open()
            self._pid = os.getpid()
        return self._conn

    def close(self) -> None:
        """Close the write connection (the next write reopens it)."""
        with self._guard:
            self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            try:
                conn.close()
            except sqlite3.Error:
                pass  # closing a broken connection: nothing left to save

    def __repr__(self) -> str:
        return f"SqliteSink({str(self.path)!r})"


class JsonlSink:
    """Audit records as JSON lines appended to a file, shared safely by processes.

    Each batch is one ``write()`` of whole lines on an ``O_APPEND`` descriptor,
    followed by ``fsync``. The descriptor is opened on first use and again after a
    fork. ``fsync=False`` leaves flushing to the OS (faster; a power loss may then
    lose more than the last batch).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._fd: int | None = None
        self._pid = 0
        self._guard = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        """Append one line per record with a single write, then fsync."""
        if not records:
            return
        # "replace": a lone surrogate becomes "?" so that every line stays valid UTF-8.
        data = "".join(f"{record.to_json()}\n" for record in records).encode("utf-8", "replace")
        with self._guard:
            fd = self._descriptor()
            view = memoryview(data)
            while view:
                # A regular file takes the whole buffer in one write unless the disk
                # is full or a signal interrupts; only then is the batch split.
                written = os.write(fd, view)
                view = view[written:]
            if self.fsync:
                os.fsync(fd)

    def _descriptor(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            self._pid = os.getpid()
        return self._fd

    def close(self) -> None:
        """Close the file (the next write reopens it)."""
        with self._guard:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"
