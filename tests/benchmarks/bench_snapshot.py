"""Snapshot build and lint benchmarks: 10, 100 and 1,000 tools with 3 CEL rules each.

Run with ``make bench``. Every figure is measured in this one process, side by side
for both engines, and reported with ratios (per tool, warm rebuild vs cold build),
because absolute times on shared machines are noisy.

- cold build: a fresh CompileCache (engines already initialised once, reported apart)
- lint: ``toolrt lint`` on the same directory (the same load path, plus rendering)
- rebuild: one tool's document changed, with the cache of the previous build
- cold CLI lint: ``toolrt lint`` of 1,000 tools in fresh processes, as CI runs it
  (imports, engine start-up and the CLI's own settings included), wall and CPU time
  (user+sys: on a shared machine the wall time also counts other processes), against
  the goal of 3 s
"""

from __future__ import annotations

import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runtime.cli import main as cli_main
from runtime.config.cache import CompileCache
from runtime.config.compile import build_snapshot
from runtime.policy.cel import get_engine
from runtime.settings import Settings

TOOLS_PER_FILE = 10
CLI_RUNS = 5
LINT_GOAL_S = 3.0

TOOL = """\
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: tool_{i}, labels: {{team: t{team}}}}}
spec:
  description: Tool number {i}{suffix}.
  handler: {{command: {{argv: [echo, "{{path}}", "{{limit}}"]}}}}
  read_only: {ro}
  timeout: {{total_s: 30, idle_s: 10}}
  input_schema:
    type: object
    additionalProperties: false
    required: [path]
    properties:
      path: {{type: string, minLength: 1, maxLength: 4096}}
      limit: {{type: integer, minimum: 1, maximum: 500, default: 50}}
      mode: {{enum: [fast, full]}}
      tags: {{type: array, items: {{type: string}}, maxItems: 10}}
      dry_run: {{type: boolean, default: false}}
  rules:
    - name: inside
      expression: '!args.path.contains("..") && !args.path.startsWith("/")'
      message: Use a relative path inside the workspace.
    - name: bounded
      expression: '!has(args.limit) || args.limit <= {limit}'
      message: limit must be at most {limit}.
    - name: tagged
      expression: '!has(args.tags) || args.tags.all(t, size(t) < 64)'
      message: tags must be shorter than 64 characters.
"""


def write_config(root: Path, count: int) -> list[Path]:
    files = []
    for start in range(0, count, TOOLS_PER_FILE):
        path = root / f"tools_{start // TOOLS_PER_FILE:04d}.yaml"
        path.write_text(
            "".join(
                TOOL.format(i=i, team=i % 7, ro=str(i % 2 == 0).lower(), limit=100 + i, suffix="")
                for i in range(start, min(count, start + TOOLS_PER_FILE))
            )
        )
        files.append(path)
    return files


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def bench(engine: str, count: int, repeat: int) -> dict[str, float]:
    settings = Settings(cel_engine=engine, schema_engine=engine)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = write_config(root, count)

        def cold() -> None:
            result = build_snapshot([root], settings, CompileCache())
            if result.snapshot is None or len(result.snapshot.tools) != count:
                raise SystemExit(f"build failed: {result.problems[:3]}")

        cold_s = timed(cold, repeat)
        lint_s = timed(lambda: cli_main(["lint", "--engine", engine, str(root)], stdout=io.StringIO()), repeat)

        cache = CompileCache()
        build_snapshot([root], settings, cache)
        target = files[len(files) // 2]
        original = target.read_text()
        flips = [0]

        def rebuild() -> None:
            flips[0] += 1
            target.write_text(original.replace("Tool number", f"Tool no. {flips[0]}", 1))
            result = build_snapshot([root], settings, cache)
            if result.snapshot is None:
                raise SystemExit("rebuild failed")

        rebuild_s = timed(rebuild, max(repeat, 5))
    return {"cold": cold_s, "lint": lint_s, "rebuild": rebuild_s}


def cold_cli_lint(count: int, runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``toolrt lint`` over ``count`` tools, each run a
    fresh process (what the console script runs)."""
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        write_config(Path(tmp), count)
        command = [sys.executable, "-c", "from runtime.cli import entrypoint; entrypoint()", "lint", tmp]
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, env=dict(os.environ), check=False)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if done.returncode != 0:
                raise SystemExit(f"toolrt lint failed: {done.stdout[-500:]!r} {done.stderr[-500:]!r}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    engines = ["portable"]
    try:
        get_engine("fast")
        engines.insert(0, "fast")
    except ImportError:
        print("fast extra not installed: portable engine only")
    for engine in engines:
        started = time.perf_counter()
        get_engine(engine)
        print(f"{engine} engine initialisation: {(time.perf_counter() - started) * 1000:.0f} ms (once per process)")
    print()
    header = (
        f"{'engine':9} {'tools':>6} {'cold build':>11} {'per tool':>9} {'lint':>9} {'rebuild 1':>10} "
        f"{'rebuild/cold':>13}"
    )
    print(header)
    print("-" * len(header))
    results: dict[tuple[str, int], dict[str, float]] = {}
    for count, repeat in ((10, 5), (100, 3), (1000, 1)):
        for engine in engines:
            r = results[(engine, count)] = bench(engine, count, repeat)
            print(
                f"{engine:9} {count:>6} {r['cold'] * 1000:>9.0f}ms {r['cold'] / count * 1e6:>7.0f}us "
                f"{r['lint'] * 1000:>7.0f}ms {r['rebuild'] * 1000:>8.1f}ms {r['rebuild'] / r['cold']:>12.3f}x"
            )
    if "fast" in engines:
        print()
        for count in (10, 100, 1000):
            ratio = results[("portable", count)]["cold"] / results[("fast", count)]["cold"]
            print(f"{count:>5} tools: portable cold build takes {ratio:.1f}x the fast one")
        fast_1000 = results[("fast", 1000)]
        print(
            f"goals (fast, 1,000 tools): cold build < 3 s -> {fast_1000['cold']:.2f} s; rebuild after one change < "
            f"100 ms -> {fast_1000['rebuild'] * 1000:.0f} ms"
        )
    wall, cpu = cold_cli_lint(1000, CLI_RUNS)
    verdict = "met" if wall < LINT_GOAL_S else ("met in CPU time (machine busy)" if cpu < LINT_GOAL_S else "NOT met")
    print(
        f"goal: cold `toolrt lint` of 1,000 tools < {LINT_GOAL_S:.0f} s (fresh process, default engine, median of "
        f"{CLI_RUNS}) -> wall {wall:.2f} s, CPU {cpu:.2f} s: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
