"""watch_events, the engine of `toolrt watch`: the initial load, then one event per
reload attempt (clean or broken), until the stop event is set or the loop is left."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path

from reload_support import BAD_YAML, EventLog, tools_yaml, wait_until, watcher_threads, write_by_rename, write_in_place

from runtime.reload import ReloadEvent, watch_events
from runtime.settings import Settings

CONTRACT_KEYS = {"event", "version", "previous", "changed", "errors", "serving"}


def consume(events: Iterable[ReloadEvent], log: EventLog) -> threading.Thread:
    """Drain the generator in a thread (the test must never block on next())."""

    def run() -> None:
        for event in events:
            log(event)

    thread = threading.Thread(target=run, name="consumer", daemon=True)
    thread.start()
    return thread


def test_watch_events_yields_loaded_then_reloaded_and_error_events_and_stops_when_told(config_dir: Path) -> None:
    stop = threading.Event()
    log = EventLog()
    consumer = consume(watch_events([config_dir], stop=stop), log)

    loaded = log.wait_for(lambda e: True)
    assert loaded.event == "loaded" and loaded.previous is None
    assert loaded.serving == loaded.version and loaded.changed == ("finder",)

    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Edited.", "second": "Added."}))
    reloaded = log.wait_for(lambda e: e.event == "reloaded")
    assert (reloaded.previous, reloaded.changed) == (loaded.version, ("finder", "second"))

    write_in_place(config_dir / "tools.yaml", BAD_YAML)
    error = log.wait_for(lambda e: e.event == "error")
    assert error.serving == reloaded.version and error.version is None
    assert error.errors[0]["file"].endswith("tools.yaml") and error.errors[0]["line"] > 0

    line = json.loads(error.to_json())
    assert CONTRACT_KEYS <= set(line) and set(line) - CONTRACT_KEYS <= {"duration_ms", "mode"}
    assert line["mode"] == "settle"
    assert set(line["errors"][0]) == {"file", "line", "col", "code", "message"}

    stop.set()
    consumer.join(timeout=5)
    assert not consumer.is_alive()
    wait_until(lambda: watcher_threads() == [], timeout=5, what="watcher thread gone")


def test_a_broken_initial_config_serves_nothing_until_fixed(config_dir: Path) -> None:
    write_in_place(config_dir / "tools.yaml", BAD_YAML)
    stop = threading.Event()
    log = EventLog()
    consumer = consume(watch_events([config_dir], stop=stop), log)

    first = log.wait_for(lambda e: True)
    assert (first.event, first.version, first.previous, first.serving) == ("error", None, None, None)
    assert first.errors[0]["code"] == "yaml-syntax"

    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Fixed."}))
    fixed = log.wait_for(lambda e: e.ok)
    assert fixed.event == "loaded" and fixed.previous is None and fixed.serving == fixed.version

    stop.set()
    consumer.join(timeout=5)
    assert not consumer.is_alive()


def test_leaving_the_loop_stops_the_watcher(config_dir: Path) -> None:
    events = watch_events([config_dir])
    first = next(events)
    assert first.event == "loaded"
    assert len(watcher_threads()) == 1

    events.close()  # what leaving a for loop does to the generator

    wait_until(lambda: watcher_threads() == [], timeout=5, what="watcher thread gone")


def test_files_in_configured_pack_dirs_are_watched(tmp_path: Path, config_dir: Path) -> None:
    packs = tmp_path / "packs"
    (packs / "team").mkdir(parents=True)
    write_in_place(packs / "team" / "tools.yaml", tools_yaml({"packed": "From a pack."}))
    include = "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: team-pack}\nspec: {packs: [team]}\n"
    write_in_place(config_dir / "include.yaml", include)
    stop = threading.Event()
    log = EventLog()
    consumer = consume(watch_events([config_dir], Settings(pack_dirs=[packs]), stop=stop), log)
    assert log.wait_for(lambda e: True).event == "loaded"

    write_in_place(packs / "team" / "tools.yaml", tools_yaml({"packed": "Pack edited."}))
    event = log.wait_for(lambda e: e.event == "reloaded")
    assert event.changed == ("packed",)

    stop.set()
    consumer.join(timeout=5)
    assert not consumer.is_alive()


def test_toolrt_watch_prints_one_json_line_per_event_until_interrupted(tmp_path: Path) -> None:
    import json
    import signal
    import subprocess
    import sys

    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(tools_yaml({"a": "first"}))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from runtime.cli import entrypoint; entrypoint()", "watch", "--config", str(config)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        loaded = json.loads(proc.stdout.readline())
        write_by_rename(
            config / "tools.yaml", "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: a}\nspec: [broken\n"
        )
        broken = json.loads(proc.stdout.readline())
        write_by_rename(config / "tools.yaml", tools_yaml({"a": "second"}))
        fixed = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(10)
    assert loaded["event"] == "loaded" and loaded["previous"] is None
    assert list(loaded)[:6] == ["event", "version", "previous", "changed", "errors", "serving"]
    assert broken["event"] == "error" and broken["serving"] == loaded["version"] and broken["errors"][0]["line"] >= 1
    assert fixed["event"] == "reloaded" and fixed["previous"] == loaded["version"] and fixed["changed"] == ["a"]
    assert code == 0
