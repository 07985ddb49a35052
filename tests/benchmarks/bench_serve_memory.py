"""Memory of a long-running ``toolrt serve`` (the long form of tests/mcpserver/test_serve_memory.py).

- stdio, SQLite audit log: 100,000 tool calls through the official MCP client, the
  server's RSS read from /proc every 5,000 calls; the first 20,000 are warm-up.
- streamable HTTP: 1,000 clients in rounds of 25, each opening a session, making a
  call and walking away without ending it; RSS after the server expired each round.

Prints the samples and the growth after warm-up. Run: ``make bench`` (or
``python tests/benchmarks/bench_serve_memory.py [calls]``).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcpserver"))

from serve_memory import drive_http_abandoned, drive_stdio  # noqa: E402


def _show(done: int, kib: int) -> None:
    print(f"  {done:>7,}  {kib / 1024:7.1f} MiB", flush=True)


async def main(calls: int) -> None:
    print(f"toolrt serve over stdio, SQLite audit log, {calls:,} calls (calls, server RSS):")
    with tempfile.TemporaryDirectory() as scratch:
        stdio = await drive_stdio(Path(scratch), calls=calls, warm_up=calls // 5, every=calls // 20, on_sample=_show)
    print(stdio.describe())
    sessions, per_round = 1000, 25
    print(f"\ntoolrt serve over HTTP, {sessions:,} abandoned sessions (sessions, server RSS after they expired):")
    with tempfile.TemporaryDirectory() as scratch:
        http = await drive_http_abandoned(
            Path(scratch), rounds=sessions // per_round, per_round=per_round, warm_up_rounds=8, on_sample=_show
        )
    print(http.describe().replace("calls", "sessions"))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
