"""ReloadEvent and diff_tools without a watcher: which tools count as changed, what an
event holds for each kind of build, and the JSON line `toolrt watch` prints."""

from __future__ import annotations

import json
from pathlib import Path

from reload_support import BAD_YAML, tools_yaml, write_in_place

from runtime.config.compile import build_snapshot
from runtime.reload import ReloadEvent, diff_tools
from runtime.snapshot import Snapshot


def snapshot_of(directory: Path, text: str) -> Snapshot:
    write_in_place(directory / "tools.yaml", text)
    result = build_snapshot([directory])
    assert result.snapshot is not None, result.errors
    return result.snapshot


def test_diff_tools_lists_added_removed_and_changed_tools_sorted(tmp_path: Path) -> None:
    old = snapshot_of(tmp_path, tools_yaml({"same": "Same.", "edited": "Before.", "gone": "Removed."}))
    new = snapshot_of(tmp_path, tools_yaml({"same": "Same.", "edited": "After.", "added": "New."}))

    assert diff_tools(old, new) == ["added", "edited", "gone"]
    assert diff_tools(None, new) == ["added", "edited", "same"]
    assert diff_tools(new, new) == []


def test_moving_a_tool_within_its_file_changes_nothing(tmp_path: Path) -> None:
    old = snapshot_of(tmp_path, tools_yaml({"a": "A.", "b": "B."}))
    new = snapshot_of(tmp_path, tools_yaml({"b": "B.", "a": "A."}))

    assert diff_tools(old, new) == []
    assert old.version == new.version


def test_a_clean_build_event_carries_versions_and_changed_tools(tmp_path: Path) -> None:
    old = snapshot_of(tmp_path, tools_yaml({"one": "One."}))
    write_in_place(tmp_path / "tools.yaml", tools_yaml({"one": "One!"}))
    result = build_snapshot([tmp_path])
    assert result.snapshot is not None

    event = ReloadEvent.from_build(result, old, result.snapshot, 12.345)

    assert event == ReloadEvent(
        "reloaded", result.snapshot.version, old.version, ("one",), (), result.snapshot.version, 12.3
    )
    assert ReloadEvent.from_build(result, None, result.snapshot, 1.0).event == "loaded"


def test_a_broken_build_event_lists_errors_with_locations_and_keeps_serving(tmp_path: Path) -> None:
    old = snapshot_of(tmp_path, tools_yaml({"one": "One."}))
    write_in_place(tmp_path / "tools.yaml", BAD_YAML)
    result = build_snapshot([tmp_path])

    event = ReloadEvent.from_build(result, old, old, 3.0)

    assert (event.event, event.version, event.previous, event.serving, event.changed) == (
        "error",
        None,
        old.version,
        old.version,
        (),
    )
    (error,) = event.errors
    assert error["code"] == "yaml-syntax" and error["line"] > 0 and error["col"] > 0


def test_to_json_is_one_line_with_exactly_the_contract_keys(tmp_path: Path) -> None:
    event = ReloadEvent(
        "error",
        None,
        "abc",
        (),
        ({"file": "t.yaml", "line": 2, "col": 3, "code": "yaml-syntax", "message": "bad\nnews {x}"},),
        "abc",
        1.5,
    )

    line = event.to_json()

    assert "\n" not in line
    assert json.loads(line) == {
        "event": "error",
        "version": None,
        "previous": "abc",
        "changed": [],
        "errors": [{"file": "t.yaml", "line": 2, "col": 3, "code": "yaml-syntax", "message": "bad\nnews {x}"}],
        "serving": "abc",
        "duration_ms": 1.5,
    }
