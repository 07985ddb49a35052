"""OpenAI Agents SDK bridge: toolrt's tools as the SDK's ``FunctionTool`` objects.

::

    from agents import Agent, Runner
    from runtime import Runtime
    from runtime.adapters.openai_agents import function_tools

    runtime = Runtime(["examples/coding-agent"])
    agent = Agent(name="coder", tools=function_tools(runtime))
    result = await Runner.run(agent, "fix the failing test")
    while result.interruptions:                       # toolrt said `ask`
        state = result.to_state()
        for item in result.interruptions:
            state.approve(item)                       # or state.reject(item)
        result = await Runner.run(agent, state)

Every call the SDK's runner makes goes through toolrt's pipeline. An ``ask`` decision
becomes the SDK's own human-in-the-loop interruption (``needs_approval``): the run
stops with ``result.interruptions`` before the call runs, and the person's
``approve``/``reject`` on the ``RunState`` is the answer toolrt's permit stage gets
(a rejected call is answered by the SDK and never reaches toolrt). Pass
``approvals="toolrt"`` to have toolrt's own approver asked instead, without
interrupting the run. Failures reach the model as tool output starting with
``Error:`` (the SDK has no error flag); the runner never sees an exception.

Requires the ``openai-agents`` extra.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from agents import FunctionTool, RunContextWrapper
from agents.tool_context import ToolContext

from runtime.adapters.bridge import Bridge, framework_approver, input_schema, result_text
from runtime.adapters.openai import strict_form
from runtime.records import Session
from runtime.runtime import Runtime
from runtime.snapshot import CompiledTool

FRAMEWORK = "OpenAI Agents SDK"

__all__ = ["function_tools"]


def function_tools(
    runtime: Runtime,
    *,
    session: Session | None = None,
    tools: Iterable[str] | None = None,
    strict: bool = True,
    approvals: Literal["interrupt", "toolrt"] = "interrupt",
) -> list[FunctionTool]:
    """The snapshot's tools (or those named in ``tools``) as ``FunctionTool`` objects.

    ``strict`` sends strict-mode schemas where they express the declared schema
    faithfully (the nulls strict mode makes a model send for omitted optional arguments
    are dropped again before validation). ``approvals="interrupt"`` (default) raises the
    SDK's approval interruption for every call toolrt would ask about."""
    bridge = Bridge(runtime, session=session, tools=tools)
    return [_function_tool(bridge, tool, strict, approvals) for tool in bridge.tools]


def _function_tool(bridge: Bridge, tool: CompiledTool, strict: bool, approvals: str) -> FunctionTool:
    name = tool.name
    form = strict_form(bridge.runtime.snapshot, tool) if strict else None
    schema = input_schema(tool) if form is None or not form.strict else dict(form.schema)
    interrupting = approvals == "interrupt"

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        call_id = getattr(context, "tool_call_id", None)
        call = bridge.call_of(name, arguments, call_id)
        approver = bridge.runtime.approver
        if interrupting:
            approver = framework_approver(FRAMEWORK, lambda: _approved(context, name, call.id), bridge.runtime.approver)
        result = await bridge.run(call, approver)
        return result_text(result)

    async def needs_approval(context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        return bridge.needs_approval(bridge.call_of(name, params, call_id))

    return FunctionTool(
        name=name,
        description=tool.spec.description,
        params_json_schema=schema,
        on_invoke_tool=invoke,
        strict_json_schema=bool(form is not None and form.strict),
        needs_approval=needs_approval if interrupting else False,
    )


def _approved(context: Any, name: str, call_id: str) -> bool | None:
    """The SDK's record of a person's answer for this call: True, False, or None (not asked)."""
    try:
        answer = context.is_tool_approved(name, call_id)
    except Exception:  # noqa: BLE001 - an odd context means no recorded answer; toolrt then decides
        return None
    return answer if isinstance(answer, bool) else None
