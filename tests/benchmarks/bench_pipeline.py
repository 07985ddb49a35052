"""Pipeline benchmarks, side by side in one process (read the ratios; machines are noisy).

1. Per-call overhead of all seven stages, on two configs:

   - **realistic**: a 5-property schema; 2 business rules, one read straight from the
     arguments and one that needs the CEL engine; 20 policy rules, of which 2 name this
     tool with conditions that need the engine (both false for the call); the shipped
     ``secrets`` + ``pii`` redaction on a 1 KB output of real text (one address in it);
   - **trivial**: the same schema and tool, no rules, a 2-byte output.

   toolrt runs with the fast and the portable engines, with the audit log off and on
   (SQLite with the default writer, ``auto``, which moves to a child process once the
   calls come fast, and with the writer thread and the writer process named; the app's
   writer thread's CPU time is charged to its calls, a child's is reported apart), and
   through ``parse_calls("openai-chat")`` + ``run_turn`` + ``render_results``. The peers
   run the same tool the way their own runners call it: the OpenAI Agents SDK builds a fresh ``ToolContext`` per call
   (``ToolContext.from_agent_context``) and awaits ``FunctionTool.on_invoke_tool``;
   Pydantic AI's agent graph calls ``ToolManager.handle_call``; LangGraph runs its
   ``ToolNode`` alone (given the runtime its graph would give it) and in a one-node
   graph. Every contender is timed in interleaved rounds; medians and ratios.
2. A turn of 100 read-only calls that each sleep 10 ms, against the ideal for the
   configured concurrency.
3. Timeout kill: from the deadline to no surviving descendant, over 20 runs.
4. A command printing 1 GB (``--big``): peak RSS of the runtime and the result notice.

``--profile``: instead, each toolrt contender of the realistic config runs under
cProfile and the top costs are printed per stage (with the stages' own timings).
``--quick``: the per-call table only.

Run: ``make bench`` (or ``python tests/benchmarks/bench_pipeline.py [--big|--profile|--quick]``).
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import math
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from runtime.adapters import parse_calls, render_results
from runtime.records import Call, Session
from runtime.runtime import Runtime
from runtime.settings import Settings

SCHEMA = """\
  input_schema:
    type: object
    additionalProperties: false
    required: [path]
    properties:
      path: {type: string, maxLength: 200}
      limit: {type: integer, minimum: 1, maximum: 500}
      mode: {enum: [fast, full]}
      tags: {type: array, items: {type: string, maxLength: 40}, maxItems: 5}
      dry_run: {type: boolean}
"""

# 20 policy rules: 18 name other tools (indexed away: they cost nothing per call), 2 name
# `noop` with conditions only the CEL engine can settle (a comparison, a macro).
REALISTIC = (
    """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [redaction-default]}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: bench-rules}
spec:
  rules:
"""
    + "".join(
        f"    - {{name: other-{i}, effect: deny, tools: [tool_{i}], when: 'args.path.startsWith(\"/secret{i}\")'}}\n"
        for i in range(18)
    )
    + """\
    - name: no-huge-full-reads
      effect: deny
      tools: [noop]
      when: 'has(args.limit) && args.limit > 400 && args.mode == "full"'
      reason: a full read of more than 400 items is too much
    - name: ask-for-production
      effect: ask
      tools: [noop]
      when: 'has(args.tags) && args.tags.exists(t, t == "prod")'
      reason: production paths need a person
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Reads a page of a file, quickly.
  handler: python:bench_handlers:page
  read_only: true
  redaction: [secrets, pii]
"""
    + SCHEMA
    + """\
  rules:
    - expression: '!args.path.contains("..")'
      message: stay inside the workspace
    - expression: '!has(args.tags) || size(args.tags) <= 3 || args.mode == "full"'
      message: more than 3 tags need mode full
"""
)

TRIVIAL = (
    """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [redaction-default]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing, quickly.
  handler: python:bench_handlers:noop
  read_only: true
"""
    + SCHEMA
)

# The other sections' tools (a turn of naps, the kill, the flood) live beside the trivial one.
EXTRA_TOOLS = """\
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
  handler:
    command:
      argv:
        - sh
        - -c
        - "yes '2026-11-29T10:00:00Z INFO request 7f3a9c served in 12ms status=200' | head -c {bytes}"
  read_only: true
  timeout: {total_s: 600}
  redaction: [secrets, pii]
  input_schema: {type: object, required: [bytes], properties: {bytes: {type: integer}}}
"""

# About 1 KB of what a read tool returns: code and a log excerpt, with one address that
# the pii profile redacts.
PAGE = """\
def load_settings(path: str) -> dict[str, str]:
    # Read key=value lines, skipping comments and blank lines.
    settings: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"{path}:{number}: expected key=value, got {line!r}")
            settings[key.strip()] = value.strip()
    return settings

2026-11-29T10:00:01Z INFO  worker-3 request 7f3a9c GET /api/v1/items?page=3 200 in 12 ms
2026-11-29T10:00:01Z INFO  worker-1 request 7f3a9d GET /api/v1/items?page=4 200 in 15 ms
2026-11-29T10:00:02Z WARN  worker-2 slow query on orders (412 ms), owner maria.lopez@example.org
2026-11-29T10:00:02Z INFO  worker-3 request 7f3a9e POST /api/v1/orders 201 in 48 ms
2026-11-29T10:00:03Z ERROR worker-1 upstream inventory timed out after 2000 ms; retrying (1/3)
"""

HANDLERS = f"""\
import asyncio

PAGE = {PAGE!r}

async def page(args):
    return PAGE

async def noop(args):
    return "ok"

async def nap(args):
    await asyncio.sleep(0.01)
    return "rested"
"""

ARGS = {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False}
PAYLOAD = json.dumps(ARGS)

AUDIT_OFF = {"audit_sink": "off"}
AUDIT_ON = {"audit_sink": "sqlite"}
AUDIT_THREAD = {"audit_sink": "sqlite", "audit_writer": "thread"}
AUDIT_PROCESS = {"audit_sink": "sqlite", "audit_writer": "process"}
FAST = {"cel_engine": "fast", "schema_engine": "fast"}
PORTABLE = {"cel_engine": "portable", "schema_engine": "portable"}

# The rows the goals are read from.
SDK = "OpenAI Agents SDK on_invoke_tool, fresh ToolContext"
FAST_OFF = "toolrt fast, audit off"
FAST_ON = "toolrt fast, audit SQLite"
FAST_THREAD = "toolrt fast, audit SQLite, writer thread"
FAST_PROCESS = "toolrt fast, audit SQLite, writer process"
FAST_PARSED = "toolrt fast, audit off, parse+run+render"
PORTABLE_OFF = "toolrt portable, audit off"
PORTABLE_ON = "toolrt portable, audit SQLite"


def make_configs() -> tuple[Path, Path]:
    """(realistic config folder, trivial config folder); the handlers module is in both."""
    made = []
    for text in (REALISTIC, TRIVIAL + EXTRA_TOOLS):
        root = Path(tempfile.mkdtemp(prefix="toolrt-bench-"))
        (root / "tools.yaml").write_text(text)
        (root / "bench_handlers.py").write_text(HANDLERS)
        made.append(root)
    return made[0], made[1]


def make_config() -> Path:
    """The realistic config folder alone (what other benchmarks measure against)."""
    return make_configs()[0]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Contender = Callable[[], Awaitable[None]]


class Background:
    """A contender's background thread (the audit writer): how to wait for it, and the
    CPU time it has used so far; with ``child``, also the CPU time of the writer child
    (``audit_writer=process``), which runs beside the calls and is reported apart."""

    def __init__(
        self, drain: Callable[[], Any], thread_ident: int | None, child: Callable[[], int | None] | None = None
    ) -> None:
        self.drain = drain
        self._clock = time.pthread_getcpuclockid(thread_ident) if thread_ident is not None else None
        self.child = child
        self.child_cpu_total = 0.0
        self.cpu_total = 0.0  # the thread's CPU charged to the contender's timed calls

    def cpu(self) -> float:
        return time.clock_gettime(self._clock) if self._clock is not None else 0.0

    def child_cpu(self) -> float:
        pid = self.child() if self.child is not None else None  # (audit_writer=auto starts one when busy)
        if pid is None:
            return 0.0
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def interleaved(
    contenders: dict[str, Contender],
    n: int,
    rounds: int = 10,
    background: dict[str, Background] | None = None,
    raw: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Time every contender in turns (``rounds`` rounds of ``n / rounds`` calls each), so
    that a slow patch of the machine hits all of them alike.

    ``background``: for a contender that leaves work to a thread of its own (the audit
    writer), the thread is drained after each of its rounds, and the CPU time it used
    in the round is spread over the round's calls: its work is charged to its own
    contender (as CPU, not as the wall time of a machine that may be busy elsewhere),
    not to whichever contender runs next. A round is longer than the writer's largest
    batch, so that the thread makes its batches while the calls run, as under a steady
    stream of calls. Each contender is warmed up first with enough calls for the default
    writer to move to its child (a one-time cost). ``raw`` gets the samples as timed,
    without the thread's CPU: their mean already holds the time the calls waited for it."""
    background = background or {}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for name, fn in contenders.items():
        for _ in range(1000 if name in background else 200):
            await fn()
        if name in background:
            background[name].drain()
    for _ in range(rounds):
        for name, fn in contenders.items():
            thread = background.get(name)
            used = thread.cpu() if thread is not None else 0.0
            child_used = thread.child_cpu() if thread is not None else 0.0
            taken = await time_async_raw(fn, max(n // rounds, 20))
            if raw is not None:
                raw.setdefault(name, []).extend(taken)
            if thread is not None:
                thread.drain()
                thread.cpu_total += thread.cpu() - used
                share = (thread.cpu() - used) / len(taken)
                taken = [sample + share for sample in taken]
                thread.child_cpu_total += thread.child_cpu() - child_used
            samples[name].extend(taken)
    return samples


async def time_async_raw(fn: Contender, n: int) -> list[float]:
    clock = time.perf_counter
    samples = []
    for _ in range(n):
        started = clock()
        await fn()
        samples.append(clock() - started)
    return samples


def toolrt_contender(runtime: Runtime, session: Session, parsed: bool = False) -> Contender:
    """One call through ``run_turn``; with ``parsed``, from an OpenAI chat message to the
    rendered tool messages, as an agent loop does."""
    call = Call("c1", "noop", ARGS)
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "noop", "arguments": PAYLOAD}}],
    }
    snapshot = runtime.snapshot

    async def one() -> None:
        (result,) = await runtime.run_turn([call], session)
        if result.is_error:
            raise SystemExit(f"benchmark call failed: {result.content}")

    async def one_parsed() -> None:
        calls = parse_calls("openai-chat", message, snapshot=snapshot)
        results = await runtime.run_turn(calls, session)
        (rendered,) = render_results("openai-chat", results)
        if results[0].is_error:
            raise SystemExit(f"benchmark call failed: {rendered}")

    return one_parsed if parsed else one


def toolrt_rows(config: Path, workspace: Path, label: str) -> dict[str, tuple[Runtime, Contender]]:
    """The toolrt contenders of one config: (its runtime, the timed call)."""
    session = Session()
    rows: dict[str, tuple[Runtime, Contender]] = {}
    for name, settings, parsed in (
        (FAST_OFF, {**FAST, **AUDIT_OFF}, False),
        (FAST_ON, {**FAST, **AUDIT_ON}, False),
        (FAST_THREAD, {**FAST, **AUDIT_THREAD}, False),
        (FAST_PROCESS, {**FAST, **AUDIT_PROCESS}, False),
        (FAST_PARSED, {**FAST, **AUDIT_OFF}, True),
        (PORTABLE_OFF, {**PORTABLE, **AUDIT_OFF}, False),
        (PORTABLE_ON, {**PORTABLE, **AUDIT_ON}, False),
    ):
        if label == "trivial" and name.startswith("toolrt portable"):
            continue
        runtime = Runtime([config], workspace_root=workspace, settings=Settings(**settings))
        rows[name] = (runtime, toolrt_contender(runtime, session, parsed))
    return rows


def peers(output: str) -> dict[str, Contender]:
    """The same tool (same arguments, same output) in the peers, called as their runners call it."""
    found: dict[str, Contender] = {}
    try:
        found.update(_agents_sdk(output))
    except Exception as err:  # noqa: BLE001 - a peer that is missing or changed is reported, not fatal
        print(f"(OpenAI Agents SDK not measured: {type(err).__name__}: {err})")
    try:
        found.update(_pydantic_ai(output))
    except Exception as err:  # noqa: BLE001
        print(f"(Pydantic AI not measured: {type(err).__name__}: {err})")
    try:
        found.update(_langgraph(output))
    except Exception as err:  # noqa: BLE001
        print(f"(LangGraph not measured: {type(err).__name__}: {err})")
    return found


def _agents_sdk(output: str) -> dict[str, Contender]:
    from agents import RunContextWrapper, function_tool
    from agents.tool_context import ToolContext
    from openai.types.responses import ResponseFunctionToolCall

    @function_tool
    async def noop(
        path: str, limit: int = 10, mode: str = "fast", tags: list[str] | None = None, dry_run: bool = False
    ) -> str:
        """Reads a page of a file."""
        return output

    wrapper: RunContextWrapper[None] = RunContextWrapper(context=None)
    tool_call = ResponseFunctionToolCall(
        arguments=PAYLOAD, call_id="c1", name="noop", type="function_call", id="fc_1", status="completed"
    )

    async def fresh() -> None:
        # As the SDK's runner does for every call (run_internal/tool_execution.py).
        context = ToolContext.from_agent_context(wrapper, tool_call.call_id, tool_call=tool_call)
        await noop.on_invoke_tool(context, tool_call.arguments)

    reused = ToolContext.from_agent_context(wrapper, tool_call.call_id, tool_call=tool_call)

    async def reused_context() -> None:
        await noop.on_invoke_tool(reused, tool_call.arguments)

    return {SDK: fresh, "OpenAI Agents SDK on_invoke_tool, one ToolContext reused": reused_context}


def _pydantic_ai(output: str) -> dict[str, Contender]:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    async def noop(
        path: str, limit: int = 10, mode: str = "fast", tags: list[str] | None = None, dry_run: bool = False
    ) -> str:
        """Reads a page of a file."""
        return output

    toolset: FunctionToolset[None] = FunctionToolset([noop])
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    manager: list[ToolManager[None]] = []
    part = ToolCallPart(tool_name="noop", args=PAYLOAD, tool_call_id="c1")

    async def handle() -> None:
        if not manager:  # built once per run step, as the agent graph does
            manager.append(await ToolManager[None](toolset).for_run_step(context))
        await manager[0].handle_call(part)

    return {"Pydantic AI ToolManager.handle_call": handle}


def _langgraph(output: str) -> dict[str, Contender]:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.runtime import DEFAULT_RUNTIME

    @tool
    async def noop(
        path: str, limit: int = 10, mode: str = "fast", tags: list[str] | None = None, dry_run: bool = False
    ) -> str:
        """Reads a page of a file."""
        return output

    node = ToolNode([noop])
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([noop]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()
    message = AIMessage(content="", tool_calls=[{"name": "noop", "args": ARGS, "id": "c1"}])
    # Outside a graph, a ToolNode needs the runtime a graph would hand it.
    config: Any = {"configurable": {"__pregel_runtime": DEFAULT_RUNTIME}}

    async def alone() -> None:
        await node.ainvoke({"messages": [message]}, config)

    async def in_graph() -> None:
        await app.ainvoke({"messages": [message]})

    return {"LangGraph ToolNode alone": alone, "LangGraph ToolNode in a one-node graph": in_graph}


def _median(samples: list[float]) -> float:
    return statistics.median(samples) if samples else float("nan")


def report(title: str, per: dict[str, list[float]], n: int, raw: dict[str, list[float]]) -> None:
    sdk = _median(per.get(SDK, []))
    print(f"\n== {title}: per call, {n} calls each in 10 interleaved rounds (p50 / p90 / p99; p50 / Agents SDK)")
    for name, samples in per.items():
        p50, p90, p99 = (percentile(samples, q) * 1e6 for q in (0.5, 0.9, 0.99))
        print(f"{name:52} {p50:9.1f} us {p90:9.1f} us {p99:9.1f} us   {p50 / (sdk * 1e6):6.2f}x")
    off, on = _median(per[FAST_OFF]), _median(per[FAST_ON])
    print(f"audit SQLite on: {(on - off) * 1e6:+.1f} us a call ({on / off - 1:+.0%} of a call; goal <= +15%)")
    if FAST_THREAD in per:
        thread = _median(per[FAST_THREAD])
        print(f"audit SQLite on, writer thread: {(thread - off) * 1e6:+.1f} us a call ({thread / off - 1:+.0%})")
    if FAST_PROCESS in per:
        process = _median(per[FAST_PROCESS])
        print(f"audit SQLite on, writer process: {(process - off) * 1e6:+.1f} us a call ({process / off - 1:+.0%})")
    # The medians leave out what a few calls pay for all (the calling thread encoding a
    # batch for the writer child every 64 calls, garbage collections): the means keep it.
    # Means of the samples as timed: the writer thread's CPU is in them already, as the
    # time the calls waited for the interpreter lock.
    mean_off = statistics.fmean(raw[FAST_OFF])
    for name, label in ((FAST_ON, "audit SQLite on"), (FAST_PROCESS, "audit SQLite on, writer process")):
        if name in raw:
            mean = statistics.fmean(raw[name])
            print(f"{label}, mean of every call: {(mean - mean_off) * 1e6:+.1f} us a call ({mean / mean_off - 1:+.0%})")
    print(f"parsed call / run_turn alone: {_median(per[FAST_PARSED]) / off:.2f}x (goal <= 1.3x)")
    if SDK in per:
        print(f"fast, audit SQLite / Agents SDK: {on / sdk:.2f}x (goal <= 3x)")
        if FAST_THREAD in per:
            print(f"fast, audit SQLite, writer thread / Agents SDK: {_median(per[FAST_THREAD]) / sdk:.2f}x")
        if FAST_PROCESS in per:
            print(f"fast, audit SQLite, writer process / Agents SDK: {_median(per[FAST_PROCESS]) / sdk:.2f}x")
        print(f"fast, audit off / Agents SDK: {off / sdk:.2f}x (goal <= 2.5x)")
    if PORTABLE_OFF in per:
        print(f"portable / fast, audit off: {_median(per[PORTABLE_OFF]) / off:.2f}x (goal <= 2x)")


async def per_call(
    config: Path, workspace: Path, label: str, n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each contender's samples (a writer thread's CPU charged), and the samples as timed."""
    output = PAGE if label == "realistic" else "ok"
    contenders: dict[str, Contender] = {}
    sdk = peers(output)
    contenders.update({k: v for k, v in sdk.items() if k.startswith("OpenAI")})
    rows = toolrt_rows(config, workspace, label)
    contenders.update({name: fn for name, (_runtime, fn) in rows.items()})
    contenders.update({k: v for k, v in sdk.items() if not k.startswith("OpenAI")})
    background = {
        name: Background(
            runtime.audit.flush,
            runtime.audit._thread.ident,
            lambda sink=runtime.audit.sink: getattr(sink, "child_pid", None),  # type: ignore[misc]
        )
        for name, (runtime, _fn) in rows.items()
        if runtime.audit is not None
    }
    try:
        raw: dict[str, list[float]] = {}
        per = await interleaved(contenders, n, background=background, raw=raw)
        for name in (FAST_ON, FAST_THREAD):
            if name in background:
                writer_us = background[name].cpu_total / len(per[name]) * 1e6
                child_us = background[name].child_cpu_total / len(per[name]) * 1e6
                print(f"({name}: the audit writer thread's CPU, included in its row: {writer_us:.1f} us a call", end="")
                print(f"; a writer child's, on another core: {child_us:.1f} us a call)" if child_us else ")")
        if FAST_PROCESS in background:
            thread_us = background[FAST_PROCESS].cpu_total / len(per[FAST_PROCESS]) * 1e6
            child_us = background[FAST_PROCESS].child_cpu_total / len(per[FAST_PROCESS]) * 1e6
            print(f"(with the writer process: the app's writer thread {thread_us:.1f} us a call, included in its row;")
            print(f" the writer child's own CPU, on another core: {child_us:.1f} us a call)")
        return per, raw
    finally:
        for runtime, _fn in rows.values():
            runtime.close_sync()


# Where a function's time is counted in --profile: the first matching part of its file path.
_STAGE_OF = (
    ("runtime/adapters", "parse/render"),
    ("runtime/pipeline/lookup", "lookup"),
    ("runtime/pipeline/validate", "validate"),
    ("runtime/validation", "validate"),
    ("jsonschema", "validate"),
    ("runtime/pipeline/permit", "permit"),
    ("runtime/policy", "permit"),
    ("cel", "permit (CEL engine)"),
    ("runtime/pipeline/execute", "execute"),
    ("runtime/execution", "execute"),
    ("runtime/context", "execute"),
    ("runtime/pipeline/shape", "shape"),
    ("runtime/shaping", "shape"),
    ("re2", "shape"),
    ("runtime/audit", "audit"),
    ("runtime/metrics", "metrics"),
    ("runtime/logs", "logs"),
    ("runtime/pipeline", "pipeline glue"),
    ("runtime/runtime", "turn"),
    ("asyncio", "asyncio"),
)


def _stage_of(filename: str) -> str:
    for part, stage in _STAGE_OF:
        if part in filename:
            return stage
    return "other"


async def profile(config: Path, workspace: Path, n: int) -> None:
    """Each toolrt contender of the realistic config under cProfile: the stages' own
    timings (medians from the results' metadata), then the top costs of each stage."""
    for name, (runtime, fn) in toolrt_rows(config, workspace, "realistic").items():
        for _ in range(200):
            await fn()
        timings: dict[str, list[float]] = {}
        for _ in range(200):
            (result,) = await runtime.run_turn([Call("c1", "noop", ARGS)], Session())
            for stage, ms in result.metadata["timings_ms"].items():
                timings.setdefault(stage, []).append(ms)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(n):
            await fn()
        profiler.disable()
        stats = pstats.Stats(profiler)
        total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
        print(f"\n== {name}: {total / n * 1e6:.1f} us of profiled CPU a call (profiling inflates it)")
        print("   stage timings (median): " + ", ".join(f"{k} {_median(v) * 1000:.1f} us" for k, v in timings.items()))
        per_stage: dict[str, list[tuple[float, int, str]]] = {}
        for (filename, line, function), entry in stats.stats.items():  # type: ignore[attr-defined]
            calls, own = entry[1], entry[2]
            where = f"{Path(filename).name}:{line} {function}"
            per_stage.setdefault(_stage_of(filename), []).append((own, calls, where))
        ranked = sorted(per_stage.items(), key=lambda item: -sum(own for own, _c, _w in item[1]))
        for stage, entries in ranked:
            own_total = sum(own for own, _c, _w in entries)
            print(f"   {stage:20} {own_total / n * 1e6:7.1f} us ({own_total / total:4.0%})")
            for own, calls, where in sorted(entries, reverse=True)[:5]:
                print(f"      {own / n * 1e6:7.2f} us  {calls / n:5.1f}x  {where[:90]}")


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
print(json.dumps({{"before_kb": before, "after_kb": after, "status": r.status.value,
                  "notice": r.content[:300], "artifact": art, "chars": r.metadata.get("original_chars"),
                  "redactions": r.metadata.get("redactions")}}))
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
        f"peak RSS {data['after_kb'] / 1024:.0f} MB (after start-up {data['before_kb'] / 1024:.0f} MB);"
        f" status {data['status']}; original chars {data['chars']:,}"
    )
    print(f"redactions {data['redactions']}; notice: {data['notice'][:200]!r}")


def main() -> int:
    n = 12000
    realistic, trivial = make_configs()
    sys.path.insert(0, str(realistic))
    workspace = Path(tempfile.mkdtemp(prefix="toolrt-ws-"))

    async def run_all() -> None:
        if "--profile" in sys.argv:
            await profile(realistic, workspace, n)
            return
        for label, config in (("realistic", realistic), ("trivial", trivial)):
            per, raw = await per_call(config, workspace, label, n)
            report(f"{label} config", per, n, raw)
        if "--quick" in sys.argv:
            return
        turn, ideal, concurrency = await turn_of_naps(trivial, workspace)
        print(
            f"\n== 100 read-only calls sleeping 10 ms, concurrency {concurrency}: {turn * 1000:.0f} ms;"
            f" ideal {ideal * 1000:.0f} ms; ratio {turn / ideal:.2f} (goal <= 1.3)"
        )
        latencies, orphans = await kill_latency(trivial, workspace, 20)
        print(
            f"\n== timeout kill, 20 runs: beyond the deadline p50 {statistics.median(latencies) * 1000:.0f} ms,"
            f" max {max(latencies) * 1000:.0f} ms; surviving descendants: {orphans}"
        )

    asyncio.run(run_all())
    if "--profile" in sys.argv or "--quick" in sys.argv:
        return 0
    big_output(trivial, workspace, 1_000_000_000 if "--big" in sys.argv else 100_000_000)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
