"""JsonlSink: one JSON object per line; processes appending together never break a line."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from audit_helpers import record, write_many_jsonl

from runtime.audit import AuditWriter, JsonlSink

SPAWN = multiprocessing.get_context("spawn")


def test_each_record_is_one_parseable_line(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.jsonl"
    writer = AuditWriter(JsonlSink(path), flush_interval_s=60)
    for index in range(50):
        writer.submit(record(index, path="/ws/a\nb.txt", args={"text": "line1\nline2", "blob": b"\xff"}))
    assert writer.close() is True
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 50
    rows = [json.loads(line) for line in lines]
    assert [row["call_id"] for row in rows] == [f"call-{index}" for index in range(50)]
    assert rows[0]["args"] == {"text": "line1\nline2", "blob": {"$b64": "/w==", "bytes": 1}}
    assert rows[0]["path"] == "/ws/a\nb.txt" and rows[0]["truncated"] is False
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_a_closed_sink_reopens_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    sink = JsonlSink(path)
    sink.write_batch([record(1)])
    sink.close()
    sink.write_batch([record(2)])
    sink.close()
    assert [json.loads(line)["call_id"] for line in path.read_text().splitlines()] == ["call-1", "call-2"]


def test_two_processes_appending_at_once_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    barrier = SPAWN.Barrier(2)
    workers = [SPAWN.Process(target=write_many_jsonl, args=(str(path), worker, 20, barrier)) for worker in range(2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.decode("utf-8").splitlines()
    assert len(lines) == 2 * 20 * 100
    rows = [json.loads(line) for line in lines]  # a torn or interleaved line would not parse
    for row in rows:
        worker = row["session_id"].removeprefix("worker-")
        assert row["path"] == f"w{worker}-" * 400
    assert len({row["call_id"] for row in rows}) == 4000


def test_a_lone_surrogate_still_gives_a_valid_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    sink = JsonlSink(path)
    sink.write_batch([record(1, tool="bad\udc80tool", args={"text": "x\udcff"})])
    sink.close()
    row = json.loads(path.read_bytes().decode("utf-8"))
    assert row["tool"] == "bad?tool" and row["args"] == {"text": "x?"}
