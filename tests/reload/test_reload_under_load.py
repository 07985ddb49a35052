"""100 edits while a background thread runs turns without pause: no call fails, every
call ran on a snapshot that was actually serving, and every result matches the
snapshot it names (no mixed or half-built snapshots). Edits are saved by rename, the
way editors and ConfigMap updates make a new file appear at once."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from reload_support import EventLog, tools_yaml, wait_until, write_by_rename

from runtime.records import Call, ToolResult
from runtime.reload import ConfigWatcher, ReloadEvent
from runtime.runtime import Runtime
from runtime.snapshot import Snapshot

EDITS = 100


def test_a_hundred_edits_under_load_give_no_failed_or_mixed_snapshot_calls(runtime: Runtime, config_dir: Path) -> None:
    served: dict[str, Snapshot] = {runtime.snapshot.version: runtime.snapshot}
    events = EventLog()

    def remember(event: ReloadEvent) -> None:
        events(event)
        if event.ok and runtime.snapshot.version == event.version:
            served[event.version] = runtime.snapshot  # the watcher is the only reloader: this is the one it swapped in

    turns: list[list[ToolResult]] = []
    done = threading.Event()

    def load() -> None:
        while not done.is_set():
            calls = [Call(id=f"c{len(turns)}_{i}", name="finder", args={"query": "finder"}) for i in range(2)]
            turns.append(runtime.run_turn_sync(calls))

    with ConfigWatcher([config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=remember):
        caller = threading.Thread(target=load, name="calls", daemon=True)
        caller.start()
        jitter = random.Random(7)
        try:
            for i in range(EDITS):
                write_by_rename(
                    config_dir / "tools.yaml", tools_yaml({"finder": f"Edit number {i}.", "spare": "Never changes."})
                )
                if i % 10 == 9:  # let every tenth edit settle and serve, so that calls run across reloads
                    wait_until(
                        lambda i=i: runtime.snapshot.tools["finder"].spec.description == f"Edit number {i}.",
                        what=f"edit {i} serving",
                    )
                time.sleep(jitter.uniform(0.0, 0.08))  # edits closer than the settle window are published as one
            wait_until(
                lambda: runtime.snapshot.tools["finder"].spec.description == f"Edit number {EDITS - 1}.",
                what="the last edit serving",
            )
            time.sleep(0.3)
        finally:
            done.set()
            caller.join(timeout=30)
    assert not caller.is_alive()

    results = [r for turn in turns for r in turn]
    assert len(turns) >= 50, len(turns)
    assert [r for r in results if r.is_error] == []
    for turn in turns:
        assert len({r.metadata["snapshot"] for r in turn}) == 1  # one turn, one snapshot
    for result in results:
        snapshot = served[result.metadata["snapshot"]]  # KeyError: a version that never served
        (found,) = [t for t in result.structured if t["name"] == "finder"]
        assert found["description"] == snapshot.tools["finder"].spec.description
    assert len({r.metadata["snapshot"] for r in results}) >= 5  # calls really ran across reloads
    assert not any(e.event == "error" for e in events.events)
    assert events.events[-1].serving == runtime.snapshot.version
