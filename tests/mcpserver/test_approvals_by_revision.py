"""Approvals over MCP on every protocol revision a current client negotiates: the
handshake revisions ask with ``elicitation/create`` while the call waits; the stateless
revision (2026-07-28) answers with an input request and runs the call when the client
calls again with the answer. Tested against a real ``toolrt serve`` on stdio with the
official MCP client (both modes) and fastmcp's client."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcpserver_support import CONFIG, REPO, AnswerSwitch, Held, serve_argv, text_of

MODES = ["legacy", "auto"]  # auto negotiates 2026-07-28 with toolrt serve


def params(workspace: Path) -> StdioServerParameters:
    argv = serve_argv(CONFIG, workspace)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ), cwd=str(REPO))


def answering(action: str, content: dict[str, Any] | None = None) -> Any:
    asked: list[str] = []

    async def callback(context: Any, question: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(question.message)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


@asynccontextmanager
async def official(workspace: Path, mode: str, callback: Any = None) -> AsyncIterator[Client]:
    async with Client(params(workspace), mode=mode, elicitation_callback=callback) as client:
        yield client


@pytest.mark.parametrize("mode", MODES)
async def test_the_client_negotiates_the_revision_the_mode_says(tmp_path: Path, mode: str) -> None:
    async with official(tmp_path, mode, answering("accept")) as client:
        assert (client.session.protocol_version == "2026-07-28") is (mode == "auto")


@pytest.mark.parametrize("mode", MODES)
async def test_an_accepted_question_runs_the_call_once(tmp_path: Path, mode: str) -> None:
    callback = answering("accept", {"allow_for_session": False})
    async with official(tmp_path, mode, callback) as client:
        result = await client.call_tool("deploy", {"service": "web"})
    assert result.is_error is False and text_of(result) == '{"deployed": "web"}'
    assert len(callback.asked) == 1 and "Allow `deploy` to run?" in callback.asked[0]


# Answers that deny leave nothing behind (no grant, no pending call): the tests of such
# answers share one server child per mode, each test setting the answer it gives.
shared_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def denying(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, tuple[Client, AnswerSwitch]]]:
    clients: dict[str, tuple[Client, AnswerSwitch]] = {}
    held: list[Held] = []
    for mode in MODES:
        switch = AnswerSwitch()
        holder = Held(official(tmp_path_factory.mktemp(f"denying-{mode}"), mode, switch))
        held.append(holder)
        clients[mode] = (await holder.open(), switch)
    yield clients
    for holder in held:
        await holder.close()


async def ask_shared(denying: dict[str, tuple[Client, AnswerSwitch]], mode: str, callback: Any) -> types.CallToolResult:
    client, switch = denying[mode]
    switch.current = callback
    try:
        return await client.call_tool("deploy", {"service": "web"})
    finally:
        switch.current = None


@shared_loop
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("action", "said"), [("decline", "declined in the MCP client"), ("cancel", "dismissed in the MCP client")]
)
async def test_a_declined_or_dismissed_question_denies_the_call(
    denying: dict[str, tuple[Client, AnswerSwitch]], mode: str, action: str, said: str
) -> None:
    callback = answering(action)
    result = await ask_shared(denying, mode, callback)
    assert result.is_error is True and said in text_of(result)
    assert len(callback.asked) == 1


@shared_loop
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "content",
    [
        {"allow_for_session": "yes"},
        {"allow_for_session": 1},
        {"allow_for_session": "true"},
        {"allow_for_session": None},
        {"approve": True},
        {"allow_for_session": False, "extra": 1},
    ],
    ids=["word-yes", "one", "string-true", "null", "other-field", "extra-field"],
)
async def test_an_answer_that_does_not_match_the_requested_type_denies(
    denying: dict[str, tuple[Client, AnswerSwitch]], mode: str, content: dict[str, Any]
) -> None:
    callback = answering("accept", content)
    result = await ask_shared(denying, mode, callback)
    assert len(callback.asked) == 1  # asked, not taken from an earlier answer on this server
    assert result.is_error is True
    assert "did not match the question" in text_of(result) or "not an elicitation result" in text_of(result)


@pytest.mark.parametrize("mode", MODES)
async def test_allow_for_session_is_remembered_on_both_revisions(tmp_path: Path, mode: str) -> None:
    callback = answering("accept", {"allow_for_session": True})
    async with official(tmp_path, mode, callback) as client:
        first = await client.call_tool("deploy", {"service": "web"})
        second = await client.call_tool("deploy", {"service": "db"})
    assert (first.is_error, second.is_error) == (False, False)
    if mode == "legacy":  # one connection, one session: the grant covers the second call
        assert len(callback.asked) == 1
    else:  # stateless: each call may be a session of its own; never fewer questions than legacy, never a run
        assert 1 <= len(callback.asked) <= 2


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_is_not_asked_and_the_call_is_denied(tmp_path: Path, mode: str) -> None:
    async with official(tmp_path, mode) as client:
        result = await client.call_tool("deploy", {"service": "web"})
    assert result.is_error is True and "does not support elicitation" in text_of(result)


async def test_on_the_stateless_revision_nothing_runs_before_the_answer(tmp_path: Path) -> None:
    async with official(tmp_path, "auto", answering("accept")) as client:
        first = await client.session.call_tool("deploy", {"service": "web"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert list(first.input_requests or {}) == ["toolrt_approval"]
        assert first.request_state  # sealed by the MCP SDK, opaque to the client
        assert "toolrt-approval" not in first.request_state
        answer = {"toolrt_approval": types.ElicitResult(action="accept", content={})}
        second = await client.session.call_tool(
            "deploy", {"service": "web"}, input_responses=answer, request_state=first.request_state
        )
    assert isinstance(second, types.CallToolResult) and second.is_error is False


async def test_an_answer_without_the_servers_state_is_not_taken(tmp_path: Path) -> None:
    answer = {"toolrt_approval": types.ElicitResult(action="accept", content={})}
    async with official(tmp_path, "auto", answering("accept")) as client:
        unsolicited = await client.session.call_tool(
            "deploy", {"service": "web"}, input_responses=answer, allow_input_required=True
        )
    assert isinstance(unsolicited, types.InputRequiredResult)  # asked, not run


@pytest.mark.parametrize("state", ["toolrt-approval-asked/v1", "forged", ""], ids=["plain-marker", "garbage", "empty"])
async def test_a_forged_request_state_is_refused(tmp_path: Path, state: str) -> None:
    answer = {"toolrt_approval": types.ElicitResult(action="accept", content={})}
    async with official(tmp_path, "auto", answering("accept")) as client:
        with pytest.raises(MCPError):
            await client.session.call_tool(
                "deploy", {"service": "web"}, input_responses=answer, request_state=state, allow_input_required=True
            )


async def test_an_answer_given_for_other_arguments_is_refused(tmp_path: Path) -> None:
    async with official(tmp_path, "auto", answering("accept")) as client:
        first = await client.session.call_tool("deploy", {"service": "web"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        answer = {"toolrt_approval": types.ElicitResult(action="accept", content={})}
        with pytest.raises(MCPError):
            await client.session.call_tool(
                "deploy",
                {"service": "prod-db"},
                input_responses=answer,
                request_state=first.request_state,
                allow_input_required=True,
            )


async def test_a_denied_tool_is_denied_without_a_question_on_the_stateless_revision(tmp_path: Path) -> None:
    callback = answering("accept")
    async with official(tmp_path, "auto", callback) as client:
        result = await client.call_tool("erase_disk", {})
    assert result.is_error is True and "never allowed" in text_of(result)
    assert callback.asked == []


@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_fastmcps_client_gets_the_question_and_its_answer_counts(tmp_path: Path, action: str) -> None:
    fastmcp = pytest.importorskip("fastmcp")
    from fastmcp.client.transports import StdioTransport

    asked: list[str] = []

    async def handler(message: str, response_type: Any, question: Any, context: Any) -> types.ElicitResult:
        asked.append(message)
        return types.ElicitResult(action=action, content={"allow_for_session": False} if action == "accept" else None)

    argv = serve_argv(CONFIG, tmp_path)
    client = fastmcp.Client(
        StdioTransport(command=argv[0], args=argv[1:], env=dict(os.environ), cwd=str(REPO)), elicitation_handler=handler
    )
    async with client:
        result = await client.call_tool("deploy", {"service": "web"}, raise_on_error=False)
    assert len(asked) == 1 and "Allow `deploy` to run?" in asked[0]
    if action == "accept":
        assert result.is_error is False and result.content[0].text == '{"deployed": "web"}'
    else:
        assert result.is_error is True and "declined" in result.content[0].text
