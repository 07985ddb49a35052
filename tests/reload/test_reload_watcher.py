"""ConfigWatcher over a real Runtime and real files: edits, saves by rename, bursts,
added and deleted files, broken edits and their fixes, and ConfigMap symlink swaps
are all picked up, and a broken edit never replaces the snapshot that is serving."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from reload_support import (
    BAD_CEL_RULE,
    BAD_YAML,
    ConfigMapDir,
    EventLog,
    tools_yaml,
    wait_caught_up,
    wait_until,
    watcher_threads,
    write_by_rename,
    write_in_place,
)

from runtime.reload import ConfigWatcher
from runtime.runtime import Runtime


def description(runtime: Runtime, tool: str = "finder") -> str:
    return runtime.snapshot.tools[tool].spec.description


def serves(runtime: Runtime, text: str) -> Callable[[], bool]:
    """A condition for wait_until: the serving snapshot describes `finder` as ``text``.

    A file caught half-written (truncated, not yet refilled) is a valid config without
    `finder`; that moment is simply "not yet"."""

    def check() -> bool:
        tool = runtime.snapshot.tools.get("finder")
        return tool is not None and tool.spec.description == text

    return check


async def test_an_edit_is_picked_up_and_the_event_names_the_changed_tool_and_versions(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    before = runtime.snapshot.version
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Finds tools, edited."}))

    event = events.wait_for(lambda e: e.event == "reloaded")

    assert (event.previous, event.version, event.serving) == (
        before,
        runtime.snapshot.version,
        runtime.snapshot.version,
    )
    assert event.version != before
    assert event.changed == ("finder",)
    assert event.errors == ()
    assert description(runtime) == "Finds tools, edited."
    result = await runtime.call("finder", {"query": "finder"})
    assert not result.is_error
    assert result.metadata["snapshot"] == event.version
    assert watcher.reloads_ok >= 1 and watcher.reloads_failed == 0


def test_a_save_by_rename_is_picked_up(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    write_by_rename(config_dir / "tools.yaml", tools_yaml({"finder": "Saved by rename."}))

    event = events.wait_for(lambda e: e.event == "reloaded" and e.changed == ("finder",))

    assert description(runtime) == "Saved by rename."
    assert event.serving == runtime.snapshot.version


def test_a_single_config_file_given_by_path_is_watched_through_saves_by_rename(
    tmp_path: Path, events: EventLog
) -> None:
    config = tmp_path / "tools.yaml"
    write_in_place(config, tools_yaml({"finder": "One file."}))
    runtime = Runtime([config], workspace_root=tmp_path)
    with ConfigWatcher([config], runtime.reload, current=lambda: runtime.snapshot, on_event=events) as watcher:
        for round_ in range(2):  # the second save proves the watch survived the first rename
            mark = events.mark()
            write_by_rename(config, tools_yaml({"finder": f"Renamed {round_}."}))
            events.wait_for(lambda e: e.changed == ("finder",), since=mark)
            assert description(runtime) == f"Renamed {round_}."
        wait_caught_up(watcher)  # nothing left in flight
        mark = events.mark()
        write_in_place(tmp_path / "other.yaml", tools_yaml({"stranger": "Not part of the config."}))
        wait_caught_up(watcher, ignored=1)  # the watcher saw the file, dropped it, and is idle
        assert events.since(mark) == []  # a YAML file beside it, but not the one configured


def test_a_burst_of_edits_is_debounced_into_few_reloads_ending_on_the_last_content(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    mark = events.mark()
    for i in range(20):
        # Whole saves: a writer paused between truncating and writing for longer than the
        # settle window (a loaded machine) would rightly publish the half-written file.
        write_by_rename(config_dir / "tools.yaml", tools_yaml({"finder": f"Burst edit {i}."}))

    wait_until(serves(runtime, "Burst edit 19."), what="the last edit serving")
    wait_caught_up(watcher)  # any trailing reload has landed before counting

    reloads = events.since(mark)
    assert 1 <= len(reloads) <= 10, [e.to_dict() for e in reloads]
    assert all(e.event == "reloaded" for e in reloads)
    assert reloads[-1].serving == runtime.snapshot.version
    assert description(runtime) == "Burst edit 19."


def test_an_added_file_adds_its_tool_and_deleting_it_removes_the_tool(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    extra = config_dir / "more" / "extra.yaml"
    extra.parent.mkdir()
    mark = events.mark()
    write_in_place(extra, tools_yaml({"extra": "An added tool."}))

    added = events.wait_for(lambda e: e.changed == ("extra",), since=mark)
    assert added.event == "reloaded"
    assert set(runtime.snapshot.tools) == {"finder", "extra"}

    mark = events.mark()
    extra.unlink()
    held = events.wait_for(lambda e: e.changed == ("extra",), since=mark)
    assert held.event == "held" and held.serving == added.version  # a removal waits a second window
    assert "tool extra" in held.errors[0]["message"]
    removed = events.wait_for(lambda e: e.event == "reloaded" and e.changed == ("extra",), since=mark)
    assert removed.previous == added.version
    assert set(runtime.snapshot.tools) == {"finder"}


def test_a_removed_folder_of_config_is_picked_up(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    folder = config_dir / "team"
    folder.mkdir()
    write_in_place(folder / "team.yaml", tools_yaml({"team_tool": "Belongs to a team."}))
    events.wait_for(lambda e: e.changed == ("team_tool",))
    assert "team_tool" in runtime.snapshot.tools

    mark = events.mark()
    os.rename(folder, config_dir.parent / "team-archived")  # the folder leaves in one rename

    events.wait_for(lambda e: e.event == "reloaded" and e.changed == ("team_tool",), since=mark)
    assert "team_tool" not in runtime.snapshot.tools


async def test_a_broken_edit_keeps_the_old_snapshot_serving_until_a_fix_reloads(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    good = runtime.snapshot.version
    target = config_dir / "tools.yaml"

    mark = events.mark()
    write_in_place(target, BAD_YAML)
    bad_yaml = events.wait_for(lambda e: e.event == "error", since=mark)
    assert (bad_yaml.version, bad_yaml.previous, bad_yaml.serving) == (None, good, good)
    (error,) = bad_yaml.errors
    assert error["code"] == "yaml-syntax"
    assert error["file"].endswith("tools.yaml") and error["line"] > 0 and error["col"] > 0
    assert runtime.snapshot.version == good
    assert runtime.last_reload_error is not None
    assert watcher.last_error == bad_yaml
    served = await runtime.call("finder", {"query": "finder"})
    assert not served.is_error and served.metadata["snapshot"] == good

    mark = events.mark()
    write_in_place(target, tools_yaml({"finder": "Has a rule that does not compile."}, extra=BAD_CEL_RULE))
    bad_cel = events.wait_for(lambda e: e.event == "error", since=mark)
    assert bad_cel.serving == good
    assert any(e["code"].startswith("cel") and e["line"] > 0 and e["col"] > 0 for e in bad_cel.errors), bad_cel.errors
    assert runtime.snapshot.version == good

    mark = events.mark()
    write_in_place(target, tools_yaml({"finder": "Fixed."}))
    fixed = events.wait_for(lambda e: e.event == "reloaded", since=mark)
    assert fixed.previous == good and fixed.serving == fixed.version == runtime.snapshot.version
    assert fixed.changed == ("finder",)
    assert runtime.last_reload_error is None
    assert watcher.last_error is None
    assert watcher.reloads_failed >= 2 and watcher.reloads_ok >= 1


def test_an_unresolved_reference_is_an_error_that_keeps_the_old_snapshot(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    good = runtime.snapshot.version
    write_in_place(
        config_dir / "tools.yaml",
        tools_yaml({"finder": "Points at a missing profile."}, extra="  output: {profile: no_such_profile}\n"),
    )

    event = events.wait_for(lambda e: e.event == "error")

    assert any("no_such_profile" in e["message"] for e in event.errors), event.errors
    assert event.serving == good == runtime.snapshot.version


def test_a_configmap_style_data_symlink_swap_is_picked_up(tmp_path: Path, events: EventLog) -> None:
    volume = ConfigMapDir(tmp_path / "configmap")
    volume.publish({"tools.yaml": tools_yaml({"finder": "Generation one."})})
    runtime = Runtime([volume.root], workspace_root=tmp_path)
    assert description(runtime) == "Generation one."

    with ConfigWatcher([volume.root], runtime.reload, current=lambda: runtime.snapshot, on_event=events):
        for generation in (2, 3):
            volume.publish(
                {
                    "tools.yaml": tools_yaml({"finder": f"Generation {generation}."}),
                    "more.yaml": tools_yaml({"helper": "Added by the swap."}),
                }
            )
            wait_until(serves(runtime, f"Generation {generation}."), what=f"generation {generation} serving")
            assert "helper" in runtime.snapshot.tools

    assert events.events[-1].serving == runtime.snapshot.version
    assert not any(e.event == "error" for e in events.events)


def test_editor_scratch_files_and_other_files_do_not_trigger_reloads(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    mark = events.mark()
    (config_dir / ".tools.yaml.swp").write_text("swap")
    (config_dir / "notes.txt").write_text("notes")
    (config_dir / "tools.yaml~").write_text("backup")
    wait_caught_up(watcher, ignored=3)  # all three seen and dropped, and the watcher idle
    assert events.since(mark) == []

    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Real edit."}))
    events.wait_for(lambda e: e.changed == ("finder",), since=mark)


def test_a_content_identical_rewrite_is_reported_with_the_same_version(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    before = runtime.snapshot.version
    write_in_place(
        config_dir / "tools.yaml", "# a comment changes no document\n" + (config_dir / "tools.yaml").read_text()
    )

    event = events.wait_for(lambda e: True)

    assert event.event == "reloaded"
    assert event.version == event.previous == event.serving == before
    assert event.changed == ()


def test_a_raising_callback_is_counted_and_does_not_stop_the_watcher(
    runtime: Runtime, config_dir: Path, events: EventLog
) -> None:
    def explode(event: object) -> None:
        events(event)  # type: ignore[arg-type]
        raise RuntimeError("callback bug")

    with ConfigWatcher([config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=explode) as watcher:
        for i in range(2):
            write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": f"Edit {i}."}))
            wait_until(serves(runtime, f"Edit {i}."), what=f"edit {i} serving")
        wait_until(lambda: watcher.callback_errors >= 2, what="callback errors counted")
        assert watcher.running


def test_reload_now_runs_one_attempt_and_reports_it(runtime: Runtime, config_dir: Path, events: EventLog) -> None:
    watcher = ConfigWatcher(
        [config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=events
    )  # never started
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Reloaded by hand."}))

    event = watcher.reload_now()

    assert event.event == "reloaded" and event.changed == ("finder",)
    assert events.events == [event]
    assert watcher.stats() == {
        "reloads_ok": 1,
        "reloads_failed": 0,
        "reloads_held": 0,
        "reloads_discarded": 0,
        "callback_errors": 0,
        "watch_errors": 0,
    }


def test_stop_is_idempotent_leaves_no_thread_and_installs_no_signal_handler(
    runtime: Runtime, config_dir: Path, events: EventLog
) -> None:
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    watcher = ConfigWatcher([config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=events).start()
    assert watcher.running and watcher.ready
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Before stop."}))
    events.wait_for(lambda e: e.event == "reloaded")
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers

    watcher.stop(timeout=5)
    watcher.stop(timeout=5)

    assert not watcher.running
    assert watcher_threads() == []
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    mark = events.mark()
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "After stop."}))
    # No watcher thread is left (asserted above) to see the write: nothing can arrive.
    assert events.since(mark) == []
    assert description(runtime) == "Before stop."


@pytest.mark.parametrize("pause_s", [0.0, 0.005, 0.02, 0.05, 0.1, 0.2])
def test_a_folder_recreated_and_written_at_any_moment_after_its_removal_was_seen_is_served(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher, pause_s: float
) -> None:
    # The folder comes back at some moment while the watcher moves its watches (the
    # removal seen, the watch on the parent not in place yet, or the other way round):
    # whatever it missed, the look it takes once the new watches are in place finds.
    for round_ in range(3):
        mark = events.mark()
        shutil.rmtree(config_dir)
        events.wait_for(lambda e: e.event == "error", since=mark)
        time.sleep(pause_s)  # the moment of the redeploy, not a wait for the watcher
        config_dir.mkdir()
        write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": f"Deployed again {round_}."}))
        wait_until(serves(runtime, f"Deployed again {round_}."), what=f"round {round_} served")


def test_a_folder_replaced_faster_than_the_watcher_looks_keeps_being_watched(
    runtime: Runtime, config_dir: Path, watcher: ConfigWatcher
) -> None:
    # Deleted and created again at once (a redeploy by rm -rf and copy): the watcher may
    # first look after the new folder exists, under the same name as the old one; its
    # watch on the old folder would see no later edit.
    for round_ in range(3):
        shutil.rmtree(config_dir)
        config_dir.mkdir()
        write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": f"Replaced {round_}."}))
        wait_until(serves(runtime, f"Replaced {round_}."), what=f"round {round_} replacement served")
        write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": f"Edited {round_}."}))
        wait_until(serves(runtime, f"Edited {round_}."), what=f"round {round_} edit after the replacement served")


def test_a_config_folder_deleted_and_created_again_keeps_being_watched(
    runtime: Runtime, config_dir: Path, events: EventLog, watcher: ConfigWatcher
) -> None:
    good = runtime.snapshot.version
    shutil.rmtree(config_dir)
    gone = events.wait_for(lambda e: e.event == "error")
    assert gone.errors[0]["code"] == "path-not-found"
    assert runtime.snapshot.version == good  # a vanished folder is a broken config, not an empty one

    config_dir.mkdir()
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Deployed again."}))
    wait_until(serves(runtime, "Deployed again."), what="the recreated folder serving")

    wait_caught_up(watcher)  # the catch-up reload after re-watching has landed first
    mark = events.mark()
    write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "Edited after the redeploy."}))
    events.wait_for(lambda e: e.changed == ("finder",), since=mark)
    assert description(runtime) == "Edited after the redeploy."


async def test_a_runtime_built_with_watch_serves_an_edit_without_a_manual_reload(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(tools_yaml({"t": "first"}))
    events = EventLog()
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    runtime.watch(on_event=events)
    write_by_rename(config / "tools.yaml", tools_yaml({"t": "second"}))
    event = events.wait_for(lambda e: e.event == "reloaded")  # a wait on the watcher's thread, not this loop's
    assert runtime.snapshot.tools["t"].spec.description == "second"
    assert event.changed == ("t",) and event.serving == runtime.snapshot.version
    await runtime.close()
    assert runtime.watcher is not None and not runtime.watcher.running


def test_a_start_interrupted_before_its_thread_began_stops_cleanly_and_can_start_again(
    runtime: Runtime, config_dir: Path, events: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C landing inside Thread.start() (toolrt watch, right after its first line):
    # the thread object exists but never began. stop() must not raise on joining it.
    watcher = ConfigWatcher([config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=events)

    def interrupted(self: threading.Thread) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(threading.Thread, "start", interrupted)
        with pytest.raises(KeyboardInterrupt):
            watcher.start()
    watcher.stop(timeout=5)
    assert not watcher.running

    watcher.start()
    try:
        assert watcher.running and watcher.ready
        write_in_place(config_dir / "tools.yaml", tools_yaml({"finder": "After a restart."}))
        events.wait_for(lambda e: e.event == "reloaded")
        assert description(runtime) == "After a restart."
    finally:
        watcher.stop(timeout=5)
