"""LangChain / LangGraph bridge: toolrt's tools as ``BaseTool`` objects, and a ``ToolNode``.

::

    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import tools_condition
    from runtime.adapters.langchain import ToolrtToolNode, langchain_tools

    runtime = Runtime(["examples/coding-agent"])
    tools = ToolrtToolNode(runtime)                     # drop-in for ToolNode(tools)
    model = chat_model.bind_tools(langchain_tools(runtime))

    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")

:func:`langchain_tools` gives one ``BaseTool`` per toolrt tool (its declared JSON
Schema as ``args_schema``); they work anywhere LangChain takes tools, including
``ToolNode`` and ``create_agent``. :class:`ToolrtToolNode` is a ``ToolNode`` that
runs all the tool calls of one model message as one toolrt turn: read-only calls
concurrently, anything else alone and in order, every call answered.

Failures reach the model as ``ToolMessage(status="error")``; no exception leaves a
tool (except cancellation and LangGraph's own interrupt). Approvals: a call toolrt
would ``ask`` about raises LangGraph's ``interrupt()`` (the graph needs a
checkpointer) with a payload ``{"type": "toolrt_approval", "tool", "call_id",
"args"}``; resume with ``Command(resume=True)`` / ``False`` or ``{"approved": bool,
"reason": str}`` (several at once: ``Command(resume={interrupt_id: answer})``).
The node asks about every call of a message before running any of them, so a resumed
node never runs a call twice; plain ``BaseTool`` objects in LangChain's own
``ToolNode`` run their calls side by side, so prefer :class:`ToolrtToolNode` when
some tools need approval. Outside a graph, toolrt's own approver is asked.

Requires the ``langchain`` extra (``langchain-core`` and ``langgraph``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langgraph.errors import GraphInterrupt
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from runtime.adapters.bridge import Bridge, framework_approver, input_schema, result_text
from runtime.records import Call, Session, ToolResult
from runtime.runtime import Runtime, _run_sync
from runtime.snapshot import CompiledTool

FRAMEWORK = "LangGraph"

__all__ = ["ToolrtTool", "ToolrtToolNode", "langchain_tools"]

Approvals = Literal["interrupt", "toolrt"]

# The model's call id, from the ToolCall being invoked (LangChain passes only the arguments on).
_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("toolrt_langchain_call_id", default=None)


def langchain_tools(
    runtime: Runtime,
    *,
    session: Session | None = None,
    tools: Iterable[str] | None = None,
    approvals: Approvals = "interrupt",
) -> list[ToolrtTool]:
    """The snapshot's tools (or those named in ``tools``) as LangChain tools."""
    bridge = Bridge(runtime, session=session, tools=tools)
    return [ToolrtTool.of(bridge, tool, approvals) for tool in bridge.tools]


class ToolrtTool(BaseTool):
    """One toolrt tool as a LangChain ``BaseTool``; every call runs toolrt's pipeline."""

    handle_tool_error: bool = True  # toolrt's error results become ToolMessage(status="error")
    bridge: Any = None
    approvals: str = "interrupt"

    @classmethod
    def of(cls, bridge: Bridge, tool: CompiledTool, approvals: Approvals = "interrupt") -> ToolrtTool:
        """The LangChain tool for ``tool`` on ``bridge``."""
        return cls(
            name=tool.name,
            description=tool.spec.description,
            args_schema=input_schema(tool),
            bridge=bridge,
            approvals=approvals,
        )

    # ``self`` is positional-only: a model may send an argument called "self".
    def _run(self, /, *args: Any, **kwargs: Any) -> str:
        return _run_sync(self._arun(*args, **kwargs))

    async def _arun(self, /, *args: Any, **kwargs: Any) -> str:
        bridge: Bridge = self.bridge
        # A JSON Schema args_schema lets LangChain pass only keyword arguments (the model's).
        call = bridge.call_of(self.name, kwargs, _CALL_ID.get())
        answer = ask_in_graph(bridge, call) if self.approvals == "interrupt" else None
        result = await bridge.run(call, _approver(bridge, answer))
        return _content(result)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangChain's name
        """As ``BaseTool.ainvoke``, with the model's call id carried into toolrt's call."""
        token = _CALL_ID.set(_tool_call_id(input))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _CALL_ID.reset(token)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """As ``BaseTool.invoke``, with the model's call id carried into toolrt's call."""
        token = _CALL_ID.set(_tool_call_id(input))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _CALL_ID.reset(token)


class ToolrtToolNode(ToolNode):
    """A ``ToolNode`` whose calls run as one toolrt turn (see the module docstring).

    Takes the same inputs as ``ToolNode`` (graph state with messages, a message list,
    or tool calls) and gives the same outputs (``{"messages": [ToolMessage, ...]}`` ...).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        session: Session | None = None,
        tools: Iterable[str] | None = None,
        approvals: Approvals = "interrupt",
        name: str = "tools",
        tags: list[str] | None = None,
        messages_key: str = "messages",
    ) -> None:
        self.bridge = Bridge(runtime, session=session, tools=tools)
        self.approvals = approvals
        super().__init__(
            [ToolrtTool.of(self.bridge, tool, approvals) for tool in self.bridge.tools],
            name=name,
            tags=tags,
            messages_key=messages_key,
            handle_tool_errors=True,
        )

    # The parameter names and annotations are what LangGraph reads to pass config and its
    # own Runtime (not toolrt's: the name is the annotation LangGraph matches as text).
    def _func(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:  # type: ignore[override]  # noqa: A002
        tool_calls, input_type = self._parse_input(input)
        calls, answers = self._prepare(tool_calls)  # interrupts happen here, in the graph's context
        results = _run_sync(self.bridge.run_many(calls, _approver(self.bridge, None, answers)))
        return self._combine_tool_outputs(_messages(calls, results), input_type)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:  # type: ignore[override]  # noqa: A002
        tool_calls, input_type = self._parse_input(input)
        calls, answers = self._prepare(tool_calls)
        results = await self.bridge.run_many(calls, _approver(self.bridge, None, answers))
        return self._combine_tool_outputs(_messages(calls, results), input_type)

    def _prepare(self, tool_calls: list[Any]) -> tuple[list[Call], dict[str, bool | None]]:
        """The toolrt calls, and a person's answer for each one toolrt would ask about
        (all asked before anything runs: a resumed node runs again from the top)."""
        calls = []
        for index, tool_call in enumerate(tool_calls):
            data = tool_call if isinstance(tool_call, Mapping) else {}
            name = data.get("name")
            name = name if isinstance(name, str) else ""
            call = self.bridge.call_of(
                name, data.get("args") if isinstance(data.get("args"), Mapping) else None, data.get("id")
            )
            calls.append(Call(call.id, call.name, call.args, index, call.raw_arguments, call.parse_error))
        answers: dict[str, bool | None] = {}
        if self.approvals == "interrupt":
            for call in calls:
                answers[call.id] = ask_in_graph(self.bridge, call)
        return calls, answers


def ask_in_graph(bridge: Bridge, call: Call) -> bool | None:
    """A person's answer through LangGraph's ``interrupt()`` when toolrt would ask about
    ``call``; None when it would not, or when not inside a graph (no interrupt possible)."""
    if not bridge.needs_approval(call):
        return None
    payload = {"type": "toolrt_approval", "tool": call.name, "call_id": call.id, "args": dict(call.args or {})}
    try:
        answer = interrupt(payload)
    except GraphInterrupt:
        raise  # the graph pauses here; the node runs again when resumed
    except (RuntimeError, KeyError):
        return None  # not inside a graph (no runnable context, or no graph's scratchpad): toolrt's own approver decides
    return _approved(answer)


def _approved(answer: Any) -> bool:
    """A resume value as a yes or no; anything unclear is a no."""
    if isinstance(answer, Mapping):
        answer = answer.get("approved")
    return answer is True


def _approver(bridge: Bridge, answer: bool | None, answers: Mapping[str, bool | None] | None = None) -> Any:
    if answers is None:
        return framework_approver(FRAMEWORK, lambda: answer, bridge.runtime.approver)

    def state_of(call_id: str) -> Any:
        return lambda: answers.get(call_id)

    async def approve(call: Any, session: Session, decision: Any) -> Any:
        return await framework_approver(FRAMEWORK, state_of(call.call.id), bridge.runtime.approver)(
            call, session, decision
        )

    return approve


def _content(result: ToolResult) -> str:
    if result.is_error:
        raise ToolException(result_text(result))  # BaseTool turns it into ToolMessage(status="error")
    return result_text(result)


def _messages(calls: list[Call], results: list[ToolResult]) -> list[Any]:
    return [
        ToolMessage(
            result_text(result),
            tool_call_id=call.id,
            name=call.name or "unknown",
            status="error" if result.is_error else "success",
        )
        for call, result in zip(calls, results, strict=True)
    ]


def _tool_call_id(input: Any) -> str | None:  # noqa: A002
    if isinstance(input, Mapping) and input.get("type") == "tool_call" and isinstance(input.get("id"), str):
        return input["id"]
    return None
