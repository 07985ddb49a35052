"""The JSON-lines audit chain: edited, removed, reordered, duplicated, forged and garbage
lines are each found at the line where they are, and a cut tail through the head file.

Every case starts from a copy of one log of 20 records written in batches of 5 by a
real child-process writer (AuditWriter over ProcessSink), then rewrites the file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from audit_helpers import record
from chain_tampering import forged_line, head_file, lines, link_of, write_lines

from runtime.audit import AuditWriter, JsonlSink, verify
from runtime.audit.chain import GENESIS, Head, head_line, parse_head
from runtime.audit.remote import ProcessSink

COUNT = 20


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 chained lines written by the child-process writer, 5 per batch."""
    log = tmp_path_factory.mktemp("template") / "audit.jsonl"
    writer = AuditWriter(ProcessSink("jsonl", log), batch_size=5, flush_interval_s=0.01)
    for index in range(COUNT):
        writer.submit(record(index, ts=1_700_000_000.0 + index))
        if index % 5 == 4:
            assert writer.flush(timeout=30)
    assert writer.close(timeout=30) and writer.written == COUNT
    return log


@pytest.fixture
def log(template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "audit.jsonl"
    shutil.copy(template, copy)
    shutil.copy(head_file(template), head_file(copy))
    return copy


def test_the_untouched_log_verifies_and_every_line_is_still_plain_json(log: Path) -> None:
    report = verify(log)
    assert report.ok, report.to_text()
    assert (report.kind, report.unit, report.chained, report.before) == ("jsonl", "line", COUNT, 0)
    rows = [json.loads(line) for line in lines(log)]
    assert [row["seq"] for row in rows] == list(range(1, COUNT + 1))
    assert rows[0]["prev_hash"] == GENESIS and all(
        row["prev_hash"] == before["hash"] for before, row in zip(rows, rows[1:], strict=False)
    )
    assert parse_head(head_file(log).read_bytes()) == Head(COUNT, rows[-1]["hash"], 0)
    assert rows[3]["call_id"] == "call-3" and rows[3]["args"] == {"index": 3}


def _edit(number: int, old: bytes, new: bytes) -> Callable[[Path], None]:
    def edit(log: Path) -> None:
        found = lines(log)
        if old not in found[number - 1]:
            raise AssertionError(f"line {number} has no {old!r}")
        found[number - 1] = found[number - 1].replace(old, new, 1)
        write_lines(log, found)

    return edit


def _remove(*numbers: int) -> Callable[[Path], None]:
    return lambda log: write_lines(log, [line for number, line in enumerate(lines(log), 1) if number not in numbers])


def _swap(first: int, second: int) -> Callable[[Path], None]:
    def swap(log: Path) -> None:
        found = lines(log)
        found[first - 1], found[second - 1] = found[second - 1], found[first - 1]
        write_lines(log, found)

    return swap


def _insert(after: int, make: Callable[[list[bytes]], bytes]) -> Callable[[Path], None]:
    def insert(log: Path) -> None:
        found = lines(log)
        found.insert(after, make(found))
        write_lines(log, found)

    return insert


def _append(data: bytes) -> Callable[[Path], None]:
    def append(log: Path) -> None:
        with log.open("ab") as handle:
            handle.write(data)

    return append


def _move_head_back(log: Path) -> None:
    rows = lines(log)
    head_file(log).write_bytes(head_line(Head(15, link_of(rows[14]).hash, 0)))


UNCHAINED = (
    json.dumps({"ts": 1_700_000_100.0, "tool": "file_read", "status": "ok", "session_id": "s1"}).encode() + b"\n"
)

# (what is done, expected kind, expected line (None: the end of the log), expected position)
CASES: list[tuple[str, Callable[[Path], None], str, int | None, int | None]] = [
    ("edit the tool of the first line", _edit(1, b'"tool":"file_read"', b'"tool":"file_edit"'), "altered", 1, 1),
    ("edit the tool of a middle line", _edit(10, b'"tool":"file_read"', b'"tool":"file_edit"'), "altered", 10, 10),
    (
        "edit the tool of the last line",
        _edit(COUNT, b'"tool":"file_read"', b'"tool":"file_edit"'),
        "altered",
        COUNT,
        COUNT,
    ),
    ("edit the status of the first line", _edit(1, b'"status":"ok"', b'"status":"denied"'), "altered", 1, 1),
    ("edit the status of a middle line", _edit(10, b'"status":"ok"', b'"status":"denied"'), "altered", 10, 10),
    ("edit the status of the last line", _edit(COUNT, b'"status":"ok"', b'"status":"denied"'), "altered", COUNT, COUNT),
    ("edit the args of the first line", _edit(1, b'"args":{"index":0}', b'"args":{"index":99}'), "altered", 1, 1),
    ("edit the args of a middle line", _edit(10, b'"args":{"index":9}', b'"args":{"index":99}'), "altered", 10, 10),
    (
        "edit the args of the last line",
        _edit(COUNT, b'"args":{"index":19}', b'"args":{"index":99}'),
        "altered",
        COUNT,
        COUNT,
    ),
    ("add a space to a line", _edit(10, b'"decision":', b'"decision": '), "altered", 10, 10),
    ("edit the seq of a line", _edit(10, b'"seq":10,', b'"seq":11,'), "altered", 10, 11),
    ("break the hash of a line", _edit(10, b'"}\n', b'x"}\n'), "altered", 10, None),
    ("remove the first line", _remove(1), "deleted", 1, 2),
    ("remove a middle line", _remove(10), "deleted", 10, 11),
    ("remove the last line", _remove(COUNT), "truncated", None, None),
    ("remove the last 5 lines", _remove(*range(COUNT - 4, COUNT + 1)), "truncated", None, None),
    ("remove every line", _remove(*range(1, COUNT + 1)), "truncated", None, None),
    ("swap two adjacent lines", _swap(3, 4), "reordered", 3, 4),
    ("swap two distant lines", _swap(5, 15), "reordered", 5, 15),
    ("duplicate a line at the end", _insert(COUNT, lambda found: found[6]), "inserted", COUNT + 1, 7),
    ("duplicate a line right after it", _insert(7, lambda found: found[6]), "inserted", 8, 7),
    (
        "forged line with a recomputed hash in the middle",
        _insert(10, lambda found: forged_line(found[9], found[10])),
        "inserted",
        11,
        11,
    ),
    (
        "forged line with a recomputed hash after the first",
        _insert(1, lambda found: forged_line(found[0], found[1])),
        "inserted",
        2,
        2,
    ),
    (
        "forged line with a recomputed hash at the end",
        _insert(COUNT, lambda found: forged_line(found[-1], found[-1])),
        "inserted",
        COUNT + 1,
        COUNT + 1,
    ),
    ("unchained record inserted in the middle", _insert(10, lambda found: UNCHAINED), "inserted", 11, None),
    ("unchained record appended", _append(UNCHAINED), "inserted", COUNT + 1, None),
    ("garbage appended", _append(b"garbage\n"), "garbage", COUNT + 1, None),
    ("garbage appended without a newline", _append(b"\x00\xff not json"), "garbage", COUNT + 1, None),
    ("garbage inserted in the middle", _insert(10, lambda found: b"{not json\n"), "garbage", 11, None),
    ("an empty line inserted", _insert(10, lambda found: b"\n"), "garbage", 11, None),
    ("the last line cut short", lambda log: log.write_bytes(log.read_bytes()[:-40]), "garbage", COUNT, None),
    ("head file removed", lambda log: head_file(log).unlink(), "head", None, None),
    ("head file moved back", _move_head_back, "inserted", 16, 16),
]


@pytest.mark.parametrize(
    ("tamper", "kind", "index", "position"), [pytest.param(*case[1:], id=case[0]) for case in CASES]
)
def test_tampering_is_found_at_the_line_where_it_happened(
    log: Path, tamper: Callable[[Path], None], kind: str, index: int | None, position: int | None
) -> None:
    tamper(log)
    report = verify(log)
    assert report.problem is not None, report.to_text()
    assert (report.problem.kind, report.problem.index, report.problem.position) == (kind, index, position), (
        report.to_text()
    )


def test_lines_appended_after_a_cut_do_not_hide_it(log: Path) -> None:
    _remove(COUNT - 1, COUNT)(log)
    sink = JsonlSink(log)
    sink.write_batch([record(100)])
    sink.close()
    report = verify(log)
    assert report.problem is not None and (report.problem.kind, report.problem.index, report.problem.position) == (
        "deleted",
        COUNT - 1,
        COUNT + 1,
    )


def test_a_writer_after_a_crash_cut_line_starts_a_line_of_its_own_and_links_past_it(log: Path) -> None:
    log.write_bytes(log.read_bytes() + b'{"ts": 1, "tool": "cut sho')  # a batch cut short (not ours, but it could be)
    sink = JsonlSink(log)
    sink.write_batch([record(100)])
    sink.close()
    found = lines(log)
    assert found[COUNT] == b'{"ts": 1, "tool": "cut sho\n' and link_of(found[COUNT + 1]).seq == COUNT + 1
    report = verify(log)
    assert report.problem is not None and (report.problem.kind, report.problem.index) == ("garbage", COUNT + 1)


def test_a_writer_that_finds_the_head_file_gone_goes_on_and_the_verifier_says_so(log: Path) -> None:
    head_file(log).unlink()
    sink = JsonlSink(log)
    sink.write_batch([record(100)])
    sink.close()
    assert link_of(lines(log)[-1]).seq == COUNT + 1
    report = verify(log)
    assert report.problem is not None and report.problem.kind == "head" and "rebuilt" in report.problem.message


def test_a_rewrite_of_the_whole_file_is_only_found_with_an_anchor(log: Path, tmp_path: Path) -> None:
    anchor = {COUNT: link_of(lines(log)[-1]).hash}
    log.unlink()
    head_file(log).unlink()
    sink = JsonlSink(log)
    sink.write_batch([record(index, tool="innocent") for index in range(COUNT)])
    sink.close()
    assert verify(log).ok  # a fresh, self-consistent log: nothing in it can tell
    report = verify(log, anchors=anchor)
    assert report.problem is not None and (report.problem.kind, report.problem.index) == ("rewritten", COUNT)
