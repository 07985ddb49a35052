"""The audit log of a fleet in PostgreSQL: the same records and hash chain as the SQLite sink.

Tables (created when missing, under an advisory lock so that workers starting
together do not race)::

    toolrt_audit        the records: id, chain, the audit columns, seq, prev_hash, hash, batch
    toolrt_audit_head   one row per chain: its last position and hash
    toolrt_audit_batch  the id of every batch stored, so that a batch sent twice is stored once

**One chain per workspace.** ``chain`` names it (by default the name of the
workspace's audit folder: its name and a hash of its path). A batch is linked inside
its transaction after ``SELECT ... FOR UPDATE`` on the chain's head row, so writers in
any number of processes and hosts append to one unbroken chain, in commit order;
``toolrt audit --dsn ... verify`` walks each chain (:mod:`runtime.audit.pgread`).

**Off the hot path.** The sink is driven by the :class:`~runtime.audit.writer.AuditWriter`
thread: one transaction and one ``COPY`` per batch.

**PostgreSQL unreachable.** A batch that cannot be stored (connection refused or
dropped, pool timeout) is written to a spool on local disk (:mod:`runtime.audit.spool`,
bounded by ``spool_max_bytes``), a warning is logged once per outage, and later
batches queue behind it so that order is kept. A background thread retries every
``retry_s``; once the server answers, the spool is replayed in order, then the sink
goes on as before (an info record says how many were replayed). A batch whose
commit was lost with the connection is replayed too and skipped by its batch id, so
nothing is stored twice. A batch that does not fit in the spool is counted in
``spool_lost`` and logged as an error: never lost silently. :meth:`PostgresSink.stats`
has the counters (the runtime's metrics show them under ``audit``).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loguru import logger

from runtime.audit.chain import GENESIS, link_hash, row_body
from runtime.audit.record import COLUMNS, AuditRecord, scrub_row
from runtime.audit.rows import rows_of
from runtime.audit.sinks import AuditStoreError
from runtime.audit.spool import Spool

try:
    import psycopg
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]
else:
    # The pool logs each failed reconnection at WARNING; with no handler anywhere Python
    # would print them to stderr. The outage is logged once here instead; an app that
    # configured logging still gets the pool's records (they propagate as usual).
    logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

MISSING = "the PostgreSQL driver is not installed: pip install 'toolrt[postgres]'"

TABLE = "toolrt_audit"
HEAD = "toolrt_audit_head"
BATCHES = "toolrt_audit_batch"

_FLOAT_COLUMNS = frozenset({"ts", "duration_ms"})
_INT_COLUMNS = frozenset({"truncated"})


def _column_type(name: str) -> str:
    if name in _FLOAT_COLUMNS:
        return "DOUBLE PRECISION" + (" NOT NULL" if name == "ts" else "")
    if name in _INT_COLUMNS:
        return "INTEGER NOT NULL DEFAULT 0"
    return "TEXT"


SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (id BIGSERIAL PRIMARY KEY, chain TEXT NOT NULL, "
    + ", ".join(f'"{name}" {_column_type(name)}' for name in COLUMNS)
    + ", seq BIGINT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL, batch TEXT NOT NULL)",
    f'ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS "staged" TEXT',  # a table made before the column
    f"CREATE INDEX IF NOT EXISTS {TABLE}_chain_id ON {TABLE} (chain, id)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_ts ON {TABLE} (ts)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_session_ts ON {TABLE} (session_id, ts)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_tool_ts ON {TABLE} (tool, ts)",
    f"CREATE TABLE IF NOT EXISTS {HEAD} (chain TEXT PRIMARY KEY, seq BIGINT NOT NULL, hash TEXT NOT NULL, before "
    "BIGINT)",
    f"CREATE TABLE IF NOT EXISTS {BATCHES} (id TEXT PRIMARY KEY, chain TEXT NOT NULL, stored_at TIMESTAMPTZ NOT NULL "
    "DEFAULT now())",
)
_COPY = (
    f"COPY {TABLE} (chain, {', '.join(chr(34) + c + chr(34) for c in COLUMNS)}, seq, prev_hash, hash, batch) FROM STDIN"
)


def pg_row(row: Sequence[Any]) -> tuple[Any, ...]:
    """A record's row as PostgreSQL stores and gives it back: text without NUL characters
    (PostgreSQL text cannot hold them: each becomes U+FFFD), nothing SQL cannot bind.
    The chain is computed over this, so verify reads back the very values hashed."""
    values = tuple(
        value.replace("\x00", "\ufffd") if type(value) is str and "\x00" in value else value for value in row
    )
    try:
        row_body(values)
    except (UnicodeEncodeError, ValueError, TypeError):
        values = tuple(
            value.replace("\x00", "\ufffd") if type(value) is str else value for value in scrub_row(tuple(values))
        )
    return values


def _is_down(err: BaseException) -> bool:
    """An error that says the server cannot be reached now (worth spooling), not a bad row."""
    if psycopg is None:
        return False
    return isinstance(err, PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError | OSError)


def ensure_schema(conn: Any) -> None:
    """Create the tables when missing (inside one transaction under an advisory lock)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('toolrt_audit_schema'))")
        for statement in SCHEMA:
            conn.execute(statement)


class PostgresSink:
    """Audit records in PostgreSQL, one hash chain per ``chain``, spooled to
    ``spool_dir`` while the server is unreachable (see the module docstring).

    Connects lazily: making one never fails for an unreachable server.
    """

    def __init__(
        self,
        dsn: str,
        *,
        chain: str,
        spool_dir: str | Path,
        spool_max_bytes: int = 64 * 1024 * 1024,
        connect_timeout_s: float = 3.0,
        retry_s: float = 1.0,
        pool_size: int = 2,
    ) -> None:
        if psycopg is None:
            raise AuditStoreError(MISSING)
        if not chain:
            raise ValueError("chain must be a non-empty name")
        self.dsn = dsn
        self.chain = chain
        self.retry_s = retry_s
        self.spool = Spool(spool_dir, spool_max_bytes)
        self._pool = ConnectionPool(
            dsn,
            min_size=0,
            max_size=pool_size,
            timeout=connect_timeout_s,
            kwargs={
                "connect_timeout": max(1, int(connect_timeout_s)),
                "autocommit": True,
                "application_name": "toolrt-audit",
            },
            check=ConnectionPool.check_connection,
            open=False,
        )
        self._pool.open(wait=False)
        self._lock = threading.Lock()  # the writer thread and the replay thread take turns
        self._schema_ready = False
        self._down_since: str | None = None
        self._stored = 0
        self._spooled = 0
        self._replayed = 0
        self._spool_lost = 0
        self._duplicates = 0
        self._stop = threading.Event()
        self._drained = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._retry_loop, name="toolrt-audit-replay", daemon=True)
        self._thread.start()

    # -- the writer's side --------------------------------------------------------

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        """Store ``records`` as one linked batch, or spool them to disk while the
        server is unreachable. Raises only for a batch PostgreSQL rejects (not for an
        outage, and not for a spool that is full: that is counted and logged)."""
        if records:
            self.write_rows(rows_of(records))

    def write_rows(self, stored: Sequence[tuple[Any, ...]]) -> None:
        """Store rows made by :func:`~runtime.audit.rows.rows_of` (what :meth:`write_batch`
        does after encoding its records), as :meth:`write_batch` does."""
        if not stored:
            return
        rows = [pg_row(row) for row in stored]
        batch_id = uuid.uuid4().hex
        with self._lock:
            if not self.spool.pending():
                try:
                    self._store(batch_id, rows)
                    return
                except Exception as err:
                    if not _is_down(err):
                        raise
                    self._went_down(err)
            self._spool(batch_id, rows)
            self._replay_locked()

    def _spool(self, batch_id: str, rows: list[tuple[Any, ...]]) -> None:
        if self.spool.add(batch_id, rows):
            self._spooled += len(rows)
            return
        self._spool_lost += len(rows)
        logger.error(
            "toolrt audit: {} record(s) lost: PostgreSQL is unreachable and the local spool {} is full ({} bytes, "
            "audit_spool_max_bytes)",
            len(rows),
            self.spool.folder,
            self.spool.max_bytes,
        )

    def _went_down(self, err: BaseException) -> None:
        if self._down_since is None:
            self._down_since = f"{type(err).__name__}: {err}"
            logger.warning(
                "toolrt audit: PostgreSQL cannot be reached ({}); records are kept in {} until it can",
                self._down_since,
                self.spool.folder,
            )

    # -- storing ------------------------------------------------------------------

    def _store(self, batch_id: str, rows: list[tuple[Any, ...]]) -> bool:
        """One transaction: claim the batch id, link the rows after the chain's head,
        COPY them, move the head. False when the batch was stored before."""
        with self._pool.connection() as conn:
            if not self._schema_ready:
                ensure_schema(conn)
                self._schema_ready = True
            with conn.transaction(), conn.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {BATCHES} (id, chain) VALUES (%s, %s) ON CONFLICT DO NOTHING", (batch_id, self.chain)
                )
                if cursor.rowcount == 0:
                    self._duplicates += len(rows)
                    return False
                cursor.execute(
                    f"INSERT INTO {HEAD} (chain, seq, hash, before) VALUES (%s, 0, %s, 0) ON CONFLICT DO NOTHING",
                    (self.chain, GENESIS),
                )
                cursor.execute(f"SELECT seq, hash FROM {HEAD} WHERE chain = %s FOR UPDATE", (self.chain,))
                found = cursor.fetchone()
                if found is None:  # the head row was deleted between the two statements
                    raise AuditStoreError(f"the chain head of {self.chain!r} vanished while a batch was being linked")
                seq, prev = int(found[0]), str(found[1])
                with cursor.copy(_COPY) as copy:
                    for row in rows:
                        seq += 1
                        digest = link_hash(prev, seq, row_body(row))
                        copy.write_row((self.chain, *row, seq, prev, digest, batch_id))
                        prev = digest
                cursor.execute(f"UPDATE {HEAD} SET seq = %s, hash = %s WHERE chain = %s", (seq, prev, self.chain))
        self._stored += len(rows)
        return True

    def _replay_locked(self) -> int:
        """Send the spooled batches on, oldest first, stopping at the first failure; how many records were stored."""
        replayed = 0
        with self.spool.replaying() as batches:
            if batches is None:
                return 0  # another process is replaying this spool
            for path, batch_id, rows in batches:
                try:
                    self._store(batch_id, rows)
                except Exception as err:  # noqa: BLE001 - still down (or a rejected batch): keep it and retry later
                    if _is_down(err):
                        self._went_down(err)
                    else:
                        logger.error(
                            "toolrt audit: PostgreSQL rejected a spooled batch ({}: {}); it stays in {}",
                            type(err).__name__,
                            err,
                            path,
                        )
                    return replayed
                self.spool.done(path)
                replayed += len(rows)
        self._replayed += replayed
        if self._down_since is not None:
            logger.info("toolrt audit: PostgreSQL is reachable again; {} spooled record(s) stored", replayed)
            self._down_since = None
        self._drained.notify_all()
        return replayed

    def _retry_loop(self) -> None:
        while not self._stop.wait(self.retry_s):
            if not self.spool.pending():
                continue
            with self._lock:
                self._replay_locked()

    # -- Sink -----------------------------------------------------------------------

    def sync(self, timeout: float | None = None) -> bool:
        """Whether every batch handed over is in PostgreSQL (the spool replayed),
        waiting up to ``timeout`` seconds (trying once at once)."""
        with self._lock:
            if self.spool.pending():
                self._replay_locked()
            return self._drained.wait_for(lambda: not self.spool.pending(), timeout)

    def stats(self) -> dict[str, int]:
        """Counters for metrics: stored, spooled (ever), waiting in the spool, replayed,
        lost because the spool was full, skipped as already stored, and whether the
        server was reachable at the last try (1) or not (0)."""
        return {
            "postgres_stored": self._stored,
            "spooled": self._spooled,
            "spool_pending_batches": self.spool.pending(),
            "replayed": self._replayed,
            "spool_lost": self._spool_lost,
            "duplicates_skipped": self._duplicates,
            "postgres_up": 0 if self._down_since is not None else 1,
        }

    def close(self) -> None:
        """Stop retrying (one last replay first) and close the connections. What is
        still spooled stays on disk and is replayed by the next sink on this spool."""
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            if self.spool.pending():
                self._replay_locked()
        self._pool.close(timeout=2)
