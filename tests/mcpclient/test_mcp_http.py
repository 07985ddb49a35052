"""The streamable-HTTP transport: the fixture server on 127.0.0.1, mounted and called,
and a hung call that restarts the session while the server itself stays up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import ALLOW_ALL, doc, http_server, mcp_tool, write_config

from runtime.records import Call, Status
from runtime.runtime import Runtime

SECONDS = {"type": "object", "properties": {"seconds": {"type": "number"}}}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, http_url: str) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("mcp-http")
    server = doc(
        "McpServer",
        "web",
        {
            "transport": "http",
            "url": http_url,
            "connect_timeout_s": 60,
            "call_timeout_s": 3,
            "include": ["echo", "fail", "structured"],
        },
    )
    config = write_config(root / "config", server, mcp_tool("web_hang", "web/hang", SECONDS, read_only=True), ALLOW_ALL)
    rt = Runtime([config], workspace_root=root, watch=False)
    yield rt
    rt.close_sync()


def test_tools_of_an_http_server_are_mounted(runtime: Runtime) -> None:
    assert sorted(runtime.snapshot.tools) == ["web__echo", "web__fail", "web__structured", "web_hang"]


async def test_http_calls_map_text_structured_and_error_results(runtime: Runtime) -> None:
    echo = await runtime.call("web__echo", {"text": "over http"})
    assert echo.status is Status.ok and "over http" in echo.content
    structured = await runtime.call("web__structured", {"name": "w"})
    assert structured.status is Status.ok and '"name": "w"' in structured.content
    failed = await runtime.call("web__fail", {})
    assert failed.status is Status.error and "the widget is broken" in failed.content


async def test_hung_http_call_times_out_and_a_new_session_serves_the_next_call(runtime: Runtime) -> None:
    hung = await runtime.call("web_hang", {"seconds": 600})
    assert hung.status is Status.timeout and "timed out after 3 s" in hung.content
    echo = await runtime.call("web__echo", {"text": "still here"})
    assert echo.status is Status.ok and "still here" in echo.content


def test_reload_keeps_the_mounted_tools_of_a_server_that_went_away(tmp_path: Path) -> None:
    with http_server() as url:
        server = doc(
            "McpServer", "web", {"transport": "http", "url": url, "connect_timeout_s": 10, "include": ["echo"]}
        )
        config = write_config(tmp_path / "config", server, ALLOW_ALL)
        rt = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        # The server is gone now: a reload keeps the tools it listed, and a call says what is wrong.
        result = rt.reload()
        assert result.snapshot is not None and list(result.snapshot.tools) == ["web__echo"]
        answer = rt.run_turn_sync([Call("c", "web__echo", {"text": "anyone?"})])[0]
        assert answer.is_error and "MCP server `web`" in answer.content
    finally:
        rt.close_sync()
