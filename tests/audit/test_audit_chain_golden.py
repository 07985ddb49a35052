"""The stored audit log, byte for byte, for a fixed corpus: every stored value and every
link of the hash chain, through each way a batch reaches the store.

The corpus holds call items (as the Runtime hands them over) and an application's
records, with clean and hostile arguments, odd metadata, every status and empty
columns, at fixed times. Its rows and chain are pinned by digests taken before the
writer's speed-ups (NULL parameters, the row body's fast path, the columnar hand-off
to the writer child): a change to what is stored, or to how a link is hashed, changes
them. ``toolrt audit verify`` must also accept each log.
"""

from __future__ import annotations

import enum
import hashlib
import json
import sqlite3
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from runtime import load_snapshot
from runtime.audit import AuditRecord, AuditWriter, JsonlSink, SqliteSink, verify
from runtime.audit.record import call_item
from runtime.audit.remote import ProcessSink
from runtime.records import Session, Status, ToolResult

SHIPPED = load_snapshot([Path(__file__).resolve().parents[2] / "policies"]).redactor
TOKEN = "ghp_" + "a1B2" * 9
T0 = 1_790_000_000.25


class Color(enum.Enum):
    RED = "red"


def _item(
    index: int, args: Any, metadata: Any, status: Status, session: Any, redactor: Any = SHIPPED
) -> tuple[Any, ...]:
    result = ToolResult(call_id=f"c{index}", name=f"tool_{index % 3}", status=status, content="x", metadata=metadata)
    made = call_item(result, session, f"req-{index // 4}", None if index % 2 else f"trace-{index}", args, redactor)
    return (T0 + index * 0.125, *made[1:])  # a fixed time instead of the clock's


def corpus() -> list[Any]:
    """Call items and records, in the order they are stored."""
    arguments: list[Any] = [
        {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False},
        {"command": f"curl -H 'Authorization: Bearer {TOKEN}' https://x"},
        {"cfg": {"db": {"Password": "hunter2"}}},
        MappingProxyType({"token": "abc", "path": "x"}),
        {"bytes": TOKEN.encode(), "raw": b"\xff\xfe"},
        {"frozen": frozenset({"b", "a"}), "color": Color.RED},
        {"tuple": (1.5, None, 1e-7, 1e20, -0.0), "big": 2**70},
        {"escaped": 'he said "hi"', "newline": "a\nb", "unicode": "naïve café ✓"},
        {"lone": "\ud800x"},
        {"mail": "write to maria.lopez@example.org today"},
        {"huge": "x" * 9_000},
        {"nan": float("nan")},
        {},
        None,
        [TOKEN, "list at the top"],
        {"path": "", "limit": 0, "mode": None},
    ]
    metadatas: list[Any] = [
        MappingProxyType(
            {
                "decision": "allow",
                "status": "ok",
                "snapshot": "d1e01fd6a043907c",
                "timings_ms": {"total_ms": 0.42, "execute_ms": 0.1},
                "tool_version": "1.2.0",
                "redactions": {"email": 1},
            }
        ),
        MappingProxyType(
            {
                "decision": "ask",
                "approved": "approver",
                "rule": "pol/ask-prod",
                "status": "ok",
                "truncated": True,
                "artifact_id": "art-1",
                "path": "/w/a.txt",
                "hash_before": "ab" * 32,
                "hash_after": "cd" * 32,
                "staged": [("pol/warn-1", "deny", "warn"), ("pol/audit-2", "ask", "audit")],
                "timings_ms": {"total_ms": 12.0},
            }
        ),
        MappingProxyType({"decision": "deny", "rule": "pol/no", "status": "denied"}),
        MappingProxyType({}),
        MappingProxyType({"status": "error", "timings_ms": {"total_ms": 0.0}, "artifact": "art-2"}),
        MappingProxyType({"timings_ms": "not a mapping", "tool_version": 3}),
    ]
    sessions: list[Any] = [Session(), Session(id="s-2", user="ana"), "bare-session", None]
    statuses = list(Status)
    items: list[Any] = []
    for index, args in enumerate(arguments * 2):
        items.append(
            _item(
                index,
                args,
                metadatas[index % len(metadatas)],
                statuses[index % len(statuses)],
                sessions[index % len(sessions)],
                SHIPPED if index % 5 else None,
            )
        )
    items.insert(5, AuditRecord(ts=T0 - 1, session_id="app", tool="own", args={"k": "v"}, duration_ms=0.0))
    items.insert(9, AuditRecord(ts=T0 - 2, args={"password": "hunter2"}, truncated=True, staged="p/r:deny:warn"))
    items.append(AuditRecord(ts=T0 + 99, call_id="last"))
    return items


def _sqlite_digest(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT * FROM calls ORDER BY id").fetchall()
        head = conn.execute("SELECT seq, hash, before FROM chain_head").fetchall()
    text = json.dumps([[repr(value) for value in row] for row in rows] + [list(map(repr, head))])
    return hashlib.sha256(text.encode()).hexdigest()


def _jsonl_digest(path: Path) -> str:
    log = path.read_bytes()
    head = path.with_name(path.name + ".head").read_bytes()
    return hashlib.sha256(log + b"--head--" + head).hexdigest()


# Taken from the writer before the speed-ups, over corpus(), in batches of 7.
GOLDEN = {
    "sqlite": "b8f37b1bc0cd48769b5cd07224df76c5265ce9a744ada731659c3322fb8383de",
    "jsonl": "61b5f0e0eca84dc77e559178bfe422d49363874ddf82c755f453d9347fa3b8d5",
}


def _write(sink: Any, items: list[Any]) -> None:
    writer = AuditWriter(sink, batch_size=7, flush_interval_s=0.01)
    for start in range(0, len(items), 7):
        for one in items[start : start + 7]:
            writer.submit(one)
        assert writer.flush(timeout=60)
    assert writer.close(timeout=60)
    assert writer.written == len(items) and writer.lost == 0


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_the_sqlite_log_of_the_fixed_corpus_is_byte_for_byte_the_pinned_one(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "audit.sqlite3"
    sink = SqliteSink(path) if writer == "thread" else ProcessSink("sqlite", path)
    _write(sink, corpus())
    assert verify(path).ok
    assert _sqlite_digest(path) == GOLDEN["sqlite"]


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_the_jsonl_log_of_the_fixed_corpus_is_byte_for_byte_the_pinned_one(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "audit.jsonl"
    sink = JsonlSink(path) if writer == "thread" else ProcessSink("jsonl", path)
    _write(sink, corpus())
    assert verify(path).ok
    assert _jsonl_digest(path) == GOLDEN["jsonl"]
