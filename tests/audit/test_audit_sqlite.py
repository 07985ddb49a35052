"""SqliteSink and query(): real database files, real threads and processes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from audit_helpers import record, write_many_sqlite, write_then_wait_for_kill

from runtime.audit import SCHEMA_VERSION, AuditRecord, AuditStoreError, AuditWriter, SqliteSink, query
from runtime.audit.record import COLUMNS
from runtime.errors import UsageError
from runtime.records import Status

SPAWN = multiprocessing.get_context("spawn")  # no fork of a process running threads


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "audit.db"


def _fill(path: Path) -> None:
    sink = SqliteSink(path)
    sink.write_batch(
        [
            record(1, session="s1", tool="file_read", ts=1000.0),
            record(
                2,
                session="s1",
                tool="file_write",
                ts=2000.0,
                path="/ws/a.txt",
                hash_before="sha256:aa",
                hash_after="sha256:bb",
            ),
            record(3, session="s2", tool="file_read", status="denied", ts=3000.0),
            record(4, session="s2", tool="shell", status="timeout", ts=4000.0),
            record(5, session="s1", tool="file_read", ts=5000.0),
        ]
    )
    sink.close()


def _ids(rows: list[dict[str, object]]) -> list[object]:
    return [row["call_id"] for row in rows]


def test_a_record_round_trips_through_the_sink_and_query(db: Path) -> None:
    original = AuditRecord(
        ts=1234.5,
        session_id="s",
        user="ana",
        request_id="req",
        trace_id="trace",
        call_id="c",
        tool="file_write",
        tool_version="2",
        args={"path": "a.txt", "content": "hi"},
        decision="ask",
        rule="ask-writes",
        status=Status.ok,  # type: ignore[arg-type]
        code=None,
        duration_ms=1.25,
        truncated=True,
        artifact="art-1",
        path="/ws/a.txt",
        hash_before="sha256:00",
        hash_after="sha256:11",
        snapshot="snap-3",
        staged="policy/shadow:deny:warn",
    )
    sink = SqliteSink(db)
    sink.write_batch([original])
    sink.close()
    [row] = query(db)
    assert row.pop("id") == 1
    assert row == {
        "ts": 1234.5,
        "session_id": "s",
        "user": "ana",
        "request_id": "req",
        "trace_id": "trace",
        "call_id": "c",
        "tool": "file_write",
        "tool_version": "2",
        "args": {"path": "a.txt", "content": "hi"},
        "decision": "ask",
        "rule": "ask-writes",
        "status": "ok",
        "code": None,
        "duration_ms": 1.25,
        "truncated": True,
        "artifact": "art-1",
        "path": "/ws/a.txt",
        "hash_before": "sha256:00",
        "hash_after": "sha256:11",
        "snapshot": "snap-3",
        "staged": "policy/shadow:deny:warn",
    }


def test_query_returns_newest_first_and_honours_limit(db: Path) -> None:
    _fill(db)
    assert _ids(query(db)) == ["call-5", "call-4", "call-3", "call-2", "call-1"]
    assert _ids(query(db, limit=2)) == ["call-5", "call-4"]
    assert len(query(db, limit=None)) == 5
    with pytest.raises(ValueError, match="limit"):
        query(db, limit=0)


def test_query_filters_by_session_tool_time_and_status(db: Path) -> None:
    _fill(db)
    assert _ids(query(db, session="s2")) == ["call-4", "call-3"]
    assert _ids(query(db, tool="file_read")) == ["call-5", "call-3", "call-1"]
    assert _ids(query(db, since=3000.0)) == ["call-5", "call-4", "call-3"]
    assert _ids(query(db, until=3000.0)) == ["call-2", "call-1"]
    assert _ids(query(db, since=2000.0, until=4000.0)) == ["call-3", "call-2"]
    assert _ids(query(db, status="denied")) == ["call-3"]
    assert _ids(query(db, status=Status.timeout)) == ["call-4"]
    assert _ids(query(db, session="s1", tool="file_read", since=2000.0)) == ["call-5"]
    assert query(db, session="nobody") == []


def test_filter_values_are_parameters_not_sql(db: Path) -> None:
    _fill(db)
    assert query(db, session="s1' OR '1'='1") == []
    assert len(query(db)) == 5


def test_the_database_is_in_wal_mode_with_indexes_and_a_schema_version(db: Path) -> None:
    _fill(db)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        indexed = {row[0] for row in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index'") if row[0]}
        assert (
            any("session_id" in sql for sql in indexed)
            and any("tool" in sql for sql in indexed)
            and any("(ts)" in sql for sql in indexed)
        )
    finally:
        conn.close()
    assert oct(db.stat().st_mode & 0o777) == oct(0o600)


def test_opening_the_sink_again_keeps_the_rows(db: Path) -> None:
    _fill(db)
    SqliteSink(db).close()
    assert len(query(db)) == 5


def test_a_database_from_a_newer_schema_is_refused(db: Path) -> None:
    _fill(db)
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(AuditStoreError, match="newer"):
        SqliteSink(db)


def test_a_foreign_sqlite_database_is_refused_by_the_sink_and_by_query(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE things (x)")
    conn.commit()
    conn.close()
    with pytest.raises(AuditStoreError, match="not a toolrt audit database"):
        SqliteSink(other)
    with pytest.raises(UsageError, match="not a toolrt audit database"):
        query(other)


def test_query_on_a_missing_database_names_the_file_and_the_likely_cause(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "audit.db"
    with pytest.raises(UsageError) as caught:
        query(missing)
    assert (
        str(missing) in str(caught.value)
        and "no calls have been recorded" in str(caught.value)
        and "path is wrong" in str(caught.value)
    )
    assert not missing.exists()


def test_query_on_a_file_that_is_not_sqlite_is_a_usage_error(tmp_path: Path) -> None:
    junk = tmp_path / "audit.db"
    junk.write_text("not a database, just text " * 100)
    with pytest.raises(UsageError, match="audit database"):
        query(junk)


def test_query_reads_while_a_writer_is_still_open(db: Path) -> None:
    writer = AuditWriter(SqliteSink(db), flush_interval_s=60)
    try:
        for index in range(10):
            writer.submit(record(index))
        assert writer.flush(timeout=10)
        assert len(query(db)) == 10
    finally:
        writer.close()


def test_four_processes_writing_one_database_lose_nothing(db: Path) -> None:
    SqliteSink(db).close()
    barrier = SPAWN.Barrier(4)
    results = SPAWN.Queue()
    workers = [
        SPAWN.Process(target=write_many_sqlite, args=(str(db), worker, 2000, barrier, results)) for worker in range(4)
    ]
    for process in workers:
        process.start()
    stats = [results.get(timeout=120) for _ in workers]
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    for item in stats:
        assert item["closed"] is True, item
        assert (item["written"], item["failed_batches"], item["lost"], item["dropped"], item["last_error"]) == (
            2000,
            0,
            0,
            0,
            None,
        ), item
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*), count(DISTINCT call_id) FROM calls").fetchone() == (8000, 8000)
        assert dict(conn.execute("SELECT session_id, count(*) FROM calls GROUP BY session_id").fetchall()) == {
            f"worker-{worker}": 2000 for worker in range(4)
        }
    finally:
        conn.close()


def test_flushed_records_survive_a_sigkill_and_the_database_stays_intact(db: Path) -> None:
    flushed = SPAWN.Event()
    child = SPAWN.Process(target=write_then_wait_for_kill, args=(str(db), flushed, 500))
    child.start()
    try:
        assert flushed.wait(60), f"child never flushed (exit code {child.exitcode})"
        # Let it commit more batches so the kill lands while it is writing.
        while len(query(db, session="after-flush", limit=1)) == 0:
            child.join(0.01)
            assert child.is_alive()
        os.kill(child.pid or 0, signal.SIGKILL)
    finally:
        child.join(30)
    assert child.exitcode == -signal.SIGKILL
    # Read first through query's read-only connection, with the killed writer's WAL left behind.
    before = {row["call_id"] for row in query(db, session="before-kill", limit=None)}
    assert before == {f"call-{index}" for index in range(500)}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    # And the store is still writable afterwards.
    sink = SqliteSink(db)
    sink.write_batch([record(10_000, session="after-kill")])
    sink.close()
    assert _ids(query(db, session="after-kill")) == ["call-10000"]


def _hold_write_lock(path: Path, seconds: float) -> tuple[threading.Thread, threading.Event]:
    held = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(5)
    return thread, held


def test_a_write_retries_with_backoff_while_another_connection_holds_the_lock_past_the_busy_timeout(db: Path) -> None:
    sink = SqliteSink(db, busy_timeout_ms=10)
    thread, _ = _hold_write_lock(db, 0.3)
    started = time.monotonic()
    sink.write_batch([record(1)])  # busy after 10 ms, then retried until the lock is free
    waited = time.monotonic() - started
    thread.join()
    sink.close()
    assert waited >= 0.2
    assert _ids(query(db)) == ["call-1"]


def test_a_lock_held_past_every_retry_raises_for_the_writer_to_count(db: Path) -> None:
    sink = SqliteSink(db, busy_timeout_ms=10, lock_retries=1)
    thread, _ = _hold_write_lock(db, 0.5)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            sink.write_batch([record(1)])
    finally:
        thread.join()
    sink.write_batch([record(2)])  # the connection is usable again: no transaction left open
    sink.close()
    assert _ids(query(db)) == ["call-2"]


def test_a_value_sqlite_cannot_bind_does_not_cost_the_batch(db: Path) -> None:
    sink = SqliteSink(db)
    odd = AuditRecord(ts=10.0, tool="bad\udc80tool", call_id=10**30, args={"text": "x\udcff"})  # type: ignore[arg-type]
    sink.write_batch([record(1, ts=5.0), odd])
    sink.close()
    rows = query(db)
    assert [row["call_id"] for row in rows] == [str(10**30), "call-1"]
    assert rows[0]["tool"] == "bad?tool" and rows[0]["args"] == {"text": "x?"}


def test_a_batch_larger_than_one_statement_allows_is_inserted_in_chunks_in_one_transaction(db: Path) -> None:
    sink = SqliteSink(db)
    sink._connection().setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 45)  # two rows of 20 columns per statement
    sink.write_batch([record(index, ts=float(index)) for index in range(7)])
    sink.close()
    assert _ids(query(db)) == [f"call-{index}" for index in reversed(range(7))]


def test_empty_columns_are_stored_as_null_and_empty_text_and_zeros_as_themselves(db: Path) -> None:
    # Empty columns are bound through NULLIF(?, x''): only None may come back as NULL.
    nothing = AuditRecord(ts=1.5)
    zeros = AuditRecord(
        ts=2.5,
        duration_ms=0.0,
        args={},
        **{name: "" for name in COLUMNS if name not in ("ts", "duration_ms", "args", "truncated")},
    )
    texts = AuditRecord(
        ts=3.5, duration_ms=-0.5, truncated=True, **{name: "0" for name in ("session_id", "code", "staged")}
    )
    sink = SqliteSink(db)
    sink.write_batch([nothing, zeros, texts])
    sink.close()
    with sqlite3.connect(db) as conn:
        typed = conn.execute(
            f"SELECT {', '.join(f'typeof({name}), {name}' for name in COLUMNS)} FROM calls ORDER BY id"
        )
        stored = [dict(zip(COLUMNS, zip(row[::2], row[1::2], strict=True), strict=True)) for row in typed]
    assert {kind for name, (kind, _value) in stored[0].items() if name not in ("ts", "truncated")} == {"null"}
    assert stored[0]["ts"] == ("real", 1.5) and stored[0]["truncated"] == ("integer", 0)
    assert stored[1]["duration_ms"] == ("real", 0.0) and stored[1]["args"] == ("text", "{}")
    assert all(
        stored[1][name] == ("text", "") for name in COLUMNS if name not in ("ts", "duration_ms", "args", "truncated")
    )
    assert stored[2]["duration_ms"] == ("real", -0.5) and stored[2]["truncated"] == ("integer", 1)
    assert stored[2]["session_id"] == stored[2]["code"] == stored[2]["staged"] == ("text", "0")
    assert stored[2]["user"] == ("null", None)
