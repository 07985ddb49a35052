"""``ask`` decisions put to the MCP client's user through elicitation (``elicitation/create``).

The approver is shared by every connection, so the call handler tells it which
request it is answering for through :data:`current_request` (a context variable: the
pipeline awaits the approver in the handler's own task, so the value set there is
the one seen here). The question rides the ``tools/call`` request's own stream.

Answers: ``accept`` runs the call (for the rest of the session when the user ticked
``allow_for_session``), ``decline`` and ``cancel`` deny it. An answer whose content
does not match the question (``allow_for_session`` must be true or false; no other
fields) denies the call. A client that did not declare the elicitation capability is
not asked: the call is denied with a reason saying so.

Two ways to ask, by the protocol revision the client negotiated:

- handshake revisions (up to 2025-11-25): an ``elicitation/create`` request on the
  ``tools/call`` request's own stream, answered while the call waits;
- the stateless revision (2026-07-28 and later), which has no way to send a request to
  the client mid-call: the ``tools/call`` answers with an ``InputRequiredResult``
  carrying the same elicitation as an input request, plus a ``requestState`` the MCP
  SDK seals and binds to this tool and these arguments; nothing has run. The client
  asks its user and calls again with the answer in ``inputResponses``; that call is
  judged from the start, and the answer counts only with a state this server sealed
  for the same call. The first round is recorded as a denial that says the question
  was sent.

The question shows the whole arguments with every invisible or control character
marked, and each command of a command line (:func:`runtime.approval_text.describe`,
the same text the terminal approver shows).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError

from runtime.approval_text import describe
from runtime.pipeline.permit import Approval
from runtime.records import Decision, Session, ValidatedCall

_BACKSTOP_S = 1.0
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "allow_for_session": {
            "type": "boolean",
            "title": "Allow for the rest of this session",
            "description": "Run later calls of this tool asked about for the same reason without asking again.",
            "default": False,
        },
    },
}
_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())
# The key of toolrt's question among a request's input requests (2026-07-28 and later),
# and the request state that says it was asked (sealed by the MCP SDK, see module docstring).
INPUT_KEY = "toolrt_approval"
ASKED_STATE = "toolrt-approval-asked/v1"


@dataclass(frozen=True, slots=True)
class McpRequest:
    """The MCP request a call is made for: its session (the way back to the client) and id.

    ``input_responses`` and ``request_state`` are what a client sent back on a stateless
    revision's second round; ``pending`` receives the question to send as an input
    request when no answer came (the call handler turns it into an ``InputRequiredResult``).
    """

    session: ServerSession
    request_id: types.RequestId | None
    input_responses: Mapping[str, Any] | None = None
    request_state: str | None = None
    pending: dict[str, Any] = field(default_factory=dict)


current_request: ContextVar[McpRequest | None] = ContextVar("toolrt_mcp_request", default=None)


class ElicitationApprover:
    """An :class:`runtime.pipeline.permit.Approver` that asks the MCP client's user.

    ``timeout_s`` bounds the wait for the answer (pass the runtime's
    ``approval_timeout_s`` setting); no answer in time is a denial.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        request = current_request.get()
        name = call.tool.name
        if request is None:
            return Approval(
                False,
                f"`{name}` needs approval and it was not called through an MCP request whose client could be asked; "
                "it was not run",
                asked=False,
            )
        if not request.session.check_client_capability(_ELICITATION):
            return Approval(
                False,
                f"`{name}` needs approval and this MCP client does not support elicitation; it was not run. "
                "Use a client that can ask its user (elicitation), or allow the tool by policy",
                asked=False,
            )
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=_message(call, decision), requested_schema=_SCHEMA)
        )
        if not request.session.can_send_request:  # a stateless revision: ask through an input request
            return _answered_or_asked(request, question, name)
        try:
            answer = await request.session.send_request(
                question,
                types.ElicitResult,
                # A backstop only: the pipeline's own approval timeout (the same setting) ends
                # the wait first, so that every late answer is worded the same way.
                request_read_timeout_seconds=self.timeout_s + _BACKSTOP_S,
                metadata=ServerMessageMetadata(related_request_id=request.request_id),
            )
        except MCPError as err:  # the client answered with an error, or no answer came in time
            return Approval(
                False,
                f"`{name}` needs approval and asking the MCP client failed ({err.error.message}); it was not run",
                asked=False,
            )
        except ValidationError:
            return Approval(
                False,
                f"`{name}` needs approval and the MCP client's answer was not an elicitation result; it was not run",
                asked=False,
            )
        return _approval(answer, name)


def _answered_or_asked(request: McpRequest, question: types.ElicitRequest, name: str) -> Approval:
    """The answer a client sent back for the question asked in an earlier round, or the
    question put in ``request.pending`` (and a denial saying it was sent)."""
    responses = request.input_responses or {}
    if request.request_state == ASKED_STATE and INPUT_KEY in responses:
        answer = _elicit_result(responses[INPUT_KEY])
        if answer is None:
            return Approval(
                False,
                f"`{name}` needs approval and the MCP client's answer was not an elicitation result; it was not run",
                asked=False,
            )
        return _approval(answer, name)
    request.pending["question"] = question
    return Approval(
        False,
        f"`{name}` needs approval: the question was sent to the MCP client as an input request; the call runs when "
        "the client calls again with the answer",
        asked=False,
    )


def _elicit_result(value: Any) -> types.ElicitResult | None:
    if isinstance(value, types.ElicitResult):
        return value
    data = value.model_dump(by_alias=True, exclude_none=True) if hasattr(value, "model_dump") else value
    try:
        return types.ElicitResult.model_validate(data)
    except ValidationError:
        return None


def _approval(answer: types.ElicitResult, name: str) -> Approval:
    if answer.action == "accept":
        content = answer.content or {}
        extra = sorted(set(content) - set(_SCHEMA["properties"]))
        choice = content.get("allow_for_session", False)
        if extra or not isinstance(choice, bool):
            # Checked against the requested type: "yes" or 1 is not a boolean, and an
            # answer to some other question is not an answer to this one.
            what = (
                f"unexpected field(s) {', '.join(map(repr, extra))}"
                if extra
                else f"allow_for_session must be true or false, got {choice!r}"
            )
            return Approval(
                False,
                f"`{name}` needs approval and the MCP client's answer did not match the question ({what}); it was not "
                "run",
                asked=False,
            )
        if choice:
            return Approval(True, "approved in the MCP client for this session", scope="session")
        return Approval(True, "approved in the MCP client")
    if answer.action == "decline":
        return Approval(False, "declined in the MCP client")
    return Approval(False, "the question was dismissed in the MCP client")


def _message(call: ValidatedCall, decision: Decision) -> str:
    # The same text the terminal approver shows (runtime.approval_text), fenced because
    # clients may render the message as Markdown.
    return f"Allow `{call.tool.name}` to run?\n{describe(call, decision, markdown=True)}"
