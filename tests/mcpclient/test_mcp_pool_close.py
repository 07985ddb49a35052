"""McpPool.close against servers that ignore being closed: it returns within its bound
(a server that never answers cannot hang it), stops stdio servers the SDK's way, and
leaves no task pending on its loop and nothing for asyncio to report at collection or
at exit (a "Task was destroyed but it is pending!" or a loop closed under a child
process). Run in a fresh interpreter (pool_close_probe.py), whose stderr must stay empty."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from drift_support import fixture_servers, wait_until
from mcp_support import SERVER_COMMAND, http_server

from runtime.config.models import McpServerSpec
from runtime.mcpclient.errors import Unavailable
from runtime.mcpclient.pool import McpPool

PROBE = Path(__file__).with_name("pool_close_probe.py")
DRAIN_BOUND_S = 15.0  # what close() may take beyond close_wait_s: cancelled tasks run out, the loop shuts down


def probe(mode: str, where: str, close_wait_s: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PROBE), mode, where, str(close_wait_s)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no pending task destroyed, no loop closed under a child
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["pending"] == [] and result["loop_closed"]
    assert result["close_s"] < close_wait_s + DRAIN_BOUND_S
    return result


def test_a_pool_whose_http_server_never_answers_the_close_is_closed_in_bounds_with_nothing_pending() -> None:
    with http_server("--ignore-close") as url:
        result = probe("http-live", url, close_wait_s=1.0)  # the session's end is never answered
    assert result["close_s"] >= 1.0  # it waited for the server, then gave up on it


def test_a_pool_whose_stdio_server_ignores_the_close_kills_it_with_nothing_pending(tmp_path: Path) -> None:
    result = probe("stdio-live", str(tmp_path / "server.pid"), close_wait_s=15.0)
    assert result["server_alive"] is False  # SIGTERM ignored, stdin closed ignored: killed all the same


def test_closing_a_pool_while_a_server_is_in_its_handshake_stops_it_with_nothing_pending(tmp_path: Path) -> None:
    result = probe("stdio-starting", str(tmp_path / "server.pid"), close_wait_s=15.0)
    assert result["server_alive"] is False
    assert len(result["answer"]) == 1 and "the runtime is closing" in result["answer"][0]


def test_a_server_that_misses_its_handshake_deadline_is_stopped_without_waiting_for_close(tmp_path: Path) -> None:
    marker = tmp_path / "no-listing.json"  # names this test's server processes (see fixture_servers)
    spec = McpServerSpec(
        transport="stdio",
        command=[*SERVER_COMMAND, "--silent"],
        env={"FIXTURE_LISTING": str(marker)},
        connect_timeout_s=2,
    )
    pool = McpPool()
    try:
        failure = pool.list_tools({"fx": spec})["fx"]
        assert isinstance(failure, Unavailable) and "handshake" in failure.message
        wait_until(lambda: not fixture_servers(marker), "the server given up on stopped")
    finally:
        pool.close()
