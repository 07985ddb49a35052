"""Call items (what the Runtime hands the audit writer) through the writer and real stores.

Batches of call items are made into rows at once (one redaction scan per batch); these
tests hold the writer's promises for them: every item from every thread stored once, in
the order each thread submitted it, the chain intact, secrets redacted, everything
queued written on close, and what was flushed kept through a SIGKILL.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from audit_helpers import call, record, submit_calls_then_wait_for_kill, token_redactor

from runtime.audit import AuditRecord, AuditWriter, JsonlSink, SqliteSink, query, verify

SPAWN = multiprocessing.get_context("spawn")
SECRET = "ghp_" + "a1B2" * 9


def _stored(db: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM calls ORDER BY seq").fetchall()
    finally:
        conn.close()


def test_call_items_from_many_threads_are_all_stored_once_in_each_threads_order_and_the_chain_verifies(
    tmp_path: Path,
) -> None:
    db = tmp_path / "audit.db"
    redactor = token_redactor()
    writer = AuditWriter(SqliteSink(db), batch_size=37, flush_interval_s=0.005)
    threads, per_thread = 8, 400
    start = threading.Barrier(threads)

    def submit(worker: int) -> None:
        start.wait(10)
        for index in range(per_thread):
            note = SECRET if index % 13 == 0 else f"worker {worker} note {index}"
            args = {"note": note, "index": index, "tags": [f"t{worker}"]}
            writer.submit(call(worker * 10_000 + index, session=f"w{worker}", args=args, redactor=redactor))

    pool = [threading.Thread(target=submit, args=(worker,)) for worker in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(60)
    assert writer.close(timeout=60)
    assert (writer.written, writer.dropped, writer.lost) == (threads * per_thread, 0, 0)
    rows = _stored(db)
    assert len(rows) == threads * per_thread
    assert len({row["call_id"] for row in rows}) == threads * per_thread
    for worker in range(threads):
        mine = [
            int(row["call_id"].split("-")[1]) - worker * 10_000 for row in rows if row["session_id"] == f"w{worker}"
        ]
        assert mine == list(range(per_thread))  # the order the thread submitted them in
    assert all(SECRET not in row["args"] for row in rows)
    assert sum("[REDACTED:token]" in row["args"] for row in rows) == threads * len(range(0, per_thread, 13))
    assert [row["seq"] for row in rows] == list(range(1, threads * per_thread + 1))
    report = verify(db)
    assert report.ok and report.chained == threads * per_thread, report.problem


def test_close_in_the_middle_of_a_batch_writes_every_queued_item(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    # A long interval and a batch size the count is no multiple of: close must write the rest.
    writer = AuditWriter(SqliteSink(db), batch_size=64, flush_interval_s=60)
    for index in range(1000):
        writer.submit(call(index, args={"password": f"pw-{index}", "index": index}, redactor=token_redactor()))
    assert writer.close(timeout=60)
    rows = _stored(db)
    assert [row["call_id"] for row in rows] == [f"call-{index}" for index in range(1000)]
    assert all("pw-" not in row["args"] for row in rows)
    assert verify(db).ok


def test_a_sigkill_while_batches_are_written_keeps_every_flushed_item_redacted_and_the_chain_intact(
    tmp_path: Path,
) -> None:
    db = tmp_path / "audit.db"
    flushed = SPAWN.Event()
    child = SPAWN.Process(target=submit_calls_then_wait_for_kill, args=(str(db), flushed, 700))
    child.start()
    try:
        assert flushed.wait(60), f"child never flushed (exit code {child.exitcode})"
        while len(query(db, session="after-flush", limit=1)) == 0:  # kill while batches flow
            child.join(0.01)
            assert child.is_alive()
        os.kill(child.pid or 0, signal.SIGKILL)
    finally:
        child.join(30)
    assert child.exitcode == -signal.SIGKILL
    before = {row["call_id"] for row in query(db, session="before-kill", limit=None)}
    assert before == {f"call-{index}" for index in range(700)}
    rows = _stored(db)
    assert all(SECRET not in row["args"] for row in rows)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    report = verify(db)
    assert report.ok and report.chained == len(rows), report.problem


def test_call_items_in_a_json_lines_log_are_linked_and_redacted(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    writer = AuditWriter(JsonlSink(log), batch_size=10, flush_interval_s=60)
    for index in range(55):
        writer.submit(call(index, args={"note": SECRET, "index": index}, redactor=token_redactor()))
        writer.submit(record(1000 + index))
    assert writer.close(timeout=30)
    text = log.read_text()
    assert SECRET not in text and text.count("[REDACTED:token]") == 55
    assert text.count('"call_id":"call-') == 110
    assert verify(log).ok


class RecordsOnly:
    """A sink of the app's own that knows write_batch only."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        self.records.extend(records)

    def close(self) -> None:
        pass


def test_a_sink_that_takes_records_only_gets_records_made_from_call_items(tmp_path: Path) -> None:
    sink = RecordsOnly()
    writer = AuditWriter(sink, flush_interval_s=60)
    items: list[Any] = [call(index, args={"note": SECRET}, redactor=token_redactor()) for index in range(5)]
    for item in items:
        writer.submit(item)
    assert writer.close(timeout=10)
    assert all(type(stored) is AuditRecord for stored in sink.records)
    rows = [stored.to_row() for stored in sink.records]
    assert [row[5] for row in rows] == [f"call-{index}" for index in range(5)]
    assert all(SECRET not in (row[8] or "") and "[REDACTED:token]" in (row[8] or "") for row in rows)
