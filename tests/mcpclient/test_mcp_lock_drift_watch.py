"""`toolrt watch` (and watch_events, its engine) mounts the config's MCP servers the way
the Runtime does: it prints an ``mcp_drift`` event after the attempt whose build found a
listing that differs from the lock, none without drift, none for a server that went
away, and it stops the servers it started when it stops."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from drift_support import (
    FLIP_ECHO,
    WAIT_S,
    EventLog,
    change_listing,
    fixture_servers,
    locked_config,
    wait_until,
)
from mcp_support import ALLOW_ALL, doc, http_server, write_config

from runtime.cli import main
from runtime.reload import watch_events
from runtime.settings import Settings

FAST = Settings(reload_settle_ms=50, audit_sink="off")


@contextmanager
def watching(config: Path) -> Iterator[EventLog]:
    """watch_events over ``config``, drained into an EventLog by a thread of its own."""
    stop = threading.Event()
    log = EventLog()

    def run() -> None:
        for event in watch_events([config], FAST, stop=stop):
            log(event)

    consumer = threading.Thread(target=run, name="consumer", daemon=True)
    consumer.start()
    try:
        yield log
    finally:
        stop.set()
        consumer.join(WAIT_S)
        assert not consumer.is_alive()


def touch(config: Path) -> None:
    """An edit that changes nothing but makes the watcher build again."""
    path = config / "config.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")


def test_watch_events_reports_drift_after_the_load_that_found_it_and_stops_the_server(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    change_listing(listing, **FLIP_ECHO)
    with watching(config) as log:
        found = log.wait_for(lambda e: e.event == "mcp_drift")
        loaded = log.events[0]
        assert loaded.event == "loaded" and "fx__echo" in loaded.changed and found == 1
        drift = log.events[found]
        assert drift.server == "fx" and drift.serving == loaded.version and drift.drift_count == 2
        assert fixture_servers(listing)  # the server the watch started
    wait_until(lambda: not fixture_servers(listing), "the fixture server stopped with the watch")


def test_watch_events_reports_no_drift_without_one_and_drift_a_reload_finds(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    with watching(config) as log:
        log.wait_for(lambda e: e.event == "loaded")
        touch(config)
        first = log.wait_for(lambda e: e.event == "reloaded")
        # A drift event follows its attempt's event at once: none came before the next attempt.
        assert log.kinds()[: first + 1] == ["loaded", "reloaded"]
        change_listing(listing, drop=["hang"])
        touch(config)
        found = log.wait_for(lambda e: e.event == "mcp_drift", since=first + 1)
        assert log.events[found - 1].event == "reloaded"
        assert [d["message"] for d in log.events[found].drift] == ["`hang` is gone"]


def test_watch_events_reports_no_drift_for_a_server_that_went_away(tmp_path: Path) -> None:
    config = tmp_path / "config"
    with ExitStack() as stack:
        with http_server() as url:
            spec = {"transport": "http", "url": url, "connect_timeout_s": 5, "include": ["echo"]}
            write_config(config, doc("McpServer", "web", spec), ALLOW_ALL)
            assert main(["mcp", "lock", "--config", str(config)]) == 0
            log = stack.enter_context(watching(config))
            log.wait_for(lambda e: e.event == "loaded")
        touch(config)  # the server is gone now
        first = log.wait_for(lambda e: e.event == "reloaded")
        touch(config)
        second = log.wait_for(lambda e: e.event == "reloaded", since=first + 1)
        assert "mcp_drift" not in log.kinds()[: second + 1]


def test_watch_loads_offline_when_a_server_cannot_be_reached(tmp_path: Path) -> None:
    missing = doc("McpServer", "gone", {"transport": "stdio", "command": [str(tmp_path / "no-such-server")]})
    config = write_config(tmp_path / "config", missing, ALLOW_ALL)
    with watching(config) as log:
        log.wait_for(lambda e: e.event == "loaded")
        assert log.events[0].ok


def test_toolrt_watch_prints_the_drift_event(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    change_listing(listing, **FLIP_ECHO)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from runtime.cli import entrypoint; entrypoint()", "watch", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    printed: list[dict[str, Any]] = []
    try:
        while not any(line["event"] == "mcp_drift" for line in printed):
            printed.append(json.loads(lines.get(timeout=WAIT_S)))
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(WAIT_S)
    assert [line["event"] for line in printed] == ["loaded", "mcp_drift"]
    drift = printed[1]
    assert drift["server"] == "fx" and drift["drift_count"] == 2
    assert {d["tool"]: d["change"] for d in drift["drift"]} == {"echo": "changed", "fail": "removed"}
    assert code == 0
    wait_until(lambda: not fixture_servers(listing), "the fixture server stopped with toolrt watch")
