"""Writers that save config files the way real tools do, in steps with pauses between
them, and the config they write: a read-only tool that a Policy denies, one it allows.

Every writer leaves the final file complete; what a watcher may catch in between is a
file truncated, half-written, cut right after ``effect: deny`` or ``handler:``, deleted,
or a folder renamed away. A load thread (:class:`CallLoad`) runs turns the whole time
and records every result, so that a test can count denied tools that ran and calls
that failed.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from runtime.records import Call, Status, ToolResult
from runtime.runtime import Runtime

TOOLS = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: finder}}
spec:
  description: {description}
  handler:
    builtin: tool_search
  read_only: true
  input_schema:
    type: object
    properties:
      query: {{type: string}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: secret_reader}}
spec:
  description: Reads what it must not.
  handler:
    builtin: tool_search
  read_only: true
  input_schema:
    type: object
    properties:
      query: {{type: string}}
"""

POLICY = """\
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: guard}}
spec:
  rules:
    - name: finder-ok
      effect: allow
      tools: [finder]
      reason: {reason}
    - name: never-secrets
      effect: deny
      tools:
        - secret_reader
      reason: Secrets stay secret.
"""


def tools_text(n: int) -> str:
    return TOOLS.format(description=f"Finds tools, edit {n}.")


def policy_text(n: int) -> str:
    return POLICY.format(reason=f"Finding is fine, edit {n}.")


def cut_points(text: str, rng: random.Random) -> list[int]:
    """Where a step-wise writer pauses: right after ``effect: deny``, ``handler:`` and
    ``tools:``, at a document boundary, at line ends and anywhere."""
    points = {
        text.index(marker) + len(marker) for marker in ("effect: deny", "handler:", "tools:", "---") if marker in text
    }
    lines = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    chosen = rng.sample(sorted(points), k=min(2, len(points))) + rng.sample(lines, k=1) + [rng.randrange(1, len(text))]
    return sorted(set(chosen))


def pause(rng: random.Random) -> None:
    time.sleep(rng.uniform(0.005, 0.06))  # the writer's own pace, not a wait for the system under test


def write_in_chunks(path: Path, text: str, rng: random.Random) -> None:
    """Truncate, then write the file in pieces with pauses (a program writing as it goes)."""
    with open(path, "w", encoding="utf-8") as handle:
        start = 0
        for point in cut_points(text, rng):
            handle.write(text[start:point])
            handle.flush()
            start = point
            pause(rng)
        handle.write(text[start:])


def delete_and_recreate(path: Path, text: str, rng: random.Random) -> None:
    """Delete the file, pause, write it anew (in two pieces)."""
    path.unlink(missing_ok=True)
    pause(rng)
    with open(path, "w", encoding="utf-8") as handle:
        middle = rng.randrange(1, len(text))
        handle.write(text[:middle])
        handle.flush()
        pause(rng)
        handle.write(text[middle:])


def copy_like_cp(path: Path, text: str, rng: random.Random) -> None:
    """What ``cp new old`` does: open with O_TRUNC, then write in fixed blocks."""
    data = text.encode()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
    try:
        block = rng.choice((64, 128, 256))
        for offset in range(0, len(data), block):
            os.write(fd, data[offset : offset + block])
            if rng.random() < 0.5:
                pause(rng)
    finally:
        os.close(fd)


def rename_folder_away_and_back(path: Path, text: str, rng: random.Random) -> None:
    """Move the file's folder away, rewrite the file there, move the folder back."""
    folder = path.parent
    away = folder.with_name(folder.name + "-away")
    os.rename(folder, away)
    pause(rng)
    (away / path.name).write_text(text, encoding="utf-8")
    pause(rng)
    os.rename(away, folder)


WRITERS: dict[str, Callable[[Path, str, random.Random], None]] = {
    "chunks": write_in_chunks,
    "delete-recreate": delete_and_recreate,
    "cp": copy_like_cp,
    "rename-folder": rename_folder_away_and_back,
}


#: The load's pause between turns. Every snapshot these tests publish stays live for at
#: least a settle window (300 ms or more: the next publish needs a quiet window of its
#: own), and a turn reads the snapshot once, so a turn every 5 ms or so still runs on
#: each one scores of times: a weaker config that went live could not go unseen. A
#: load without pauses would take a whole core for no more than that; calls in flight at
#: the very moment of a publish are test_reload_under_load.py's subject, whose load runs
#: without pause.
TURN_PAUSE_S = 0.005


class CallLoad:
    """Runs turns (the denied tool and the allowed one) in a thread until stopped, one
    every :data:`TURN_PAUSE_S` or so."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.results: list[ToolResult] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="call-load", daemon=True)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            calls = [
                Call(id=f"s{n}", name="secret_reader", args={"query": "x"}),
                Call(id=f"f{n}", name="finder", args={"query": "x"}),
            ]
            self.results.extend(self.runtime.run_turn_sync(calls))
            self._stop.wait(TURN_PAUSE_S)

    def __enter__(self) -> CallLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive()

    def denied_ran(self) -> list[ToolResult]:
        return [r for r in self.results if r.name == "secret_reader" and r.status is not Status.denied]

    def failed(self) -> list[ToolResult]:
        return [r for r in self.results if r.name == "finder" and r.is_error]
