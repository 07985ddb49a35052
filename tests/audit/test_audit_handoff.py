"""``audit_writer=process``: what the app hands to its writer child is never lost with
the app. Real apps, real children, real SIGSTOPs and SIGKILLs; the tests wait for
conditions (records handed over, children gone) and count what reached the store.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runtime.audit import AuditRecord, handoff, verify
from runtime.audit.remote import ProcessSink

APP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from runtime import Call, Runtime, Session
    from runtime.settings import Settings
    config, workspace, store, total = sys.argv[1:5]
    runtime = Runtime([Path(config)], workspace_root=Path(workspace), settings=Settings(
        audit_sink="sqlite", audit_writer="process", audit_store=store, hot_reload=False))
    print("child", runtime.audit.sink.child_pid, flush=True)
    sys.stdin.readline()  # the test has done what it wanted to the child
    session = Session(id="handoff")
    n = 0
    while n < int(total):
        runtime.run_turn_sync([Call(f"c{n + i}", "noop", {"i": n + i}) for i in range(8)], session)
        n += 8
        print("handed", runtime.audit.stats()["written"], flush=True)
    runtime.audit.flush(0.0)  # hand over what is queued, without waiting for the child
    while runtime.audit.stats()["written"] < n:
        runtime.audit.flush(0.0)
    print("handed", runtime.audit.stats()["written"], flush=True)
    print("done", flush=True)
    sys.stdin.readline()  # killed here, or told to close
    runtime.close_sync()
    """
)
TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing.
  handler: python:handoff_handlers:noop
  read_only: true
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: all}
spec:
  rules:
    - {name: all, effect: allow, tools: ["*"]}
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(condition, what: str, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _count(store: Path) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])


class App:
    """A real app process running turns with a writer child."""

    def __init__(self, root: Path, store: Path, total: int) -> None:
        config = root / "config"
        config.mkdir(exist_ok=True)
        (config / "handoff_handlers.py").write_text("def noop(args):\n    return 'ok'\n")
        (config / "tools.yaml").write_text(TOOL)
        workspace = root / "ws"
        workspace.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", APP, str(config), str(workspace), str(store), str(total)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        assert line[0] == "child", line
        self.child = int(line[1])
        self.handed = 0

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def read_until_done(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("handed"):
                self.handed = int(line.split()[1])
            elif line.strip() == "done":
                return
        raise AssertionError(f"the app ended early: {self.proc.wait()}")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def stopped_children() -> list[int]:
    """Pids to SIGCONT and SIGKILL at the end, whatever happened."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def test_records_handed_to_a_child_that_has_not_run_yet_survive_a_sigkill_of_the_app(
    tmp_path: Path, stopped_children: list[int]
) -> None:
    """The child is stopped before it reads anything (as a busy machine may hold it while
    it starts); the app runs 1,200 calls, hands them all over and is SIGKILLed."""
    store = tmp_path / "audit.sqlite3"
    app = App(tmp_path, store, 1200)
    stopped_children.append(app.child)
    os.kill(app.child, signal.SIGSTOP)
    app.go()
    app.read_until_done()
    assert app.handed == 1200
    app.kill()
    os.kill(app.child, signal.SIGCONT)
    _wait(lambda: not _alive(app.child), "the writer child to store the rest and exit")
    assert _count(store) == 1200
    assert verify(store).ok
    assert not handoff.files_of(store)  # the child removed its file


def test_a_child_killed_with_records_unstored_is_finished_by_the_next_one(
    tmp_path: Path, stopped_children: list[int]
) -> None:
    """App and child both SIGKILLed, the child before it stored anything: a new app's
    child stores every record the first app handed over."""
    store = tmp_path / "audit.sqlite3"
    app = App(tmp_path, store, 800)
    stopped_children.append(app.child)
    os.kill(app.child, signal.SIGSTOP)
    app.go()
    app.read_until_done()
    app.kill()
    os.kill(app.child, signal.SIGKILL)
    _wait(lambda: not _alive(app.child), "the first child to die")
    assert _count(store) == 0
    assert len(handoff.files_of(store)) == 1  # left for the next child
    second = App(tmp_path, store, 16)
    stopped_children.append(second.child)
    second.go()
    second.read_until_done()
    assert second.proc.stdin is not None
    second.proc.stdin.write("close\n")
    second.proc.stdin.close()
    assert second.proc.wait(120) == 0
    assert _count(store) == 800 + 16
    assert verify(store).ok
    assert not handoff.files_of(store)


def test_a_child_that_dies_mid_run_is_replaced_and_nothing_is_lost(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    sink = ProcessSink("sqlite", store)
    sink.start()
    first = sink.child_pid
    assert first is not None
    for n in range(10):
        sink.write_batch([AuditRecord(1.5 + n * 100 + i, call_id=f"a{n}-{i}", tool="t") for i in range(100)])
    os.kill(first, signal.SIGKILL)
    _wait(lambda: not _alive(first), "the child to die")
    for n in range(10):
        sink.write_batch([AuditRecord(5000.5 + n * 100 + i, call_id=f"b{n}-{i}", tool="t") for i in range(100)])
    assert sink.child_pid not in (None, first)
    assert sink.sync(120)
    sink.close()
    # Whatever the first child had stored, the second one stored the rest, each once at most
    # (a batch stored as the child was killed may be stored again: one batch at most).
    with sqlite3.connect(store) as conn:
        ids = [row[0] for row in conn.execute("SELECT call_id FROM calls")]
    assert set(ids) == {f"a{n}-{i}" for n in range(10) for i in range(100)} | {
        f"b{n}-{i}" for n in range(10) for i in range(100)
    }
    assert len(ids) - len(set(ids)) <= 100
    assert verify(store).ok
    assert not handoff.files_of(store)


def test_hand_off_files_are_continued_in_new_ones_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handoff, "ROTATE_BYTES", 2048)
    store = tmp_path / "audit.sqlite3"
    sink = ProcessSink("sqlite", store)
    seen: set[Path] = set()
    for n in range(60):
        sink.write_batch([AuditRecord(1.5 + n * 10 + i, call_id=f"{n}-{i}", args={"n": n}) for i in range(10)])
        assert sink.handoff_path is not None
        seen.add(sink.handoff_path)
    assert len(seen) > 5
    assert sink.sync(120)
    assert _count(store) == 600
    sink.close()
    with sqlite3.connect(store) as conn:
        order = [row[0] for row in conn.execute("SELECT call_id FROM calls ORDER BY seq")]
    assert order == [f"{n}-{i}" for n in range(60) for i in range(10)]
    assert verify(store).ok
    assert not handoff.files_of(store)


LEAVE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from runtime.audit import handoff
    store, cut = Path(sys.argv[1]), sys.argv[2] == "cut"
    fd, path = handoff.create(store)
    rows = [(float(i + 1), None, None, None, None, f"c{i}", "t", *([None] * 13), None, None) for i in range(5)]
    whole = handoff.frame(("batch", 1, rows))
    handoff.append(fd, whole + (handoff.frame(("batch", 2, rows))[:40] if cut else b""))
    print(path, flush=True)
    os._exit(0)  # dies holding nothing: the file is left behind
    """
)


def _leave(store: Path, *, cut: bool) -> Path:
    out = subprocess.run(
        [sys.executable, "-c", LEAVE, str(store), "cut" if cut else "whole"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


def test_a_frame_cut_short_by_a_crash_is_dropped_and_the_whole_ones_stored(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    ProcessSink("sqlite", store).close()  # the store exists
    _leave(store, cut=True)
    sink = ProcessSink("sqlite", store)
    sink.start()
    assert sink.sync(120)
    sink.close()
    assert _count(store) == 5
    assert verify(store).ok
    assert not handoff.files_of(store)


def test_only_files_of_gone_apps_that_nobody_holds_are_taken_as_left_behind(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    fd, mine = handoff.create(store)  # this process is alive: never left behind
    try:
        left = _leave(store, cut=False)
        held = handoff.Reader(left)  # a child still reading it
        assert handoff.orphans(store) == []
        held.close()
        taken = handoff.orphans(store)
        assert [reader.path for reader in taken] == [left]
        assert handoff.orphans(store) == []  # taken: held exclusively
        for reader in taken:
            reader.close()
    finally:
        os.close(fd)
    assert mine.exists()


def test_a_replacement_child_redacts_with_the_profiles_sent_before_it_started(tmp_path: Path) -> None:
    """The profiles travel once per file; a child started on a file half read finds them
    again, so arguments handed over after the restart are still redacted."""
    from runtime import load_snapshot

    redactor = load_snapshot([Path(__file__).resolve().parents[2] / "policies"]).redactor
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    store = tmp_path / "audit.sqlite3"
    sink = ProcessSink("sqlite", store)
    sink.start()

    def batch(tag: str) -> list[AuditRecord]:
        records = [AuditRecord(1.5 + i, call_id=f"{tag}{i}", args={"token": f"x {secret} y"}) for i in range(20)]
        for record in records:
            record.redactor = redactor
        return records

    sink.write_batch(batch("a"))
    assert sink.sync(120)
    first = sink.child_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    _wait(lambda: not _alive(first), "the child to die")
    sink.write_batch(batch("b"))
    assert sink.sync(120)
    sink.close()
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT call_id, args FROM calls").fetchall()
    assert {call_id for call_id, _args in rows} >= {f"b{i}" for i in range(20)}
    assert all(secret not in args and "REDACTED" in args for _call_id, args in rows)


def test_the_writer_child_runs_as_soon_as_the_runtime_is_built(tmp_path: Path) -> None:
    from runtime import Runtime
    from runtime.settings import Settings

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tools.yaml").write_text(TOOL)
    (tmp_path / "config" / "handoff_handlers.py").write_text("def noop(args):\n    return 'ok'\n")
    (tmp_path / "ws").mkdir()
    store = tmp_path / "audit.sqlite3"
    runtime = Runtime(
        [tmp_path / "config"],
        workspace_root=tmp_path / "ws",
        settings=Settings(audit_writer="process", audit_store=store, hot_reload=False),
    )
    try:
        assert runtime.audit is not None
        pid = runtime.audit.sink.child_pid  # type: ignore[attr-defined]
        assert pid is not None and _alive(pid)  # before any call
        assert len(handoff.files_of(store)) == 1
    finally:
        runtime.close_sync()
    _wait(lambda: not _alive(pid), "the child to exit on close")
    assert handoff.files_of(store) == []
