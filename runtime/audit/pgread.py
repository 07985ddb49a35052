"""Reading a PostgreSQL audit log back: ``toolrt audit --dsn ...`` and its ``verify``.

:func:`query_postgres` takes the filters of :func:`runtime.audit.query` (and a chain),
and answers rows of the same shape. :func:`verify_postgres` walks each chain with the
same checks as a local log (:mod:`runtime.audit.walk`), one report per chain, each
inside one read-only repeatable-read transaction (a consistent snapshot while
workers go on writing), reading rows through a server-side cursor so that memory
stays constant however long the log is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import Enum
from typing import Any

from runtime.audit.chain import Head, Link, row_body
from runtime.audit.postgres import BATCHES, HEAD, MISSING, TABLE
from runtime.audit.query import where_clause
from runtime.audit.readback import Entry, StoreState
from runtime.audit.record import COLUMNS
from runtime.audit.verify import ChainReport
from runtime.audit.walk import Walk
from runtime.errors import UsageError

try:
    import psycopg
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

_DAMAGED = Link(0, "", "", b"")


def shown_dsn(dsn: str) -> str:
    """``dsn`` without its password."""
    from runtime.fleet.connection import shown_url

    return shown_url(dsn)


@contextmanager
def _connect(dsn: str) -> Iterator[Any]:
    if psycopg is None:
        raise UsageError(MISSING)
    try:
        conn = psycopg.connect(dsn, connect_timeout=5)
    except psycopg.Error as err:
        raise UsageError(f"cannot connect to the audit database {shown_dsn(dsn)}: {str(err).strip()}") from err
    try:
        conn.read_only = True
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.cursor() as probe:
            probe.execute("SELECT to_regclass(%s), to_regclass(%s)", (TABLE, HEAD))
            found = probe.fetchone()
        if found is None or found[0] is None:
            raise UsageError(
                f"{shown_dsn(dsn)}: no toolrt audit log in this database (no {TABLE} table): no calls have been "
                "recorded there yet, or the DSN is wrong"
            )
        conn.rollback()
        yield conn
    finally:
        conn.close()


def _stored_columns(conn: Any) -> frozenset[str]:
    """The columns the log's table has: a table made by an older toolrt lacks the newer
    ones until a writer of this version opens it (``ALTER TABLE ... ADD COLUMN``)."""
    with conn.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {TABLE} LIMIT 0")
        return frozenset(str(column.name) for column in cursor.description or ())


def _select_list(stored: frozenset[str]) -> str:
    """:data:`COLUMNS` as a select list, a column the table lacks read as NULL: a record
    written before the column existed never had a value for it (and its hash left it out)."""
    return ", ".join(f'"{name}"' if name in stored else f'NULL AS "{name}"' for name in COLUMNS)


def chains(dsn: str) -> list[str]:
    """The names of the chains in the log (one per workspace)."""
    with _connect(dsn) as conn:
        rows = conn.execute(f"SELECT chain FROM {HEAD} UNION SELECT DISTINCT chain FROM {TABLE} ORDER BY 1").fetchall()
        return [str(row[0]) for row in rows]


def query_postgres(
    dsn: str,
    *,
    chain: str | None = None,
    session: str | None = None,
    tool: str | None = None,
    since: float | None = None,
    until: float | None = None,
    status: str | Enum | None = None,
    staged: str | None = None,
    limit: int | None = 1000,
) -> list[dict[str, Any]]:
    """Audit rows, newest first, filtered like :func:`runtime.audit.query` (plus ``chain``);
    each row also says its ``chain``."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for no limit), not {limit}")
    wanted = status.value if isinstance(status, Enum) else status
    where, params = where_clause(
        (("chain", chain), ("session_id", session), ("tool", tool), ("status", wanted)),
        since,
        until,
        "%s",
        staged=staged,
    )
    with _connect(dsn) as conn:
        stored = _stored_columns(conn)
        if staged is not None and "staged" not in stored:
            return []  # written before staged matches were recorded: none to show
        sql = f"SELECT id, chain, {_select_list(stored)} FROM {TABLE}{where} ORDER BY ts DESC, id DESC"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        with conn.cursor() as cursor:
            cursor.execute(sql, params)
            names = ["id", "chain", *COLUMNS]
            return [_decode(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


def _decode(item: dict[str, Any]) -> dict[str, Any]:
    text = item.get("args")
    if text is not None:
        try:
            item["args"] = json.loads(text)
        except ValueError:
            item["args"] = text
    item["truncated"] = bool(item.get("truncated"))
    return item


def verify_postgres(
    dsn: str, *, chain: str | None = None, anchors: Mapping[int, str] | None = None
) -> list[ChainReport]:
    """Walk every chain (or only ``chain``) and report each; ``anchors`` need ``chain``.

    Raises UsageError when the database cannot be reached or holds no audit log, or
    when ``chain`` is not in it.
    """
    names = chains(dsn)
    if chain is not None:
        if chain not in names:
            listed = ", ".join(names) if names else "none"
            raise UsageError(f"no chain {chain!r} in {shown_dsn(dsn)} (chains: {listed})")
        names = [chain]
    elif anchors:
        raise UsageError("--anchor needs --chain: an anchor is a position in one chain")
    reports = []
    for name in names:
        with _connect(dsn) as conn:
            state = _state(conn, name)
            walk = Walk(state, dict(anchors or {}))
            problem = walk.run()
            reports.append(
                ChainReport(
                    f"{shown_dsn(dsn)} chain {name}", "postgres", "id", walk.chained, walk.before, state.head, problem
                )
            )
    return reports


def _state(conn: Any, chain: str) -> StoreState:
    selected = _select_list(_stored_columns(conn))
    with conn.cursor() as cursor:
        cursor.execute(f"SELECT seq, hash, before FROM {HEAD} WHERE chain = %s", (chain,))
        found = cursor.fetchone()
    head = (
        Head(int(found[0]), str(found[1]), None if found[2] is None else int(found[2])) if found is not None else None
    )
    rows = conn.cursor(name=f"toolrt_walk_{abs(hash(chain))}")
    rows.itersize = 2000
    rows.execute(f"SELECT id, {selected}, seq, prev_hash, hash FROM {TABLE} WHERE chain = %s ORDER BY id", (chain,))

    def locate(seq: int, after: int) -> int | None:
        with conn.cursor() as look:
            look.execute(
                f"SELECT id FROM {TABLE} WHERE chain = %s AND seq = %s AND id > %s ORDER BY id LIMIT 1",
                (chain, seq, after),
            )
            hit = look.fetchone()
        return None if hit is None else int(hit[0])

    return StoreState("postgres", "id", head, (_entry(row) for row in rows), locate)


def _entry(row: tuple[Any, ...]) -> Entry:
    index, values, (seq, prev, digest) = int(row[0]), row[1:-3], row[-3:]
    if type(seq) is not int or type(prev) is not str or type(digest) is not str:
        return Entry(index, _DAMAGED, holds=False)
    try:
        body = row_body(values)
    except (TypeError, ValueError):
        return Entry(index, _DAMAGED, holds=False)
    link = Link(seq, prev, digest, body)
    return Entry(index, link, holds=link.holds())


__all__ = ["BATCHES", "chains", "query_postgres", "verify_postgres"]
