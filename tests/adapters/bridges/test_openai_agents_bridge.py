"""The OpenAI Agents SDK bridge, in the SDK's own agent loop (``Runner``) driven by its
scripted test model: every call goes through toolrt, every failure comes back as tool
output the model reads, approvals go through the SDK's interruption."""

from __future__ import annotations

import asyncio
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

import pytest
from bridge_cases import HOSTILE, OK_CASES

from runtime import Runtime

if TYPE_CHECKING:
    from agents.testing import ScriptedModel

pytestmark = pytest.mark.skipif(find_spec("agents") is None, reason="needs the OpenAI Agents SDK")


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    """The SDK and the bridge, imported when the first test of this module runs: every test
    worker imports this module to collect it, and only the workers that run its tests
    need the SDK (about 0.7 s of CPU to import)."""
    global Agent, NO_TRACING, RunConfig, Runner, ScriptedModel, assistant_message, function_call, function_tools
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    from runtime.adapters.openai_agents import function_tools

    NO_TRACING = RunConfig(tracing_disabled=True)


def outputs(model: ScriptedModel) -> dict[str, str]:
    """The tool outputs the model was shown, by call id (from the last model call's input)."""
    found: dict[str, str] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found[item["call_id"]] = item["output"]
    return found


async def run(runtime: Runtime, calls: list[Any], **options: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel([calls, [assistant_message("done")]])
    agent = Agent(name="tester", model=model, tools=function_tools(runtime, **options))
    result = await Runner.run(agent, "go", run_config=NO_TRACING)
    return result, model


async def run_approving(runtime: Runtime, calls: list[Any]) -> tuple[Any, ScriptedModel, list[str]]:
    """Run, approving every interruption as a person would; also the tools that interrupted."""
    result, model = await run(runtime, calls)
    interrupted: list[str] = []
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            interrupted.append(item.tool_name)
            state.approve(item)
        result = await Runner.run(
            Agent(name="tester", model=model, tools=function_tools(runtime)), state, run_config=NO_TRACING
        )
    return result, model, interrupted


# The SDK's runner hashes a call's arguments (to drop duplicate calls) before any tool
# runs, and that hash fails on a lone surrogate: the run raises inside the SDK, out of a
# bridge's reach. Pinned so that a fixed SDK shows up here.
SDK_LIMITS = {
    "lone-surrogate-is-refused": pytest.mark.xfail(
        raises=UnicodeEncodeError,
        strict=True,
        reason="the SDK's own call de-duplication cannot encode a lone surrogate",
    )
}


@pytest.mark.parametrize(
    ("tool", "arguments", "expected", "absent"),
    [pytest.param(*case[1:], id=case[0], marks=SDK_LIMITS.get(case[0], ())) for case in HOSTILE],
)
async def test_every_call_reaches_the_model_as_tool_output(
    runtime: Runtime, tool: str, arguments: str, expected: str, absent: str | None, request: pytest.FixtureRequest
) -> None:
    result, model, _ = await run_approving(runtime, [function_call(tool, arguments, call_id="c1")])
    assert result.final_output == "done"  # the run went on: no exception reached the runner
    text = outputs(model)["c1"]
    assert expected in text
    if absent:
        assert absent not in text
    is_error_case = request.node.callspec.id not in OK_CASES
    assert text.startswith("Error") == is_error_case


async def test_an_ask_interrupts_the_run_and_an_approval_runs_the_call(runtime: Runtime, handlers: Any) -> None:
    result, model = await run(
        runtime,
        [
            function_call("lookup_city", '{"city": "Oslo"}', call_id="c1"),
            function_call("deploy", '{"service": "web"}', call_id="c2"),
        ],
    )
    assert [item.tool_name for item in result.interruptions] == ["deploy"]
    assert handlers.DEPLOYED == []  # nothing ran before the person answered
    state = result.to_state()
    state.approve(result.interruptions[0])
    agent = Agent(name="tester", model=model, tools=function_tools(runtime))
    result = await Runner.run(agent, state, run_config=NO_TRACING)
    assert result.final_output == "done"
    assert handlers.DEPLOYED == ["web"]
    assert outputs(model)["c2"] == '{"deployed": "web"}'


async def test_a_rejection_in_the_sdk_never_runs_the_call(runtime: Runtime, handlers: Any) -> None:
    result, model = await run(runtime, [function_call("deploy", '{"service": "web"}', call_id="c2")])
    state = result.to_state()
    state.reject(result.interruptions[0], rejection_message="not today")
    agent = Agent(name="tester", model=model, tools=function_tools(runtime))
    result = await Runner.run(agent, state, run_config=NO_TRACING)
    assert result.final_output == "done"
    assert handlers.DEPLOYED == []
    assert "not today" in outputs(model)["c2"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("erase_disk", "{}"), ("deploy", "{}"), ("deploy", '{"service": 3}'), ("lookup_city", '{"city": "Oslo"}')],
    ids=["denied-call", "ask-tool-with-missing-argument", "ask-tool-with-wrong-type", "allowed-call"],
)
async def test_calls_toolrt_would_not_ask_about_never_interrupt(runtime: Runtime, tool: str, arguments: str) -> None:
    result, model = await run(runtime, [function_call(tool, arguments, call_id="c1")])
    assert result.interruptions == []
    assert result.final_output == "done"


async def test_approvals_by_toolrt_ask_the_runtimes_own_approver_without_interrupting(
    approving_runtime: Runtime, handlers: Any
) -> None:
    result, model = await run(
        approving_runtime, [function_call("deploy", '{"service": "db"}', call_id="c1")], approvals="toolrt"
    )
    assert result.interruptions == []
    assert handlers.DEPLOYED == ["db"]
    assert outputs(model)["c1"] == '{"deployed": "db"}'


async def test_approvals_by_toolrt_without_an_approver_deny(runtime: Runtime, handlers: Any) -> None:
    result, model = await run(runtime, [function_call("deploy", '{"service": "db"}', call_id="c1")], approvals="toolrt")
    assert handlers.DEPLOYED == []
    assert outputs(model)["c1"].startswith("Error: Permission denied for `deploy`")


async def test_concurrent_read_only_calls_of_one_response_run_at_the_same_time(runtime: Runtime) -> None:
    calls = [function_call("rendezvous", '{"group": "agents"}', call_id=f"c{i}") for i in range(2)]
    result, model = await run(runtime, calls)
    assert outputs(model) == {"c0": "met", "c1": "met"}


async def test_cancelling_the_run_cancels_the_call_and_the_runtime_keeps_serving(
    runtime: Runtime, handlers: Any
) -> None:
    model = ScriptedModel([[function_call("hang", "{}", call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="tester", model=model, tools=function_tools(runtime))
    task = asyncio.create_task(Runner.run(agent, "go", run_config=NO_TRACING))
    while not handlers.HANGING.is_set():
        assert not task.done(), task
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await runtime.call("lookup_city", {"city": "Oslo"})
    assert result.content == '{"city": "Oslo", "temp": 21, "units": "metric"}'


async def test_a_tool_removed_by_a_reload_answers_with_an_error(tmp_path: Any) -> None:
    import shutil

    from bridge_cases import CONFIG

    config = shutil.copytree(CONFIG, tmp_path / "config", ignore=shutil.ignore_patterns("__pycache__"))
    runtime = Runtime([config], workspace_root=tmp_path)
    try:
        tools = function_tools(runtime, tools=["noop", "lookup_city"])
        text = (config / "tools.yaml").read_text()
        (config / "tools.yaml").write_text(
            text.replace("metadata: {name: noop}", "metadata: {name: noop_renamed}").replace(" noop,", " noop_renamed,")
        )
        assert runtime.reload().snapshot is not None
        model = ScriptedModel([[function_call("noop", '{"path": "a"}', call_id="c1")], [assistant_message("done")]])
        result = await Runner.run(Agent(name="tester", model=model, tools=tools), "go", run_config=NO_TRACING)
        assert result.final_output == "done"
        assert outputs(model)["c1"].startswith("Error: Unknown tool `noop`")
    finally:
        await runtime.close()


@pytest.mark.parametrize(
    "arguments", ['{"service": "web"', "[]", "null", "not json"], ids=["truncated", "array", "null", "prose"]
)
async def test_unreadable_arguments_interrupt_by_the_sdks_rule_and_approving_them_runs_nothing(
    runtime: Runtime, handlers: Any, arguments: str
) -> None:
    # The SDK asks a person about any call whose arguments it cannot parse before our
    # policy can look at them; approving gives toolrt's parse error, never a deploy.
    result, model, interrupted = await run_approving(runtime, [function_call("deploy", arguments, call_id="c1")])
    assert result.final_output == "done"
    assert handlers.DEPLOYED == []
    assert outputs(model)["c1"].startswith("Error: arguments")
    assert interrupted in ([], ["deploy"])


def test_tools_named_that_the_config_lacks_are_refused_with_the_list(runtime: Runtime) -> None:
    with pytest.raises(ValueError, match="no tool named 'nope'.*lookup_city"):
        function_tools(runtime, tools=["nope"])


def test_definitions_carry_the_declared_schema_in_strict_form(runtime: Runtime) -> None:
    (tool,) = function_tools(runtime, tools=["lookup_city"])
    assert tool.name == "lookup_city"
    assert tool.description == "Weather facts about a city."
    assert tool.strict_json_schema is True
    assert set(tool.params_json_schema["required"]) == {"city", "units"}  # strict: optional becomes nullable
    (loose,) = function_tools(runtime, tools=["lookup_city"], strict=False)
    assert loose.strict_json_schema is False
    assert loose.params_json_schema["required"] == ["city"]


async def test_two_asks_in_one_response_are_answered_each_on_its_own(runtime: Runtime, handlers: Any) -> None:
    calls = [
        function_call("deploy", '{"service": "web"}', call_id="c1"),
        function_call("deploy", '{"service": "db"}', call_id="c2"),
    ]
    result, model = await run(runtime, calls)
    assert sorted(item.raw_item.call_id for item in result.interruptions) == ["c1", "c2"]
    state = result.to_state()
    for item in result.interruptions:
        if item.raw_item.call_id == "c1":
            state.approve(item)
        else:
            state.reject(item)
    result = await Runner.run(
        Agent(name="tester", model=model, tools=function_tools(runtime)), state, run_config=NO_TRACING
    )
    assert result.final_output == "done"
    assert handlers.DEPLOYED == ["web"]
    assert outputs(model)["c1"] == '{"deployed": "web"}'
    assert "web" not in outputs(model)["c2"]
