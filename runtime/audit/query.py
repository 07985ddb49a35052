"""Reading the audit database back: filters, time parsing, and the CLI's two formats.

``toolrt audit [--session S] [--tool T] [--since ...] [--format table|json]`` is
:func:`query` with :func:`parse_since` for the times and :func:`format_table` or
:func:`format_json` for the output.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sqlite3
import time
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from runtime.audit.record import COLUMNS, parse_staged
from runtime.errors import UsageError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_SINCE_HELP = (
    "expected a relative age such as 30s, 15m, 2h, 7d or 2w, or an ISO-8601 date or date-time such as "
    "2024-05-01, 2024-05-01T12:30 or 2024-05-01T12:30:00Z (no zone means local time)"
)


#: ``staged=ANY_STAGED``: records where any staged rule matched.
ANY_STAGED = "*"


def where_clause(
    equal: Sequence[tuple[str, Any]],
    since: float | None,
    until: float | None,
    mark: str,
    *,
    staged: str | None = None,
) -> tuple[str, list[Any]]:
    """The WHERE clause (empty without filters) and its parameters of an audit query:
    each ``(column, value)`` of ``equal`` whose value is not None, ``since <= ts <
    until``, and ``staged`` (:data:`ANY_STAGED`: some staged rule matched; a
    ``policy/rule``: that staged rule matched). ``mark`` is the driver's placeholder
    (``?`` for SQLite, ``%s`` for psycopg)."""
    where: list[str] = []
    params: list[Any] = []
    for column, value in equal:
        if value is not None:
            where.append(f'"{column}" = {mark}')
            params.append(value)
    if staged == ANY_STAGED:
        where.append("staged IS NOT NULL")
    elif staged is not None:
        # Items are "policy/rule:effect:enforce" separated by spaces (see staged_text).
        where.append(f"(' ' || staged) LIKE {mark} ESCAPE '\\'")
        params.append(f"% {_like_literal(staged)}:%")
    if since is not None:
        where.append(f"ts >= {mark}")
        params.append(float(since))
    if until is not None:
        where.append(f"ts < {mark}")
        params.append(float(until))
    return (" WHERE " + " AND ".join(where) if where else ""), params


def _like_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def staged_matches(row: dict[str, Any], staged: str | None) -> bool:
    """Whether a record read back (``staged`` as stored) passes the ``staged`` filter."""
    if staged is None:
        return True
    text = row.get("staged")
    if not isinstance(text, str) or not text:
        return False
    return staged == ANY_STAGED or any(item["rule"] == staged for item in parse_staged(text))


def query(
    path: str | os.PathLike[str],
    *,
    session: str | None = None,
    tool: str | None = None,
    since: float | None = None,
    until: float | None = None,
    status: str | Enum | None = None,
    staged: str | None = None,
    limit: int | None = 1000,
) -> list[dict[str, Any]]:
    """Audit rows from the database at ``path``, newest first.

    Every filter is optional and they combine with AND: ``session`` and ``tool``
    match exactly, ``since``/``until`` are unix times (``since <= ts < until``),
    ``status`` is a status name or :class:`~runtime.records.Status`; ``staged`` keeps
    the calls a staged rule matched (:data:`ANY_STAGED`) or the rule ``policy/rule``
    matched (rules under ``enforce: warn`` or ``audit``). ``limit=None``
    returns every match. Each row is a dict with the audit columns plus ``id``;
    ``args`` is decoded back from JSON and ``truncated`` is a bool.

    Raises UsageError when the file is missing or is not an audit database.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for no limit), not {limit}")
    if _is_json_lines(Path(path)):
        wanted = status.value if isinstance(status, Enum) else status
        return _query_json_lines(Path(path), session, tool, since, until, wanted, staged, limit)
    wanted = status.value if isinstance(status, Enum) else status
    where, params = where_clause(
        (("session_id", session), ("tool", tool), ("status", wanted)), since, until, "?", staged=staged
    )
    conn = open_for_reading(Path(path))
    try:
        conn.row_factory = sqlite3.Row
        try:
            if staged is not None and "staged" not in _columns(conn):
                return []  # written before staged matches were recorded: none to show
            sql = f"SELECT id, {column_list(_columns(conn))} FROM calls{where} ORDER BY ts DESC, id DESC"
            if limit is not None:
                sql += " LIMIT ?"
                params.append(int(limit))
            rows = conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err) or "no such column" in str(err):
                raise UsageError(f"{path}: is an SQLite database but not a toolrt audit database ({err})") from err
            raise
        except sqlite3.DatabaseError as err:
            raise UsageError(f"{path}: cannot read the audit database: {err}") from err
    finally:
        conn.close()
    return [_decode(row) for row in rows]


def column_list(present: set[str]) -> str:
    """The SELECT list of the audit columns; one an older database lacks reads as NULL."""
    return ", ".join(name if name in present or not present else f"NULL AS {name}" for name in COLUMNS)


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(calls)")}


def _is_json_lines(path: Path) -> bool:
    """A JSON-lines audit log (the jsonl sink) rather than an SQLite database."""
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return False
    return head.startswith(b"{")


def _query_json_lines(
    path: Path,
    session: str | None,
    tool: str | None,
    since: float | None,
    until: float | None,
    status: str | None,
    staged: str | None,
    limit: int | None,
) -> list[dict[str, Any]]:
    """The same query over a JSON-lines log; lines that do not parse (a last line cut
    short by a crash) are skipped."""
    rows: list[dict[str, Any]] = []
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict) or not isinstance(row.get("ts"), int | float):
                continue
            if (
                (session is not None and row.get("session_id") != session)
                or (tool is not None and row.get("tool") != tool)
                or (status is not None and row.get("status") != status)
                or not staged_matches(row, staged)
            ):
                continue
            if (since is not None and row["ts"] < since) or (until is not None and row["ts"] >= until):
                continue
            row["id"] = number
            row["truncated"] = bool(row.get("truncated"))
            row.setdefault("staged", None)
            rows.append(row)
    rows.sort(key=lambda r: (r["ts"], r["id"]), reverse=True)
    return rows if limit is None else rows[:limit]


def open_for_reading(path: Path) -> sqlite3.Connection:
    """A read-only connection to the audit database at ``path`` (nothing is created or
    changed). Raises UsageError when there is no such file or it is no database."""
    if not path.exists():
        raise UsageError(
            f"no audit database at {path}: no calls have been recorded there yet, or the path is wrong (set the "
            "audit path the runtime writes to)"
        )
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not an audit database file")
    try:
        # Read-only: a query must never create or change the store. WAL readers
        # still need the -shm file, which SQLite creates next to the database.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        conn.execute("PRAGMA query_only = 1")
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as err:
        raise UsageError(f"{path}: cannot open as an audit database: {err}") from err
    return conn


def _decode(row: sqlite3.Row) -> dict[str, Any]:
    item = dict(row)
    text = item.get("args")
    if text is not None:
        try:
            item["args"] = json.loads(text)
        except ValueError:
            item["args"] = text  # written by something else: show it as it is
    item["truncated"] = bool(item.get("truncated"))
    return item


def parse_since(text: str, now: float | None = None) -> float:
    """A unix time from ``text``: a relative age before ``now`` (``30s``, ``15m``,
    ``2h``, ``7d``, ``2w``) or an ISO-8601 date or date-time (a date means its
    midnight; no zone means local time). ``now`` defaults to the current time.

    Raises ValueError naming the accepted forms for anything else.
    """
    raw = text.strip() if isinstance(text, str) else ""
    if not raw:
        raise ValueError(f"empty time: {_SINCE_HELP}")
    match = _RELATIVE.match(raw)
    if match:
        reference = time.time() if now is None else now
        return reference - float(match.group(1)) * _UNITS[match.group(2).lower()]
    try:
        moment = _dt.datetime.fromisoformat(raw)  # a bare date reads as its midnight
    except ValueError:
        raise ValueError(f"cannot read the time {text!r}: {_SINCE_HELP}") from None
    return moment.timestamp()  # a naive moment counts as local time


# (title, key, width, right-aligned); the last column takes what is left of the line.
_TABLE: tuple[tuple[str, str, int, bool], ...] = (
    ("TIME", "ts", 19, False),
    ("SESSION", "session_id", 12, False),
    ("TOOL", "tool", 18, False),
    ("STATUS", "status", 12, False),
    ("DECISION", "decision", 8, False),
    ("MS", "duration_ms", 9, True),
    ("CALL", "call_id", 14, False),
    ("DETAIL", "", 0, False),
)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows as a fixed-width text table (local times; long values end in ``…``).

    The last column, DETAIL, shows whichever of rule, code, path and artifact are set,
    and each staged rule that matched (``warn:policy/rule would deny``).
    """
    if not rows:
        return "no matching calls"
    lines = ["  ".join(_cell(title, width, right) for title, _, width, right in _TABLE).rstrip()]
    for row in rows:
        cells = []
        for _, key, width, right in _TABLE:
            cells.append(_cell(_display(row, key), width, right))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _display(row: dict[str, Any], key: str) -> str:
    if key == "ts":
        ts = row.get("ts")
        return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if isinstance(ts, int | float) else "-"
    if key == "duration_ms":
        value = row.get(key)
        if not isinstance(value, int | float):
            return "-"
        return f"{value:.3f}" if value < 1 else f"{value:.1f}" if value < 10_000 else f"{value:.0f}"
    if key == "":
        parts = [f"{name}={row[name]}" for name in ("rule", "code", "path", "artifact") if row.get(name)]
        parts.extend(
            f"{item['enforce']}:{item['rule']} would {item['effect']}" for item in parse_staged(row.get("staged"))
        )
        if row.get("truncated"):
            parts.append("truncated")
        return " ".join(parts)
    value = row.get(key)
    return "-" if value is None or value == "" else str(value)


def _cell(text: str, width: int, right: bool) -> str:
    text = text.replace("\n", " ").replace("\t", " ")
    if not width:
        return text
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.rjust(width) if right else text.ljust(width)


def format_json(rows: Sequence[dict[str, Any]]) -> str:
    """Rows as a JSON array (each with an added ISO-8601 UTC ``time``), indented."""
    out = []
    for row in rows:
        item = dict(row)
        ts = item.get("ts")
        if isinstance(item.get("staged"), str):
            item["staged"] = parse_staged(item["staged"])
        if isinstance(ts, int | float):
            item["time"] = _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat().replace("+00:00", "Z")
        out.append(item)
    return json.dumps(out, indent=2, ensure_ascii=False, default=str)
