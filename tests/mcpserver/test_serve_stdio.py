"""``toolrt serve`` on stdio, driven by the official MCP client: every call goes through the
pipeline and comes back as one ``CallToolResult``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcpserver_support import (
    EXTRA_TOOL,
    TIMEOUT_S,
    AnswerSwitch,
    Held,
    Notifications,
    answering,
    copy_config,
    stdio_session,
    text_of,
    wait_for_text,
)

# Tests that leave nothing behind on the server (lists, calls, refused calls, questions
# answered without a grant for the session, a call that timed out) share one server child;
# its client answers questions as each test sets (``answers``). Tests that grant for the
# session, edit the config, or need other settings or capabilities start their own.
shared_loop = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def answers() -> AnswerSwitch:
    return AnswerSwitch()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory, answers: AnswerSwitch) -> AsyncIterator[Any]:
    held = Held(stdio_session(tmp_path_factory.mktemp("shared-serve"), elicitation_callback=answers))
    yield await held.open()
    await held.close()


@asynccontextmanager
async def answered_by(shared: Any, answers: AnswerSwitch, callback: Any) -> AsyncIterator[Any]:
    """The shared client, answering questions with ``callback`` until the block ends."""
    answers.current = callback
    try:
        yield shared
    finally:
        answers.current = None


@shared_loop
async def test_tools_list_has_every_tool_with_annotations_from_its_attributes(shared: Any) -> None:
    client = shared
    listed = await client.list_tools()
    assert client.initialize_result is not None
    capabilities = client.initialize_result.capabilities
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["count_up", "deploy", "erase_disk", "lookup_city", "sleepy"]
    lookup = tools["lookup_city"]
    assert lookup.title == "Look up a city"
    assert lookup.input_schema["required"] == ["city"]
    assert lookup.annotations is not None
    assert (
        lookup.annotations.read_only_hint,
        lookup.annotations.destructive_hint,
        lookup.annotations.idempotent_hint,
        lookup.annotations.open_world_hint,
    ) == (True, False, True, False)
    deploy = tools["deploy"].annotations
    assert deploy is not None and (deploy.read_only_hint, deploy.destructive_hint) == (False, True)
    assert capabilities.tools is not None and capabilities.tools.list_changed is True


@shared_loop
async def test_a_tool_returning_an_object_answers_with_structured_content(shared: Any) -> None:
    client = shared
    result = await client.call_tool("lookup_city", {"city": "Oslo"})
    assert result.is_error is False
    assert result.structured_content == {"city": "Oslo", "temp_c": 21, "sunny": True}
    assert '"temp_c": 21' in text_of(result)


@shared_loop
async def test_arguments_failing_the_schema_are_an_error_result_saying_what_is_wrong(shared: Any) -> None:
    client = shared
    missing = await client.call_tool("lookup_city", {})
    wrong_type = await client.call_tool("lookup_city", {"city": 5})
    assert missing.is_error is True and "missing required argument `city`" in text_of(missing)
    assert wrong_type.is_error is True and "`city` must be a string" in text_of(wrong_type)
    assert missing.structured_content is None


@shared_loop
async def test_an_unknown_tool_is_an_error_result_naming_the_available_tools(shared: Any) -> None:
    client = shared
    result = await client.call_tool("launch_rocket", {})
    assert result.is_error is True
    assert "Unknown tool `launch_rocket`" in text_of(result) and "lookup_city" in text_of(result)


@shared_loop
async def test_a_call_denied_by_policy_is_an_error_result_with_the_reason_and_never_runs(shared: Any) -> None:
    client = shared
    result = await client.call_tool("erase_disk", {})
    assert result.is_error is True
    assert (
        "Permission denied for `erase_disk` (rule `mcp-tests/no-erasing`): erasing disks is never allowed"
        in text_of(result)
    )


@shared_loop
async def test_an_ask_decision_runs_the_call_when_the_user_accepts_the_elicitation(
    shared: Any, answers: AnswerSwitch
) -> None:
    accept = answering("accept", {})
    async with answered_by(shared, answers, accept) as client:
        result = await client.call_tool("deploy", {"service": "billing"})
    assert result.is_error is False and result.structured_content == {"deployed": "billing"}
    (question,) = accept.asked
    assert "`deploy`" in question and "deploys need a person" in question and "billing" in question


async def test_an_ask_decision_accepted_for_the_session_is_not_asked_again(tmp_path: Path) -> None:
    accept = answering("accept", {"allow_for_session": True})
    async with stdio_session(tmp_path, elicitation_callback=accept) as client:
        first = await client.call_tool("deploy", {"service": "billing"})
        second = await client.call_tool("deploy", {"service": "search"})
    assert (first.is_error, second.is_error) == (False, False)
    assert len(accept.asked) == 1


@shared_loop
async def test_an_ask_decision_is_denied_when_the_user_declines_or_dismisses(
    shared: Any, answers: AnswerSwitch
) -> None:
    async with answered_by(shared, answers, answering("decline")) as client:
        declined = await client.call_tool("deploy", {"service": "billing"})
    async with answered_by(shared, answers, answering("cancel")) as client:
        dismissed = await client.call_tool("deploy", {"service": "billing"})
    assert declined.is_error is True and "a person declined this call: declined in the MCP client" in text_of(declined)
    assert dismissed.is_error is True and "dismissed in the MCP client" in text_of(dismissed)


async def test_an_ask_decision_is_denied_with_the_reason_when_the_client_cannot_elicit(tmp_path: Path) -> None:
    async with stdio_session(tmp_path) as client:  # no elicitation callback: the capability is not declared
        result = await client.call_tool("deploy", {"service": "billing"})
    text = text_of(result)
    assert result.is_error is True
    assert "`deploy` needs approval and this MCP client does not support elicitation" in text
    assert "a person declined" not in text


async def test_an_ask_decision_without_an_answer_within_the_approval_timeout_is_denied(tmp_path: Path) -> None:
    async def never_answers(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        await asyncio.sleep(TIMEOUT_S)
        return types.ElicitResult(action="accept", content={})

    async with stdio_session(
        tmp_path, env={"TOOLRT_APPROVAL_TIMEOUT_S": "1"}, elicitation_callback=never_answers
    ) as client:
        result = await client.call_tool("deploy", {"service": "billing"})
    assert result.is_error is True and "approval did not arrive within 1 s" in text_of(result)


@shared_loop
async def test_progress_reported_by_a_handler_reaches_the_client_before_the_result(shared: Any) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    client = shared
    result = await client.call_tool("count_up", {"n": 3}, progress_callback=on_progress)
    assert result.is_error is False and text_of(result) == "counted to 3"
    assert seen == [(1, "step 1 of 3"), (2, "step 2 of 3"), (3, "step 3 of 3")]


@shared_loop
async def test_a_call_past_its_timeout_is_an_error_result(shared: Any) -> None:
    client = shared
    result = await client.call_tool("sleepy", {})
    after = await client.call_tool("lookup_city", {"city": "Rome"})  # the server goes on serving
    assert result.is_error is True and "timed out after 0.5 s" in text_of(result)
    assert after.is_error is False


async def test_editing_the_config_adds_the_tool_and_tells_the_client_the_list_changed(tmp_path: Path) -> None:
    config = copy_config(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    notifications = Notifications()
    async with stdio_session(workspace, config=config, extra=("--watch",), message_handler=notifications) as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        (config / "extra.yaml").write_text(EXTRA_TOOL, encoding="utf-8")
        await asyncio.wait_for(notifications.tools_changed.wait(), TIMEOUT_S)
        after = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("added_later", {"query": "city"})
    assert "added_later" not in before and after == before | {"added_later"}
    assert result.is_error is False
    assert any(isinstance(message, types.ToolListChangedNotification) for message in notifications.received)


async def test_a_broken_edit_keeps_the_tools_serving_and_sends_no_notification(tmp_path: Path) -> None:
    config = copy_config(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    notifications = Notifications()
    async with stdio_session(workspace, config=config, extra=("--watch",), message_handler=notifications) as client:
        (config / "broken.yaml").write_text(
            "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: half}\nspec: {handler: 12}\n", encoding="utf-8"
        )
        # Wait for the server to have tried the reload (it says so on stderr), however
        # long that takes: only then does the absence of a notification mean anything.
        await wait_for_text(workspace / "serve.stderr", "config reload failed")
        result = await client.call_tool("lookup_city", {"city": "Oslo"})
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert result.is_error is False
    assert "half" not in names and "lookup_city" in names
    assert not notifications.tools_changed.is_set()
