"""Pydantic AI bridge: toolrt's tools as a Pydantic AI toolset.

::

    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
    from runtime import Runtime
    from runtime.adapters.pydantic_ai import ToolrtToolset

    runtime = Runtime(["examples/coding-agent"])
    agent = Agent("openai:gpt-5", toolsets=[ToolrtToolset(runtime)], output_type=[str, DeferredToolRequests])
    result = await agent.run("fix the failing test")
    if isinstance(result.output, DeferredToolRequests):      # toolrt said `ask`
        answers = DeferredToolResults(approvals={call.tool_call_id: True for call in result.output.approvals})
        result = await agent.run(message_history=result.all_messages(), deferred_tool_results=answers)

Every call the agent makes goes through toolrt's pipeline. An ``ask`` decision becomes
Pydantic AI's own human-in-the-loop deferral (``ApprovalRequired``): the run ends with
``DeferredToolRequests`` and the person's answers come back as ``DeferredToolResults``
(a denied call is answered by Pydantic AI and never reaches toolrt). Pass
``approvals="toolrt"`` to have toolrt's own approver asked instead.

Every failure reaches the model as a failed tool result (``ToolFailed``): it does not
use up the tool's retry budget and never ends the run. Even arguments that are not
JSON reach toolrt, which answers with what is wrong. Tools that are not read-only are
marked ``sequential`` so that Pydantic AI runs them alone, as toolrt would.

Requires the ``pydantic-ai`` extra (``pydantic-ai-slim``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from runtime.adapters.arguments import decode_arguments
from runtime.adapters.bridge import Bridge, framework_approver, input_schema, result_text
from runtime.records import Session
from runtime.runtime import Runtime

FRAMEWORK = "Pydantic AI"

__all__ = ["ToolrtToolset"]


class ToolrtToolset(AbstractToolset[Any]):
    """The snapshot's tools (or those named in ``tools``) as one toolset."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        session: Session | None = None,
        tools: Iterable[str] | None = None,
        approvals: Literal["defer", "toolrt"] = "defer",
        id: str | None = None,  # noqa: A002 - Pydantic AI's name for it
    ) -> None:
        self.bridge = Bridge(runtime, session=session, tools=tools)
        self.approvals = approvals
        self._id = id
        self._definitions = {
            tool.name: ToolDefinition(
                name=tool.name,
                parameters_json_schema=input_schema(tool),
                description=tool.spec.description,
                sequential=not tool.spec.read_only,
            )
            for tool in self.bridge.tools
        }

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # toolrt validates the arguments itself; Pydantic AI's validator only keeps the raw text.
        return {
            name: ToolsetTool(toolset=self, tool_def=definition, max_retries=1, args_validator=_RAW)
            for name, definition in self._definitions.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        bridge = self.bridge
        raw = tool_args.raw if isinstance(tool_args, RawArguments) else tool_args
        call = bridge.call_of(name, raw, ctx.tool_call_id)
        approved = bool(ctx.tool_call_approved)
        if self.approvals == "defer" and not approved and bridge.needs_approval(call):
            raise ApprovalRequired(
                metadata={"tool": call.name, "reason": "toolrt's policy asks a person about this call"}
            )
        approver = bridge.runtime.approver
        if self.approvals == "defer":
            approver = framework_approver(FRAMEWORK, lambda: True if approved else None, bridge.runtime.approver)
        result = await bridge.run(call, approver)
        if result.is_error:
            raise ToolFailed(result_text(result))
        return result_text(result)


class RawArguments(dict[str, Any]):
    """The model's arguments as decoded for Pydantic AI's events, with the text toolrt reads."""

    raw: Any = None


class _RawValidator:
    """Stands in for Pydantic AI's argument validator: never refuses (toolrt judges the
    arguments and says what is wrong, without using up a retry), only decodes what it can."""

    def validate_json(self, input: str | bytes | bytearray, *, allow_partial: Any = False, **kwargs: Any) -> Any:  # noqa: A002
        text = input.decode("utf-8", "replace") if isinstance(input, bytes | bytearray) else input
        args, _problem = decode_arguments(text)
        found = RawArguments(args or {})
        found.raw = text
        return found

    def validate_python(self, input: Any, *, allow_partial: Any = False, **kwargs: Any) -> Any:  # noqa: A002
        found = RawArguments(input if isinstance(input, dict) else {})
        found.raw = input  # not an object: toolrt says so
        return found


_RAW = _RawValidator()
