"""Per-call cost of shared limits, side by side in one process (read the ratios).

One no-op tool called through the whole pipeline (``Runtime.run_turn``, audit off)
under a Policy with a session quota, a per-tool quota, a concurrency limit and a
circuit breaker, with the limit state:

- ``no limits``: the same tool without the Policy's limits (the baseline);
- ``in-memory``: the default store, in this process;
- ``redis``: a redis-server on loopback started here (the fleet's store).

Also printed: Redis commands per call (from the server's own counters): the
common call should take one script to admit and one to settle; and round trips per
call (requests this process sent, counted at the client's socket): the goal is one,
the settlement riding in the same pipeline as the next admission.

Run: ``make bench`` (or ``python tests/benchmarks/bench_fleet.py``). Needs
redis-server on PATH; without it only the first two rows are measured.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from runtime import Runtime
from runtime.records import Call, Session
from runtime.settings import Settings

CALLS = 2000
ROUNDS = 7

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: ping}
spec:
  description: ping
  handler: python:bench_fleet_handlers:ping
  read_only: true
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: bench}
spec:
  rules:
    - {name: all, effect: allow, tools: ["*"]}
"""
LIMITS = """\
  quotas:
    calls_per_session: 100000000
    calls_per_tool: {ping: 100000000}
    max_concurrent_per_tool: {ping: 64}
  circuit_breakers:
    - {tools: [ping], failures: 5, window_s: 60, cooldown_s: 30}
"""


def config(directory: Path, limits: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bench_fleet_handlers.py").write_text("def ping(args):\n    return 'pong'\n")
    (directory / "c.yaml").write_text(TOOL + (LIMITS if limits else ""))
    return directory


def per_call_us(runtime: Runtime) -> float:
    async def run() -> float:
        session = Session(id=f"bench-{uuid.uuid4().hex[:6]}")
        calls = [[Call(f"c{i}", "ping", {})] for i in range(CALLS)]
        for batch in calls[:100]:  # warm up
            await runtime.run_turn(batch, session)
        started = time.perf_counter()
        for batch in calls:
            await runtime.run_turn(batch, session)
        return (time.perf_counter() - started) / CALLS * 1e6

    return asyncio.run(run())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_redis() -> tuple[subprocess.Popen[bytes], str] | None:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("redis-server did not start")


def commands_processed(url: str) -> int:
    """Commands clients sent (a script counts once, not the commands it runs)."""
    import redis

    stats = redis.Redis.from_url(url).info("commandstats")
    return sum(int(value["calls"]) for name, value in stats.items() if name not in ("cmdstat_info",)) - _inner(stats)


def _inner(stats: dict[str, Any]) -> int:
    """Commands run inside scripts: those the scripts call (never sent by a client here)."""
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
        for name in (
            "hget",
            "hincrbyfloat",
            "expire",
            "pexpire",
            "zadd",
            "zrem",
            "zremrangebyscore",
            "zcard",
            "zcount",
            "time",
            "get",
            "set",
            "del",
            "hset",
        )
    )


class RoundTrips:
    """Counts the requests the Redis client sends (a pipeline is one), from any thread."""

    def __init__(self) -> None:
        import redis.connection

        self.sent = 0
        self._cls = redis.connection.AbstractConnection
        self._original = self._cls.send_packed_command
        counter = self

        def counting(connection: Any, *args: Any, **kwargs: Any) -> Any:
            counter.sent += 1
            return counter._original(connection, *args, **kwargs)

        self._cls.send_packed_command = counting  # type: ignore[method-assign]

    def stop(self) -> None:
        self._cls.send_packed_command = self._original  # type: ignore[method-assign]


def ping_us(url: str) -> float:
    """One bare round trip to the server from this process, for scale."""
    import redis

    client = redis.Redis.from_url(url)
    client.ping()
    started = time.perf_counter()
    for _ in range(500):
        client.ping()
    return (time.perf_counter() - started) / 500 * 1e6


def main() -> None:
    sys.dont_write_bytecode = True
    root = Path(tempfile.mkdtemp(prefix="toolrt-bench-fleet-"))
    workspace = root / "ws"
    workspace.mkdir()
    plain = config(root / "plain", limits=False)
    limited = config(root / "limited", limits=True)
    server = start_redis()
    runtimes: dict[str, Runtime] = {
        "no limits": Runtime([plain], workspace_root=workspace, settings=Settings(audit_sink="off", hot_reload=False)),
        "in-memory": Runtime(
            [limited], workspace_root=workspace, settings=Settings(audit_sink="off", hot_reload=False)
        ),
    }
    if server is not None:
        runtimes["redis"] = Runtime(
            [limited],
            workspace_root=workspace,
            settings=Settings(audit_sink="off", hot_reload=False, limit_store=server[1]),
        )
    try:
        samples: dict[str, list[float]] = {name: [] for name in runtimes}
        commands: list[float] = []
        trips: list[float] = []
        for _ in range(ROUNDS):  # interleaved, so drift on a busy machine hits every row alike
            for name, runtime in runtimes.items():
                before = commands_processed(server[1]) if name == "redis" and server else 0
                counter = RoundTrips() if name == "redis" else None
                samples[name].append(per_call_us(runtime))
                if counter is not None:
                    counter.stop()
                    trips.append(counter.sent / (CALLS + 100))
                if name == "redis" and server:
                    commands.append((commands_processed(server[1]) - before) / (CALLS + 100))
        base = statistics.median(samples["in-memory"])
        print(f"per-call time through the pipeline, {CALLS} calls x {ROUNDS} rounds (median)")
        for name, values in samples.items():
            median = statistics.median(values)
            print(f"  {name:<10} {median:8.1f} us   x{median / base:5.2f} of in-memory")
        if commands and server is not None:
            ping = statistics.median(ping_us(server[1]) for _ in range(ROUNDS))
            extra = statistics.median(samples["redis"]) - base
            print(
                f"  redis commands per call: {statistics.median(commands):.2f}"
                " (one script to admit on the call's path, one to settle, in the same pipeline)"
            )
            print(f"  redis round trips per call: {statistics.median(trips):.3f} (requests sent by this process)")
            print(
                f"  one PING round trip on this machine now: {ping:.1f} us;"
                f" redis adds {extra:.1f} us per call = {extra / ping:.2f} PING times"
            )
        else:
            print("  redis: skipped (redis-server is not installed: apt-get install -y redis-server)")
    finally:
        for runtime in runtimes.values():
            runtime.close_sync()
        if server is not None:
            server[0].kill()
            server[0].wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
