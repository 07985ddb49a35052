"""Pipeline benchmarks, side by side in one process (read the ratios; machines are noisy).

1. Per-call overhead of all seven stages for a no-op in-process tool (5-property
   schema, one CEL rule, the default redaction profiles, 20 policy rules of which the
   default pack's 5 judge the call, a short output, the audit log on), against a
   plain function call, LangGraph's ToolNode and the OpenAI Agents SDK's bare
   FunctionTool.on_invoke_tool on the same tool (those two only if installed:
   ``pip install langgraph openai-agents``).
2. A turn of 100 read-only calls that each sleep 10 ms, against the ideal for the
   configured concurrency.
3. Timeout kill: from the deadline to no surviving descendant, over 20 runs.
4. A command printing 1 GB (``--big``): peak RSS of the runtime and the result notice.

Run: ``make bench`` (or ``python tests/benchmarks/bench_pipeline.py [--big]``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runtime.records import Call, Session
from runtime.runtime import Runtime
from runtime.settings import Settings

CONFIG = (
    """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [redaction-default, permissions-default]}
---
# 20 policy rules in all: the 5 of the default permission pack apply to every tool (the
# noop call is judged by each), these 15 name other tools (indexed away: they cost nothing).
apiVersion: toolrt/v1
kind: Policy
metadata: {name: bench-rules}
spec:
  rules:
"""
    + "".join(
        f"    - {{name: other-{i}, effect: deny, tools: [tool_{i}], when: 'args.path.startsWith(\"/secret{i}\")'}}\n"
        for i in range(15)
    )
    + """---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing, quickly.
  handler: python:bench_handlers:noop
  read_only: true
  redaction: [secrets, pii]
  input_schema:
    type: object
    additionalProperties: false
    required: [path]
    properties:
      path: {type: string, maxLength: 200}
      limit: {type: integer, minimum: 1, maximum: 500}
      mode: {enum: [fast, full]}
      tags: {type: array, items: {type: string}, maxItems: 5}
      dry_run: {type: boolean}
  rules:
    - expression: '!args.path.contains("..")'
      message: stay inside the workspace
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: nap}
spec:
  description: Sleeps 10 ms.
  handler: python:bench_handlers:nap
  read_only: true
  input_schema: {type: object}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: hang}
spec:
  description: A command tree that never ends.
  handler: {command: {argv: [sh, -c, "sleep 30 & sleep 30 & (setsid sleep 30 &); sleep 30"]}}
  read_only: true
  timeout: {total_s: 0.2, grace_s: 0.2}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: flood}
spec:
  description: Prints a lot.
  handler: {command: {argv: [sh, -c, "yes '2026-11-29T10:00:00Z INFO request 7f3a9c served in 12ms status=200 path=/api/v1/items?page=3 build=4.2.1' | head -c {bytes}"]}}
  read_only: true
  timeout: {total_s: 600}
  redaction: [secrets, pii]
  input_schema: {type: object, required: [bytes], properties: {bytes: {type: integer}}}
"""
)

HANDLERS = """\
import asyncio

async def noop(args):
    return "ok"

async def nap(args):
    await asyncio.sleep(0.01)
    return "rested"
"""

ARGS = {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False}


def make_config() -> Path:
    root = Path(tempfile.mkdtemp(prefix="toolrt-bench-"))
    (root / "tools.yaml").write_text(CONFIG)
    (root / "bench_handlers.py").write_text(HANDLERS)
    return root


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def time_async(fn: Any, n: int) -> list[float]:
    for _ in range(min(200, n)):
        await fn()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - started)
    return samples


async def interleaved(contenders: dict[str, Any], n: int, rounds: int = 10) -> dict[str, list[float]]:
    """Time every contender in turns (``rounds`` rounds of ``n / rounds`` calls each), so
    that a slow patch of the machine hits all of them alike."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():
        for _ in range(200):
            await fn()
    for _ in range(rounds):
        for name, fn in contenders.items():
            samples[name].extend(await time_async_raw(fn, max(n // rounds, 20)))
    return samples


async def time_async_raw(fn: Any, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - started)
    return samples


async def per_call(config: Path, workspace: Path, n: int) -> dict[str, list[float]]:
    contenders: dict[str, Any] = {}
    sys.path.insert(0, str(config))
    from bench_handlers import noop  # type: ignore[import-not-found]

    async def plain() -> None:
        await noop(dict(ARGS))

    contenders["plain async function call"] = plain
    session = Session()
    for label, settings in (
        ("toolrt, 7 stages (fast engines)", Settings(cel_engine="fast", schema_engine="fast")),
        ("toolrt, fast engines, audit log off", Settings(cel_engine="fast", schema_engine="fast", audit_sink="off")),
        (
            "toolrt, fast engines, audit in a child process",
            Settings(cel_engine="fast", schema_engine="fast", audit_writer="process"),
        ),
        ("toolrt, 7 stages (portable engines)", Settings(cel_engine="portable", schema_engine="portable")),
    ):
        runtime = Runtime([config], workspace_root=workspace, settings=settings)
        call = Call("c1", "noop", ARGS)

        async def one(runtime: Runtime = runtime, call: Call = call) -> None:
            (result,) = await runtime.run_turn([call], session)
            if result.is_error:
                raise SystemExit(f"benchmark call failed: {result.content}")

        contenders[label] = one
    contenders.update(peers())
    return await interleaved(contenders, n)


def peers() -> dict[str, Any]:
    found: dict[str, Any] = {}
    try:
        from agents import function_tool  # type: ignore[import-not-found]
        from agents.tool_context import ToolContext  # type: ignore[import-not-found]

        @function_tool
        async def noop(
            path: str, limit: int = 10, mode: str = "fast", tags: list[str] | None = None, dry_run: bool = False
        ) -> str:
            """Does nothing."""
            return "ok"

        payload = json.dumps(ARGS)
        context = ToolContext(context=None, tool_name="noop", tool_call_id="c1", tool_arguments=payload)

        async def agents_call() -> None:
            await noop.on_invoke_tool(context, payload)

        found["OpenAI Agents SDK FunctionTool.on_invoke_tool"] = agents_call
    except Exception as err:  # noqa: BLE001 - a peer that is missing or changed is reported, not fatal
        print(f"(OpenAI Agents SDK not measured: {type(err).__name__}: {err})")
    try:
        from langchain_core.messages import AIMessage
        from langchain_core.tools import tool
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode

        @tool
        async def noop_lc(
            path: str, limit: int = 10, mode: str = "fast", tags: list[str] | None = None, dry_run: bool = False
        ) -> str:
            """Does nothing."""
            return "ok"

        graph = StateGraph(MessagesState)
        graph.add_node("tools", ToolNode([noop_lc]))
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        app = graph.compile()
        message = AIMessage(content="", tool_calls=[{"name": "noop_lc", "args": ARGS, "id": "c1"}])

        async def langgraph_call() -> None:
            await app.ainvoke({"messages": [message]})

        found["LangGraph ToolNode (one-node graph)"] = langgraph_call
    except Exception as err:  # noqa: BLE001
        print(f"(LangGraph not measured: {type(err).__name__}: {err})")
    return found


async def turn_of_naps(config: Path, workspace: Path) -> tuple[float, float, int]:
    runtime = Runtime([config], workspace_root=workspace)
    calls = [Call(f"c{i}", "nap", {}) for i in range(100)]
    await runtime.run_turn(calls[:8])
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        results = await runtime.run_turn(calls)
        samples.append(time.perf_counter() - started)
        if any(r.is_error for r in results):
            raise SystemExit("nap turn failed")
    concurrency = runtime.settings.max_concurrency
    ideal = math.ceil(100 / concurrency) * 0.010
    return statistics.median(samples), ideal, concurrency


def survivors() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True, check=False).stdout
    return [line for line in out.splitlines() if "sleep 30" in line and " Z" not in line and "ps -eo" not in line]


async def kill_latency(config: Path, workspace: Path, runs: int) -> tuple[list[float], int]:
    runtime = Runtime([config], workspace_root=workspace)
    latencies = []
    orphans = 0
    for _ in range(runs):
        started = time.perf_counter()
        (result,) = await runtime.run_turn([Call("k", "hang", {})])
        elapsed = time.perf_counter() - started
        if result.metadata.get("timed_out") != "total":
            raise SystemExit(f"hang did not time out: {result.content}")
        left = survivors()
        orphans += len(left)
        latencies.append(elapsed - 0.2)  # beyond the 0.2 s deadline; includes the 0.2 s grace only if TERM was ignored
    return latencies, orphans


def big_output(config: Path, workspace: Path, size: int) -> None:
    code = f"""
import asyncio, resource, json, sys
sys.path.insert(0, {str(config)!r})
from runtime.runtime import Runtime
from runtime.records import Call
rt = Runtime([{str(config)!r}], workspace_root={str(workspace)!r})
def peak_kb():
    # VmHWM is this process's own peak; ru_maxrss would include the parent's at fork time.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
before = peak_kb()
(r,) = asyncio.run(rt.run_turn([Call("f", "flood", {{"bytes": {size}}})]))
after = peak_kb()
art = r.metadata.get("artifact_id")
print(json.dumps({{"before_kb": before, "after_kb": after, "status": r.status.value, "notice": r.content[:300], "artifact": art,
                  "chars": r.metadata.get("original_chars"), "redactions": r.metadata.get("redactions")}}))
"""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        print(out.stderr[-2000:])
        return
    data = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n== {size / 1e9:.1f} GB of output through a command: {elapsed:.1f} s, {size / 1e6 / elapsed:.0f} MB/s")
    print(
        f"peak RSS {data['after_kb'] / 1024:.0f} MB (after start-up {data['before_kb'] / 1024:.0f} MB); status {data['status']}; original chars {data['chars']:,}"
    )
    print(f"redactions {data['redactions']}; notice: {data['notice'][:200]!r}")


def main() -> int:
    n = 2000
    config = make_config()
    workspace = Path(tempfile.mkdtemp(prefix="toolrt-ws-"))

    async def run_all() -> None:
        per = await per_call(config, workspace, n)
        base = statistics.median(per["toolrt, 7 stages (fast engines)"])
        print(
            f"== per-call cost, {n} calls each, measured in 10 interleaved rounds (p50 / p90 / p99, and p50 relative to toolrt with fast engines)"
        )
        for name, samples in per.items():
            p50, p90, p99 = (percentile(samples, q) * 1e6 for q in (0.5, 0.9, 0.99))
            print(f"{name:52} {p50:9.1f} us {p90:9.1f} us {p99:9.1f} us   {p50 / (base * 1e6):6.2f}x")
        plain = statistics.median(per["plain async function call"])
        no_audit = statistics.median(per["toolrt, fast engines, audit log off"])
        child = statistics.median(per["toolrt, fast engines, audit in a child process"])
        print(
            f"audit log cost per call: {(base - no_audit) * 1e6:+.1f} us ({base / no_audit - 1:+.0%}, goal <= +10%) on a thread (the default); {(child - no_audit) * 1e6:+.1f} us ({child / no_audit - 1:+.0%}) in a child process"
        )
        print(f"toolrt overhead over a plain call (fast engines): {(base - plain) * 1e6:.1f} us")
        if "LangGraph ToolNode (one-node graph)" in per:
            print(
                f"LangGraph ToolNode / toolrt (fast): {statistics.median(per['LangGraph ToolNode (one-node graph)']) / base:.1f}x (goal >= 15x)"
            )
        if "OpenAI Agents SDK FunctionTool.on_invoke_tool" in per:
            print(
                f"toolrt (fast) / OpenAI Agents SDK bare invoke: {base / statistics.median(per['OpenAI Agents SDK FunctionTool.on_invoke_tool']):.2f}x (goal <= 3x)"
            )
        turn, ideal, concurrency = await turn_of_naps(config, workspace)
        print(
            f"\n== 100 read-only calls sleeping 10 ms, concurrency {concurrency}: {turn * 1000:.0f} ms; ideal {ideal * 1000:.0f} ms; ratio {turn / ideal:.2f} (goal <= 1.3)"
        )
        latencies, orphans = await kill_latency(config, workspace, 20)
        print(
            f"\n== timeout kill, 20 runs: beyond the deadline p50 {statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms; surviving descendants: {orphans}"
        )

    asyncio.run(run_all())
    if "--big" in sys.argv:
        big_output(config, workspace, 1_000_000_000)
    else:
        big_output(config, workspace, 100_000_000)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
