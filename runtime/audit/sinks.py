"""Where audit records are stored: an SQLite database (the default) or a JSON-lines file.

Both are written from the :class:`~runtime.audit.writer.AuditWriter` thread only, a
batch at a time, and both may be shared by several processes at once; both link
every record into the hash chain of :mod:`runtime.audit.chain` while they hold the
store's write lock, so that the chain stays one line whoever writes:

- :class:`SqliteSink` uses WAL mode (readers never block the writer and the other
  way round), ``synchronous=NORMAL`` (a commit does not wait for the disk; see the
  writer's docstring for what that can lose), a busy timeout, ``BEGIN IMMEDIATE``
  so a writer takes the write lock before doing anything, and a retry with backoff
  when another process still holds the lock after the busy timeout. A database
  from before the chain is migrated when a sink opens it: its rows stay unlinked.
- :class:`~runtime.audit.jsonl.JsonlSink` appends whole lines under an exclusive
  ``flock`` (see its module).

Both files are created readable by their owner only: arguments are redacted, but an
audit log is still a record of what an agent did.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import random
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Protocol, runtime_checkable

from loguru import logger

from runtime.audit.chain import GENESIS, row_body
from runtime.audit.jsonl import JsonlSink
from runtime.audit.record import COLUMNS, AuditRecord, scrub_row
from runtime.audit.rows import rows_of
from runtime.errors import ToolrtError

#: The layout version this module writes, kept in ``PRAGMA user_version``. Version 2
#: added the hash chain (``seq``, ``prev_hash``, ``hash`` and the ``chain_head`` table),
#: version 3 the ``staged`` column (staged-rollout rules that matched).
SCHEMA_VERSION = 3

_CALLS = """
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
    snapshot     TEXT,
    staged       TEXT,
    seq          INTEGER,
    prev_hash    TEXT,
    hash         TEXT
);
CREATE INDEX IF NOT EXISTS calls_ts ON calls (ts);
CREATE INDEX IF NOT EXISTS calls_session_ts ON calls (session_id, ts);
CREATE INDEX IF NOT EXISTS calls_tool_ts ON calls (tool, ts)
"""
# Version 1 to 2: rows already there keep NULL links ("before the chain started").
_CHAIN_COLUMNS = """
ALTER TABLE calls ADD COLUMN seq INTEGER;
ALTER TABLE calls ADD COLUMN prev_hash TEXT;
ALTER TABLE calls ADD COLUMN hash TEXT
"""
# One row: the last position and hash, and how many rows came before the chain
# (NULL: a writer found the row gone and rebuilt it). Kept in the same transaction
# as the rows, so records cut off the end of the table show as missing.
_HEAD = """
CREATE TABLE IF NOT EXISTS chain_head (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    seq    INTEGER NOT NULL,
    hash   TEXT    NOT NULL,
    before INTEGER
)
"""

_LINKED_COLUMNS = (*COLUMNS, "seq", "prev_hash", "hash")
_INSERT_HEAD = f"INSERT INTO calls ({', '.join(_LINKED_COLUMNS)}) VALUES "
# The columns a row may leave empty are bound through NULLIF(?, x''), and an empty one as
# an empty blob: Python's sqlite3 binds None only after looking for an adapter for it (a
# dictionary miss and two failed attribute lookups, each raising), and a call's row has
# about ten empty columns; the insert of such a row takes about a quarter less CPU so. No
# stored value is a blob (a row holds text, numbers and None only, see
# record.finish_row), so NULLIF gives back NULL exactly where the row had None (and a
# None bound as it is would give NULL too).
_NOT_NULL = frozenset({"ts", "truncated", "seq", "prev_hash", "hash"})
_ROW_MARKS = "(" + ", ".join("?" if name in _NOT_NULL else "NULLIF(?, x'')" for name in _LINKED_COLUMNS) + ")"
_EMPTY = bytearray()
_flat = itertools.chain.from_iterable
#: Rows per INSERT statement (fewer when the SQLite build allows fewer parameters).
ROWS_PER_STATEMENT = 256


__all__ = ["ROWS_PER_STATEMENT", "SCHEMA_VERSION", "AuditStoreError", "JsonlSink", "Sink", "SqliteSink"]


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


_SIDE_FILES = ("", "-wal", "-shm")


def _statx_function() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function: Callable[..., int] = libc.statx
    except (OSError, AttributeError):
        return None
    return function


_STATX = _statx_function()
_AT_FDCWD = -100
_STATX_ATTR_LOCKED = 0x10 | 0x20  # STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND


def _locked_flags(path: str) -> bool:
    """True when ``path`` is immutable or append-only (``chattr +i``/``+a``). SQLite maps
    the ``-shm`` file into memory, and writing through that mapping to a file that cannot
    change ends the whole process with SIGBUS: such a store is refused before SQLite sees it.

    Read with ``statx``, which needs no open descriptor: opening and closing one of the
    database's files in this process would drop every POSIX lock SQLite holds on it."""
    if _STATX is not None:
        buffer = ctypes.create_string_buffer(256)  # struct statx; stx_attributes is at offset 8
        if _STATX(_AT_FDCWD, os.fsencode(path), 0x100, 0, buffer) != 0:  # AT_SYMLINK_NOFOLLOW
            return False
        attributes = struct.unpack_from("Q", buffer.raw, 8)[0]
        mask = struct.unpack_from("Q", buffer.raw, 0x30)[0]  # stx_attributes_mask
        return bool(attributes & mask & _STATX_ATTR_LOCKED)
    return False


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
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file the connection has open
        self.recreated = 0  # times the database was found deleted or replaced and made again
        self._guard = threading.Lock()  # close() may come from another thread than write_batch()
        self._prepare()

    def _prepare(self) -> None:
        """Make the folder, the file and the schema (each only if missing)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._refuse_locked()
        conn = self._open()
        try:
            self._retry(lambda: self._create_schema(conn))
        finally:
            conn.close()

    def _refuse_locked(self) -> None:
        for suffix in _SIDE_FILES:
            name = f"{self.path}{suffix}"
            if _locked_flags(name):
                raise AuditStoreError(
                    f"{name} is immutable or append-only (chattr); the audit database cannot be written. Clear the "
                    "flag (chattr -i -a) or move the store."
                )

    def _current_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _open(self) -> sqlite3.Connection:
        opened: list[sqlite3.Connection] = []
        # Switching to WAL takes a lock too, so it can meet another process's transaction.
        self._retry(lambda: opened.append(self._connect()))
        return opened[0]

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are begun and ended here, explicitly.
        # check_same_thread=False: made in one thread, written in the writer thread,
        # closed from whichever calls close(); never used by two at once (_guard).
        # cached_statements: the INSERTs come in a handful of fixed sizes (see _insert), so a
        # small cache holds them all, and a server that runs for weeks keeps flat memory.
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
            cached_statements=16,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise AuditStoreError(
                    f"{self.path}: could not switch the audit database to WAL mode (it is in {mode!r} mode)"
                )
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise AuditStoreError(
                f"{self.path}: audit database has schema version {version}, newer than this toolrt understands "
                f"({SCHEMA_VERSION})"
            )
        if version == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have migrated meanwhile.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                self._migrate(conn, version)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _migrate(self, conn: sqlite3.Connection, version: int) -> None:
        """Bring the schema from ``version`` to :data:`SCHEMA_VERSION` (inside a write transaction)."""
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == 0 and tables - {"calls", "chain_head"}:
            names = ", ".join(sorted(tables))
            raise AuditStoreError(f"{self.path}: an SQLite database but not a toolrt audit database (tables: {names})")
        columns = {row[1] for row in conn.execute("PRAGMA table_info(calls)")} if "calls" in tables else set()
        for statement in _CALLS.split(";"):
            conn.execute(statement)
        if "seq" not in columns and columns:
            for statement in _CHAIN_COLUMNS.split(";"):
                conn.execute(statement)
        if "staged" not in columns and columns:
            conn.execute("ALTER TABLE calls ADD COLUMN staged TEXT")  # version 2 to 3: NULL in the rows there
        conn.execute(_HEAD)
        before = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
        conn.execute("INSERT OR IGNORE INTO chain_head (id, seq, hash, before) VALUES (1, 0, ?, ?)", (GENESIS, before))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

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
        """Insert ``records`` in one transaction (all or none), each linked to the one before.

        The link is made inside the write transaction, after ``BEGIN IMMEDIATE`` has
        taken the write lock: the last position and hash are read from the head
        there, so two processes (or two sinks) writing at once never fork the chain.
        The bodies (:func:`~runtime.audit.chain.row_body`) are encoded before the lock
        is taken; only the hashing is done under it.
        """
        if records:
            self.write_rows(rows_of(records))

    def write_rows(self, rows: Sequence[tuple[object, ...]]) -> None:
        """Insert rows made by :func:`~runtime.audit.rows.rows_of` (what :meth:`write_batch`
        does after encoding its records), all or none, each linked to the one before."""
        if not rows:
            return
        with self._guard:
            conn = self._connection()
            try:
                try:
                    batch = list(rows)
                    bodies = [row_body(row) for row in batch]
                    self._retry(lambda: self._insert_linked(conn, batch, bodies))
                except (UnicodeEncodeError, OverflowError, sqlite3.InterfaceError):
                    # One value SQLite cannot bind (a lone surrogate, a huge int) must
                    # not cost the whole batch: scrub every row and insert again.
                    batch = [scrub_row(row) for row in rows]
                    bodies = [row_body(row) for row in batch]
                    self._retry(lambda: self._insert_linked(conn, batch, bodies))
            except BaseException:
                # Start the writer's retry on a fresh connection, in case this one
                # is what broke (I/O error, file replaced underneath).
                self._drop()
                raise

    def _insert_linked(self, conn: sqlite3.Connection, rows: list[tuple[object, ...]], bodies: list[bytes]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            seq, prev = self._head(conn)
            links = []
            for body in bodies:  # link_hash, inlined: this loop runs once per record
                seq += 1
                digest = sha256(b"%s\n%d\n%s" % (prev.encode("ascii"), seq, body)).hexdigest()
                links.append((seq, prev, digest))
                prev = digest
            self._insert(conn, rows, links)
            conn.execute("UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1", (seq, prev))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _head(self, conn: sqlite3.Connection) -> tuple[int, str]:
        """The last position and hash (inside the write transaction). When the head
        row was removed, the chain goes on from the last linked row, and the rebuilt
        head says it was rebuilt, so that the verifier reports it."""
        try:
            found = conn.execute("SELECT seq, hash FROM chain_head WHERE id = 1").fetchone()
        except sqlite3.OperationalError as err:
            if "no such table" not in str(err):
                raise
            conn.execute(_HEAD)
            found = None
        if found is not None:
            return int(found[0]), str(found[1])
        last = conn.execute("SELECT seq, hash FROM calls WHERE seq IS NOT NULL ORDER BY id DESC LIMIT 1").fetchone()
        seq, prev = (int(last[0]), str(last[1])) if last is not None else (0, GENESIS)
        conn.execute("INSERT INTO chain_head (id, seq, hash, before) VALUES (1, ?, ?, NULL)", (seq, prev))
        return seq, prev

    def _insert(
        self, conn: sqlite3.Connection, rows: list[tuple[object, ...]], links: list[tuple[int, str, str]]
    ) -> None:
        # Multi-row INSERTs rather than executemany: the sqlite3 module lets go of the
        # GIL around every statement step and must win it back from the calls'
        # thread each time, so one step per row would slow the calls down and the
        # writer most of all. One statement per chunk keeps that to a few handovers.
        # Chunks of the largest power of two that fits: every batch is written with the
        # same few statements (at most 9), not one new statement per batch size, whose
        # prepared copies would fill the statement cache and grow memory for good.
        step = self._rows_per_statement(conn)
        start = 0
        while start < len(rows):
            size = 1 << min(step, len(rows) - start).bit_length() - 1
            # Each row's values, then its link's, with no joined tuple per record; None as an empty blob.
            pairs = zip(rows[start : start + size], links[start : start + size], strict=True)
            values = [_EMPTY if value is None else value for value in _flat(_flat(pairs))]
            conn.execute(_INSERT_HEAD + ", ".join([_ROW_MARKS] * size), values)
            start += size

    def _rows_per_statement(self, conn: sqlite3.Connection) -> int:
        try:
            limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except (AttributeError, sqlite3.Error):  # Python built without getlimit
            limit = 999  # the smallest default any SQLite build has had
        return max(1, min(ROWS_PER_STATEMENT, limit // len(_LINKED_COLUMNS)))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            if self._current_identity() == self._identity:
                self._refuse_locked()
                return self._conn
            # Deleted, or replaced by another file: writing on would put every record in
            # a file nobody can open any more. Make the store again and say so.
            self._drop()
            self._discard_stale_side_files()
            self.recreated += 1
            logger.bind(audit_store=str(self.path)).warning(
                "toolrt audit database {} was deleted or replaced; making a new one (records written before are in "
                "the old file only)",
                self.path,
            )
            self._prepare()
        elif self._conn is None and self._identity is not None and self._current_identity() is None:
            self._prepare()  # the last write failed and the file is gone: make it again
        # After a fork the parent's connection is left alone (closing it here
        # could disturb the parent's locks); this process opens its own.
        self._refuse_locked()
        self._conn = self._open()
        self._pid = os.getpid()
        self._identity = self._current_identity()
        return self._conn

    def _discard_stale_side_files(self) -> None:
        """The -wal and -shm left beside a deleted database belong to it, not to the new one."""
        if self._current_identity() is not None:
            return
        for suffix in _SIDE_FILES[1:]:
            try:
                os.unlink(f"{self.path}{suffix}")
            except OSError:
                pass

    def close(self) -> None:
        """Close the write connection (the next write reopens it)."""
        with self._guard:
            self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and any(_locked_flags(f"{self.path}{suffix}") for suffix in _SIDE_FILES):
            # Closing checkpoints the WAL through the mapped -shm file: on a file that cannot
            # change that is a SIGBUS. The connection is kept, unused, for the process's life:
            # one extra reference that is never given back, so that not even the
            # interpreter's shutdown frees (and so closes) it.
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(conn))
            return
        if conn is not None and self._pid == os.getpid():
            try:
                conn.close()
            except sqlite3.Error:
                pass  # closing a broken connection: nothing left to save

    def __repr__(self) -> str:
        return f"SqliteSink({str(self.path)!r})"
