"""Every way of writing the audit log gives one valid chain: both sinks, the writer
thread and the child process, several processes appending to one store at once, odd
field values, and stores from before the chain (migrated, their old records counted)."""

from __future__ import annotations

import json
import math
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from audit_helpers import record, write_many_jsonl, write_many_sqlite

from runtime.audit import SCHEMA_VERSION, AuditRecord, AuditWriter, JsonlSink, SqliteSink, query, verify
from runtime.audit.remote import ProcessSink

SPAWN = multiprocessing.get_context("spawn")


def _sink(kind: str, writer: str, path: Path) -> SqliteSink | JsonlSink | ProcessSink:
    if writer == "process":
        return ProcessSink(kind, path)
    return SqliteSink(path) if kind == "sqlite" else JsonlSink(path)


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_writer_of_either_kind_leaves_a_chain_that_verifies(tmp_path: Path, kind: str, writer: str) -> None:
    path = tmp_path / f"audit.{kind}"
    audit = AuditWriter(_sink(kind, writer, path), batch_size=64, flush_interval_s=0.01)
    for index in range(500):
        audit.submit(record(index))
    assert audit.close(timeout=30) and audit.written == 500
    report = verify(path)
    assert report.ok, report.to_text()
    assert report.chained == 500 and report.head is not None and report.head.seq == 500
    assert len(query(path, limit=None)) == 500


def test_four_processes_writing_one_database_at_once_leave_one_chain(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    SqliteSink(db).close()
    barrier, results = SPAWN.Barrier(4), SPAWN.Queue()
    workers = [
        SPAWN.Process(target=write_many_sqlite, args=(str(db), worker, 400, barrier, results)) for worker in range(4)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(180)
        assert process.exitcode == 0
    assert sum(results.get(timeout=10)["written"] for _ in workers) == 1600
    report = verify(db)
    assert report.ok, report.to_text()
    assert report.chained == 1600
    conn = sqlite3.connect(db)
    try:
        sessions = [row[0] for row in conn.execute("SELECT session_id FROM calls ORDER BY seq")]
    finally:
        conn.close()
    # The processes' batches interleave in the one chain (the test would prove little otherwise).
    assert sum(1 for before, after in zip(sessions, sessions[1:], strict=False) if before != after) >= 3


def test_two_processes_appending_to_one_json_lines_log_at_once_leave_one_chain(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    barrier = SPAWN.Barrier(2)
    workers = [SPAWN.Process(target=write_many_jsonl, args=(str(log), worker, 20, barrier)) for worker in range(2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(180)
        assert process.exitcode == 0
    report = verify(log)
    assert report.ok, report.to_text()
    assert report.chained == 2 * 20 * 100


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_odd_field_values_still_give_a_chain_that_verifies(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"audit.{kind}"
    odd = [
        AuditRecord(ts=1_700_000_000, session_id=5, tool="bad\udc80", args={"x": "\udcff"}),  # type: ignore[arg-type]
        AuditRecord(ts=-0.0, duration_ms=-0.0, path="nul\x00inside", call_id="line\nbreak"),
        AuditRecord(ts=1.5, duration_ms=math.nan, hash_before=b"\x01", artifact={"id": "a"}),  # type: ignore[arg-type]
        AuditRecord(ts=1.75, args={"blob": b"\xff", "when": math.inf}),
        AuditRecord(ts=2.5, rule="ünïcödé ✓ 𝔘", args={"n": 10**30, "f": 0.1 + 0.2, "nested": [[[]]]}),
        AuditRecord(ts=3.5, args=None, snapshot="", truncated=True),
    ]
    sink = SqliteSink(path) if kind == "sqlite" else JsonlSink(path)
    sink.write_batch(odd)
    sink.close()
    report = verify(path)
    assert report.ok, report.to_text()
    assert report.chained == len(odd)


def test_a_database_from_before_the_chain_is_migrated_and_its_rows_counted_as_before(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _old_database(db, rows=3)
    sink = SqliteSink(db)
    sink.write_batch([record(index) for index in range(5)])
    sink.close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM calls WHERE seq IS NULL").fetchone()[0] == 3
    finally:
        conn.close()
    report = verify(db)
    assert report.ok, report.to_text()
    assert (report.before, report.chained) == (3, 5)
    assert "3 records from before the chain started" in report.to_text()
    assert len(query(db, limit=None)) == 8


def test_removing_or_adding_rows_from_before_the_chain_is_found(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _old_database(db, rows=3)
    sink = SqliteSink(db)
    sink.write_batch([record(index) for index in range(5)])
    sink.close()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM calls WHERE id = 2")
    report = verify(db)
    assert report.problem is not None and report.problem.kind == "head" and "removed" in report.problem.message
    with conn:
        conn.execute("INSERT INTO calls (id, ts, tool) VALUES (0, 1.0, 'forged'), (-1, 1.0, 'forged')")
    conn.close()
    report = verify(db)
    assert report.problem is not None and report.problem.kind == "head" and "added" in report.problem.message


def test_a_database_without_the_chain_verifies_with_every_row_unprotected(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _old_database(db, rows=4)
    report = verify(db)  # read-only: not migrated
    assert report.ok and (report.before, report.chained, report.head) == (4, 0, None)


def test_a_json_lines_log_from_before_the_chain_keeps_its_lines_counted_as_before(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_bytes(
        b"".join(json.dumps({"ts": 1.0 + index, "tool": "old"}).encode() + b"\n" for index in range(3))
        + b'{"ts": 9, "cut'
    )
    sink = JsonlSink(log)
    sink.write_batch([record(index) for index in range(4)])
    sink.close()
    report = verify(log)
    assert report.ok, report.to_text()
    assert (report.before, report.chained) == (4, 4)  # the line cut short before the chain started counts too
    lines = log.read_bytes().splitlines()
    log.write_bytes(b"\n".join(lines[1:]) + b"\n")
    report = verify(log)
    assert report.problem is not None and report.problem.kind == "head" and "removed" in report.problem.message


def _old_database(db: Path, *, rows: int) -> None:
    """An audit database as version 1 wrote it: no chain columns, no head."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "CREATE TABLE calls (id INTEGER PRIMARY KEY, ts REAL NOT NULL, session_id TEXT, user TEXT, request_id TEXT,"
            " trace_id TEXT, call_id TEXT, tool TEXT, tool_version TEXT, args TEXT, decision TEXT, rule TEXT,"
            " status TEXT,"
            " code TEXT, duration_ms REAL, truncated INTEGER NOT NULL DEFAULT 0, artifact TEXT, path TEXT,"
            " hash_before TEXT, hash_after TEXT, snapshot TEXT)"
        )
        conn.executemany(
            "INSERT INTO calls (ts, tool, status) VALUES (?, 'file_read', 'ok')",
            [(1_600_000_000.0 + index,) for index in range(rows)],
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_verifying_while_processes_write_never_reports_a_break(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"audit.{kind}"
    barrier, results = SPAWN.Barrier(3), SPAWN.Queue()
    if kind == "sqlite":  # the log exists before the walks start
        SqliteSink(path).close()
        workers = [SPAWN.Process(target=write_many_sqlite, args=(str(path), n, 300, barrier, results)) for n in (0, 1)]
    else:
        path.touch()
        workers = [SPAWN.Process(target=write_many_jsonl, args=(str(path), n, 10, barrier)) for n in range(2)]
    for process in workers:
        process.start()
    barrier.wait(60)
    while any(process.is_alive() for process in workers):  # a consistent state at every moment, whatever it is
        report = verify(path)
        assert report.ok, report.to_text()
    for process in workers:
        process.join(180)
        assert process.exitcode == 0
    final = verify(path)
    assert final.ok and final.chained == (600 if kind == "sqlite" else 2000)
