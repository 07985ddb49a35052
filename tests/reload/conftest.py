"""Fixtures for the reload tests: a config dir with one tool, a Runtime over it, and a
started ConfigWatcher (reload = ``runtime.reload``) whose events land in an EventLog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from reload_support import EventLog, tools_yaml, write_in_place

from runtime.reload import ConfigWatcher
from runtime.runtime import Runtime


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "config"
    directory.mkdir()
    write_in_place(directory / "tools.yaml", tools_yaml({"finder": "Finds tools."}))
    return directory


@pytest.fixture
def runtime(config_dir: Path, tmp_path: Path) -> Runtime:
    return Runtime([config_dir], workspace_root=tmp_path)


@pytest.fixture
def events() -> EventLog:
    return EventLog()


@pytest.fixture
def watcher(runtime: Runtime, config_dir: Path, events: EventLog) -> Iterator[ConfigWatcher]:
    with ConfigWatcher([config_dir], runtime.reload, current=lambda: runtime.snapshot, on_event=events) as started:
        assert started.ready
        yield started
