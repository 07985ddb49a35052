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

import pytest
from audit_helpers import record
from chain_tampering import alter_and_rehash, forge_after, insert_row, make_room_after, rehash, rewrite_from, rows, sql, swap_rows

from runtime.audit import AuditWriter, SqliteSink, verify
from runtime.audit.remote import ProcessSink

COUNT = 20


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
    assert report.head is not None and report.head.seq == COUNT and report.head.hash == rows(db)[-1][-1]
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


@pytest.mark.parametrize("row_id", [1, 10, COUNT], ids=["first", "middle", "last"])
@pytest.mark.parametrize("column", sorted(FIELD_CHANGES))
def test_an_update_of_any_field_of_any_row_is_found_as_altered_at_that_row(db: Path, column: str, row_id: int) -> None:
    sql(db, (f"UPDATE calls SET {column} = {FIELD_CHANGES[column]} WHERE id = ?", (row_id,)))
    report = verify(db)
    assert report.problem is not None and (report.problem.kind, report.problem.index, report.problem.position) == ("altered", row_id, row_id), report.to_text()
    assert report.chained == row_id - 1


Tamper = Callable[[Path], None]

# (what is done, expected kind, expected row id (None: the end of the log), expected position)
CASES: list[tuple[str, Tamper, str, int | None, int | None]] = [
    ("seq of a row", lambda db: sql(db, "UPDATE calls SET seq = seq + 100 WHERE id = 10"), "altered", 10, 110),
    ("prev_hash of a row", lambda db: sql(db, "UPDATE calls SET prev_hash = hash WHERE id = 10"), "altered", 10, 10),
    ("hash of a row", lambda db: sql(db, "UPDATE calls SET hash = prev_hash WHERE id = 10"), "altered", 10, 10),
    ("truncated flag to 2 (still reads as true)", lambda db: sql(db, "UPDATE calls SET truncated = 2 WHERE id = 10"), "altered", 10, 10),
    ("text column to a number", lambda db: sql(db, "UPDATE calls SET call_id = 7 WHERE id = 10"), "altered", 10, 10),
    ("a row's links cleared", lambda db: sql(db, "UPDATE calls SET seq = NULL, prev_hash = NULL, hash = NULL WHERE id = 10"), "inserted", 10, None),
    ("delete the first row", lambda db: sql(db, "DELETE FROM calls WHERE id = 1"), "deleted", 2, 2),
    ("delete a middle row", lambda db: sql(db, "DELETE FROM calls WHERE id = 10"), "deleted", 11, 11),
    ("delete the last row", lambda db: sql(db, f"DELETE FROM calls WHERE id = {COUNT}"), "truncated", None, None),
    ("delete rows 5 to 8", lambda db: sql(db, "DELETE FROM calls WHERE id BETWEEN 5 AND 8"), "deleted", 9, 9),
    ("delete the last 5 rows", lambda db: sql(db, f"DELETE FROM calls WHERE id > {COUNT - 5}"), "truncated", None, None),
    ("delete every row", lambda db: sql(db, "DELETE FROM calls"), "truncated", None, None),
    ("swap the first two rows", lambda db: swap_rows(db, 1, 2), "reordered", 1, 2),
    ("swap two distant rows", lambda db: swap_rows(db, 5, 15), "reordered", 5, 15),
    ("swap the last two rows", lambda db: swap_rows(db, COUNT - 1, COUNT), "reordered", COUNT - 1, COUNT),
    ("move a row to the end", lambda db: sql(db, f"UPDATE calls SET id = {COUNT + 1} WHERE id = 3"), "reordered", 4, 4),
    ("forged row with a recomputed hash after the first", lambda db: forge_after(db, 1), "inserted", 2, 2),
    ("forged row with a recomputed hash in the middle", lambda db: forge_after(db, 10), "inserted", 11, 11),
    ("forged row with a recomputed hash before the last", lambda db: forge_after(db, COUNT - 1), "inserted", COUNT, COUNT),
    ("forged row with a recomputed hash at the end", lambda db: forge_after(db, COUNT), "inserted", COUNT + 1, COUNT + 1),
    ("copy of a row appended", lambda db: sql(db, f"INSERT INTO calls SELECT {COUNT + 1}, ts, session_id, user, request_id, trace_id, call_id, tool, tool_version, args, decision, rule, status, code, duration_ms, truncated, artifact, path, hash_before, hash_after, snapshot, seq, prev_hash, hash FROM calls WHERE id = 7"), "inserted", COUNT + 1, 7),
    ("copy of a row right after it", lambda db: (make_room_after(db, 7), insert_row(db, 8, tuple(rows(db)[6][1:-3]), *rows(db)[6][-3:])), "inserted", 8, 7),
    ("unlinked row inserted in the middle", lambda db: (make_room_after(db, 10), insert_row(db, 11, tuple(rows(db)[9][1:-3]), None, None, None)), "inserted", 11, None),
    ("row claiming a far position, linked to the row before", lambda db: _far_position_after(db, 10), "inserted", 11, 50),
    ("first row changed and its hash recomputed", lambda db: alter_and_rehash(db, 1), "altered", 1, 1),
    ("middle row changed and its hash recomputed", lambda db: alter_and_rehash(db, 10), "altered", 10, 10),
    ("last row changed and its hash recomputed", lambda db: alter_and_rehash(db, COUNT), "altered", COUNT, COUNT),
    ("head moved back", lambda db: sql(db, "UPDATE chain_head SET seq = 15"), "inserted", 16, 16),
    ("head row deleted", lambda db: sql(db, "DELETE FROM chain_head"), "head", None, None),
    ("head table dropped", lambda db: sql(db, "DROP TABLE chain_head"), "head", None, None),
]


def _far_position_after(db: Path, row_id: int) -> None:
    """A forged row with a correct hash, linked to ``row_id`` but claiming position 50."""
    before = rows(db)[row_id - 1]
    make_room_after(db, row_id)
    values = tuple(before[1:-3])
    insert_row(db, row_id + 1, values, 50, before[-1], rehash(values, 50, before[-1]))


@pytest.mark.parametrize(("tamper", "kind", "index", "position"), [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_tampering_is_found_at_the_record_where_it_happened(db: Path, tamper: Tamper, kind: str, index: int | None, position: int | None) -> None:
    tamper(db)
    report = verify(db)
    assert report.problem is not None, report.to_text()
    assert (report.problem.kind, report.problem.index, report.problem.position) == (kind, index, position), report.to_text()
    assert not report.ok and report.problem.message


def test_records_written_after_a_cut_do_not_hide_it(db: Path) -> None:
    sql(db, f"DELETE FROM calls WHERE id > {COUNT - 3}")
    sink = SqliteSink(db)
    sink.write_batch([record(100), record(101)])
    sink.close()
    report = verify(db)
    assert report.problem is not None and (report.problem.kind, report.problem.position) == ("deleted", COUNT + 1), report.to_text()
    assert f"positions {COUNT - 2}-{COUNT} are missing" in report.problem.message


def test_a_writer_that_finds_the_head_gone_goes_on_and_the_verifier_says_so(db: Path) -> None:
    sql(db, "DELETE FROM chain_head")
    sink = SqliteSink(db)
    sink.write_batch([record(100)])
    sink.close()
    assert [row[-3] for row in rows(db)][-2:] == [COUNT, COUNT + 1]  # the chain went on from the last linked row
    report = verify(db)
    assert report.problem is not None and report.problem.kind == "head" and "rebuilt" in report.problem.message


def test_a_full_rewrite_with_the_head_is_only_found_with_an_anchor_kept_elsewhere(db: Path) -> None:
    anchor = {12: rows(db)[11][-1]}
    head_before = {COUNT: rows(db)[-1][-1]}
    rewrite_from(db, 10)
    assert verify(db).ok  # no secret: recomputing every hash from the change on and the head is not detectable
    report = verify(db, anchors=anchor)
    assert report.problem is not None and (report.problem.kind, report.problem.index, report.problem.position) == ("rewritten", 12, 12)
    report = verify(db, anchors=head_before)
    assert report.problem is not None and (report.problem.kind, report.problem.index) == ("rewritten", COUNT)


def test_a_cut_of_the_tail_with_the_head_moved_back_is_only_found_with_an_anchor(db: Path) -> None:
    anchor = {COUNT: rows(db)[-1][-1]}
    last_kept = rows(db)[COUNT - 4]
    sql(db, f"DELETE FROM calls WHERE id > {COUNT - 3}", ("UPDATE chain_head SET seq = ?, hash = ?", (last_kept[-3], last_kept[-1])))
    assert verify(db).ok
    report = verify(db, anchors=anchor)
    assert report.problem is not None and report.problem.kind == "truncated" and f"position {COUNT}" in report.problem.message


def test_an_anchor_the_log_still_holds_verifies(db: Path) -> None:
    report = verify(db)
    assert report.head is not None
    assert verify(db, anchors={report.head.seq: report.head.hash, 3: rows(db)[2][-1]}).ok
