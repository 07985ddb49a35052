"""Workflow step overhead: a step of a workflow against the same call made plainly.

One Runtime (audit off) with a no-op python tool (async, read-only) and two
workflows over it: ``one`` (a single step) and ``chain`` (ten steps in a line, each
reading the previous step's result in a CEL argument template). Interleaved rounds,
side by side in one process:

- ``plain call``: ``runtime.call("noop", {...})``, one call through the pipeline;
- ``workflow, 1 step``: ``runtime.run_workflow("one", ...)`` (run setup, input check,
  the step's template, the call through the pipeline, the report);
- ``workflow, per step of 10``: ``run_workflow("chain")`` divided by ten;
- ``workflow, 1 step, journal off``: the 1-step run on a runtime with
  ``workflow_journal="off"``, to show what the journal costs.

The journal is on for the other rows, as it is by default. These workflows only
read, so a run is journaled as its start and its end row, made on the loop's thread
and written in batches by the journal's writer thread (one row when both are in one
batch; see runtime.workflow.journal and runtime.workflow.batches); a step that writes waits for
an fsync'd journal row before it runs, which no ratio here measures (it is
disk-bound: milliseconds, not microseconds).

The issue's bound: a workflow step costs at most 1.5x a plain call (wall time). Read
the ratios; absolute times on shared machines are noisy. The CPU time of the event
loop's thread is shown beside the wall time: on a machine busier than its cores, the
wall time is mostly waiting for a core, and the CPU ratio says what the runtime costs.

Run: ``python tests/benchmarks/bench_workflow.py`` (a few seconds).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from runtime import Runtime
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing.
  handler: python:benchmod:noop
  read_only: true
  input_schema: {type: object, properties: {n: {type: integer}}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: allow}
spec: {rules: [{name: all, effect: allow, tools: ["*"]}]}
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: one}
spec:
  input_schema: {type: object, properties: {n: {type: integer}}}
  steps:
    - {id: s, tool: noop, args: {n: "${input.n}"}}
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: chain}
spec:
  input_schema: {type: object, properties: {n: {type: integer}}}
  steps:
"""
CHAIN = 10
MODULE = "async def noop(args):\n    return {'n': args.get('n', 0) + 1}\n"


Sample = tuple[float, float]  # (wall time, CPU time of the event loop's thread) per call or step


async def measure(runtime: Runtime, unjournaled: Runtime, rounds: int, per_round: int) -> dict[str, list[Sample]]:
    samples: dict[str, list[Sample]] = {
        "plain call": [],
        "workflow, 1 step": [],
        f"workflow, per step of {CHAIN}": [],
        "workflow, 1 step, journal off": [],
    }
    clock, cpu = time.perf_counter, time.thread_time

    def sample(name: str, wall: float, busy: float, count: int) -> None:
        samples[name].append(((clock() - wall) / count, (cpu() - busy) / count))

    for _ in range(rounds):
        wall, busy = clock(), cpu()
        for i in range(per_round):
            await runtime.call("noop", {"n": i})
        sample("plain call", wall, busy, per_round)
        wall, busy = clock(), cpu()
        for i in range(per_round):
            result = await runtime.run_workflow("one", {"n": i})
        sample("workflow, 1 step", wall, busy, per_round)
        if not result.ok:
            raise SystemExit(f"workflow failed: {result.render()}")
        wall, busy = clock(), cpu()
        for i in range(per_round // CHAIN or 1):
            result = await runtime.run_workflow("chain", {"n": i})
        sample(f"workflow, per step of {CHAIN}", wall, busy, (per_round // CHAIN or 1) * CHAIN)
        if not result.ok:
            raise SystemExit(f"workflow failed: {result.render()}")
        wall, busy = clock(), cpu()
        for i in range(per_round):
            result = await unjournaled.run_workflow("one", {"n": i})
        sample("workflow, 1 step, journal off", wall, busy, per_round)
    return samples


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="toolrt-bench-wf-") as folder:
        root = Path(folder)
        config = root / "config"
        config.mkdir()
        (root / "ws").mkdir()
        (config / "benchmod.py").write_text(MODULE)
        steps = ['    - {id: s0, tool: noop, args: {n: "${input.n}"}}']
        steps += [
            f'    - {{id: s{i}, tool: noop, depends_on: [s{i - 1}], args: {{n: "${{steps.s{i - 1}.data.n}}"}}}}'
            for i in range(1, CHAIN)
        ]
        (config / "tools.yaml").write_text(CONFIG + "\n".join(steps) + "\n")
        runtime = Runtime(
            [config],
            workspace_root=root / "ws",
            settings=Settings(state_dir=root / "state", audit_sink="off"),
            watch=False,
        )
        unjournaled = Runtime(
            [config],
            workspace_root=root / "ws",
            settings=Settings(state_dir=root / "state-off", audit_sink="off", workflow_journal="off"),
            watch=False,
        )
        try:
            asyncio.run(measure(runtime, unjournaled, 2, 50))  # warm up
            samples = asyncio.run(measure(runtime, unjournaled, 15, 200))
        finally:
            runtime.close_sync()
            unjournaled.close_sync()
    base = statistics.median(w for w, _ in samples["plain call"])
    base_cpu = statistics.median(c for _, c in samples["plain call"])
    print(f"workflow step overhead (CEL engine {runtime.snapshot.cel_engine}; medians of 15 rounds)")
    print(f"{'':32} {'median us':>10} {'p90 us':>10} {'ratio':>7} {'loop CPU us':>12} {'ratio':>7}")
    worst = 0.0
    for name, values in samples.items():
        walls = sorted(w for w, _ in values)
        median, busy = statistics.median(walls), statistics.median(c for _, c in values)
        p90 = walls[int(len(walls) * 0.9) - 1]
        ratio = median / base
        if name != "plain call" and "journal off" not in name:
            worst = max(worst, ratio)
        print(
            f"{name:32} {median * 1e6:10.1f} {p90 * 1e6:10.1f} {ratio:7.2f} {busy * 1e6:12.1f} {busy / base_cpu:7.2f}"
        )
    verdict = "within" if worst <= 1.5 else "OVER"
    print(f"per-step cost {verdict} the 1.5x bound (worst ratio {worst:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
