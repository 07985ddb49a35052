"""Hot reload benchmarks: from a saved file to the new snapshot serving calls.

- write -> serving: a config file is saved by rename; the clock stops when the
  runtime's snapshot (the one the next turn reads) has the new version, polled every
  millisecond; a call then confirms it runs on it (``ToolResult.metadata["snapshot"]``).
  The runtime's ConfigWatcher with its default debounce does the work.
  Measured for a small config and for a 1,000-tool one; each edit waits for the
  previous one to be serving, then for the watcher to go quiet.
- reload of 1,000 tools: a cold build (fresh CompileCache) against ``Runtime.reload``
  after one tool's document changed (the compile cache reuses the other 999), and
  ``diff_tools`` over the two snapshots (what a reload event adds on top).

Run: ``python tests/benchmarks/bench_reload.py``. Figures are medians on this machine;
absolute times on shared machines are noisy, so read them next to each other.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loguru import logger

from runtime.config.cache import CompileCache
from runtime.config.compile import build_snapshot
from runtime.reload import DEFAULT_DEBOUNCE_MS, ConfigWatcher, ReloadEvent, diff_tools
from runtime.runtime import Runtime
from runtime.settings import Settings

TOOLS_PER_FILE = 10
GOAL_MS = 300

TOOL = """\
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: tool_{i}}}
spec:
  description: Tool number {i}, edition {edition}.
  handler: builtin:tool_search
  read_only: true
  input_schema:
    type: object
    additionalProperties: false
    properties:
      query: {{type: string, maxLength: 200}}
      limit: {{type: integer, minimum: 1, maximum: 50}}
  rules:
    - name: bounded
      expression: '!has(args.limit) || args.limit <= {limit}'
      message: limit must be at most {limit}.
"""


def file_text(start: int, count: int, edition: int = 0) -> str:
    return "".join(
        TOOL.format(i=i, edition=edition if i == start else 0, limit=10 + i % 40)
        for i in range(start, min(count, start + TOOLS_PER_FILE))
    )


def write_config(root: Path, count: int) -> list[Path]:
    files = []
    for start in range(0, count, TOOLS_PER_FILE):
        path = root / f"tools_{start // TOOLS_PER_FILE:04d}.yaml"
        path.write_text(file_text(start, count))
        files.append(path)
    return files


def save_by_rename(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp~")
    temporary.write_text(text)
    os.replace(temporary, path)


def serving_version(runtime: Runtime) -> str:
    """The snapshot a new call runs on, as the call itself reports it."""
    result = asyncio.run(runtime.call("tool_0", {"query": "tool"}))
    return str(result.metadata["snapshot"])


def write_to_serving_ms(count: int, edits: int) -> tuple[list[float], list[float]]:
    """Per edit: ms from the save to a call running on the new snapshot, and the build's own ms."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = write_config(root, count)
        runtime = Runtime([root], workspace_root=root)
        events: list[ReloadEvent] = []
        latencies: list[float] = []
        with ConfigWatcher([root], runtime.reload, current=lambda: runtime.snapshot, on_event=events.append):
            target = files[len(files) // 2]
            start = (len(files) // 2) * TOOLS_PER_FILE
            for edition in range(1, edits + 1):
                before = runtime.snapshot.version
                started = time.perf_counter()
                save_by_rename(target, file_text(start, count, edition))
                wait(lambda before=before: runtime.snapshot.version != before)  # type: ignore[misc]
                latencies.append((time.perf_counter() - started) * 1000)
                if serving_version(runtime) != runtime.snapshot.version:  # outside the clock: calls really see it
                    raise SystemExit("a new call did not run on the new snapshot")
                settle(events)
        builds = [e.duration_ms for e in events if e.ok]
        if any(not e.ok for e in events):
            raise SystemExit(f"a reload failed: {[e.errors for e in events if not e.ok][:1]}")
    return latencies, builds


def wait(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit("the edit never started serving")
        time.sleep(0.001)


def settle(events: list[ReloadEvent], quiet_s: float = 0.25) -> None:
    """Wait until no event has arrived for ``quiet_s`` (the next edit starts from rest)."""
    seen = -1
    while seen != len(events):
        seen = len(events)
        time.sleep(quiet_s)


def reload_1000(repeat: int) -> dict[str, float]:
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = write_config(root, 1000)
        cold = []
        for _ in range(repeat):
            started = time.perf_counter()
            result = build_snapshot([root], settings, CompileCache())
            cold.append(time.perf_counter() - started)
            if result.snapshot is None or len(result.snapshot.tools) != 1000:
                raise SystemExit(f"build failed: {result.problems[:3]}")
        runtime = Runtime([root], settings=settings, workspace_root=root)
        target = files[len(files) // 2]
        start = (len(files) // 2) * TOOLS_PER_FILE
        one_changed, unchanged, diffs = [], [], []
        for edition in range(1, repeat + 1):
            old = runtime.snapshot
            target.write_text(file_text(start, 1000, edition))
            started = time.perf_counter()
            result = runtime.reload()
            one_changed.append(time.perf_counter() - started)
            if result.snapshot is None:
                raise SystemExit("reload failed")
            started = time.perf_counter()
            changed = diff_tools(old, result.snapshot)
            diffs.append(time.perf_counter() - started)
            if changed != [f"tool_{start}"]:
                raise SystemExit(f"unexpected changed tools: {changed[:5]}")
            started = time.perf_counter()
            runtime.reload()
            unchanged.append(time.perf_counter() - started)
    return {
        "cold": statistics.median(cold),
        "one_changed": statistics.median(one_changed),
        "unchanged": statistics.median(unchanged),
        "diff": statistics.median(diffs),
    }


def describe(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"  {label:<34} median {statistics.median(samples):6.0f} ms   p90 {p90:6.0f} ms   max {ordered[-1]:6.0f} ms   "
        f"({len(samples)} edits)"
    )


def main() -> int:
    logger.disable("runtime")  # a reload logs a line each time; keep the figures readable
    print(
        f"write -> new snapshot serving calls (debounce {DEFAULT_DEBOUNCE_MS} ms, save by rename, runtime.snapshot "
        "polled every 1 ms):"
    )
    small, small_builds = write_to_serving_ms(20, 20)
    print(describe("20 tools", small))
    large, large_builds = write_to_serving_ms(1000, 10)
    print(describe("1,000 tools", large))
    print(
        f"  (of which the reload itself: median {statistics.median(small_builds):.1f} ms for 20 tools, "
        f"{statistics.median(large_builds):.1f} ms for 1,000)"
    )
    print(
        f"  goal: median < {GOAL_MS} ms -> 20 tools {statistics.median(small):.0f} ms, 1,000 tools "
        f"{statistics.median(large):.0f} ms"
    )
    print()
    r = reload_1000(5)
    print("one reload of 1,000 tools (median of 5):")
    print(f"  cold build (fresh compile cache)   {r['cold'] * 1000:8.0f} ms")
    print(
        f"  Runtime.reload, one tool changed   {r['one_changed'] * 1000:8.1f} ms   "
        f"({r['one_changed'] / r['cold']:.3f}x cold)"
    )
    print(f"  Runtime.reload, nothing changed    {r['unchanged'] * 1000:8.1f} ms")
    print(f"  diff_tools over the two snapshots  {r['diff'] * 1000:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
