"""ConfigWatcher.watch_file: a file beside the config that is not config (the MCP lock
file) has its own callback, called on the watch thread when it is written, replaced or
removed; its change is no reload attempt, in either publish mode. Real watchfiles."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from reload_support import EventLog, tools_yaml, wait_caught_up, wait_until, write_in_place

from runtime.reload import ConfigWatcher
from runtime.runtime import Runtime


class Calls:
    """Counts a callback's calls, from any thread."""

    def __init__(self) -> None:
        self.count = 0
        self.threads: set[str] = set()

    def __call__(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.count += 1


def test_a_watched_file_change_calls_its_callback_and_is_no_reload_attempt(
    runtime: Runtime, config_dir: Path, watcher: ConfigWatcher, events: EventLog
) -> None:
    side = config_dir / "toolrt-mcp.lock.json"
    calls = Calls()
    watcher.watch_file(side, calls)  # registered after start()
    side.write_text("{}", encoding="utf-8")
    wait_until(lambda: calls.count >= 1, what="the callback after the file was created")
    seen = calls.count
    temporary = config_dir / ".lock.tmp"
    temporary.write_text('{"servers": {}}', encoding="utf-8")
    os.replace(temporary, side)  # replaced the way `toolrt mcp lock` writes it
    wait_until(lambda: calls.count > seen, what="the callback after the file was replaced")
    seen = calls.count
    side.unlink()
    wait_until(lambda: calls.count > seen, what="the callback after the file was removed")
    wait_caught_up(watcher)
    assert events.events == [] and watcher.reloads_ok == 0
    assert calls.threads == {"toolrt-config-watcher"}
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Finds tools, edited."}))
    assert events.wait_for(lambda e: e.event == "reloaded").changed == ("finder",)  # config edits still reload


def test_a_watched_file_is_followed_in_marker_mode_too(runtime: Runtime, config_dir: Path) -> None:
    events = EventLog()
    calls = Calls()
    side = config_dir / "toolrt-mcp.lock.json"
    watcher = ConfigWatcher(
        [config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=events, marker=".commit"
    )
    watcher.watch_file(side, calls)
    with watcher:
        wait_until(lambda: watcher.ready, what="the watcher ready")
        side.write_text("{}", encoding="utf-8")
        wait_until(lambda: calls.count >= 1, what="the callback in marker mode")
    assert events.events == []


def test_a_callback_that_raises_is_counted_and_the_watcher_goes_on(
    config_dir: Path, watcher: ConfigWatcher, events: EventLog
) -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    watcher.watch_file(config_dir / "side.json", broken)
    (config_dir / "side.json").write_text("{}", encoding="utf-8")
    wait_until(lambda: watcher.callback_errors >= 1, what="the callback error counted")
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Finds tools, again."}))
    events.wait_for(lambda e: e.event == "reloaded")
    assert watcher.running
