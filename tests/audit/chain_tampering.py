"""What a hostile agent with write access to an audit store might do to it, as plain
functions on real SQLite databases and real JSON-lines files (shared by the tamper tests).

The forgeries use the public chain functions, as an attacker who read the source would.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.audit.chain import Link, chained_line, head_path, link_hash, parse_line, row_body
from runtime.audit.record import COLUMNS

FIELDS = ", ".join(COLUMNS)


# -- SQLite --------------------------------------------------------------------


def sql(db: Path, *statements: tuple[str, tuple[Any, ...]] | str) -> None:
    """Run ``statements`` in one transaction, as any SQLite client could."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            for statement in statements:
                text, params = (statement, ()) if isinstance(statement, str) else statement
                conn.execute(text, params)
    finally:
        conn.close()


def rows(db: Path) -> list[tuple[Any, ...]]:
    """(id, *COLUMNS, seq, prev_hash, hash) of every row, in id order."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT id, {FIELDS}, seq, prev_hash, hash FROM calls ORDER BY id").fetchall()
    finally:
        conn.close()


def rehash(values: tuple[Any, ...], seq: int, prev: str) -> str:
    """The hash a row with these stored ``values`` at ``seq`` after ``prev`` must carry."""
    return link_hash(prev, seq, row_body(values))


def swap_rows(db: Path, first: int, second: int) -> None:
    """Exchange the places of two rows (each keeps its contents, takes the other's id)."""
    sql(
        db,
        ("UPDATE calls SET id = -1 WHERE id = ?", (first,)),
        ("UPDATE calls SET id = ? WHERE id = ?", (first, second)),
        ("UPDATE calls SET id = ? WHERE id = -1", (second,)),
    )


def make_room_after(db: Path, row_id: int) -> None:
    """Move every row after ``row_id`` one id up, so that ``row_id + 1`` is free."""
    sql(db, ("UPDATE calls SET id = -id WHERE id > ?", (row_id,)), "UPDATE calls SET id = 1 - id WHERE id < 0")


def insert_row(
    db: Path, row_id: int, values: tuple[Any, ...], seq: int | None, prev: str | None, digest: str | None
) -> None:
    marks = ", ".join("?" for _ in range(len(COLUMNS) + 4))
    sql(
        db,
        (
            f"INSERT INTO calls (id, {FIELDS}, seq, prev_hash, hash) VALUES ({marks})",
            (row_id, *values, seq, prev, digest),
        ),
    )


def forge_after(db: Path, row_id: int, *, tool: str = "forged") -> None:
    """Insert, right after row ``row_id``, a record claiming the next position, linked
    to that row and with a correctly recomputed hash."""
    before = {row[0]: row for row in rows(db)}[row_id]
    values = list(before[1:-3])
    values[COLUMNS.index("tool")] = tool
    seq, prev = before[-3] + 1, before[-1]
    make_room_after(db, row_id)
    insert_row(db, row_id + 1, tuple(values), seq, prev, rehash(tuple(values), seq, prev))


def copy_after(row_id: int) -> Callable[[Path], None]:
    """A copy of row ``row_id`` (links and hash too) right after it."""

    def tamper(db: Path) -> None:
        original = rows(db)[row_id - 1]
        make_room_after(db, row_id)
        insert_row(db, row_id + 1, tuple(original[1:-3]), *original[-3:])

    return tamper


def unlinked_after(row_id: int) -> Callable[[Path], None]:
    """A plausible row without chain fields right after row ``row_id``."""

    def tamper(db: Path) -> None:
        model = rows(db)[row_id - 1]
        make_room_after(db, row_id)
        insert_row(db, row_id + 1, tuple(model[1:-3]), None, None, None)

    return tamper


def far_position_after(row_id: int) -> Callable[[Path], None]:
    """A forged row with a correct hash, linked to row ``row_id`` but claiming position 50."""

    def tamper(db: Path) -> None:
        before = rows(db)[row_id - 1]
        values = tuple(before[1:-3])
        make_room_after(db, row_id)
        insert_row(db, row_id + 1, values, 50, before[-1], rehash(values, 50, before[-1]))

    return tamper


def alter_and_rehash(db: Path, row_id: int, *, tool: str = "covered-up") -> None:
    """Change a row and recompute its own hash (but not the next row's link)."""
    row = {row[0]: row for row in rows(db)}[row_id]
    values = list(row[1:-3])
    values[COLUMNS.index("tool")] = tool
    sql(
        db,
        ("UPDATE calls SET tool = ?, hash = ? WHERE id = ?", (tool, rehash(tuple(values), row[-3], row[-2]), row_id)),
    )


def rewrite_from(db: Path, row_id: int, *, tool: str = "rewritten") -> None:
    """Change a row and recompute every hash from there to the end, and the head: the
    rewrite no check can see without an anchor kept elsewhere."""
    sql(db, ("UPDATE calls SET tool = ? WHERE id = ?", (tool, row_id)))
    all_rows = rows(db)
    prev = next(row[-1] for row in all_rows if row[0] == row_id - 1) if row_id > 1 else "0" * 64
    statements: list[tuple[str, tuple[Any, ...]] | str] = []
    for row in all_rows:
        if row[0] < row_id:
            continue
        digest = rehash(tuple(row[1:-3]), row[-3], prev)
        statements.append(("UPDATE calls SET prev_hash = ?, hash = ? WHERE id = ?", (prev, digest, row[0])))
        prev = digest
    statements.append(("UPDATE chain_head SET hash = ?", (prev,)))
    sql(db, *statements)


# -- JSON lines --------------------------------------------------------------------


def lines(log: Path) -> list[bytes]:
    return log.read_bytes().splitlines(keepends=True)


def write_lines(log: Path, new: list[bytes]) -> None:
    log.write_bytes(b"".join(new))


def forged_line(after: bytes, template: bytes, *, tool: bytes = b"forged") -> bytes:
    """A line claiming the position after ``after``, linked to it, with ``template``'s
    fields (its tool changed) and a correctly recomputed hash."""
    previous, model = parse_line(after.rstrip(b"\n")), parse_line(template.rstrip(b"\n"))
    if previous is None or model is None:
        raise ValueError("both lines must be chained records")
    body = model.body.replace(b'"tool":"file_read"', b'"tool":"' + tool + b'"')
    seq = previous.seq + 1
    return chained_line(body, seq, previous.hash, link_hash(previous.hash, seq, body))


def link_of(line: bytes) -> Link:
    found = parse_line(line.rstrip(b"\n"))
    if found is None:
        raise ValueError("not a chained line")
    return found


def head_file(log: Path) -> Path:
    return head_path(log)
