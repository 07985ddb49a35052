"""Claude Agent SDK bridge: toolrt's tools as an in-process MCP server.

::

    from claude_agent_sdk import ClaudeAgentOptions, query
    from runtime import Runtime
    from runtime.adapters.claude_agent import allowed_tools, claude_mcp_server

    runtime = Runtime(["examples/coding-agent"], approver=my_approver)
    options = ClaudeAgentOptions(
        mcp_servers={"toolrt": claude_mcp_server(runtime)},
        allowed_tools=allowed_tools(runtime),        # toolrt's policy decides, not a second prompt
    )
    async for message in query(prompt="fix the failing test", options=options):
        ...

The server is toolrt's own MCP server (:mod:`runtime.mcpserver`) on the MCP SDK's
low-level ``Server``, which the Claude Agent SDK serves to Claude Code over its
in-memory transport: ``tools/list`` answers from the snapshot serving, ``tools/call``
runs the whole pipeline, and every failure is an ``isError`` result Claude reads.
Claude names the tools ``mcp__<server>__<tool>``.

Approvals: the Claude Agent SDK does not forward requests from an in-process server to
Claude Code (no elicitation), so an ``ask`` goes to the runtime's own approver (give
the :class:`~runtime.Runtime` one; with none, asking means no). ``allowed_tools``
pre-approves the server's tools in Claude Code so that toolrt's policy is the one
that decides.

Requires the ``claude-agent`` extra (``claude-agent-sdk``, which brings the Claude Code
CLI, and ``mcp``).
"""

from __future__ import annotations

from claude_agent_sdk import McpSdkServerConfig

from runtime.adapters._common import exported_tools
from runtime.mcpserver.server import ToolServer
from runtime.runtime import Runtime

__all__ = ["allowed_tools", "claude_mcp_server"]


def claude_mcp_server(runtime: Runtime, *, name: str = "toolrt") -> McpSdkServerConfig:
    """An in-process MCP server config serving ``runtime``'s tools, for
    ``ClaudeAgentOptions(mcp_servers={name: ...})``."""
    # One connection per server config (the SDK runs one session per query), like stdio.
    server = ToolServer(runtime, stdio=True)
    return McpSdkServerConfig(type="sdk", name=name, instance=server.server)


def allowed_tools(runtime: Runtime, *, name: str = "toolrt") -> list[str]:
    """The names Claude Code gives the server's tools (``mcp__<name>__<tool>``), for
    ``ClaudeAgentOptions(allowed_tools=...)``."""
    return [f"mcp__{name}__{tool.name}" for tool in exported_tools(runtime.snapshot)]
