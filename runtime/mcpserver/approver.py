"""``ask`` decisions put to the MCP client's user through elicitation (``elicitation/create``).

The approver is shared by every connection, so the call handler tells it which
request it is answering for through :data:`current_request` (a context variable: the
pipeline awaits the approver in the handler's own task, so the value set there is
the one seen here). The question rides the ``tools/call`` request's own stream.

Answers: ``accept`` runs the call (for the rest of the session when the user ticked
``allow_for_session``), ``decline`` and ``cancel`` deny it. A client that did not
declare the elicitation capability, or a connection that cannot carry a request to
the client, is not asked: the call is denied with a reason saying so.

The question shows the whole arguments with every invisible or control character
marked, and each command of a command line (:func:`runtime.approval_text.describe`,
the same text the terminal approver shows).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class McpRequest:
    """The MCP request a call is made for: its session (the way back to the client) and id."""

    session: ServerSession
    request_id: types.RequestId | None


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
            return Approval(False, f"`{name}` needs approval and it was not called through an MCP request whose client could be asked; it was not run", asked=False)
        if not request.session.check_client_capability(_ELICITATION):
            return Approval(
                False,
                f"`{name}` needs approval and this MCP client does not support elicitation; it was not run. "
                "Use a client that can ask its user (elicitation), or allow the tool by policy",
                asked=False,
            )
        if not request.session.can_send_request:
            return Approval(False, f"`{name}` needs approval and this MCP connection cannot carry a question back to the client; it was not run", asked=False)
        question = types.ElicitRequest(params=types.ElicitRequestFormParams(message=_message(call, decision), requested_schema=_SCHEMA))
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
            return Approval(False, f"`{name}` needs approval and asking the MCP client failed ({err.error.message}); it was not run", asked=False)
        except ValidationError:
            return Approval(False, f"`{name}` needs approval and the MCP client's answer was not an elicitation result; it was not run", asked=False)
        if answer.action == "accept":
            for_session = bool(answer.content and answer.content.get("allow_for_session") is True)
            if for_session:
                return Approval(True, "approved in the MCP client for this session", scope="session")
            return Approval(True, "approved in the MCP client")
        if answer.action == "decline":
            return Approval(False, "declined in the MCP client")
        return Approval(False, "the question was dismissed in the MCP client")


def _message(call: ValidatedCall, decision: Decision) -> str:
    # The same text the terminal approver shows (runtime.approval_text), fenced because
    # clients may render the message as Markdown.
    return f"Allow `{call.tool.name}` to run?\n{describe(call, decision, markdown=True)}"
