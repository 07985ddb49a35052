"""``toolrt serve --transport http``: streamable HTTP on loopback, driven by the official client."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from mcpserver_support import (
    EXTRA_TOOL,
    TIMEOUT_S,
    Notifications,
    StreamsOpened,
    answering,
    copy_config,
    http_client,
    http_server,
    http_session,
    stop,
    text_of,
)

from runtime.audit import query, store_path

# Tests that leave nothing behind on the server share one per test process (``shared_url``,
# conftest.py); tests that edit the config or stop the server start their own.


async def test_http_lists_the_tools_and_answers_a_call_with_structured_content(shared_url: str) -> None:
    url = shared_url
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    async with http_session(url) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("lookup_city", {"city": "Lima"})
        invalid = await client.call_tool("lookup_city", {"town": "Lima"})
    assert names == ["count_up", "deploy", "erase_disk", "lookup_city", "sleepy"]
    assert result.is_error is False and result.structured_content == {"city": "Lima", "temp_c": 21, "sunny": True}
    assert invalid.is_error is True and "missing required argument `city`" in text_of(invalid)


async def test_http_asks_the_user_through_elicitation_on_the_call_stream(shared_url: str) -> None:
    accept = answering("accept", {})
    async with http_session(shared_url, elicitation_callback=accept) as client:
        approved = await client.call_tool("deploy", {"service": "billing"})
    async with http_session(shared_url) as client:  # another client, without elicitation
        refused = await client.call_tool("deploy", {"service": "billing"})
    assert approved.is_error is False and approved.structured_content == {"deployed": "billing"}
    assert len(accept.asked) == 1
    assert refused.is_error is True and "does not support elicitation" in text_of(refused)


async def test_http_sends_progress_notifications_to_the_client(shared_url: str) -> None:
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with http_session(shared_url) as client:
        result = await client.call_tool("count_up", {"n": 2}, progress_callback=on_progress)
    assert result.is_error is False
    assert seen == ["step 1 of 2", "step 2 of 2"]


async def test_http_tells_every_connected_client_when_a_reload_changes_the_tools(tmp_path: Path) -> None:
    config = copy_config(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    first, second = Notifications(), Notifications()
    streams = StreamsOpened()
    with http_server(workspace, config=config, extra=("--watch",)) as (url, _), streams:
        async with http_session(url, message_handler=first) as one, http_session(url, message_handler=second) as two:
            await one.list_tools()
            await two.list_tools()
            # A notification sent before a client has opened its standalone stream is lost:
            # wait until both have, however long that takes on a loaded machine.
            await asyncio.wait_for(streams.reach(2), TIMEOUT_S)
            (config / "extra.yaml").write_text(EXTRA_TOOL, encoding="utf-8")
            await asyncio.wait_for(first.tools_changed.wait(), TIMEOUT_S)
            await asyncio.wait_for(second.tools_changed.wait(), TIMEOUT_S)
            names = {tool.name for tool in (await two.list_tools()).tools}
    assert "added_later" in names


async def test_http_refuses_requests_whose_host_is_not_loopback(shared_url: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    async with http_client(timeout=TIMEOUT_S) as http:
        response = await http.post(
            shared_url,
            json=initialize,
            headers={"Host": "attacker.example", "Accept": "application/json, text/event-stream"},
        )
    assert response.status_code in (403, 421)


async def test_sigterm_stops_the_http_server_cleanly_and_the_audit_log_has_every_call(tmp_path: Path) -> None:
    with http_server(tmp_path) as (url, process):
        async with http_session(url) as client:
            await client.call_tool("lookup_city", {"city": "Quito"})
            await client.call_tool("erase_disk", {})
        assert stop(process) == 0
    rows = query(store_path(tmp_path))
    assert sorted((row["tool"], row["status"]) for row in rows) == [("erase_disk", "denied"), ("lookup_city", "ok")]
    (session_id,) = {row["session_id"] for row in rows}  # one toolrt session per MCP connection
    assert re.fullmatch(r"mcp-[0-9a-f]{16}", session_id)
