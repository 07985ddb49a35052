"""ConfigWatcher.notify: an event a build raises (``mcp_drift``) reaches the listener right
after its attempt's own event, published or not; from another thread it is delivered at
once, without waiting for an attempt (which may be waiting for that thread's build)."""

from __future__ import annotations

import threading
from pathlib import Path

from reload_support import WAIT_S, EventLog

from runtime.config.compile import BuildResult
from runtime.reload import ConfigWatcher
from runtime.reload.events import drift_event
from runtime.runtime import Runtime


def test_an_event_raised_by_a_build_follows_the_attempts_event(runtime: Runtime, config_dir: Path) -> None:
    events = EventLog()
    watcher: ConfigWatcher

    def reload() -> BuildResult:
        watcher.notify(drift_event("fx", [{"tool": "echo", "change": "removed", "message": "`echo` is gone"}]))
        return runtime.reload()

    watcher = ConfigWatcher([config_dir], reload, current=lambda: runtime.snapshot, on_event=events)
    watcher.reload_now()
    assert [e.event for e in events.events] == ["reloaded", "mcp_drift"]
    drift = events.events[1]
    assert drift.serving == runtime.snapshot.version and drift.mode == "settle" and drift.server == "fx"
    assert watcher.reloads_ok == 1  # not counted as an attempt


def test_a_notice_from_another_thread_never_waits_for_a_running_attempt(runtime: Runtime, config_dir: Path) -> None:
    events = EventLog()
    building, release = threading.Event(), threading.Event()

    def reload() -> BuildResult:
        building.set()
        assert release.wait(WAIT_S)
        return runtime.reload()

    watcher = ConfigWatcher([config_dir], reload, current=lambda: runtime.snapshot, on_event=events)
    attempt = threading.Thread(target=watcher.reload_now, daemon=True)
    attempt.start()
    try:
        assert building.wait(WAIT_S)
        watcher.notify(drift_event("fx", []))  # the attempt is still building: delivered at once all the same
        assert [e.event for e in events.events] == ["mcp_drift"]
    finally:
        release.set()
        attempt.join(WAIT_S)
    assert [e.event for e in events.events] == ["mcp_drift", "reloaded"]
