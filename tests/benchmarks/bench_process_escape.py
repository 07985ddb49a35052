"""Survivors of hostile process trees, 50 runs of every shape (the long form of
tests/execution/test_process_escape.py), with the command's own cgroup (where the machine
allows it) and with the child subreaper alone.

Each run starts the shape under ``run_process`` with a short time limit, lets it time out
(or exit, leaving its daemon), and counts the processes it listed that are still alive
5 s later. Run: ``python tests/benchmarks/bench_process_escape.py [runs]``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execution"))

from test_process_escape import EXPECTED, MODES, SHAPES, _env, _running  # noqa: E402

from runtime.execution.processes import run_process  # noqa: E402
from runtime.execution.reaper import cgroup_base  # noqa: E402

AT_ONCE = 4


async def one(shape: str, mode: str) -> tuple[int, int]:
    """(processes listed, survivors) of one run."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        pids = root / "pids"
        wait = (
            f"( {SHAPES[shape]} ) & while [ $(wc -l < pids 2>/dev/null || echo 0) -lt {EXPECTED[shape]} ];"
            " do sleep 0.01; done; wait"
        )
        await run_process(
            ["sh", "-c", wait],
            cwd=root,
            env=_env(mode),
            total_s=60 if shape == "exits-leaving-a-daemon" else 2.0,
            idle_s=None,
            grace_s=0.2,
            on_output=lambda _t: None,
        )
        listed = [int(line) for line in pids.read_text().split()] if pids.exists() else []
        deadline = time.monotonic() + 5
        while any(_running(p) for p in listed) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        alive = [p for p in listed if _running(p)]
        for pid in alive:
            os.kill(pid, 9)
        return len(listed), len(alive)


async def main(runs: int) -> None:
    print(f"cgroup v2 for each command: {cgroup_base() or 'not available here (subreaper only)'}")
    gate = asyncio.Semaphore(AT_ONCE)

    async def gated(shape: str, mode: str) -> tuple[int, int]:
        async with gate:
            return await one(shape, mode)

    started = time.monotonic()
    for mode in sorted(MODES):
        for shape in sorted(SHAPES):
            results = await asyncio.gather(*(gated(shape, mode) for _ in range(runs)))
            listed = sum(n for n, _ in results)
            short = sum(1 for n, _ in results if n < EXPECTED[shape])
            survivors = sum(s for _, s in results)
            print(
                f"  {mode:<9} {shape:<34} runs {runs}  processes {listed:>4}  survivors {survivors}"
                + (f"  (runs where the shape had not started them all: {short})" if short else ""),
                flush=True,
            )
    print(f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
