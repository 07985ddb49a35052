"""A batch of journal rows as a few SQLite statements (see :mod:`runtime.workflow.journal`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def statements(sql: str, rows: list[tuple[Any, ...]], variables: int) -> Iterator[tuple[str, Any, bool]]:
    """``sql`` for each of ``rows`` as ``(statement, parameters, many)`` to run (``many``:
    with ``executemany``): an ``INSERT ... VALUES (...)`` as multi-row statements (of at
    most ``variables`` parameters), so that a batch is a few SQLite steps rather than
    one per row (each step lets go of the interpreter lock, and a writer thread taking
    it back waits for the event loop's switch interval); other statements as one
    ``executemany``."""
    if len(rows) == 1 or " VALUES (" not in sql:
        yield sql, rows, True
        return
    most = max(1, min(_MAX_ROWS_PER_STATEMENT, variables // len(rows[0])))
    start = 0
    while start < len(rows):
        # Chunks of a power of two rows: a handful of statement texts, all kept in
        # sqlite3's statement cache.
        size = min(most, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start : start + size]
        yield _multi_row(sql, size), [value for row in chunk for value in row], False
        start += size


_MAX_ROWS_PER_STATEMENT = 1024  # a whole batch (batches.BATCH) in one statement
_MULTI: dict[tuple[str, int], str] = {}


def _multi_row(sql: str, rows: int) -> str:
    text = _MULTI.get((sql, rows))
    if text is None:
        head, _, group = sql.rpartition(" VALUES ")
        text = _MULTI[(sql, rows)] = f"{head} VALUES {', '.join([group] * rows)}"
    return text
