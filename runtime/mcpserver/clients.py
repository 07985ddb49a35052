"""The connected MCP clients: one toolrt :class:`Session` each, and a way to notify them all.

A connection is recognised by its transport: over stdio the process serves exactly
one connection; over streamable HTTP each connection carries its ``Mcp-Session-Id``
header. A request with neither (stateless HTTP) gets a session of its own that is
not remembered. toolrt session ids are random (``mcp-`` and 16 hex digits), never the
transport's session id, which acts as a credential and must stay out of audit logs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loguru import logger
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession

from runtime.records import Session

_SESSION_HEADER = "mcp-session-id"


def _new_id() -> str:
    return f"mcp-{uuid.uuid4().hex[:16]}"


@dataclass(slots=True)
class _Client:
    session: Session
    channel: ServerSession  # the latest request's: its connection's standalone channel carries notifications


class Clients:
    """The toolrt session of each MCP connection, made on its first message.

    ``mode`` is the permission mode of new sessions; ``stdio`` says the server runs on
    stdio (one connection per process); ``forget`` is called with the session id of a
    client found gone (e.g. ``Runtime.end_session``).
    """

    def __init__(self, mode: str, *, stdio: bool, forget: Callable[[str], None] | None = None) -> None:
        self._mode = mode
        self._stdio_key = "stdio" if stdio else None
        self._forget = forget
        self._clients: dict[str, _Client] = {}

    def __len__(self) -> int:
        return len(self._clients)

    def session_for(self, ctx: ServerRequestContext[Any, Any]) -> Session:
        """The toolrt session of the connection ``ctx`` came on (made on first use)."""
        key = self._key(ctx)
        client = self._clients.get(key) if key is not None else None
        if client is None:
            session = Session(id=_new_id(), mode=self._mode, labels=_labels(ctx, self._stdio_key is not None))
            if key is None:
                return session
            client = self._clients[key] = _Client(session, ctx.session)
        client.channel = ctx.session
        return client.session

    def end(self, key: str) -> None:
        """Forget the connection ``key`` (``http:<Mcp-Session-Id>``) whose transport ended,
        and end its toolrt session."""
        client = self._clients.pop(key, None)
        if client is not None and self._forget is not None:
            self._forget(client.session.id)

    async def notify_tools_changed(self) -> int:
        """Send ``notifications/tools/list_changed`` to every connected client; return how many
        were sent. A client whose connection is gone is forgotten."""
        sent = 0
        for key, client in list(self._clients.items()):
            try:
                await client.channel.send_tool_list_changed()
            except Exception as err:  # noqa: BLE001 - a closed connection: forget that client, go on with the others
                logger.bind(session_id=client.session.id).debug(
                    "MCP client gone ({}); its session ends", type(err).__name__
                )
                self._clients.pop(key, None)
                if self._forget is not None:
                    self._forget(client.session.id)
                continue
            sent += 1
        return sent

    def _key(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        headers = getattr(ctx.request, "headers", None)
        if headers is not None:
            value = headers.get(_SESSION_HEADER)
            return f"http:{value}" if value else None
        return self._stdio_key


def _labels(ctx: ServerRequestContext[Any, Any], stdio: bool) -> dict[str, str]:
    labels = {"transport": "stdio" if stdio else "http"}
    params = ctx.session.client_params
    if params is not None and params.client_info.name:
        labels["mcp_client"] = params.client_info.name[:100]
    return labels
