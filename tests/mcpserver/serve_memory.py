"""Memory of a long-running ``toolrt serve``, read from /proc while the official MCP client
drives it: the suite's tests and the long benchmark (``bench_serve_memory.py``) share this.

The server's resident set (``VmRSS``) is sampled after every block of calls. The first
part of a run is warm-up (imports, caches, allocator arenas filling); what counts is
the growth after it, read as the slope of a least-squares line through the later
samples, which one noisy sample cannot move much.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcpserver_support import TIMEOUT_S, http_client, http_server, stdio_session

#: Calls in flight at once: enough to keep the server busy, as an agent's parallel calls do.
IN_FLIGHT = 8


@dataclass
class Growth:
    """RSS samples (calls done, KiB) of one run, and what they say."""

    samples: list[tuple[int, int]] = field(default_factory=list)
    warm_up: int = 0
    seconds: float = 0.0

    def after_warm_up(self) -> list[tuple[int, int]]:
        return [(calls, kib) for calls, kib in self.samples if calls >= self.warm_up]

    def last(self, calls: int) -> list[tuple[int, int]]:
        """The samples of the last ``calls`` calls."""
        end = self.samples[-1][0]
        return [(done, kib) for done, kib in self.samples if done >= end - calls]

    def slope_kib_per_1000_calls(self, last: int | None = None) -> float:
        """Least-squares growth after warm-up (or over the ``last`` calls), in KiB per 1,000 calls."""
        points = self.after_warm_up() if last is None else self.last(last)
        n = len(points)
        mean_x = sum(x for x, _ in points) / n
        mean_y = sum(y for _, y in points) / n
        var = sum((x - mean_x) ** 2 for x, _ in points)
        cov = sum((x - mean_x) * (y - mean_y) for x, y in points)
        return 1000 * cov / var

    def growth_mib(self) -> float:
        """Projected growth over the post-warm-up calls (slope times their number), in MiB."""
        points = self.after_warm_up()
        return self.slope_kib_per_1000_calls() * (points[-1][0] - points[0][0]) / 1000 / 1024

    def describe(self) -> str:
        first, last = self.samples[0][1], self.samples[-1][1]
        settled = self.after_warm_up()[0][1]
        return (
            f"{self.samples[-1][0]:,} calls in {self.seconds:.0f} s: RSS {first / 1024:.1f} MiB at the start,"
            f" {settled / 1024:.1f} MiB after {self.warm_up:,} calls of warm-up, {last / 1024:.1f} MiB at the end;"
            f" slope after warm-up {self.slope_kib_per_1000_calls():.1f} KiB per 1,000 calls"
            f" ({self.growth_mib():+.2f} MiB over the rest of the run)"
        )


def rss_kib(pid: int) -> int:
    """The resident set of process ``pid`` in KiB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no VmRSS line")


def serve_child_pid(workspace: Path) -> int:
    """The pid of this process's ``toolrt serve`` child over ``workspace`` (the stdio
    client starts it directly; the test process may hold other serve children, such as
    the shared HTTP server of the serve tests)."""
    me = str(os.getpid())
    named = str(workspace).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"runtime.cli" in argv and b"serve" in argv and named in argv:
            found.append(int(entry.name))
    assert len(found) == 1, f"expected one toolrt serve child of this process, found {found}"
    return found[0]


def audit_rows(database: Path) -> int:
    with sqlite3.connect(database) as conn:
        return int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])


async def drive_stdio(
    tmp_path: Path,
    *,
    calls: int,
    warm_up: int,
    every: int,
    on_sample: Callable[[int, int], Awaitable[None] | None] | None = None,
    until: Callable[[Growth], bool] | None = None,
) -> Growth:
    """Make ``calls`` tool calls over stdio (SQLite audit sink in ``tmp_path``), sampling
    the server's RSS after every ``every`` calls; return the samples. ``until`` ends the
    run early once it says yes (asked after each sample)."""
    database = tmp_path / "audit.sqlite3"
    env = {"TOOLRT_AUDIT_SINK": "sqlite", "TOOLRT_AUDIT_STORE": str(database), "TOOLRT_LOG_LEVEL": "WARNING"}
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    growth = Growth(warm_up=warm_up)
    started = time.monotonic()
    async with stdio_session(workspace, env=env) as client:
        pid = serve_child_pid(workspace)
        growth.samples.append((0, rss_kib(pid)))
        done = 0

        async def one(n: int) -> None:
            # A different city each call: distinct arguments, results and audit records.
            result = await client.call_tool("lookup_city", {"city": f"city-{n}"})
            assert isinstance(result, types.CallToolResult) and result.is_error is False, result

        while done < calls:
            block = min(every, calls - done)
            for start in range(done, done + block, IN_FLIGHT):
                await asyncio.gather(*(one(n) for n in range(start, min(start + IN_FLIGHT, done + block))))
            done += block
            kib = rss_kib(pid)
            growth.samples.append((done, kib))
            if on_sample is not None:
                waited = on_sample(done, kib)
                if waited is not None:
                    await waited
            if until is not None and until(growth):
                break
    growth.seconds = time.monotonic() - started
    calls = done
    # The server flushed its audit log on the way out: every call is there, so the
    # memory measured is the memory of a server that really recorded every call.
    assert audit_rows(database) == calls
    return growth


async def _abandoned_session(url: str, n: int) -> int:
    """Open a session, make one call, and walk away without ending it (no DELETE), as a
    client that crashed or lost its network would. Returns the sessions opened: on a
    machine so loaded that the session idles out between ``initialize`` and the call
    (the server answers "Session not found"), another one is opened, up to three."""
    for attempt in range(1, 4):
        async with (
            http_client() as http,
            streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write),
            ClientSession(read, write, read_timeout_seconds=TIMEOUT_S) as client,
        ):
            await client.initialize()
            try:
                result = await client.call_tool("lookup_city", {"city": f"city-{n}"})
            except MCPError as error:
                if "Session" not in str(error) or attempt == 3:
                    raise
                continue
            assert result.is_error is False, result
            return attempt
    raise AssertionError("unreachable")


async def drive_http_abandoned(
    tmp_path: Path,
    *,
    rounds: int,
    per_round: int,
    warm_up_rounds: int,
    on_sample: Callable[[int, int], Awaitable[None] | None] | None = None,
    until: Callable[[Growth], bool] | None = None,
) -> Growth:
    """``rounds`` times: ``per_round`` clients each open a session over HTTP, make a call
    and abandon it; then wait until the server has expired every one (its log says so)
    and sample its RSS. Samples are (sessions so far, KiB); ``until`` ends the run early
    once it says yes (asked after each round)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    log = workspace / "serve.stderr"
    growth = Growth(warm_up=warm_up_rounds * per_round)
    started = time.monotonic()
    env = {"TOOLRT_AUDIT_SINK": "off", "TOOLRT_LOG_LEVEL": "DEBUG"}  # DEBUG: it logs each session it ends
    extra = ("--session-idle-timeout", "3")
    with http_server(workspace, extra=extra, env=env) as (url, process):
        growth.samples.append((0, rss_kib(process.pid)))
        opened = 0
        for _ in range(rounds):
            opened += sum(await asyncio.gather(*(_abandoned_session(url, opened + i) for i in range(per_round))))
            await _wait_for_count(log, "MCP HTTP session ended: it was idle", opened)
            ended = [line for line in log.read_text(encoding="utf-8").splitlines() if "session ended" in line]
            assert "(0 open)" in ended[-1], ended[-1]
            kib = rss_kib(process.pid)
            growth.samples.append((opened, kib))
            if on_sample is not None:
                waited = on_sample(opened, kib)
                if waited is not None:
                    await waited
            if until is not None and until(growth):
                break
    growth.seconds = time.monotonic() - started
    return growth


async def _wait_for_count(path: Path, text: str, count: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while (seen := path.read_text(encoding="utf-8", errors="replace").count(text)) < count:
        assert time.monotonic() < deadline, f"the server ended {seen} of {count} abandoned sessions"
        await asyncio.sleep(0.1)
    assert seen == count, f"the server ended {seen} sessions, but only {count} were opened"
