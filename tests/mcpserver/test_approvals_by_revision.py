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


# Tests whose answers grant nothing for the session leave nothing behind on the server (no
# grant, no pending call; a stateless answer's state travels with the client): they share one
# server child per mode, each test setting the answer it gives. Tests that grant for the
# session, or whose client declares other capabilities, start a server of their own.
shared_loop = pytest.mark.asyncio(loop_scope="module")
Shared = dict[str, tuple[Client, AnswerSwitch]]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shared]:
    clients: Shared = {}
    held: list[Held] = []
    for mode in MODES:
        switch = AnswerSwitch()
        holder = Held(official(tmp_path_factory.mktemp(f"shared-{mode}"), mode, switch))
        held.append(holder)
        clients[mode] = (await holder.open(), switch)
    yield clients
    for holder in held:
        await holder.close()


@asynccontextmanager
async def answered_by(shared: Shared, mode: str, callback: Any) -> AsyncIterator[Client]:
    """The shared client of ``mode``, answering questions with ``callback`` until the block ends."""
    client, switch = shared[mode]
    switch.current = callback
    try:
        yield client
    finally:
        switch.current = None


async def ask_shared(shared: Shared, mode: str, callback: Any) -> types.CallToolResult:
    async with answered_by(shared, mode, callback) as client:
        return await client.call_tool("deploy", {"service": "web"})


@shared_loop
@pytest.mark.parametrize("mode", MODES)
async def test_the_client_negotiates_the_revision_the_mode_says(shared: Shared, mode: str) -> None:
    async with answered_by(shared, mode, answering("accept")) as client:
        assert (client.session.protocol_version == "2026-07-28") is (mode == "auto")


@shared_loop
@pytest.mark.parametrize("mode", MODES)
async def test_an_accepted_question_runs_the_call_once(shared: Shared, mode: str) -> None:
    callback = answering("accept", {"allow_for_session": False})
    result = await ask_shared(shared, mode, callback)
    assert result.is_error is False and text_of(result) == '{"deployed": "web"}'
    assert len(callback.asked) == 1 and "Allow `deploy` to run?" in callback.asked[0]


@shared_loop
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("action", "said"), [("decline", "declined in the MCP client"), ("cancel", "dismissed in the MCP client")]
)
async def test_a_declined_or_dismissed_question_denies_the_call(
    shared: Shared, mode: str, action: str, said: str
) -> None:
    callback = answering(action)
    result = await ask_shared(shared, mode, callback)
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
    shared: Shared, mode: str, content: dict[str, Any]
) -> None:
    callback = answering("accept", content)
    result = await ask_shared(shared, mode, callback)
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


@shared_loop
async def test_on_the_stateless_revision_nothing_runs_before_the_answer(shared: Shared) -> None:
    async with answered_by(shared, "auto", answering("accept")) as client:
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


@shared_loop
async def test_an_answer_without_the_servers_state_is_not_taken(shared: Shared) -> None:
    answer = {"toolrt_approval": types.ElicitResult(action="accept", content={})}
    async with answered_by(shared, "auto", answering("accept")) as client:
        unsolicited = await client.session.call_tool(
            "deploy", {"service": "web"}, input_responses=answer, allow_input_required=True
        )
    assert isinstance(unsolicited, types.InputRequiredResult)  # asked, not run


@shared_loop
@pytest.mark.parametrize("state", ["toolrt-approval-asked/v1", "forged", ""], ids=["plain-marker", "garbage", "empty"])
async def test_a_forged_request_state_is_refused(shared: Shared, state: str) -> None:
    answer = {"toolrt_approval": types.ElicitResult(action="accept", content={})}
    async with answered_by(shared, "auto", answering("accept")) as client:
        with pytest.raises(MCPError):
            await client.session.call_tool(
                "deploy", {"service": "web"}, input_responses=answer, request_state=state, allow_input_required=True
            )


@shared_loop
async def test_an_answer_given_for_other_arguments_is_refused(shared: Shared) -> None:
    async with answered_by(shared, "auto", answering("accept")) as client:
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


@shared_loop
async def test_a_denied_tool_is_denied_without_a_question_on_the_stateless_revision(shared: Shared) -> None:
    callback = answering("accept")
    async with answered_by(shared, "auto", callback) as client:
        result = await client.call_tool("erase_disk", {})
    assert result.is_error is True and "never allowed" in text_of(result)
    assert callback.asked == []


class FastmcpAnswers:
    """fastmcp's elicitation handler for a shared client: each test sets :attr:`action`."""

    def __init__(self) -> None:
        self.action: str | None = None
        self.asked: list[str] = []

    async def __call__(self, message: str, response_type: Any, question: Any, context: Any) -> types.ElicitResult:
        assert self.action is not None, "no answer set for this test"
        self.asked.append(message)
        content = {"allow_for_session": False} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fastmcp_client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Any, FastmcpAnswers]]:
    """One fastmcp client (and server child) for the tests of its answers: neither grants."""
    fastmcp = pytest.importorskip("fastmcp")
    from fastmcp.client.transports import StdioTransport

    answers = FastmcpAnswers()
    argv = serve_argv(CONFIG, tmp_path_factory.mktemp("fastmcp"))
    transport = StdioTransport(command=argv[0], args=argv[1:], env=dict(os.environ), cwd=str(REPO))
    holder = Held(fastmcp.Client(transport, elicitation_handler=answers))
    yield await holder.open(), answers
    await holder.close()


@shared_loop
@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_fastmcps_client_gets_the_question_and_its_answer_counts(
    fastmcp_client: tuple[Any, FastmcpAnswers], action: str
) -> None:
    client, answers = fastmcp_client
    answers.action, answers.asked = action, []
    try:
        result = await client.call_tool("deploy", {"service": "web"}, raise_on_error=False)
    finally:
        answers.action = None
    asked = answers.asked
    assert len(asked) == 1 and "Allow `deploy` to run?" in asked[0]
    if action == "accept":
        assert result.is_error is False and result.content[0].text == '{"deployed": "web"}'
    else:
        assert result.is_error is True and "declined" in result.content[0].text
