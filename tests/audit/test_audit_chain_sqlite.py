"""The SQLite audit chain: tampering with the database in any of dozens of ways is found
at the record where it happened, and said for what it looks like.

Every case starts from a copy of one database of 20 records written in batches of 5 by
a real child-process writer (AuditWriter over ProcessSink), then changes it with plain
SQL, as an agent with write access to the file could.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import chain_tampering as tamper
import pytest
from audit_helpers import record
from chain_tampering import FIELDS, rows, sql

from runtime.audit import AuditWriter, ChainReport, SqliteSink, verify
from runtime.audit.remote import ProcessSink

COUNT = 20
LAST = COUNT

Tamper = Callable[[Path], None]
Found = tuple[str, int | None, int | None]  # kind, row id (None: the end of the log), chain position


def found(report: ChainReport) -> Found | None:
    problem = report.problem
    return None if problem is None else (problem.kind, problem.index, problem.position)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 chained records written by the child-process writer, 5 per batch."""
    db = tmp_path_factory.mktemp("template") / "audit.sqlite3"
    writer = AuditWriter(ProcessSink("sqlite", db), batch_size=5, flush_interval_s=0.01)
    for index in range(COUNT):
        writer.submit(record(index, ts=1_700_000_000.0 + index))
        if index % 5 == 4:
            assert writer.flush(timeout=30)  # batch boundaries inside the chain
    assert writer.close(timeout=30) and writer.written == COUNT
    return db


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "audit.sqlite3"
    shutil.copy(template, copy)
    return copy


def test_the_untouched_log_verifies_with_every_record_chained(db: Path) -> None:
    report = verify(db)
    assert report.ok, report.to_text()
    assert (report.kind, report.chained, report.before) == ("sqlite", COUNT, 0)
    assert report.head is not None and (report.head.seq, report.head.hash) == (COUNT, rows(db)[-1][-1])
    assert [row[-3] for row in rows(db)] == list(range(1, COUNT + 1))


FIELD_CHANGES = {
    "tool": "'file_edit'",
    "args": """'{"index": 99}'""",
    "ts": "ts + 1",
    "status": "'denied'",
    "decision": "'deny'",
    "session_id": "'someone-else'",
    "path": "'/etc/passwd'",
    "duration_ms": "123.0",
}


@pytest.mark.parametrize("row_id", [1, 10, LAST], ids=["first", "middle", "last"])
@pytest.mark.parametrize("column", sorted(FIELD_CHANGES))
def test_an_update_of_any_field_of_any_row_is_found_as_altered_at_that_row(db: Path, column: str, row_id: int) -> None:
    sql(db, (f"UPDATE calls SET {column} = {FIELD_CHANGES[column]} WHERE id = ?", (row_id,)))
    report = verify(db)
    assert found(report) == ("altered", row_id, row_id), report.to_text()
    assert report.chained == row_id - 1


def update(assignment: str, row_id: int) -> Tamper:
    return lambda db: sql(db, f"UPDATE calls SET {assignment} WHERE id = {row_id}")


def delete(where: str) -> Tamper:
    return lambda db: sql(db, f"DELETE FROM calls WHERE {where}")


LINKED = f"{FIELDS}, seq, prev_hash, hash"
APPEND_COPY_OF_7 = f"INSERT INTO calls (id, {LINKED}) SELECT 21, {LINKED} FROM calls WHERE id = 7"

# fmt: off
CASES: dict[str, tuple[Tamper, Found]] = {
    "seq of a row": (update("seq = seq + 100", 10), ("altered", 10, 110)),
    "prev_hash of a row": (update("prev_hash = hash", 10), ("altered", 10, 10)),
    "hash of a row": (update("hash = prev_hash", 10), ("altered", 10, 10)),
    "truncated flag to 2 (still reads as true)": (update("truncated = 2", 10), ("altered", 10, 10)),
    "text column to a number": (update("call_id = 7", 10), ("altered", 10, 10)),
    "a row's links cleared": (update("seq = NULL, prev_hash = NULL, hash = NULL", 10), ("inserted", 10, None)),
    "delete the first row": (delete("id = 1"), ("deleted", 2, 2)),
    "delete a middle row": (delete("id = 10"), ("deleted", 11, 11)),
    "delete the last row": (delete(f"id = {LAST}"), ("truncated", None, None)),
    "delete rows 5 to 8": (delete("id BETWEEN 5 AND 8"), ("deleted", 9, 9)),
    "delete the last 5 rows": (delete(f"id > {LAST - 5}"), ("truncated", None, None)),
    "delete every row": (delete("1"), ("truncated", None, None)),
    "swap the first two rows": (lambda db: tamper.swap_rows(db, 1, 2), ("reordered", 1, 2)),
    "swap two distant rows": (lambda db: tamper.swap_rows(db, 5, 15), ("reordered", 5, 15)),
    "swap the last two rows": (lambda db: tamper.swap_rows(db, LAST - 1, LAST), ("reordered", LAST - 1, LAST)),
    "move a row to the end": (update(f"id = {LAST + 1}", 3), ("reordered", 4, 4)),
    "forged row, hash recomputed, after the first": (lambda db: tamper.forge_after(db, 1), ("inserted", 2, 2)),
    "forged row, hash recomputed, in the middle": (lambda db: tamper.forge_after(db, 10), ("inserted", 11, 11)),
    "forged row, hash recomputed, before the last": (lambda db: tamper.forge_after(db, 19), ("inserted", 20, 20)),
    "forged row, hash recomputed, at the end": (lambda db: tamper.forge_after(db, 20), ("inserted", 21, 21)),
    "forged row claiming a far position": (tamper.far_position_after(10), ("inserted", 11, 50)),
    "copy of a row appended": (lambda db: sql(db, APPEND_COPY_OF_7), ("inserted", LAST + 1, 7)),
    "copy of a row right after it": (tamper.copy_after(7), ("inserted", 8, 7)),
    "unlinked row inserted in the middle": (tamper.unlinked_after(10), ("inserted", 11, None)),
    "first row changed, its hash recomputed": (lambda db: tamper.alter_and_rehash(db, 1), ("altered", 1, 1)),
    "middle row changed, its hash recomputed": (lambda db: tamper.alter_and_rehash(db, 10), ("altered", 10, 10)),
    "last row changed, its hash recomputed": (lambda db: tamper.alter_and_rehash(db, LAST), ("altered", LAST, LAST)),
    "head moved back": (lambda db: sql(db, "UPDATE chain_head SET seq = 15"), ("inserted", 16, 16)),
    "head row deleted": (lambda db: sql(db, "DELETE FROM chain_head"), ("head", None, None)),
    "head table dropped": (lambda db: sql(db, "DROP TABLE chain_head"), ("head", None, None)),
}
# fmt: on


@pytest.mark.parametrize(("tamper", "expected"), list(CASES.values()), ids=list(CASES))
def test_tampering_is_found_at_the_record_where_it_happened(db: Path, tamper: Tamper, expected: Found) -> None:
    tamper(db)
    report = verify(db)
    assert found(report) == expected, report.to_text()
    assert not report.ok and report.problem is not None and report.problem.message


def test_records_written_after_a_cut_do_not_hide_it(db: Path) -> None:
    sql(db, f"DELETE FROM calls WHERE id > {LAST - 3}")
    sink = SqliteSink(db)
    sink.write_batch([record(100), record(101)])
    sink.close()
    report = verify(db)
    assert found(report) == ("deleted", LAST - 2, COUNT + 1), report.to_text()
    assert report.problem is not None and f"positions {COUNT - 2}-{COUNT} are missing" in report.problem.message


def test_a_writer_that_finds_the_head_gone_goes_on_and_the_verifier_says_so(db: Path) -> None:
    sql(db, "DELETE FROM chain_head")
    sink = SqliteSink(db)
    sink.write_batch([record(100)])
    sink.close()
    assert [row[-3] for row in rows(db)][-2:] == [COUNT, COUNT + 1]  # the chain went on from the last linked row
    report = verify(db)
    assert report.problem is not None and report.problem.kind == "head" and "rebuilt" in report.problem.message


def test_a_full_rewrite_with_the_head_is_only_found_with_an_anchor_kept_elsewhere(db: Path) -> None:
    anchor, head_before = {12: rows(db)[11][-1]}, {COUNT: rows(db)[-1][-1]}
    tamper.rewrite_from(db, 10)
    assert verify(db).ok  # no secret: recomputing every hash from the change on and the head is not detectable
    assert found(verify(db, anchors=anchor)) == ("rewritten", 12, 12)
    assert found(verify(db, anchors=head_before)) == ("rewritten", LAST, COUNT)


def test_a_cut_of_the_tail_with_the_head_moved_back_is_only_found_with_an_anchor(db: Path) -> None:
    anchor = {COUNT: rows(db)[-1][-1]}
    kept = rows(db)[LAST - 4]
    move_head_back = ("UPDATE chain_head SET seq = ?, hash = ?", (kept[-3], kept[-1]))
    sql(db, f"DELETE FROM calls WHERE id > {LAST - 3}", move_head_back)
    assert verify(db).ok
    report = verify(db, anchors=anchor)
    assert found(report) == ("truncated", None, None) and report.problem is not None
    assert f"position {COUNT}" in report.problem.message


def test_an_anchor_the_log_still_holds_verifies(db: Path) -> None:
    report = verify(db)
    assert report.head is not None
    assert verify(db, anchors={report.head.seq: report.head.hash, 3: rows(db)[2][-1]}).ok
