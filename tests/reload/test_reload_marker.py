"""Atomic publish mode: with ``reload_marker`` set, edits are published only when the
commit marker changes (a file a deploy step writes last, or a ConfigMap's ``..data``
symlink swap), and ``toolrt watch`` says which mode is active."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from reload_support import ConfigMapDir, EventLog, tools_yaml, wait_until, write_in_place

from runtime.reload import ConfigWatcher
from runtime.runtime import Runtime
from runtime.settings import Settings


def _description(runtime: Runtime) -> str:
    return runtime.snapshot.tools["finder"].spec.description


def _runtime(paths: list[Path], tmp_path: Path, events: EventLog, marker: str) -> Runtime:
    runtime = Runtime(
        paths,
        workspace_root=tmp_path,
        settings=Settings(reload_marker=marker, reload_settle_ms=100, audit_sink="off"),
        watch=False,
    )
    runtime.watch(on_event=events)
    assert runtime.watcher is not None and runtime.watcher.mode == "marker"
    return runtime


def _settled_elsewhere(config: Path) -> ConfigWatcher:
    """A settle-mode watcher on the same folder that only counts its attempts: once it
    has attempted, the edits were seen and had settled."""
    return ConfigWatcher(
        [config], lambda: Runtime([config], watch=False).reload(), current=lambda: None, settle_ms=50, marker=""
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("edits", [1, 5])
def test_edits_without_a_new_marker_are_seen_but_not_published(tmp_path: Path, edits: int) -> None:
    config = tmp_path / "config"
    config.mkdir()
    write_in_place(config / "tools.yaml", tools_yaml({"finder": "Start."}))
    (config / "toolrt.lock").write_text("deploy 0\n")
    events = EventLog()
    runtime = _runtime([config], tmp_path, events, "toolrt.lock")
    try:
        with _settled_elsewhere(config) as probe:
            for n in range(edits):
                write_in_place(config / "tools.yaml", tools_yaml({"finder": f"Edit {n}."}))
            write_in_place(config / "extra.yaml", tools_yaml({"extra": "Not yet."}))
            wait_until(lambda: probe.reloads_ok >= 1, what="the edits settled")
        assert _description(runtime) == "Start." and "extra" not in runtime.snapshot.tools
        assert events.events == []
        (config / "toolrt.lock").write_text("deploy 1\n")
        wait_until(lambda: "extra" in runtime.snapshot.tools, what="the commit serving")
        assert _description(runtime) == f"Edit {edits - 1}."
    finally:
        runtime.close_sync()


def test_marker_mode_publishes_only_when_the_marker_is_rewritten(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    write_in_place(config / "tools.yaml", tools_yaml({"finder": "Start."}))
    (config / "toolrt.lock").write_text("deploy 0\n")
    events = EventLog()
    runtime = _runtime([config], tmp_path, events, "toolrt.lock")
    try:
        for deploy in range(1, 4):
            for n in range(3):
                write_in_place(config / "tools.yaml", tools_yaml({"finder": f"Deploy {deploy} step {n}."}))
            assert _description(runtime) == ("Start." if deploy == 1 else f"Deploy {deploy - 1} step 2.")
            (config / "toolrt.lock").write_text(f"deploy {deploy}\n")
            wait_until(
                lambda deploy=deploy: _description(runtime) == f"Deploy {deploy} step 2.",
                what=f"deploy {deploy} serving",
            )
        assert all(e.mode == "marker" for e in events.events)
        assert [e.event for e in events.events] == ["reloaded"] * 3
    finally:
        runtime.close_sync()


def test_marker_mode_ignores_edits_until_the_marker_appears(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    write_in_place(config / "tools.yaml", tools_yaml({"finder": "Start."}))
    events = EventLog()
    runtime = _runtime([config], tmp_path, events, "toolrt.lock")
    try:
        write_in_place(config / "tools.yaml", tools_yaml({"finder": "Half-way."}))
        write_in_place(config / "tools.yaml", tools_yaml({"finder": "Done."}))
        (config / "toolrt.lock").write_text("1\n")
        wait_until(lambda: _description(runtime) == "Done.", what="the committed edit serving")
        assert len(events.events) == 1
    finally:
        runtime.close_sync()


def test_a_configmap_data_swap_is_the_marker(tmp_path: Path) -> None:
    volume = ConfigMapDir(tmp_path / "configmap")
    volume.publish({"tools.yaml": tools_yaml({"finder": "Generation one."})})
    events = EventLog()
    runtime = _runtime([volume.root], tmp_path, events, "..data")
    try:
        for generation in (2, 3, 4):
            volume.publish(
                {
                    "tools.yaml": tools_yaml({"finder": f"Generation {generation}."}),
                    "more.yaml": tools_yaml({"helper": "Added by the swap."}),
                }
            )
            wait_until(
                lambda generation=generation: _description(runtime) == f"Generation {generation}.",
                what=f"generation {generation} serving",
            )
            assert "helper" in runtime.snapshot.tools
        assert not any(e.event == "error" for e in events.events)
        assert all(e.mode == "marker" for e in events.events)
    finally:
        runtime.close_sync()


def test_marker_mode_does_not_hold_a_committed_removal(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    write_in_place(config / "tools.yaml", tools_yaml({"finder": "Start."}))
    write_in_place(config / "more.yaml", tools_yaml({"extra": "Goes away."}))
    events = EventLog()
    runtime = _runtime([config], tmp_path, events, "toolrt.lock")
    try:
        (config / "more.yaml").unlink()
        (config / "toolrt.lock").write_text("remove extra\n")
        wait_until(lambda: "extra" not in runtime.snapshot.tools, what="the committed removal serving")
        assert [e.event for e in events.events] == ["reloaded"]
    finally:
        runtime.close_sync()


def test_describe_mode_names_the_window_or_the_marker(tmp_path: Path) -> None:
    settle = ConfigWatcher([tmp_path], lambda: None, current=lambda: None, settle_ms=1234, marker="")  # type: ignore[arg-type,return-value]
    assert settle.mode == "settle" and "1234 ms" in settle.describe_mode()
    marked = ConfigWatcher([tmp_path], lambda: None, current=lambda: None, marker="toolrt.lock")  # type: ignore[arg-type,return-value]
    assert marked.mode == "marker" and str(tmp_path / "toolrt.lock") in marked.describe_mode()


@pytest.mark.parametrize("marker", [None, "toolrt.lock"])
def test_toolrt_watch_names_the_publish_mode(tmp_path: Path, marker: str | None) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(tools_yaml({"a": "first"}))
    env = dict(os.environ)
    env.pop("TOOLRT_RELOAD_MARKER", None)
    if marker:
        env["TOOLRT_RELOAD_MARKER"] = marker
    proc = subprocess.Popen(
        [sys.executable, "-c", "from runtime.cli import entrypoint; entrypoint()", "watch", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        announced = proc.stderr.readline()
        loaded = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
    expected = "marker" if marker else "settle"
    assert f"publish: {expected}" in announced
    assert loaded["event"] == "loaded" and loaded["mode"] == expected
