"""The Claude Agent SDK bridge: toolrt's MCP server in-process, reached through the
SDK's own in-memory bridge (as Claude Code reaches it), and the whole agent loop of the
Claude Code CLI the SDK bundles, run offline against a local stand-in for the Messages
API."""

from __future__ import annotations

import asyncio
import json
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from bridge_cases import OK_CASES, as_object_cases
from fake_messages_api import MessagesApi, serving, tool_use

from runtime import Runtime

_SPEC = find_spec("claude_agent_sdk")
pytestmark = pytest.mark.skipif(_SPEC is None, reason="needs the Claude Agent SDK")


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    """The SDK and the bridge, imported when the first test of this module runs: every test
    worker imports this module to collect it, and only the workers that run its tests
    need the SDK (about 0.6 s of CPU to import)."""
    global ClaudeAgentOptions, ResultMessage, query, SdkMcpBridge, allowed_tools, claude_mcp_server
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from claude_agent_sdk._internal.sdk_mcp_bridge import SdkMcpBridge

    from runtime.adapters.claude_agent import allowed_tools, claude_mcp_server


class InProcess:
    """toolrt's server as Claude Code talks to it: JSON-RPC through the SDK's bridge."""

    def __init__(self, runtime: Runtime) -> None:
        config = claude_mcp_server(runtime)
        self.bridge = SdkMcpBridge(config["name"], config["instance"])
        self.ids = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ids += 1
        answer = await self.bridge.handle({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        assert answer is not None
        return answer

    async def __aenter__(self) -> InProcess:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2"},
        }
        assert "result" in await self.request("initialize", hello)
        await self.bridge.handle({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.bridge.aclose()

    async def call(self, name: str, arguments: Any) -> dict[str, Any]:
        return (await self.request("tools/call", {"name": name, "arguments": arguments}))["result"]


def text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


# MCP definitions carry the declared schema as it is (no strict mode), so a null for an
# optional argument is the model's mistake there, and said so.
# A lone surrogate does not survive the MCP SDK's own message handling (see below).
MCP_CASES = [c for c in as_object_cases() if not c[0].startswith(("strict-null", "lone-surrogate"))]


async def test_a_lone_surrogate_never_reaches_a_handler_as_one(runtime: Runtime) -> None:
    async with InProcess(runtime) as server:
        result = await server.call("lookup_city", {"city": "\ud800"})
    text(result).encode("utf-8")  # valid Unicode: refused, or replaced on the way in


async def test_a_null_for_an_optional_argument_is_refused_over_mcp(runtime: Runtime) -> None:
    async with InProcess(runtime) as server:
        result = await server.call("lookup_city", {"city": "Oslo", "units": None})
    assert result["isError"] is True and "got null" in text(result)


@pytest.mark.parametrize(("tool", "args", "expected", "absent"), [pytest.param(*c[1:], id=c[0]) for c in MCP_CASES])
async def test_every_call_is_a_call_tool_result(
    runtime: Runtime, tool: str, args: Any, expected: str, absent: str | None, request: pytest.FixtureRequest
) -> None:
    async with InProcess(runtime) as server:
        result = await server.call(tool, args)
    assert expected in text(result)
    if absent:
        assert absent not in text(result)
    assert result["isError"] is (request.node.callspec.id not in OK_CASES)


async def test_the_tool_list_is_the_snapshots_and_allowed_tools_name_them_as_claude_does(runtime: Runtime) -> None:
    async with InProcess(runtime) as server:
        listed = (await server.request("tools/list"))["result"]["tools"]
    names = sorted(tool["name"] for tool in listed)
    assert names == sorted(tool.name for tool in runtime.snapshot.tools.values())
    assert sorted(allowed_tools(runtime)) == [f"mcp__toolrt__{name}" for name in names]
    assert allowed_tools(runtime, name="ops")[0].startswith("mcp__ops__")


async def test_an_ask_goes_to_the_runtimes_approver(
    approving_runtime: Runtime, runtime: Runtime, handlers: Any
) -> None:
    async with InProcess(approving_runtime) as server:
        assert text(await server.call("deploy", {"service": "web"})) == '{"deployed": "web"}'
    async with InProcess(runtime) as server:
        result = await server.call("deploy", {"service": "db"})
    assert result["isError"] and "Permission denied" in text(result)
    assert handlers.DEPLOYED == ["web"]


async def test_concurrent_calls_on_one_connection_run_at_the_same_time(runtime: Runtime) -> None:
    async with InProcess(runtime) as server:
        results = await asyncio.gather(*(server.call("rendezvous", {"group": "claude"}) for _ in range(2)))
    assert [text(r) for r in results] == ["met", "met"]


@pytest.mark.parametrize("arguments", [None, [], "text", 5], ids=["none", "list", "string", "number"])
async def test_arguments_that_are_not_an_object_are_answered(runtime: Runtime, arguments: Any) -> None:
    async with InProcess(runtime) as server:
        answer = await server.request("tools/call", {"name": "lookup_city", "arguments": arguments})
    # Either the MCP SDK refuses the request shape, or toolrt answers with an error result.
    if "result" in answer:
        assert answer["result"]["isError"] is True
    else:
        assert "error" in answer


def _cli() -> Path | None:
    # Found without importing the SDK: this runs as the module is collected.
    if _SPEC is None or _SPEC.origin is None:
        return None
    bundled = Path(_SPEC.origin).parent / "_bundled" / "claude"
    return bundled if bundled.exists() else None


@pytest.mark.skipif(_cli() is None, reason="the Claude Agent SDK wheel for this platform bundles no Claude Code CLI")
async def test_claude_codes_own_agent_loop_runs_every_call_through_toolrt(
    approving_runtime: Runtime, handlers: Any, tmp_path: Path
) -> None:
    api = MessagesApi(
        [
            [
                tool_use("t1", "mcp__toolrt__lookup_city", {"city": "Oslo"}),
                tool_use("t2", "mcp__toolrt__lookup_city", {"city": 5}),
                tool_use("t3", "mcp__toolrt__erase_disk", {}),
                tool_use("t4", "mcp__toolrt__leak", {}),
                tool_use("t5", "mcp__toolrt__deploy", {"service": "web"}),
                tool_use("t6", "mcp__toolrt__explode", {}),
            ]
        ]
    )
    home = tmp_path / "home"
    home.mkdir()
    with serving(api) as url:
        env = {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        options = ClaudeAgentOptions(
            mcp_servers={"toolrt": claude_mcp_server(approving_runtime)},
            allowed_tools=allowed_tools(approving_runtime),
            tools=[],  # only toolrt's tools: none of Claude Code's own
            setting_sources=[],
            env=env,
            cwd=str(home),
            max_turns=4,
        )
        messages = [message async for message in query(prompt="check the weather, then deploy", options=options)]
    final = messages[-1]
    assert isinstance(final, ResultMessage) and final.is_error is False
    assert "mcp__toolrt__lookup_city" in api.tools_offered()
    results = api.tool_results()
    # Claude Code passes structuredContent on as compact JSON.
    assert results["t1"].get("is_error") in (None, False) and json.loads(results["t1"]["content"])["temp"] == 21
    assert results["t2"]["is_error"] is True and "`city` must be a string" in str(results["t2"]["content"])
    assert results["t3"]["is_error"] is True and "never allowed" in str(results["t3"]["content"])
    assert "REDACTED" in str(results["t4"]["content"]) and "AKIAABCDEFGHIJKLMNOP" not in str(results["t4"]["content"])
    assert json.loads(results["t5"]["content"]) == {"deployed": "web"}
    assert results["t6"]["is_error"] is True and "RuntimeError" in str(results["t6"]["content"])
    assert handlers.DEPLOYED == ["web"]
