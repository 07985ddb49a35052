"""The LangChain / LangGraph bridge in LangGraph's own graph loop, driven by LangChain's
fake chat model: BaseTools in LangGraph's ToolNode and the ToolrtToolNode drop-in,
failures as ToolMessage(status="error"), approvals through LangGraph's interrupt()."""

from __future__ import annotations

import asyncio
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

import pytest
from bridge_cases import OK_CASES, as_object_cases

from runtime import Runtime

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage

pytestmark = pytest.mark.skipif(find_spec("langgraph") is None, reason="needs LangGraph")

CONFIG = {"configurable": {"thread_id": "t1"}}


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    """LangChain, LangGraph and the bridge, imported when the first test of this module
    runs: every test worker imports this module to collect it, and only the workers that
    run its tests need the frameworks (about 0.6 s of CPU to import)."""
    global GenericFakeChatModel, AIMessage, HumanMessage, ToolMessage, InMemorySaver
    global START, MessagesState, StateGraph, ToolNode, tools_condition, Command
    global ToolrtToolNode, langchain_tools, ScriptedChat
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command

    from runtime.adapters.langchain import ToolrtToolNode, langchain_tools

    class ScriptedChat(GenericFakeChatModel):
        """LangChain's fake chat model, able to be bound to tools like a real one."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
            return self


def tool_call(name: str, args: Any, call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def graph(
    runtime: Runtime, calls: list[dict[str, Any]], node: str = "toolrt", checkpointer: bool = True, **options: Any
) -> Any:
    """agent -> tools -> agent, the model scripted to make ``calls`` then say done (with
    a checkpointer, which interrupts need, unless ``checkpointer`` is false)."""
    model = ScriptedChat(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    tools = ToolrtToolNode(runtime, **options) if node == "toolrt" else ToolNode(langchain_tools(runtime, **options))
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver() if checkpointer else None)


def tool_messages(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


NODES = ["toolrt", "langgraph"]


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize(
    ("tool", "args", "expected", "absent"), [pytest.param(*c[1:], id=c[0]) for c in as_object_cases()]
)
async def test_every_call_reaches_the_model_as_a_tool_message(
    runtime: Runtime, node: str, tool: str, args: Any, expected: str, absent: str | None, request: pytest.FixtureRequest
) -> None:
    # No checkpointer: LangGraph's own serializer cannot store a model message nested 300 deep.
    state = await graph(runtime, [tool_call(tool, args, "c1")], node, checkpointer=False).ainvoke(
        {"messages": [HumanMessage("go")]}, CONFIG
    )
    assert state["messages"][-1].content == "done"
    message = tool_messages(state)["c1"]
    assert expected in message.content
    if absent:
        assert absent not in message.content
    case = (
        request.node.callspec.id.split("-", 1)[1]
        if request.node.callspec.id.startswith(node)
        else request.node.callspec.id
    )
    ok = any(case.endswith(name) or case.startswith(name) for name in OK_CASES)
    assert message.status == ("success" if ok else "error")


@pytest.mark.parametrize("node", NODES)
async def test_an_ask_interrupts_the_graph_and_resuming_with_yes_runs_the_call(
    runtime: Runtime, handlers: Any, node: str
) -> None:
    app = graph(runtime, [tool_call("tally", {"mark": "a"}, "c1"), tool_call("deploy", {"service": "web"}, "c2")], node)
    state = await app.ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    (pending,) = state["__interrupt__"]
    assert pending.value == {"type": "toolrt_approval", "tool": "deploy", "call_id": "c2", "args": {"service": "web"}}
    assert handlers.DEPLOYED == []
    state = await app.ainvoke(Command(resume=True), CONFIG)
    assert state["messages"][-1].content == "done"
    assert handlers.DEPLOYED == ["web"]
    assert tool_messages(state)["c2"].content == '{"deployed": "web"}'
    if node == "toolrt":  # asked before anything ran: the resumed node runs each call once
        assert handlers.TALLIED == ["a"]


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize(
    "answer",
    [False, {"approved": False, "reason": "no"}, "yes", 1, 0, [True], {"approved": "true"}, {"approve": True}],
    ids=["false", "mapping-no", "word-yes", "one", "zero", "list-true", "string-true", "misspelt-key"],
)
async def test_anything_but_a_clear_yes_rejects_the_call(
    runtime: Runtime, handlers: Any, node: str, answer: Any
) -> None:
    app = graph(runtime, [tool_call("deploy", {"service": "web"}, "c2")], node)
    await app.ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    state = await app.ainvoke(Command(resume=answer), CONFIG)
    assert handlers.DEPLOYED == []
    message = tool_messages(state)["c2"]
    assert message.status == "error"
    assert "rejected in the LangGraph run" in message.content


async def test_several_asks_in_one_message_are_answered_one_by_one(runtime: Runtime, handlers: Any) -> None:
    app = graph(runtime, [tool_call("deploy", {"service": "web"}, "c1"), tool_call("deploy", {"service": "db"}, "c2")])
    state = await app.ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    pending = {item.value["call_id"]: item.id for item in state["__interrupt__"]}
    if len(pending) == 1:  # LangGraph raises the interrupts of one node one at a time
        state = await app.ainvoke(Command(resume=True), CONFIG)
        pending = {item.value["call_id"]: item.id for item in state["__interrupt__"]}
        state = await app.ainvoke(Command(resume=False), CONFIG)
    else:
        state = await app.ainvoke(Command(resume={pending["c1"]: True, pending["c2"]: False}), CONFIG)
    assert handlers.DEPLOYED == ["web"]
    assert tool_messages(state)["c2"].status == "error"


async def test_calls_toolrt_would_not_ask_about_never_interrupt(runtime: Runtime) -> None:
    calls = [
        tool_call("erase_disk", {}, "c1"),
        tool_call("deploy", {}, "c2"),
        tool_call("lookup_city", {"city": "Oslo"}, "c3"),
    ]
    state = await graph(runtime, calls).ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    assert "__interrupt__" not in state
    messages = tool_messages(state)
    assert [messages[c].status for c in ("c1", "c2", "c3")] == ["error", "error", "success"]


async def test_the_node_runs_read_only_calls_of_one_message_at_the_same_time(runtime: Runtime) -> None:
    calls = [tool_call("rendezvous", {"group": "lg"}, f"c{i}") for i in range(2)]
    state = await graph(runtime, calls).ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    assert [m.content for m in tool_messages(state).values()] == ["met", "met"]


async def test_an_unknown_tool_and_a_nameless_call_get_error_messages_in_order(runtime: Runtime) -> None:
    calls = [tool_call("nope", {}, "c1"), tool_call("lookup_city", {"city": "Oslo"}, "c2")]
    state = await graph(runtime, calls).ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in messages] == ["c1", "c2"]
    assert messages[0].status == "error" and "Unknown tool `nope`" in messages[0].content


def test_the_node_works_in_a_synchronous_graph(runtime: Runtime, handlers: Any) -> None:
    app = graph(runtime, [tool_call("tally", {"mark": "sync"}, "c1"), tool_call("explode", {}, "c2")])
    state = app.invoke({"messages": [HumanMessage("go")]}, CONFIG)
    messages = tool_messages(state)
    assert messages["c1"].content == "tallied sync"
    assert messages["c2"].status == "error" and "RuntimeError" in messages["c2"].content


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
async def test_the_node_drops_into_the_prebuilt_react_agent(runtime: Runtime) -> None:
    from langgraph.prebuilt import create_react_agent

    model = ScriptedChat(
        messages=iter([AIMessage("", tool_calls=[tool_call("lookup_city", {"city": "Oslo"}, "c1")]), AIMessage("done")])
    )
    agent = create_react_agent(model, ToolrtToolNode(runtime))
    state = await agent.ainvoke({"messages": [HumanMessage("go")]})
    assert state["messages"][-1].content == "done"
    assert tool_messages(state)["c1"].content == '{"city": "Oslo", "temp": 21, "units": "metric"}'


async def test_cancelling_the_graph_cancels_the_call_and_the_runtime_keeps_serving(
    runtime: Runtime, handlers: Any
) -> None:
    task = asyncio.create_task(
        graph(runtime, [tool_call("hang", {}, "c1")]).ainvoke({"messages": [HumanMessage("go")]}, CONFIG)
    )
    while not handlers.HANGING.is_set():
        assert not task.done(), task
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await runtime.call("lookup_city", {"city": "Oslo"})).status.value == "ok"


async def test_a_tool_invoked_alone_answers_with_tool_messages_and_strings(runtime: Runtime) -> None:
    tools = {tool.name: tool for tool in langchain_tools(runtime)}
    message = await tools["erase_disk"].ainvoke(tool_call("erase_disk", {}, "x1"))
    assert isinstance(message, ToolMessage)
    assert (message.status, message.tool_call_id) == ("error", "x1")
    assert "never allowed" in message.content
    assert await tools["lookup_city"].ainvoke({"city": "Oslo"}) == '{"city": "Oslo", "temp": 21, "units": "metric"}'
    assert tools["lookup_city"].invoke({"city": "Oslo"}) == '{"city": "Oslo", "temp": 21, "units": "metric"}'


@pytest.mark.parametrize("name", ["self", "config", "run_manager", "callbacks", "tool_call_id"])
async def test_arguments_named_like_langchains_own_parameters_are_judged_as_arguments(
    runtime: Runtime, name: str
) -> None:
    (tool,) = langchain_tools(runtime, tools=["lookup_city"])
    message = await tool.ainvoke(tool_call("lookup_city", {"city": "Oslo", name: 1}, "x1"))
    assert message.status == "error"
    assert f"unknown argument `{name}`" in message.content


async def test_outside_a_graph_an_ask_goes_to_the_runtimes_approver(
    approving_runtime: Runtime, runtime: Runtime, handlers: Any
) -> None:
    (approved,) = langchain_tools(approving_runtime, tools=["deploy"])
    assert await approved.ainvoke({"service": "db"}) == '{"deployed": "db"}'
    (unapproved,) = langchain_tools(runtime, tools=["deploy"])
    message = await unapproved.ainvoke(tool_call("deploy", {"service": "db"}, "x2"))
    assert message.status == "error" and "Permission denied" in message.content
    assert handlers.DEPLOYED == ["db"]


def test_tools_carry_the_declared_schema(runtime: Runtime) -> None:
    (tool,) = langchain_tools(runtime, tools=["lookup_city"])
    assert tool.name == "lookup_city"
    assert tool.args_schema["required"] == ["city"]
    assert tool.tool_call_schema is not None


async def test_approvals_by_toolrt_in_the_node_ask_the_runtimes_approver_without_interrupting(
    approving_runtime: Runtime, handlers: Any
) -> None:
    state = await graph(approving_runtime, [tool_call("deploy", {"service": "db"}, "c1")], approvals="toolrt").ainvoke(
        {"messages": [HumanMessage("go")]}, CONFIG
    )
    assert "__interrupt__" not in state
    assert tool_messages(state)["c1"].content == '{"deployed": "db"}'
    assert handlers.DEPLOYED == ["db"]
