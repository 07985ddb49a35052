"""Failure isolation: a server that hangs, crashes or dies gives error results for the
calls it affects, is restarted on the next call, and never takes other tools down."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loguru import logger
from mcp_support import ALLOW_ALL, mcp_tool, native_tool, server_doc, write_config

from runtime.config.models import McpServerSpec
from runtime.mcpclient import McpPool
from runtime.mcpclient.errors import McpFailure
from runtime.records import Call, Status
from runtime.runtime import Runtime

SECONDS = {"type": "object", "properties": {"seconds": {"type": "number"}}}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("mcp-restart")
    folder = root / "config"
    config = write_config(
        folder,
        server_doc(include=[], call_timeout_s=3),
        server_doc("dead", command=[sys.executable, "-c", "pass"], connect_timeout_s=20),
        mcp_tool("remote_pid", "fx/pid", read_only=True),
        mcp_tool("remote_hang", "fx/hang", SECONDS),  # may write: a timeout leaves its effect unknown
        mcp_tool("remote_hang_read_only", "fx/hang", SECONDS, read_only=True),
        mcp_tool("remote_crash", "fx/crash"),
        mcp_tool("dead_echo", "dead/echo", read_only=True),
        native_tool(folder),
        ALLOW_ALL,
        native=True,
    )
    rt = Runtime([config], workspace_root=root, watch=False)
    yield rt
    rt.close_sync()


async def pid_of(runtime: Runtime) -> int:
    result = await runtime.call("remote_pid", {})
    assert result.status is Status.ok, result.content
    return int(result.content)


async def test_hung_call_times_out_and_the_next_call_gets_a_new_server(runtime: Runtime) -> None:
    before = await pid_of(runtime)
    started = time.monotonic()
    result = await runtime.call("remote_hang", {"seconds": 600})
    assert time.monotonic() - started < 30  # the server's call_timeout_s (3 s) applies, not the tool's 60 s
    assert result.status is Status.unknown and result.code == "timeout"
    assert "Result unknown" in result.content and "timed out after 3 s" in result.content
    after = await pid_of(runtime)
    assert after != before


async def test_timed_out_read_only_call_is_a_timeout_not_an_unknown(runtime: Runtime) -> None:
    result = await runtime.call("remote_hang_read_only", {"seconds": 600})
    assert result.status is Status.timeout
    assert "Result unknown" not in result.content
    await pid_of(runtime)  # and the server is back


async def test_crash_gives_an_error_result_then_the_server_is_restarted(runtime: Runtime) -> None:
    before = await pid_of(runtime)
    result = await runtime.call("remote_crash", {})
    assert result.is_error and result.code == "mcp_connection_lost"
    assert "MCP server `fx`" in result.content
    after = await pid_of(runtime)
    assert after != before


async def test_server_killed_while_idle_is_restarted_without_an_error(runtime: Runtime) -> None:
    before = await pid_of(runtime)
    noticed: list[str] = []
    logger.enable("runtime")  # toolrt's records are off until an app turns them on
    sink = logger.add(
        lambda message: noticed.append(str(message)),
        level="WARNING",
        filter=lambda record: "ended the connection" in record["message"],
    )
    try:
        os.kill(before, signal.SIGKILL)
        # The next call must not find the dead session: wait (bounded) until the pool has
        # noticed the closed pipe, however long that takes on a loaded machine.
        deadline = time.monotonic() + 30
        while not noticed and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        logger.remove(sink)
        logger.disable("runtime")
    assert noticed, "the pool did not notice that the server process died"
    after = await pid_of(runtime)
    assert after != before


async def test_concurrent_calls_share_one_session(runtime: Runtime) -> None:
    calls = [Call(f"c{i}", "remote_pid", {}) for i in range(6)]
    results = await runtime.run_turn(calls)
    assert all(r.status is Status.ok for r in results), [r.content for r in results]
    assert len({r.content for r in results}) == 1


async def test_dead_server_does_not_affect_native_tools_in_the_same_turn(runtime: Runtime) -> None:
    results = await runtime.run_turn([Call("a", "dead_echo", {}), Call("b", "hello", {})])
    dead, native = results
    assert dead.is_error and dead.code == "mcp_unavailable"
    assert "MCP server `dead`" in dead.content
    assert native.status is Status.ok and native.content == "hello from a native tool"


async def test_closing_the_pool_while_a_call_waits_answers_that_call_instead_of_cancelling_its_caller() -> None:
    # A server that never completes the handshake: the call is still waiting to connect.
    silent = McpServerSpec(
        transport="stdio", command=[sys.executable, "-c", "import time; time.sleep(120)"], connect_timeout_s=60
    )
    pool = McpPool()
    call = asyncio.ensure_future(pool.call_tool("silent", silent, "echo", {}, total_s=60))
    await asyncio.sleep(0)  # the call is handed to the pool's loop
    await asyncio.to_thread(pool.close)
    with pytest.raises(McpFailure, match="the runtime is closing"):
        await asyncio.wait_for(call, 30)


def test_close_stops_the_server_process(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "config", server_doc(include=[]), mcp_tool("remote_pid", "fx/pid", read_only=True), ALLOW_ALL
    )
    rt = Runtime([config], workspace_root=tmp_path, watch=False)
    pid = int(rt.run_turn_sync([Call("p", "remote_pid", {})])[0].content)
    rt.close_sync()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    after = rt.run_turn_sync([Call("q", "remote_pid", {})])[0]
    assert after.is_error and "closed" in after.content
