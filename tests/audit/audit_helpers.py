"""Shared helpers for the audit tests, importable by child processes (spawn)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from runtime.audit import AuditRecord, AuditWriter, JsonlSink, SqliteSink


def record(
    index: int = 0,
    *,
    session: str = "s1",
    tool: str = "file_read",
    status: str = "ok",
    ts: float | None = None,
    **fields: Any,
) -> AuditRecord:
    """A record whose call_id carries ``index``, so tests can tell which ones arrived."""
    values: dict[str, Any] = {
        "session_id": session,
        "call_id": f"call-{index}",
        "tool": tool,
        "status": status,
        "decision": "allow",
        "args": {"index": index},
        "duration_ms": 0.05,
    }
    values.update(fields)
    return AuditRecord(ts=time.time() if ts is None else ts, **values)


class MemorySink:
    """Keeps batches in memory; can fail the first ``fail_times`` writes or block until released."""

    def __init__(self, *, fail_times: int = 0, block: bool = False) -> None:
        self.batches: list[list[AuditRecord]] = []
        self.calls = 0
        self.fail_times = fail_times
        self.entered = threading.Event()
        self.release = threading.Event()
        if not block:
            self.release.set()
        self.closed = 0

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        self.calls += 1
        self.entered.set()
        self.release.wait()
        if self.calls <= self.fail_times:
            raise OSError(f"disk unavailable (attempt {self.calls})")
        self.batches.append(list(records))

    def close(self) -> None:
        self.closed += 1

    @property
    def records(self) -> list[AuditRecord]:
        return [item for batch in self.batches for item in batch]


def write_many_sqlite(path: str, worker: int, count: int, barrier: Any, results: Any) -> None:
    """Child process: write ``count`` records to the shared database through its own writer."""
    writer = AuditWriter(SqliteSink(path), batch_size=50, flush_interval_s=0.01)
    barrier.wait(30)
    for index in range(count):
        writer.submit(record(worker * 1_000_000 + index, session=f"worker-{worker}"))
        if index % 100 == 0:
            time.sleep(0.001)  # let the four processes' batches interleave
    closed = writer.close(timeout=60)
    results.put({"worker": worker, "closed": closed, **writer.stats()})


def write_many_jsonl(path: str, worker: int, batches: int, barrier: Any) -> None:
    """Child process: append ``batches`` large batches (about 250 KB each) to the shared file."""
    sink = JsonlSink(path)
    barrier.wait(30)
    filler = f"w{worker}-" * 400
    for batch in range(batches):
        sink.write_batch(
            [
                record(worker * 1_000_000 + batch * 100 + index, session=f"worker-{worker}", path=filler)
                for index in range(100)
            ]
        )
    sink.close()


def write_then_wait_for_kill(path: str, flushed: Any, count: int) -> None:
    """Child process: write ``count`` records and flush, say so, then keep writing until killed."""
    writer = AuditWriter(SqliteSink(path), batch_size=20, flush_interval_s=0.001)
    for index in range(count):
        writer.submit(record(index, session="before-kill"))
    if not writer.flush(timeout=30):
        raise SystemExit(3)
    flushed.set()
    index = count
    while True:  # batches are being committed when the kill lands
        writer.submit(record(index, session="after-flush"))
        index += 1
        if index % 50 == 0:
            time.sleep(0.0005)


def call(index: int = 0, *, session: str = "s1", args: Any = None, redactor: Any = None) -> tuple[Any, ...]:
    """A call item (what the Runtime hands the writer) whose call_id carries ``index``."""
    from runtime.audit.record import call_item
    from runtime.records import ToolResult

    metadata = {"decision": "allow", "status": "ok", "timings_ms": {"total_ms": 0.05}, "snapshot": "v1"}
    result = ToolResult(call_id=f"call-{index}", name="file_read", content="ok", metadata=metadata)
    return call_item(result, session, f"req-{index}", None, {"index": index} if args is None else args, redactor)


def token_redactor() -> Any:
    """A redactor hiding GitHub-style tokens (``ghp_`` and 36 characters)."""
    from runtime.regex import compile_re2
    from runtime.shaping.redact import Redactor
    from runtime.snapshot import CompiledPattern, CompiledRedaction

    pattern = CompiledPattern("token", compile_re2(r"ghp_[A-Za-z0-9]{36}"), "[REDACTED:token]", None)
    return Redactor((CompiledRedaction("tokens", (pattern,), None, "password|api_key"),))


def submit_calls_then_wait_for_kill(path: str, flushed: Any, count: int) -> None:
    """Child process: submit ``count`` call items (some holding a secret) and flush, say so,
    then keep submitting until killed."""
    redactor = token_redactor()
    secret = "ghp_" + "a1B2" * 9
    writer = AuditWriter(SqliteSink(path), batch_size=64, flush_interval_s=0.001)
    for index in range(count):
        args = {"note": secret if index % 10 == 0 else f"plain {index}", "index": index}
        writer.submit(call(index, session="before-kill", args=args, redactor=redactor))
    if not writer.flush(timeout=30):
        raise SystemExit(3)
    flushed.set()
    index = count
    while True:  # batches are being made and committed when the kill lands
        writer.submit(call(index, session="after-flush", args={"note": secret, "index": index}, redactor=redactor))
        index += 1
        if index % 50 == 0:
            time.sleep(0.0005)
