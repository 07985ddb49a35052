"""The config watcher follows the MCP lock file: once ``toolrt mcp lock`` rewrites it (or
it is removed), a watching Runtime and ``toolrt watch`` compare the tools mounted now
with it at once, without another config edit, without a rebuild and without asking the
servers again. Real fixture servers, real watchfiles, real lock rewrites."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from drift_support import FLIP_ECHO, WAIT_S, EventLog, change_listing, locked_config, wait_until
from mcp_support import ALLOW_ALL, doc, server_doc, write_config

from runtime.cli import main
from runtime.mcpclient.lock import LOCK_FILE
from runtime.reload import ConfigWatcher, watch_events
from runtime.runtime import Runtime
from runtime.settings import Settings

FAST = Settings(reload_settle_ms=50, audit_sink="off")


def drifted(runtime: Runtime) -> dict[str, int]:
    return dict(runtime.metrics.snapshot()["mcp_lock_drifted_tools"])


def drift_total(runtime: Runtime) -> dict[str, int]:
    return dict(runtime.metrics.snapshot()["mcp_lock_drift"])


def relock(config: Path) -> None:
    assert main(["mcp", "lock", "--config", str(config)]) == 0


def test_a_lock_rewritten_under_a_watching_runtime_ends_the_drift_without_a_config_edit(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    change_listing(listing, **FLIP_ECHO)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    log = EventLog()
    try:
        assert drifted(runtime) == {"fx": 2}
        watcher = runtime.watch(on_event=log)
        wait_until(lambda: watcher.ready, "the watcher ready")
        relock(config)  # the change reviewed and locked
        wait_until(lambda: drifted(runtime) == {"fx": 0}, "the gauge back to 0")
        assert drift_total(runtime) == {"fx": 1}  # a match is not a drift
        assert log.kinds() == ["mcp_drift"]  # the drift known at watch(); no reload attempt since
        assert watcher.reloads_ok == 0 and watcher.reloads_failed == 0
    finally:
        runtime.close_sync()


def test_a_lock_removed_under_a_watching_runtime_ends_the_drift(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    change_listing(listing, **FLIP_ECHO)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        watcher = runtime.watch()
        wait_until(lambda: watcher.ready, "the watcher ready")
        assert drifted(runtime) == {"fx": 2}
        (config / LOCK_FILE).unlink()  # no lock, nothing to drift from
        wait_until(lambda: drifted(runtime) == {"fx": 0}, "the gauge back to 0")
        relock(config)  # locked again, as the server lists now: still no drift, nothing counted
        change_listing(listing, patch=FLIP_ECHO["patch"], drop=["fail", "hang"])  # what the next build will see
        declared = {"include": ["echo", "structured"], "env": {"FIXTURE_LISTING": str(listing)}}
        write_config(config, server_doc(**declared), ALLOW_ALL)  # a config edit: the rebuild lists again
        wait_until(lambda: drifted(runtime) == {"fx": 1}, "the next listing compared with the new lock")
        assert drift_total(runtime) == {"fx": 2}
    finally:
        runtime.close_sync()


def test_a_lock_rewritten_over_http_is_compared_with_the_mounted_tools(tmp_path: Path, http_url: str) -> None:
    config = tmp_path / "config"
    server = doc(
        "McpServer", "web", {"transport": "http", "url": http_url, "connect_timeout_s": 30, "include": ["echo"]}
    )
    write_config(config, server, ALLOW_ALL)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)  # no lock yet: nothing compared
    log = EventLog()
    try:
        assert drifted(runtime) == {}
        watcher = runtime.watch(on_event=log)
        wait_until(lambda: watcher.ready, "the watcher ready")
        relock(config)
        # The mounted listing is what the lock now says: compared, and it matches.
        wait_until(lambda: drifted(runtime) == {"web": 0}, "the mounted tools compared with the new lock")
        assert log.kinds() == [] and drift_total(runtime) == {}
    finally:
        runtime.close_sync()


@contextmanager
def watching(config: Path) -> Iterator[tuple[EventLog, list[ConfigWatcher]]]:
    """watch_events over ``config`` drained into an EventLog, and its watcher once started."""
    stop = threading.Event()
    log = EventLog()
    started: list[ConfigWatcher] = []

    def run() -> None:
        for event in watch_events([config], FAST, stop=stop, on_start=started.append):
            log(event)

    consumer = threading.Thread(target=run, name="consumer", daemon=True)
    consumer.start()
    try:
        yield log, started
    finally:
        stop.set()
        consumer.join(WAIT_S)
        assert not consumer.is_alive()


def test_toolrt_watch_reports_the_drift_a_rewritten_lock_shows_without_a_config_edit(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    with watching(config) as (log, started):
        log.wait_for(lambda e: e.event == "loaded")
        wait_until(lambda: bool(started) and started[0].ready, "the watcher ready")
        change_listing(listing, **FLIP_ECHO)
        relock(config)  # locks what the servers list now; the watch still mounts what they listed at load
        found = log.wait_for(lambda e: e.event == "mcp_drift")
        drift = log.events[found]
        assert drift.server == "fx" and drift.drift_count == 2 and drift.serving == log.events[0].version
        messages = sorted(change["message"] for change in drift.drift)
        assert messages == ["`echo` changed its annotations (readOnlyHint: false -> true)", "`fail` is new"]
        assert log.kinds() == ["loaded", "mcp_drift"]  # no reload attempt


def test_a_listener_may_wait_for_a_reload_when_a_rewritten_lock_shows_drift(tmp_path: Path) -> None:
    # The event comes from the watcher's thread; a reload on another thread needs the lock
    # check too, so the listener must hear of the drift once the check is done with it.
    config, listing = locked_config(tmp_path)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    reloaded: list[bool] = []

    def on_event(event: Any) -> None:
        if event.event == "mcp_drift" and not reloaded:
            other = threading.Thread(target=runtime.reload, daemon=True)
            other.start()
            other.join(WAIT_S)
            reloaded.append(not other.is_alive())

    try:
        watcher = runtime.watch(on_event=on_event)
        wait_until(lambda: watcher.ready, "the watcher ready")
        change_listing(listing, **FLIP_ECHO)
        relock(config)  # the mounted tools (listed at start) differ from the new lock
        wait_until(lambda: bool(reloaded), "the listener done")
        assert reloaded == [True]
        assert drifted(runtime) == {"fx": 0}  # the reload listed what the new lock holds
    finally:
        runtime.close_sync()
