"""Workflow step overhead: a step of a workflow against the same call made plainly.

One Runtime (audit off) with a no-op python tool (async, read-only) and two
workflows over it: ``one`` (a single step) and ``chain`` (ten steps in a line, each
reading the previous step's result in a CEL argument template). Side by side in one
process, the kinds taking turns operation by operation:

- ``plain call``: ``runtime.call("noop", {...})``, one call through the pipeline;
- ``workflow, 1 step``: ``runtime.run_workflow("one", ...)`` (run setup, input check,
  the step's template, the call through the pipeline, the report, the journal);
- ``workflow, per step of 10``: ``run_workflow("chain")`` divided by ten (a chain is
  run every tenth turn);
- ``workflow, 1 step, journal off``: the 1-step run on a runtime with
  ``workflow_journal="off"``, to show what the journal costs.

Each operation is timed on its own; a round's figure for a kind is the median of its
200 operations, and its ratio is against the plain calls of the same round. On a
machine busier than its cores an operation that lost its core to another process takes
many times its cost: the median leaves those out, where a round's mean would count
whichever kind the burst fell on. The table shows the median of the rounds' ratios and
their spread (min-max over the rounds), beside the CPU time of the event loop's thread.

The journal is on for the other rows, as it is by default. These workflows only
read: the caller of such a run encodes no journal row; the writer thread makes its one
row (the run as it ended) in its next batch, and a start row only for a run still
running then (see runtime.workflow.journal and runtime.workflow.batches). A step that
writes waits for an fsync'd journal row before it runs, which no ratio here measures
(it is disk-bound: milliseconds, not microseconds).

The issue's bound: a workflow step costs at most 1.5x a plain call (wall time).

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
ROUNDS = 15
MODULE = "async def noop(args):\n    return {'n': args.get('n', 0) + 1}\n"


Sample = tuple[float, float]  # (wall time, CPU time of the event loop's thread) per call or step


async def measure(runtime: Runtime, unjournaled: Runtime, rounds: int, per_round: int) -> dict[str, list[Sample]]:
    """Per round, the median time of one operation of each kind (each operation timed
    on its own, the kinds taking turns operation by operation, so that a burst of load
    from elsewhere falls on all of them alike and a call that lost its core to another
    process is an outlier, not a shift of the round's mean)."""
    names = ("plain call", "workflow, 1 step", f"workflow, per step of {CHAIN}", "workflow, 1 step, journal off")
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    clock, cpu = time.perf_counter, time.thread_time

    for _ in range(rounds):
        walls: dict[str, list[float]] = {name: [] for name in names}
        busy: dict[str, list[float]] = {name: [] for name in names}
        result = None
        for i in range(per_round):
            for name in names:
                wall, used = clock(), cpu()
                if name == "plain call":
                    await runtime.call("noop", {"n": i})
                    count = 1
                elif name == "workflow, 1 step":
                    result = await runtime.run_workflow("one", {"n": i})
                    count = 1
                elif name.startswith("workflow, per step"):
                    if i % CHAIN:
                        continue  # a chain a tenth as often: about as much time as each of the others
                    result = await runtime.run_workflow("chain", {"n": i})
                    count = CHAIN
                else:
                    result = await unjournaled.run_workflow("one", {"n": i})
                    count = 1
                walls[name].append((clock() - wall) / count)
                busy[name].append((cpu() - used) / count)
                if result is not None and not result.ok:
                    raise SystemExit(f"workflow failed: {result.render()}")
        for name in names:
            samples[name].append((statistics.median(walls[name]), statistics.median(busy[name])))
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
            samples = asyncio.run(measure(runtime, unjournaled, ROUNDS, 200))
        finally:
            runtime.close_sync()
            unjournaled.close_sync()
    plain = samples["plain call"]
    print(f"workflow step overhead (CEL engine {runtime.snapshot.cel_engine}; {ROUNDS} rounds)")
    print("per round: the median of each kind's operations; ratios: each round's against its own plain call")
    print(f"{'':32} {'median us':>10} {'ratio':>7} {'rounds min-max':>15} {'loop CPU us':>12} {'ratio':>7}")
    worst = 0.0
    for name, values in samples.items():
        ratios = sorted(w / p[0] for (w, _), p in zip(values, plain, strict=True))
        cpu_ratios = [c / p[1] for (_, c), p in zip(values, plain, strict=True)]
        ratio = statistics.median(ratios)
        if name != "plain call" and "journal off" not in name:
            worst = max(worst, ratio)
        print(
            f"{name:32} {statistics.median(w for w, _ in values) * 1e6:10.1f} {ratio:7.2f}"
            f" {ratios[0]:7.2f}-{ratios[-1]:<7.2f} {statistics.median(c for _, c in values) * 1e6:12.1f}"
            f" {statistics.median(cpu_ratios):7.2f}"
        )
    verdict = "within" if worst <= 1.5 else "OVER"
    print(f"per-step cost {verdict} the 1.5x bound (worst median ratio {worst:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
