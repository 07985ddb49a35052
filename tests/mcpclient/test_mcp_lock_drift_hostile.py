"""Lock files and listings that do not line up: a lock that cannot be read is no lock (a
warning, the live tools, no drift), a server missing from the lock drifts with every
tool, a server only the lock knows is ignored, a renamed tool is one gone and one new,
and a huge schema is reported by name, not content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from drift_support import EventLog, change_listing, drift_warnings, locked_config
from loguru import logger

from runtime.mcpclient.lock import LOCK_FILE
from runtime.reload import ReloadEvent
from runtime.runtime import Runtime


def events_of_a_reload(runtime: Runtime) -> list[ReloadEvent]:
    log = EventLog()
    runtime.watch(on_event=log).reload_now()
    return log.events


def edit_lock(config: Path, edit: Any) -> None:
    path = config / LOCK_FILE
    path.write_text(json.dumps(edit(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")


@pytest.mark.parametrize(
    "text",
    [
        "not json at all {",
        '{"format": 1, "servers": ["fx"]}',
        '{"format": 1, "servers": {"fx": [{"name": "echo", "input_schema": "nope"}]}}',
        '{"format": 1, "servers": {"fx": [{"name": "echo", "input_schema": {}, "annotations": [1]}]}}',
        "[]",
    ],
    ids=["garbage", "servers-a-list", "schema-a-string", "annotations-a-list", "a-list"],
)
def test_a_lock_that_cannot_be_read_is_no_lock(tmp_path: Path, text: str) -> None:
    config, listing = locked_config(tmp_path)
    (config / LOCK_FILE).write_text(text, encoding="utf-8")
    change_listing(listing, drop=["hang"])
    seen: list[str] = []
    handle = logger.add(lambda message: seen.append(message.record["message"]), level="WARNING")
    logger.enable("runtime")
    try:
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    finally:
        logger.disable("runtime")
        logger.remove(handle)
    try:
        assert "fx__echo" in runtime.snapshot.tools
        snap = runtime.metrics.snapshot()
        assert snap["mcp_lock_drift"] == {} and snap["mcp_lock_drifted_tools"] == {}
        assert events_of_a_reload(runtime)[-1].event == "reloaded"
        assert any("cannot be read" in message for message in seen)
    finally:
        runtime.close_sync()


def test_a_server_missing_from_the_lock_drifts_with_every_tool_it_lists(tmp_path: Path) -> None:
    config, _ = locked_config(tmp_path)
    edit_lock(config, lambda lock: {**lock, "servers": {"other": lock["servers"]["fx"]}})
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        listed = runtime.metrics.snapshot()["mcp_lock_drifted_tools"]["fx"]
        assert listed >= 10 and runtime.metrics.snapshot()["mcp_lock_drift"] == {"fx": 1}
        edit_lock(config, lambda lock: {**lock, "servers": {"other": []}})  # a new lock: compared afresh
        known, found = [e for e in events_of_a_reload(runtime) if e.event == "mcp_drift"]
        assert known.drift == found.drift and found.drift_count == listed
        assert {d["change"] for d in found.drift} == {"added"}
    finally:
        runtime.close_sync()


def test_a_server_only_the_lock_knows_is_ignored(tmp_path: Path) -> None:
    config, _ = locked_config(tmp_path)
    edit_lock(config, lambda lock: {**lock, "servers": {**lock["servers"], "ghost": lock["servers"]["fx"]}})
    with drift_warnings() as warnings:
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
        try:
            snap = runtime.metrics.snapshot()
            assert snap["mcp_lock_drift"] == {} and snap["mcp_lock_drifted_tools"] == {"fx": 0}
        finally:
            runtime.close_sync()
    assert warnings == []


def test_a_renamed_tool_is_reported_gone_and_new_and_the_new_name_is_mounted(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path, include=["echo*"])
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        echo = {
            "name": "echo2",
            "description": "Return the text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        }
        change_listing(listing, drop=["echo"], add=[echo])
        (event,) = [e for e in events_of_a_reload(runtime) if e.event == "mcp_drift"]
        assert [(d["tool"], d["change"]) for d in event.drift] == [("echo2", "added"), ("echo", "removed")]
        assert "fx__echo2" in runtime.snapshot.tools and "fx__echo" not in runtime.snapshot.tools
    finally:
        runtime.close_sync()


def test_a_huge_live_schema_is_reported_by_field_and_still_mounted(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        properties = {f"field_{i}": {"type": "string", "description": "d" * 200} for i in range(3000)}
        change_listing(listing, patch={"echo": {"inputSchema": {"type": "object", "properties": properties}}})
        (event,) = [e for e in events_of_a_reload(runtime) if e.event == "mcp_drift"]
        assert event.drift[0]["fields"] == ["input_schema"] and len(event.to_json()) < 1000
        assert len(runtime.snapshot.tools["fx__echo"].spec.input_schema["properties"]) == 3000
    finally:
        runtime.close_sync()


def test_a_hint_edited_in_the_lock_by_hand_is_reported_as_it_reads_to_a_late_listener_too(tmp_path: Path) -> None:
    config, _ = locked_config(tmp_path)

    def hostile(lock: dict[str, Any]) -> dict[str, Any]:
        for tool in lock["servers"]["fx"]:
            if tool["name"] == "echo":
                tool["annotations"]["readOnlyHint"] = "yes"
        return lock

    edit_lock(config, hostile)
    with drift_warnings() as warnings:
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
        try:
            assert runtime.metrics.snapshot()["mcp_lock_drift"] == {"fx": 1}
            # Found by the first build: a listener hears of it when it starts listening, and the
            # same listing is not reported again by the reload.
            assert [e.event for e in events_of_a_reload(runtime)] == ["mcp_drift", "reloaded"]
            assert runtime.metrics.snapshot()["mcp_lock_drift"] == {"fx": 1}
        finally:
            runtime.close_sync()
    assert warnings[0]["changes"] == ['`echo` changed its annotations (readOnlyHint: "yes" -> true)']
