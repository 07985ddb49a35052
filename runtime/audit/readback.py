"""Reading an audit store back as chain entries, for :mod:`runtime.audit.verify`.

Each store is read as one consistent state while writers go on: SQLite inside one
read transaction (WAL gives it a snapshot), a JSON-lines log up to the size it had
when its head was read under a shared ``flock`` (writers append and rewrite the
head under an exclusive one, and only ever append).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.audit.chain import Head, Link, head_path, parse_head, parse_line, row_body
from runtime.audit.query import column_list, open_for_reading
from runtime.errors import UsageError

_SQLITE_MAGIC = b"SQLite format 3\x00"
# Chain fields that no longer parse: the record is reported as altered.
_DAMAGED = Link(0, "", "", b"")


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored record (or, in a JSON-lines log, one line) in storage order.

    ``index`` is the row id or the line number. ``link`` is None for a record
    without chain fields (written before the chain started, or inserted); ``record``
    is False for a line that is no audit record at all; ``holds`` says whether the
    stored hash is the one its fields give.
    """

    index: int
    link: Link | None
    record: bool = True
    holds: bool = True


@dataclass
class StoreState:
    """A store opened for one consistent walk.

    ``unit`` names what ``Entry.index`` counts (``id`` or ``line``); ``locate(seq,
    after)`` finds the index of a record at chain position ``seq`` stored after
    ``after`` (for telling a reordered record from a deleted one).
    """

    kind: str
    unit: str
    head: Head | None
    entries: Iterator[Entry]
    locate: Callable[[int, int], int | None]


def kind_of(path: Path) -> str:
    """``sqlite`` or ``jsonl``, from the file's first bytes; UsageError when there is no file."""
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not an audit log")
    try:
        with path.open("rb") as handle:
            start = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        if head_path(path).exists():
            return "jsonl"  # the log is gone but its head is not: the verifier reports every record missing
        raise UsageError(
            f"no audit log at {path}: no calls have been recorded there yet, or the path is wrong"
        ) from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read the audit log: {err}") from err
    return "sqlite" if start == _SQLITE_MAGIC else "jsonl"


@contextmanager
def opened(path: Path) -> Iterator[StoreState]:
    """The store at ``path`` opened for one walk (read-only; nothing is created)."""
    if kind_of(path) == "sqlite":
        with _sqlite(path) as state:
            yield state
    else:
        with _jsonl(path) as state:
            yield state


@contextmanager
def _sqlite(path: Path) -> Iterator[StoreState]:
    conn = open_for_reading(path)
    try:
        conn.execute("BEGIN")  # one read snapshot for the head, the walk and the look-ups
        try:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
        except sqlite3.DatabaseError as err:
            raise UsageError(f"{path}: cannot read the audit database: {err}") from err
        if not columns:
            raise UsageError(f"{path}: is an SQLite database but not a toolrt audit database (no calls table)")
        chained = {"seq", "prev_hash", "hash"} <= columns
        head = _sqlite_head(conn) if chained else None
        links = "seq, prev_hash, hash" if chained else "NULL, NULL, NULL"
        cursor = conn.execute(f"SELECT id, {column_list(columns)}, {links} FROM calls ORDER BY id")

        def locate(seq: int, after: int) -> int | None:
            found = (
                conn.execute(
                    "SELECT id FROM calls WHERE seq = ? AND id > ? ORDER BY id LIMIT 1", (seq, after)
                ).fetchone()
                if chained
                else None
            )
            return None if found is None else int(found[0])

        yield StoreState("sqlite", "id", head, (_sqlite_entry(row) for row in cursor), locate)
    finally:
        conn.close()


def _sqlite_head(conn: sqlite3.Connection) -> Head | None:
    try:
        row = conn.execute("SELECT seq, hash, before FROM chain_head WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return None  # the table is gone: reported as a missing head
    if (
        row is None
        or type(row[0]) is not int
        or type(row[1]) is not str
        or (row[2] is not None and type(row[2]) is not int)
    ):
        return None
    return Head(row[0], row[1], row[2])


def _sqlite_entry(row: tuple[Any, ...]) -> Entry:
    index, values, (seq, prev, digest) = row[0], row[1:-3], row[-3:]
    if seq is None and prev is None and digest is None:
        return Entry(index, None)
    if type(seq) is not int or type(prev) is not str or type(digest) is not str:
        return Entry(index, _DAMAGED, holds=False)
    try:
        body = row_body(values)
    except (TypeError, ValueError):  # a value no writer of ours stores (bytes, NaN)
        return Entry(index, _DAMAGED, holds=False)
    link = Link(seq, prev, digest, body)
    return Entry(index, link, holds=link.holds())


@contextmanager
def _jsonl(path: Path) -> Iterator[StoreState]:
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        handle = None  # only the head is left
    except OSError as err:
        raise UsageError(f"{path}: cannot read the audit log: {err}") from err
    try:
        if handle is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)  # writers append and move the head under LOCK_EX
        try:
            head = _jsonl_head(path)
            size = os.fstat(handle.fileno()).st_size if handle is not None else 0
        finally:
            if handle is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

        def locate(seq: int, after: int) -> int | None:
            with path.open("rb") as again:  # its own handle: the walk is still reading the first
                for number, line in _lines(again, size):
                    link = parse_line(line) if number > after else None
                    if link is not None and link.seq == seq:
                        return number
            return None

        entries = (
            (_jsonl_entry(number, line) for number, line in _lines(handle, size)) if handle is not None else iter(())
        )
        yield StoreState("jsonl", "line", head, entries, locate)
    finally:
        if handle is not None:
            handle.close()


def _lines(handle: Any, size: int) -> Iterator[tuple[int, bytes]]:
    """The numbered lines (without newlines) in the first ``size`` bytes of ``handle``."""
    left = size
    for number, line in enumerate(handle, 1):
        if left <= 0:
            return
        left -= len(line)
        yield number, line[:-1] if line.endswith(b"\n") else line


def _jsonl_head(path: Path) -> Head | None:
    try:
        with head_path(path).open("rb") as handle:
            return parse_head(handle.read(4096))
    except FileNotFoundError:
        return None
    except OSError as err:
        raise UsageError(f"{head_path(path)}: cannot read the chain head: {err}") from err


def _jsonl_entry(number: int, line: bytes) -> Entry:
    link = parse_line(line)
    if link is not None:
        return Entry(number, link, holds=link.holds())
    try:
        value = json.loads(line)
    except ValueError:
        return Entry(number, None, record=False)
    if not isinstance(value, dict) or not isinstance(value.get("ts"), int | float):
        return Entry(number, None, record=False)
    if {"seq", "prev_hash", "hash"} & value.keys():
        return Entry(number, _DAMAGED, holds=False)  # chain fields that were edited out of shape
    return Entry(number, None)
