"""What a hard crash loses of the audit log at full load, measured.

A child process runs turns of 8 calls of a no-op tool as fast as it can (every call
audited), with each audit sink and writer; after 2 s at full speed it is SIGKILLed.
The loss is the time between the kill and the newest record that reached the store
(its ``ts``): every call made in that window is gone. 10 kills per configuration;
the median and the worst are printed. The README's bound comes from here.

Run: ``python tests/benchmarks/bench_audit_crash.py [kills]``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from runtime import Runtime, Call, Session
    from runtime.settings import Settings
    config, workspace, sink, writer, store = sys.argv[1:6]
    runtime = Runtime([Path(config)], workspace_root=Path(workspace), settings=Settings(
        audit_sink=sink, audit_writer=writer, audit_store=store, hot_reload=False))
    session = Session(id="crash")
    n = 0
    while True:
        runtime.run_turn_sync([Call(f"c{n + i}", "noop", {"i": n + i}) for i in range(8)], session)
        n += 8
        if n == 800:
            print("warm", flush=True)
    """
)
TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing.
  handler: python:bench_crash_handlers:noop
  read_only: true
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: all}
spec:
  rules:
    - {name: all, effect: allow, tools: ["*"]}
"""


def newest_ts(store: Path, sink: str) -> float:
    if not store.exists():
        return 0.0
    if sink == "sqlite":
        with sqlite3.connect(store) as conn:
            return float(conn.execute("SELECT max(ts) FROM calls").fetchone()[0] or 0.0)
    newest = 0.0
    for line in store.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            newest = max(newest, float(json.loads(line)["ts"]))
        except (ValueError, KeyError, TypeError):
            continue  # a last line cut short by the kill
    return newest


def writer_children(path: Path) -> list[int]:
    """Pids of audit writer children (``audit_writer=process``) still storing into ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"runtime.audit.child" in argv and str(path).encode() in argv:
                found.append(int(entry.name))
    return found


def settled(path: Path) -> None:
    """Wait until a writer child has stored what it was sent and exited, then until the
    store stops changing."""
    deadline = time.monotonic() + 120
    while writer_children(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    last = None
    for _ in range(100):
        files = sorted(path.parent.glob(path.name + "*"))
        now = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]
        if now == last:
            return
        last = now
        time.sleep(0.1)


def one(root: Path, sink: str, writer: str) -> float:
    config = root / "config"
    config.mkdir(exist_ok=True)
    (config / "bench_crash_handlers.py").write_text("def noop(args):\n    return 'ok'\n")
    (config / "tools.yaml").write_text(TOOL)
    workspace = root / "ws"
    workspace.mkdir(exist_ok=True)
    store = root / f"audit-{time.monotonic_ns()}.{'sqlite3' if sink == 'sqlite' else 'jsonl'}"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(config), str(workspace), sink, writer, str(store)],
        stdout=subprocess.PIPE,
        cwd=root,
        start_new_session=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"warm"
    # Steady state: records are reaching the store (a writer child is up: it imports the
    # runtime first, seconds on a busy machine), then full speed for a while.
    deadline = time.monotonic() + 60
    while newest_ts(store, sink) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2.0)
    killed_at = time.time()
    os.kill(child.pid, signal.SIGKILL)  # the app (with audit_writer=process, its writer child lives on)
    child.wait()
    settled(store)
    newest = newest_ts(store, sink)
    return killed_at - newest if newest > 0 else float("inf")  # inf: nothing reached the store


CONFIGS = (("sqlite", "process"), ("sqlite", "thread"), ("jsonl", "thread"))


def main(kills: int) -> None:
    print(f"audit records lost by a SIGKILL at full load (seconds before the kill), {kills} kills each")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for sink, writer in CONFIGS[: int(sys.argv[2])] if len(sys.argv) > 2 else CONFIGS:
            losses = [one(root, sink, writer) for _ in range(kills)]
            if any(loss == float("inf") for loss in losses):
                empty = sum(loss == float("inf") for loss in losses)
                print(f"  {sink:<6} writer={writer:<7} {empty} of {kills} kills left no record at all", flush=True)
                continue
            print(
                f"  {sink:<6} writer={writer:<7} median {statistics.median(losses):.2f} s  worst {max(losses):.2f} s",
                flush=True,
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
