"""With ``audit_writer=process``, the writer child outlives an app that is SIGKILLed and
stores every batch the app had handed to it, to the end of the pipe (its acks then go
nowhere, which must not end it)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

APP = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from runtime import Call, Runtime, Session
    from runtime.settings import Settings
    config, workspace, store = sys.argv[1:4]
    runtime = Runtime([Path(config)], workspace_root=Path(workspace), settings=Settings(
        audit_sink="sqlite", audit_writer="process", audit_store=store, hot_reload=False))
    session = Session(id="crash")
    for n in range(0, 400, 8):
        runtime.run_turn_sync([Call(f"c{n + i}", "noop", {"i": n + i}) for i in range(8)], session)
    # Every record handed to the writer child's pipe (not necessarily stored yet), then die.
    while runtime.audit.stats()["written"] < 400:
        time.sleep(0.005)
    print(runtime.audit.stats()["written"], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)
TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing.
  handler: python:crash_handlers:noop
  read_only: true
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: all}
spec:
  rules:
    - {name: all, effect: allow, tools: ["*"]}
"""


def _writer_children(store: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"runtime.audit.child" in argv and str(store).encode() in argv:
                found.append(int(entry.name))
    return found


def test_the_writer_child_stores_everything_it_was_sent_after_the_app_is_killed(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "crash_handlers.py").write_text("def noop(args):\n    return 'ok'\n")
    (config / "tools.yaml").write_text(TOOL)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = tmp_path / "audit.sqlite3"
    app = subprocess.run(
        [sys.executable, "-c", APP, str(config), str(workspace), str(store)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert app.returncode == -9, app.stderr
    assert app.stdout.strip() == "400"
    deadline = time.monotonic() + 120
    while _writer_children(store):
        assert time.monotonic() < deadline, "the writer child never finished"
        time.sleep(0.05)
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM calls").fetchone()[0] == 400
