"""Framework bridges: per-call overhead of each bridge against the same framework with a
native tool doing the same nothing, side by side in one process (read the ratios).

Each pair is called the way the framework's own runner calls a tool:

- OpenAI Agents SDK: ``FunctionTool.on_invoke_tool`` with a fresh ``ToolContext`` per
  call; a native ``@function_tool`` against ``function_tools(runtime)``.
- LangChain: ``BaseTool.ainvoke`` with a tool call (gives a ToolMessage); a native
  ``@tool`` against ``langchain_tools(runtime)``.
- LangGraph: a one-node graph; ``ToolNode([native])`` against ``ToolrtToolNode(runtime)``.
- Pydantic AI: the toolset's ``call_tool`` after argument validation, as its tool manager
  does; a ``FunctionToolset`` against ``ToolrtToolset(runtime)``.
- Claude Agent SDK: a ``tools/call`` round trip through the SDK's in-memory MCP bridge;
  ``create_sdk_mcp_server`` with a native tool against ``claude_mcp_server(runtime)``.

toolrt runs its whole pipeline in each (fast engines, the default redaction profiles,
a short policy, the audit log on). Run: ``make bench`` (or ``python tests/benchmarks/bench_bridges.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="toolrt-bench-state-"))
os.environ.setdefault("TOOLRT_HOT_RELOAD", "false")

from bench_pipeline import interleaved, percentile  # noqa: E402

from runtime import Runtime, Settings  # noqa: E402

CONFIG = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: noop}
spec:
  description: Does nothing.
  handler: python:bench_bridge_handlers:noop
  read_only: true
  redaction: [secrets]
  input_schema:
    type: object
    additionalProperties: false
    required: [path]
    properties:
      path: {type: string}
      limit: {type: integer, minimum: 1}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: bench}
spec:
  rules:
    - {name: reads-run, effect: allow, tools: [noop]}
---
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec:
  packs: [redaction-default]
"""
HANDLERS = "async def noop(args):\n    return 'ok'\n"
ARGS = {"path": "src/app.py", "limit": 10}
PAYLOAD = json.dumps(ARGS)

Pair = tuple[Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]


def openai_agents(runtime: Runtime) -> Pair:
    from agents import function_tool
    from agents.tool_context import ToolContext

    from runtime.adapters.openai_agents import function_tools

    @function_tool
    async def noop(path: str, limit: int = 10) -> str:
        """Does nothing."""
        return "ok"

    (bridged,) = function_tools(runtime)

    def caller(tool: Any) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            context = ToolContext(context=None, tool_name="noop", tool_call_id="c1", tool_arguments=PAYLOAD)
            output = await tool.on_invoke_tool(context, PAYLOAD)
            if output != "ok":
                raise SystemExit(f"benchmark call failed: {output}")

        return call

    return caller(noop), caller(bridged)


def langchain(runtime: Runtime) -> Pair:
    from langchain_core.tools import tool

    from runtime.adapters.langchain import langchain_tools

    @tool
    async def noop(path: str, limit: int = 10) -> str:
        """Does nothing."""
        return "ok"

    (bridged,) = langchain_tools(runtime)
    call = {"name": "noop", "args": ARGS, "id": "c1", "type": "tool_call"}

    def caller(t: Any) -> Callable[[], Awaitable[Any]]:
        async def one() -> None:
            message = await t.ainvoke(call)
            if message.content != "ok":
                raise SystemExit(f"benchmark call failed: {message.content}")

        return one

    return caller(noop), caller(bridged)


def langgraph(runtime: Runtime) -> Pair:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from runtime.adapters.langchain import ToolrtToolNode

    @tool
    async def noop(path: str, limit: int = 10) -> str:
        """Does nothing."""
        return "ok"

    message = AIMessage(content="", tool_calls=[{"name": "noop", "args": ARGS, "id": "c1"}])

    def caller(node: Any) -> Callable[[], Awaitable[Any]]:
        graph = StateGraph(MessagesState)
        graph.add_node("tools", node)
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        app = graph.compile()

        async def one() -> None:
            state = await app.ainvoke({"messages": [message]})
            if state["messages"][-1].content != "ok":
                raise SystemExit(f"benchmark call failed: {state['messages'][-1].content}")

        return one

    return caller(ToolNode([noop])), caller(ToolrtToolNode(runtime))


def pydantic_ai(runtime: Runtime) -> Pair:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    from runtime.adapters.pydantic_ai import ToolrtToolset

    async def noop(path: str, limit: int = 10) -> str:
        """Does nothing."""
        return "ok"

    native = FunctionToolset([noop])
    bridged = ToolrtToolset(runtime)
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage(), tool_call_id="c1")

    def caller(toolset: Any) -> Callable[[], Awaitable[Any]]:
        tools: dict[str, Any] = {}

        async def one() -> None:
            if not tools:
                tools.update(await toolset.get_tools(context))
            tool = tools["noop"]
            args = tool.args_validator.validate_json(PAYLOAD)
            output = await toolset.call_tool("noop", args, context, tool)
            if output != "ok":
                raise SystemExit(f"benchmark call failed: {output}")

        return one

    return caller(native), caller(bridged)


def claude_agent(runtime: Runtime) -> Pair:
    from claude_agent_sdk import create_sdk_mcp_server
    from claude_agent_sdk import tool as sdk_tool
    from claude_agent_sdk._internal.sdk_mcp_bridge import SdkMcpBridge

    from runtime.adapters.claude_agent import claude_mcp_server

    @sdk_tool(
        "noop",
        "Does nothing.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
    )
    async def noop(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}

    def caller(config: Any) -> Callable[[], Awaitable[Any]]:
        bridge = SdkMcpBridge("bench", config["instance"])
        state = {"id": 0, "ready": False}

        async def one() -> None:
            if not state["ready"]:
                hello = {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                }
                await bridge.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
                await bridge.handle({"jsonrpc": "2.0", "method": "notifications/initialized"})
                state["ready"] = True
            state["id"] += 1
            answer = await bridge.handle(
                {
                    "jsonrpc": "2.0",
                    "id": state["id"],
                    "method": "tools/call",
                    "params": {"name": "noop", "arguments": ARGS},
                }
            )
            if answer is None or answer["result"]["content"][0]["text"] != "ok":
                raise SystemExit(f"benchmark call failed: {answer}")

        return one

    return caller(create_sdk_mcp_server("bench", tools=[noop])), caller(claude_mcp_server(runtime, name="bench"))


FRAMEWORKS = {
    "OpenAI Agents SDK (on_invoke_tool)": openai_agents,
    "LangChain (BaseTool.ainvoke)": langchain,
    "LangGraph (one-node graph)": langgraph,
    "Pydantic AI (toolset call_tool)": pydantic_ai,
    "Claude Agent SDK (in-process MCP tools/call)": claude_agent,
}


async def main() -> int:
    n = int(os.environ.get("TOOLRT_BENCH_N", "2000"))
    root = Path(tempfile.mkdtemp(prefix="toolrt-bench-bridges-"))
    (root / "config").mkdir()
    (root / "config" / "tools.yaml").write_text(CONFIG)
    (root / "config" / "bench_bridge_handlers.py").write_text(HANDLERS)
    runtime = Runtime(
        [root / "config"], workspace_root=root, settings=Settings(cel_engine="fast", schema_engine="fast")
    )
    print(
        f"Framework bridges: per-call time, native tool vs the same framework through toolrt ({n} calls each, "
        "interleaved)"
    )
    print(f"{'framework':48} {'native p50':>11} {'bridge p50':>11} {'added':>9} {'ratio':>6}   p99 native/bridge")
    try:
        for label, make in FRAMEWORKS.items():
            try:
                native, bridged = make(runtime)
                samples = await interleaved({"native": native, "bridge": bridged}, n)
            except Exception as err:  # noqa: BLE001 - a framework that is missing or changed is reported, not fatal
                print(f"{label:48} not measured: {type(err).__name__}: {err}")
                continue
            a, b = statistics.median(samples["native"]) * 1e6, statistics.median(samples["bridge"]) * 1e6
            p99a, p99b = percentile(samples["native"], 0.99) * 1e6, percentile(samples["bridge"], 0.99) * 1e6
            print(f"{label:48} {a:9.1f}us {b:9.1f}us {b - a:7.1f}us {b / a:5.2f}x   {p99a:.0f}/{p99b:.0f} us")
    finally:
        await runtime.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
