"""At run time a live MCP listing that differs from the lock file is reported: a warning,
the counter ``toolrt_mcp_lock_drift_total{server}`` (once per changed listing) and the
gauge ``toolrt_mcp_lock_drifted_tools{server}``, and an ``mcp_drift`` event to whoever
hears the Runtime's reload events; the policy applies to the live tool. Real fixture
servers, whose listing a file changes while they run."""

from __future__ import annotations

import json
from pathlib import Path

from drift_support import FLIP_ECHO, EventLog, change_listing, drift_warnings, locked_config
from mcp_support import ALLOW_ALL, doc, http_server, write_config

from runtime.cli import main
from runtime.mcpclient.lock import LOCK_FILE
from runtime.records import Session, Status
from runtime.runtime import Runtime

DENY_SECRET = doc(
    "Policy",
    "deny-secret",
    {"rules": [{"name": "no-secret", "effect": "deny", "tools": ["fx__echo"], "when": 'args.text == "secret"'}]},
)
FINDER = doc(
    "Tool",
    "finder",
    {
        "description": "Find tools.",
        "handler": "builtin:tool_search",
        "read_only": True,
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
)


def drift_metrics(runtime: Runtime) -> tuple[dict[str, int], dict[str, int]]:
    snap = runtime.metrics.snapshot()
    return snap["mcp_lock_drift"], snap["mcp_lock_drifted_tools"]


def test_a_listing_that_differs_from_the_lock_is_counted_once_and_logged_once(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    change_listing(listing, **FLIP_ECHO)
    with drift_warnings() as warnings:
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
        try:
            assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 2})
            assert 'toolrt_mcp_lock_drift_total{server="fx"} 1' in runtime.metrics.prometheus()
            assert 'toolrt_mcp_lock_drifted_tools{server="fx"} 2' in runtime.metrics.prometheus()
            runtime.reload()  # the same listing: not reported again
            assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 2}) and len(warnings) == 1
            listing.unlink()  # the server lists what was locked again
            runtime.reload()
            assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 0}) and len(warnings) == 1
            change_listing(listing, drop=["hang"])
            runtime.reload()
            assert drift_metrics(runtime) == ({"fx": 2}, {"fx": 1}) and len(warnings) == 2
        finally:
            runtime.close_sync()
    assert warnings[0]["server"] == "fx" and warnings[0]["count"] == 2
    assert "`echo` changed its annotations (readOnlyHint: true -> false)" in warnings[0]["changes"]
    assert "`fail` is gone" in warnings[0]["changes"]


def test_the_reload_listener_hears_of_drift_after_the_attempt_that_found_it(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    log = EventLog()
    try:
        watcher = runtime.watch(on_event=log)
        watcher.reload_now()  # no drift: the attempt's event alone
        assert log.kinds() == ["reloaded"]
        change_listing(listing, **FLIP_ECHO)
        watcher.reload_now()
        assert log.kinds() == ["reloaded", "reloaded", "mcp_drift"]
        event = log.events[-1]
        assert event.server == "fx" and event.drift_count == 2 and event.serving == runtime.snapshot.version
        echo = next(d for d in event.drift if d["tool"] == "echo")
        assert echo["change"] == "changed" and echo["fields"] == ["annotations"]
        assert echo["annotations"] == {"readOnlyHint": {"locked": True, "live": False}}
        line = json.loads(event.to_json())
        assert (line["event"], line["server"], line["drift_count"], line["mode"]) == ("mcp_drift", "fx", 2, "settle")
        # The app's own reload (not the watcher's): the event comes at once, on the app's thread.
        change_listing(listing, drop=["hang"])
        runtime.reload()
        assert log.kinds()[-1] == "mcp_drift" and log.events[-1].drift[0]["message"] == "`hang` is gone"
    finally:
        runtime.close_sync()


async def test_the_policy_judges_the_live_tool_not_the_locked_one(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path, ALLOW_ALL, DENY_SECRET, trust="trusted")
    live_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "lang": {"type": "string"}},
        "required": ["text", "lang"],
    }
    change_listing(
        listing, patch={"echo": {"annotations": {"readOnlyHint": False}, "inputSchema": live_schema}}
    )  # locked: read-only, only `text`
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        tool = runtime.snapshot.tools["fx__echo"]
        assert tool.spec.read_only is False and tool.spec.input_schema["required"] == ["text", "lang"]
        planned = await runtime.call("fx__echo", {"text": "hi", "lang": "en"}, Session(id="planner", mode="plan"))
        assert planned.status is Status.denied and "plan mode" in planned.content
        denied = await runtime.call("fx__echo", {"text": "secret", "lang": "en"})
        assert denied.status is Status.denied and "no-secret" in denied.content
        invalid = await runtime.call("fx__echo", {"text": "hi"})
        assert invalid.status is Status.invalid and "lang" in invalid.content
        ok = await runtime.call("fx__echo", {"text": "hi", "lang": "en"})
        assert ok.status is Status.ok and "hi" in ok.content
    finally:
        await runtime.close()


def test_a_server_that_goes_away_keeps_its_tools_and_reports_no_drift(tmp_path: Path) -> None:
    config = tmp_path / "config"
    with http_server() as url:
        server = doc(
            "McpServer", "web", {"transport": "http", "url": url, "connect_timeout_s": 10, "include": ["echo"]}
        )
        write_config(config, server, ALLOW_ALL)
        assert main(["mcp", "lock", "--config", str(config)]) == 0
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    log = EventLog()
    try:
        assert drift_metrics(runtime) == ({}, {"web": 0})
        runtime.watch(on_event=log).reload_now()  # the server is gone now
        assert "web__echo" in runtime.snapshot.tools
        assert log.kinds() == ["reloaded"] and drift_metrics(runtime) == ({}, {"web": 0})
    finally:
        runtime.close_sync()


def test_a_new_lock_is_read_at_the_next_build_and_the_drift_is_over(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path)
    change_listing(listing, **FLIP_ECHO)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 2})
        assert main(["mcp", "lock", "--config", str(config)]) == 0  # the change reviewed and locked
        runtime.reload()
        assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 0})
        (config / LOCK_FILE).unlink()
        change_listing(listing, drop=["hang"])
        runtime.reload()  # no lock, nothing to drift from
        assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 0})
    finally:
        runtime.close_sync()


def test_a_server_no_longer_declared_drifts_no_more(tmp_path: Path) -> None:
    config, listing = locked_config(tmp_path, FINDER)
    change_listing(listing, **FLIP_ECHO)
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        assert drift_metrics(runtime) == ({"fx": 1}, {"fx": 2})
        write_config(config, FINDER)
        runtime.reload()
        assert "fx__echo" not in runtime.snapshot.tools and drift_metrics(runtime) == ({"fx": 1}, {"fx": 0})
    finally:
        runtime.close_sync()
