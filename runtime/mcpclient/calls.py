"""Stage 05 for ``mcp:<server>/<tool>`` handlers: one call through the pool, one outcome.

The call is bounded by the smaller of the tool's ``timeout.total_s`` and the server's
``call_timeout_s``, and by the tool's ``timeout.idle_s`` without progress from the
server. A request that may have reached the server and got no answer (timed out,
connection lost) is reported through the pipeline's own failure wording: for a tool
that is not read-only, the result is unknown.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from runtime.mcpclient.errors import Lost, Refused, TimedOut, Unavailable
from runtime.mcpclient.results import outcome_of
from runtime.records import HandlerOutcome, Status, ValidatedCall

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv
    from runtime.snapshot import CompiledTool


class Failure(Protocol):
    """The pipeline's wording of a failed call (``runtime.pipeline.execute._failure``)."""

    def __call__(
        self, tool: CompiledTool, what: str, status: Status, code: str, *, transient: bool = False
    ) -> HandlerOutcome: ...


async def call_mcp_tool(call: ValidatedCall, env: TurnEnv, failure: Failure) -> HandlerOutcome:
    """Run ``call`` on its MCP server and map the answer to a :class:`HandlerOutcome`."""
    tool = call.tool
    server, _, remote = tool.handler.target.partition("/")
    spec = env.snapshot.mcp_servers.get(server)
    pool: Any = getattr(env, "mcp", None)
    if spec is None or pool is None:
        return HandlerOutcome(
            error=f"`{tool.name}` cannot run: this runtime has no connection to MCP server `{server}`.",
            status=Status.error,
            code="not_available",
        )
    timeout = tool.spec.timeout
    total_s = min(timeout.total_s, spec.call_timeout_s)
    try:
        result = await pool.call_tool(server, spec, remote, call.args, total_s=total_s, idle_s=timeout.idle_s)
    except Unavailable as err:
        return HandlerOutcome(
            error=f"`{tool.name}` cannot run: MCP server `{server}` {err.message}.",
            status=Status.error,
            code="mcp_unavailable",
            metadata=MappingProxyType({"transient": True}),
        )
    except TimedOut as err:
        reason = "no progress" if err.limit == "idle" else "total time"
        return failure(
            tool,
            f"timed out after {err.seconds:g} s ({reason}); MCP server `{server}` is restarted on the next call",
            Status.timeout,
            "timeout",
        )
    except Lost as err:
        return failure(
            tool,
            f"got no answer: MCP server `{server}` {err.message}; it is restarted on the next call",
            Status.error,
            "mcp_connection_lost",
            transient=True,
        )
    except Refused as err:
        return HandlerOutcome(error=f"MCP server `{server}` {err.message}.", status=Status.error, code="mcp_error")
    return outcome_of(result)
