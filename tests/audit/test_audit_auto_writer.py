"""``audit_writer=auto`` (the default): a Runtime whose calls come fast moves its audit
writing from the writer thread to a child process, between two batches, losing no
record, keeping call order in the hash chain and redacting as before; one making a few
calls, or one confined to one CPU, never starts a process; a child that cannot be kept
running hands the writing back to the thread, which stores what the hand-off file held.
Real Runtimes, real children, real SQLite and JSON-lines stores.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from runtime import Call, Runtime, Session
from runtime.audit import AuditWriter, JsonlSink, SqliteSink, handoff, query, verify
from runtime.audit.auto import FAST_BATCH, FAST_BATCHES, AutoSink, cpus
from runtime.audit.record import call_item
from runtime.audit.remote import ProcessSink
from runtime.records import Status, ToolResult
from runtime.settings import Settings

TOKEN = "ghp_" + "a1B2" * 9
TOOL = """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [redaction-default]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing.
  handler: python:auto_writer_handlers:noop
  read_only: true
  input_schema: {type: object}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: all}
spec:
  rules:
    - {name: all, effect: allow, tools: ["*"]}
"""

needs_two_cpus = pytest.mark.skipif(cpus() < 2, reason="the writing moves to a child only with two CPUs or more")


def _config(root: Path) -> tuple[Path, Path]:
    config, workspace = root / "config", root / "ws"
    config.mkdir()
    workspace.mkdir()
    (config / "tools.yaml").write_text(TOOL)
    (config / "auto_writer_handlers.py").write_text("def noop(args):\n    return 'ok'\n")
    return config, workspace


def _runtime(root: Path, **settings: Any) -> Runtime:
    config, workspace = _config(root)
    return Runtime([config], workspace_root=workspace, settings=Settings(hot_reload=False, **settings))


def _in_order(store: Path) -> list[str]:
    conn = sqlite3.connect(store)
    try:
        return [row[0] for row in conn.execute("SELECT call_id FROM calls ORDER BY seq")]
    finally:
        conn.close()


def _turn(runtime: Runtime, session: Session, start: int, size: int) -> None:
    calls = [Call(f"c{start + i}", "noop", {"i": start + i, "note": f"token {TOKEN}"}) for i in range(size)]
    results = runtime.run_turn_sync(calls, session)
    assert not any(result.is_error for result in results), results[0].content


def test_the_default_writer_is_auto() -> None:
    assert Settings().audit_writer == "auto"


@needs_two_cpus
def test_a_runtime_whose_calls_come_fast_moves_its_writing_to_a_child_and_loses_nothing(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    store = Path(runtime.settings.audit_store)
    session = Session(id="busy")
    assert runtime.audit is not None
    sink = runtime.audit.sink
    assert isinstance(sink, AutoSink) and sink.child_pid is None
    made = 0
    deadline = time.monotonic() + 300
    try:
        while sink.process is None:  # the calls come as fast as this machine runs them
            assert time.monotonic() < deadline, "the writing never moved to a child"
            _turn(runtime, session, made, 50)
            made += 50
        moved_after = made
        for _ in range(6):
            _turn(runtime, session, made, 50)
            made += 50
        assert sink.child_pid is not None
        assert runtime.audit.flush(60)
    finally:
        runtime.close_sync()
    assert moved_after >= FAST_BATCH * FAST_BATCHES
    stored = _in_order(store)
    # Turn after turn in order, before and after the move (a turn's calls end in any order).
    turns = [set(stored[start : start + 50]) for start in range(0, made, 50)]
    assert turns == [{f"c{i}" for i in range(start, start + 50)} for start in range(0, made, 50)]
    report = verify(store)
    assert report.ok and report.chained == made, report.to_text()
    rows = query(store, limit=None)
    assert TOKEN not in json.dumps([row["args"] for row in rows])
    assert all(row["decision"] == "allow" and row["status"] == "ok" for row in rows)
    assert handoff.files_of(store) == []  # the child stored everything and removed its file


def test_a_runtime_making_a_few_calls_never_starts_a_process(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    store = Path(runtime.settings.audit_store)
    try:
        for turn in range(5):
            _turn(runtime, Session(id="calm"), turn * 10, 10)
        assert runtime.audit is not None and runtime.audit.flush(30)
        sink = runtime.audit.sink
        assert sink.child_pid is None and getattr(sink, "process", None) is None
    finally:
        runtime.close_sync()
    assert not handoff.folder_of(store).exists()
    assert sorted(_in_order(store)) == sorted(f"c{i}" for i in range(50))


def test_a_process_confined_to_one_cpu_keeps_the_writer_thread(tmp_path: Path) -> None:
    config, workspace = _config(tmp_path)
    script = textwrap.dedent(
        """
        import os, sys
        from pathlib import Path
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        from runtime import Runtime
        from runtime.settings import Settings
        runtime = Runtime([Path(sys.argv[1])], workspace_root=Path(sys.argv[2]), settings=Settings(hot_reload=False))
        print(type(runtime.audit.sink).__name__)
        runtime.close_sync()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(config), str(workspace)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SqliteSink"


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_the_named_writers_are_kept_as_asked(tmp_path: Path, writer: str) -> None:
    runtime = _runtime(tmp_path, audit_writer=writer)
    try:
        assert runtime.audit is not None
        assert type(runtime.audit.sink).__name__ == ("SqliteSink" if writer == "thread" else "ProcessSink")
    finally:
        runtime.close_sync()


def _item(index: int) -> tuple[Any, ...]:
    result = ToolResult(
        call_id=f"c{index}", name="noop", status=Status.ok, content="ok", metadata={"decision": "allow"}
    )
    return call_item(result, "s1", f"req-{index}", None, {"i": index, "note": f"token {TOKEN}"}, None)


@needs_two_cpus
@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_child_that_cannot_be_kept_running_hands_the_writing_back_and_nothing_is_lost(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every child exits at once: the third start within a minute gives up, and what the
    # hand-off file got meanwhile is stored by the thread, before the batches after it.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    store = tmp_path / f"audit.{kind}"
    direct = SqliteSink(store) if kind == "sqlite" else JsonlSink(store)
    sink = AutoSink(kind, store, direct, rate=10, batch=16, window_s=60)
    writer = AuditWriter(sink, batch_size=16, flush_interval_s=0.01)
    total = 0
    deadline = time.monotonic() + 120
    while sink.last_error is None or total < 600:
        assert time.monotonic() < deadline, sink.stats()
        for _ in range(16):
            writer.submit(_item(total))
            total += 1
        writer.flush(30)  # (False while the child is gone: it never confirms)
    assert writer.close(timeout=30)
    assert writer.written == total and writer.lost == 0
    assert sink.process is None and sink.moved_at is not None and "keeps exiting" in (sink.last_error or "")
    report = verify(store)
    assert report.ok and report.chained == total, report.to_text()
    ids = [row["call_id"] for row in sorted(query(store, limit=None), key=lambda row: row["id"])]
    assert ids == [f"c{i}" for i in range(total)]
    assert handoff.files_of(store) == []


def _made(index: int, ts: float) -> tuple[Any, ...]:
    return (ts, *_item(index)[1:])


@needs_two_cpus
@pytest.mark.parametrize(
    ("spacing", "batches", "moves"),
    [
        (0.01, 20, False),  # 100 calls a second, however many: the thread keeps up at no cost
        (0.002, 20, False),  # 500 a second
        (0.0001, 1, False),  # one burst is not a busy Runtime
        (0.0001, 2, True),  # two bursts of 10,000 a second within the window
        (0.0005, 3, True),  # 2,000 a second
    ],
)
def test_the_writing_moves_only_when_batches_of_calls_come_fast_more_than_once(
    tmp_path: Path, spacing: float, batches: int, moves: bool
) -> None:
    store = tmp_path / "audit.sqlite3"
    sink = AutoSink("sqlite", store, SqliteSink(store))
    start = time.time() - 100
    try:
        for batch in range(batches):
            first = batch * FAST_BATCH
            sink.write_items([_made(first + i, start + (first + i) * spacing) for i in range(FAST_BATCH)])
        assert (sink.process is not None) is moves
        assert sink.stats()["writer_process"] == (1 if moves else 0)
    finally:
        sink.close()
    assert _in_order(store) == [f"c{i}" for i in range(batches * FAST_BATCH)]
    assert verify(store).ok


@needs_two_cpus
def test_batches_smaller_than_a_fast_batch_never_move_the_writing(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    sink = AutoSink("sqlite", store, SqliteSink(store))
    try:
        for batch in range(40):
            sink.write_items([_item(batch * 8 + i) for i in range(8)])  # made at once, but 8 at a time
        assert sink.process is None
    finally:
        sink.close()
    assert len(_in_order(store)) == 320


def _fds_on(path: Path) -> int:
    """Descriptors of this process open on ``path`` (or its WAL and shared-memory files)."""
    names = {str(path.resolve()) + suffix for suffix in ("", "-wal", "-shm")}
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += str(fd.readlink()) in names
        except OSError:
            pass  # closed meanwhile (the listing's own descriptor)
    return count


def _fast_batch(first: int) -> list[tuple[Any, ...]]:
    start = time.time()
    return [_made(first + i, start) for i in range(FAST_BATCH)]


@needs_two_cpus
def test_the_batch_that_moves_the_writing_is_the_childs_first_and_the_app_then_holds_no_descriptor_of_the_store(
    tmp_path: Path,
) -> None:
    # The thread stores the fast batches before the last one; the one that makes the calls
    # fast enough goes to the child without being stored here first. From then on the app
    # holds no descriptor of the store.
    store = tmp_path / "audit.sqlite3"
    sink = AutoSink("sqlite", store, SqliteSink(store))
    try:
        for batch in range(FAST_BATCHES):
            sink.write_items(_fast_batch(batch * FAST_BATCH))
        assert sink.process is not None
        assert len(_in_order(store)) == FAST_BATCH * (FAST_BATCHES - 1)  # the thread stored those only
        assert sink.sync(60)
        assert sink.process.stored == FAST_BATCH
        assert _fds_on(store) == 0
        sink.write_items(_fast_batch(FAST_BATCHES * FAST_BATCH))
        assert sink.sync(60)
    finally:
        sink.close()
    assert _in_order(store) == [f"c{i}" for i in range((FAST_BATCHES + 1) * FAST_BATCH)]
    report = verify(store)
    assert report.ok and report.chained == (FAST_BATCHES + 1) * FAST_BATCH, report.to_text()


@needs_two_cpus
def test_a_move_that_cannot_start_a_child_stores_the_moving_batch_on_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "audit.sqlite3"
    sink = AutoSink("sqlite", store, SqliteSink(store))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    try:
        for batch in range(FAST_BATCHES):
            sink.write_items(_fast_batch(batch * FAST_BATCH))
        assert sink.process is None and sink.last_error is not None
    finally:
        sink.close()
    assert _in_order(store) == [f"c{i}" for i in range(FAST_BATCHES * FAST_BATCH)]
    assert verify(store).ok


def test_a_process_sink_opens_the_store_to_check_it_unless_told_it_is_prepared(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    ProcessSink("sqlite", store, prepared=True).close()
    assert not store.exists()  # nothing was opened: the caller's own sink made the store
    ProcessSink("sqlite", store).close()
    assert store.exists()
