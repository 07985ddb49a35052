"""What stands in front of the MCP SDK's streamable HTTP app: Host/Origin checks, the
bearer token, and a bounded, expiring set of sessions.

Every request first passes the DNS-rebinding check (Host and Origin against the allowed
names, 421/403 otherwise), then, when a token is configured, the ``Authorization:
Bearer`` check (compared in constant time, 401 otherwise). Only then does it reach the
SDK.

Sessions (the ``Mcp-Session-Id`` the SDK hands out at ``initialize``) are tracked here
because toolrt keeps state per session too (its :class:`~runtime.records.Session`,
grants, quotas), which must go when the SDK's transport goes. A session is idle when no
request of it is in flight (an open GET stream is one) and it has been so for
``idle_s``; the sweeper then ends it the way a client would, with a ``DELETE`` through
the SDK app (which terminates the transport and its server task), and tells
``on_session_end``. At ``max_sessions``, a request that would open a session first ends
the least recently used idle one; if every session is busy it is refused with 503.

The SDK's own limits stay on behind this (its idle timeout at twice ours, its session
cap at ours): if the bookkeeping here ever missed a session, memory is still bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from loguru import logger
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp as App
from starlette.types import Message, Receive, Scope, Send

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_SESSION_HEADER = b"mcp-session-id"
_SWEEP_MAX_S = 30.0
MIN_TOKEN_CHARS = 16
TOKEN_VARIABLE = "TOOLRT_SERVE_TOKEN"


@dataclass(frozen=True)
class HttpLimits:
    """The HTTP server's protections.

    ``idle_s``: a session with nothing in flight for this long is ended.
    ``max_sessions``: at most this many sessions at once.
    ``token``: when set, every request must carry ``Authorization: Bearer <token>``.
    ``allowed_hosts``: Host names (besides loopback) clients may use to reach the server.
    """

    idle_s: float = 1800.0
    max_sessions: int = 1000
    token: str | None = field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.idle_s) and self.idle_s > 0):
            raise ValueError("the session idle timeout must be a positive number of seconds")
        if self.max_sessions < 1:
            raise ValueError("the session limit must be at least 1")
        if self.token is not None and not _usable_token(self.token):
            raise ValueError(f"the token must be {MIN_TOKEN_CHARS} or more printable ASCII characters, without spaces")


def token_from_environment() -> str | None:
    """The token in ``TOOLRT_SERVE_TOKEN``, if set (a variable, unlike a flag, is not in the process list)."""
    return os.environ.get(TOKEN_VARIABLE) or None


def _usable_token(token: str) -> bool:
    # What an HTTP header carries unchanged, and long enough not to be guessed.
    return len(token) >= MIN_TOKEN_CHARS and token.isascii() and token.isprintable() and " " not in token


def security_settings(allowed_hosts: tuple[str, ...]) -> TransportSecuritySettings:
    """DNS-rebinding protection for loopback and ``allowed_hosts`` (any port, http or https)."""
    names = [*LOOPBACK_NAMES, *(f"[{h}]" if ":" in h and not h.startswith("[") else h for h in allowed_hosts)]
    hosts = [pattern for name in names for pattern in (name, f"{name}:*")]
    origins = [f"{scheme}://{pattern}" for scheme in ("http", "https") for pattern in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


@dataclass(slots=True)
class _Activity:
    last: float
    in_flight: int = 0


class HttpGuard:
    """An ASGI app wrapping ``app`` (the SDK's streamable HTTP app served at ``path``, built
    with the same ``security`` settings).

    Run :meth:`sweep` as a task while serving. ``on_session_end`` hears the
    ``Mcp-Session-Id`` of every session that ended (expired, evicted, deleted by its
    client, or found gone); ``clock`` is a seam for tests.
    """

    def __init__(
        self,
        app: App,
        *,
        path: str,
        limits: HttpLimits,
        security: TransportSecuritySettings,
        on_session_end: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._app = app
        self._path = path
        self._limits = limits
        self._security = TransportSecurityMiddleware(security)
        self._expected = limits.token.encode("ascii") if limits.token is not None else None
        self._on_session_end = on_session_end
        self._clock = clock
        self._sessions: dict[str, _Activity] = {}  # by Mcp-Session-Id
        self._opening = 0  # requests without a session id being served: each may open one
        self._admission = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)  # lifespan: the SDK's session manager starts and stops
            return
        refused = await self._security.validate_request(Request(scope, receive), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self._expected is not None and not self._authorized(headers.get("authorization")):
            message = "Unauthorized: send the server's token as `Authorization: Bearer <token>`"
            await _reply(send, 401, message, {"www-authenticate": "Bearer"})
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            await self._serve_opening(scope, receive, send)
        else:
            await self._serve_in_session(session_id, scope, receive, send)

    def _authorized(self, header: str | None) -> bool:
        scheme, _, credential = (header or "").partition(" ")
        # compare_digest: the time taken does not depend on how much of the token matched.
        # Header text is decoded as latin-1, so encoding it back gives the bytes that were sent.
        matches = hmac.compare_digest(credential.strip().encode("latin-1", "replace"), self._expected or b"")
        return scheme.lower() == "bearer" and matches

    async def _serve_opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = Headers(scope=scope).get("mcp-protocol-version")
        if scope["method"] != "POST" or (version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS):
            # Cannot open a session (the SDK answers it, or serves it statelessly): no room needed.
            await self._app(scope, receive, send)
            return
        async with self._admission:
            if len(self._sessions) + self._opening >= self._limits.max_sessions:
                victim = self._least_recently_used()
                if victim is None:
                    most = self._limits.max_sessions
                    logger.warning("MCP HTTP: refusing a new session: all {} sessions are busy", most)
                    message = (
                        f"Too many open sessions: the server keeps at most {most:,} and all are busy; try again later"
                    )
                    await _reply(send, 503, message, {"retry-after": "5"})
                    return
                await self.end(victim, why="the session limit was reached and it was the least recently used")
            self._opening += 1
        status, opened = 0, None
        try:
            status, opened = await _serve_watching(self._app, scope, receive, send)
        finally:
            self._opening -= 1
            if opened is not None and status < 400 and opened not in self._sessions:
                self._sessions[opened] = _Activity(last=self._clock())

    async def _serve_in_session(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        activity = self._sessions.get(session_id)
        if activity is not None:
            activity.in_flight += 1
            activity.last = self._clock()
        status = 0
        try:
            status, _ = await _serve_watching(self._app, scope, receive, send)
        finally:
            if activity is not None:
                activity.in_flight -= 1
                activity.last = self._clock()
        ended = status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300)
        if ended and self._sessions.get(session_id) is activity and activity is not None:
            self._forget(session_id, why="its client ended it" if status != 404 else "it was gone")

    def _least_recently_used(self) -> str | None:
        idle = [(a.last, sid) for sid, a in self._sessions.items() if a.in_flight == 0]
        return min(idle)[1] if idle else None

    async def sweep(self) -> None:
        """End the sessions idle for longer than the limit, forever (run it as a task)."""
        interval = min(self._limits.idle_s / 4, _SWEEP_MAX_S)
        while True:
            await asyncio.sleep(interval)
            try:
                await self._sweep_once()
            except Exception as err:  # noqa: BLE001 - the sweeper must outlive any one failure
                logger.opt(exception=err).error("MCP HTTP: ending idle sessions failed; trying again")

    async def _sweep_once(self) -> None:
        now = self._clock()
        for session_id, activity in list(self._sessions.items()):
            if activity.in_flight == 0 and now - activity.last >= self._limits.idle_s:
                await self.end(session_id, why=f"it was idle for {self._limits.idle_s:g} s")

    async def end(self, session_id: str, *, why: str) -> None:
        """End ``session_id``: forget it, then terminate its transport as its client would."""
        if session_id not in self._sessions:
            return
        self._forget(session_id, why=why)
        with contextlib.suppress(Exception):  # a transport that is already gone is what we want
            await _serve_watching(self._app, self._delete_scope(session_id), _no_body(), _discard)

    def _forget(self, session_id: str, *, why: str) -> None:
        self._sessions.pop(session_id, None)
        logger.debug("MCP HTTP session ended: {} ({} open)", why, len(self._sessions))
        try:
            self._on_session_end(session_id)
        except Exception as err:  # noqa: BLE001 - bookkeeping of one session must not stop the others
            logger.opt(exception=err).error("MCP HTTP: cleaning up an ended session failed")

    def _delete_scope(self, session_id: str) -> Scope:
        headers = [(b"host", b"127.0.0.1"), (_SESSION_HEADER, session_id.encode("latin-1"))]
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": self._path,
            "raw_path": self._path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
            "state": {},
        }


async def _serve_watching(app: App, scope: Scope, receive: Receive, send: Send) -> tuple[int, str | None]:
    """Run ``app`` for one request: the status it answered and the session id it handed out."""
    status, opened = 0, None

    async def watching(message: Message) -> None:
        nonlocal status, opened
        if message["type"] == "http.response.start":
            status = int(message["status"])
            for name, value in message.get("headers", ()):
                if name.lower() == _SESSION_HEADER:
                    opened = value.decode("latin-1")
        await send(message)

    await app(scope, receive, watching)
    return status, opened


def _no_body() -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": b"", "more_body": False}

    return receive


async def _discard(message: Message) -> None:
    return None


async def _reply(send: Send, status: int, message: str, headers: dict[str, str]) -> None:
    """A JSON-RPC error without an id (like the SDK's own refusals), with HTTP ``status``."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
