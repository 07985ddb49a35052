"""``toolrt serve --transport http`` holds a bounded set of sessions: idle ones expire
(the SDK's transport is terminated and toolrt forgets the client), at the cap the least
recently used idle one makes room or, when all are busy, a new one is refused with 503.
Every request passes the Host/Origin check, and the bearer token when one is set; a
host other machines can reach does not start without a token.

Most tests run the real server (uvicorn, the SDK's session manager, real sockets) in
the test's own event loop, so that toolrt's per-client bookkeeping can be counted; the
command-line ones start ``toolrt serve`` as a child process."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcpserver_support import CONFIG, TIMEOUT_S, http_client, http_server, tls_context

from runtime.cli import main
from runtime.mcpserver import is_loopback
from runtime.mcpserver.httpguard import HttpLimits
from runtime.mcpserver.server import ToolServer
from runtime.mcpserver.transports import serve_http
from runtime.runtime import Runtime

TOKEN = "s3cret-token-for-the-tests-0123456789"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
LIST = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}


@dataclass
class Served:
    url: str
    tools: ToolServer
    http: httpx2.AsyncClient
    headers: dict[str, str]

    async def open_session(self) -> str:
        """initialize, notifications/initialized and tools/list, as a client does (no GET
        stream); toolrt knows the client once tools/list is answered."""
        opened = await self.http.post(self.url, json=INITIALIZE, headers={**ACCEPT, **self.headers})
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        done = await self.http.post(self.url, json=INITIALIZED, headers=self.session_headers(session_id))
        assert done.status_code == 202, done.text
        listed = await self.http.post(self.url, json=LIST, headers=self.session_headers(session_id))
        assert listed.status_code == 200, listed.text
        return session_id

    def session_headers(self, session_id: str) -> dict[str, str]:
        return {**ACCEPT, **self.headers, "mcp-session-id": session_id}

    async def alive(self, session_id: str) -> bool:
        answer = await self.http.post(self.url, json=PING, headers=self.session_headers(session_id))
        assert answer.status_code in (200, 404), answer.text
        return answer.status_code == 200

    @asynccontextmanager
    async def stream(self, session_id: str) -> AsyncIterator[None]:
        """The session's standalone GET stream, open (a request in flight: the session is busy)."""
        headers = {**self.session_headers(session_id), "Accept": "text/event-stream"}
        async with self.http.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200
            yield


@asynccontextmanager
async def serving(tmp_path: Path, limits: HttpLimits, *, host: str = "127.0.0.1") -> AsyncIterator[Served]:
    """The HTTP server on a free port in this event loop, stopped (and the runtime closed) after."""
    runtime = Runtime([CONFIG], workspace_root=tmp_path, watch=False)
    tools = ToolServer(runtime, stdio=False)
    stop = asyncio.Event()
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_http(tools, stop, host=host, port=0, limits=limits, on_ready=ready.set_result))
    try:
        await asyncio.wait({ready, task}, timeout=TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        url = ready.result().replace("0.0.0.0", "127.0.0.1")
        headers = {"Authorization": f"Bearer {limits.token}"} if limits.token else {}
        async with http_client(timeout=TIMEOUT_S) as http:
            yield Served(url, tools, http, headers)
    finally:
        stop.set()
        await task
        await runtime.close()


async def eventually(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait until ``condition`` holds (polling; the deadline only catches a hang)."""
    deadline = time.monotonic() + TIMEOUT_S
    while not await condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


def clients_left(served: Served, count: int) -> Callable[[], Awaitable[bool]]:
    async def condition() -> bool:
        return len(served.tools.clients) == count

    return condition


# -- idle expiry ----------------------------------------------------------------------


async def test_idle_sessions_expire_and_toolrt_forgets_their_clients(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=1.0)) as served:
        sessions = [await served.open_session() for _ in range(3)]  # each known to toolrt once opened
        await eventually(clients_left(served, 0), "the idle sessions expired")
        for session_id in sessions:
            assert not await served.alive(session_id)  # the SDK's transport is gone too: 404


async def test_a_session_with_an_open_stream_is_busy_and_does_not_expire(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=1.5)) as served:
        kept, dropped = await served.open_session(), await served.open_session()
        async with served.stream(kept):
            # Counted, not pinged: a ping is activity and would keep the session alive.
            await eventually(clients_left(served, 1), "the idle session expired")
            assert not await served.alive(dropped)
            assert await served.alive(kept)
        await eventually(clients_left(served, 0), "the session expired once its stream closed")
        assert not await served.alive(kept)


async def test_a_client_that_deletes_its_session_is_forgotten_at_once(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=600)) as served:
        session_id = await served.open_session()
        assert len(served.tools.clients) == 1
        deleted = await served.http.delete(served.url, headers=served.session_headers(session_id))
        assert deleted.status_code == 200
        assert len(served.tools.clients) == 0
        assert not await served.alive(session_id)


# -- the session cap ------------------------------------------------------------------


async def test_at_the_cap_the_least_recently_used_idle_session_makes_room(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=600, max_sessions=4)) as served:
        first = [await served.open_session() for _ in range(4)]
        assert await served.alive(first[0])  # used again: now the most recently used
        newcomer = await served.open_session()
        assert len(served.tools.clients) == 4
        assert [await served.alive(s) for s in first] == [True, False, True, True]
        assert await served.alive(newcomer)


async def test_a_flood_of_initialize_requests_never_holds_more_than_the_cap(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=600, max_sessions=10)) as served:
        opened = []
        for _ in range(60):
            opened.append(await served.open_session())
            assert len(served.tools.clients) <= 10
        alive = [session_id for session_id in opened if await served.alive(session_id)]
        assert alive == opened[-10:]


async def test_when_every_session_is_busy_a_new_one_is_refused_with_503(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=600, max_sessions=2)) as served:
        one, two = await served.open_session(), await served.open_session()
        async with AsyncExitStack() as streams:
            await streams.enter_async_context(served.stream(one))
            await streams.enter_async_context(served.stream(two))
            refused = await served.http.post(served.url, json=INITIALIZE, headers={**ACCEPT, **served.headers})
            assert refused.status_code == 503
            assert "Too many open sessions" in refused.json()["error"]["message"]
            assert await served.alive(one) and await served.alive(two)

        # Streams closed (the server notices a moment later): both idle again, so a new
        # session makes room instead of being refused.
        async def admitted() -> bool:
            answer = await served.http.post(served.url, json=INITIALIZE, headers={**ACCEPT, **served.headers})
            assert answer.status_code in (200, 503)
            return answer.status_code == 200

        await eventually(admitted, "a new session was admitted once the others were idle")
        assert [await served.alive(one), await served.alive(two)].count(True) == 1


async def test_the_official_client_works_under_the_limits(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(idle_s=600, max_sessions=3, token=TOKEN)) as served:
        async with http_client(headers=served.headers, timeout=TIMEOUT_S) as http:
            async with (
                streamable_http_client(served.url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                names = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool("lookup_city", {"city": "Lima"})
        assert "lookup_city" in names and result.is_error is False
        await eventually(clients_left(served, 0), "the client's DELETE at exit ended its session")


# -- the token ------------------------------------------------------------------------

AUTHORIZATIONS = [
    (None, False),
    ("", False),
    ("Bearer", False),
    ("Bearer \t x", False),
    ("Bearer wrong-token-of-some-length", False),
    (f"Bearer {TOKEN}x", False),
    (f"Bearer {TOKEN[:-1]}", False),
    (f"Bearer {TOKEN.upper()}", False),
    (TOKEN, False),
    (f"Basic {TOKEN}", False),
    (f"Token {TOKEN}", False),
    (f"Bearer {TOKEN}", True),
    (f"bearer {TOKEN}", True),  # the scheme is case-insensitive (RFC 9110)
    (f"Bearer  {TOKEN}", True),
]


@pytest.mark.parametrize(
    ("authorization", "accepted"),
    AUTHORIZATIONS,
    ids=[
        "missing",
        "empty",
        "scheme-only",
        "scheme-and-blank",
        "wrong",
        "token-plus-one",
        "token-minus-one",
        "case-changed",
        "no-scheme",
        "basic-scheme",
        "other-scheme",
        "right",
        "lower-case-scheme",
        "extra-spaces",
    ],
)
async def test_every_request_needs_the_bearer_token(tmp_path: Path, authorization: str | None, accepted: bool) -> None:
    async with serving(tmp_path, HttpLimits(token=TOKEN)) as served:
        headers = {**ACCEPT, **({"Authorization": authorization} if authorization is not None else {})}
        answer = await served.http.post(served.url, json=INITIALIZE, headers=headers)
        if accepted:
            assert answer.status_code == 200 and "mcp-session-id" in answer.headers
        else:
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "mcp-session-id" not in answer.headers
            assert TOKEN not in answer.text
            assert len(served.tools.clients) == 0


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_requests_inside_an_open_session_need_the_token_too(tmp_path: Path, method: str) -> None:
    async with serving(tmp_path, HttpLimits(token=TOKEN)) as served:
        session_id = await served.open_session()
        without = {**ACCEPT, "mcp-session-id": session_id}
        answer = await served.http.request(method, served.url, headers=without, json=PING if method == "POST" else None)
        assert answer.status_code == 401
        assert await served.alive(session_id)  # a refused DELETE ended nothing


async def test_a_token_from_another_session_header_does_not_help(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(token=TOKEN)) as served:
        session_id = await served.open_session()
        answer = await served.http.post(
            served.url,
            json=PING,
            headers={**ACCEPT, "mcp-session-id": session_id, "Authorization": f"Bearer {session_id}"},
        )
        assert answer.status_code == 401


# -- Host and Origin ------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("Origin", "http://attacker.example", 403),
        ("Origin", "https://127.0.0.1.attacker.example", 403),
        ("Origin", "null", 403),
        ("Host", "attacker.example", 421),
        ("Host", "127.0.0.1.attacker.example:80", 421),
        ("Origin", "http://localhost:3000", 200),
    ],
    ids=["foreign-origin", "lookalike-origin", "null-origin", "foreign-host", "lookalike-host", "loopback-origin"],
)
async def test_host_and_origin_are_checked_on_every_request(
    tmp_path: Path, token: str | None, header: str, value: str, status: int
) -> None:
    async with serving(tmp_path, HttpLimits(token=token)) as served:
        answer = await served.http.post(
            served.url, json=INITIALIZE, headers={**ACCEPT, **served.headers, header: value}
        )
        assert answer.status_code == status


async def test_a_session_cannot_be_reached_from_a_foreign_origin_either(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits()) as served:
        session_id = await served.open_session()
        answer = await served.http.post(
            served.url, json=PING, headers={**served.session_headers(session_id), "Origin": "http://attacker.example"}
        )
        assert answer.status_code == 403


async def test_on_every_interface_only_the_allowed_names_are_accepted(tmp_path: Path) -> None:
    async with serving(tmp_path, HttpLimits(token=TOKEN, allowed_hosts=("toolrt.test",)), host="0.0.0.0") as served:
        port = served.url.split(":")[2].split("/")[0]
        for host, status in (
            (f"toolrt.test:{port}", 200),
            (f"127.0.0.1:{port}", 200),
            (f"attacker.example:{port}", 421),
        ):
            answer = await served.http.post(
                served.url, json=INITIALIZE, headers={**ACCEPT, **served.headers, "Host": host}
            )
            assert answer.status_code == status, host
        no_token = await served.http.post(
            served.url, json=INITIALIZE, headers={**ACCEPT, "Host": f"toolrt.test:{port}"}
        )
        assert no_token.status_code == 401


# -- the command line -----------------------------------------------------------------


def serve_cli(*extra: str) -> tuple[int, str]:
    err = io.StringIO()
    code = main(["serve", "--config", str(CONFIG), "--transport", "http", "--port", "0", *extra], stderr=err)
    return code, err.getvalue()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.internal"])
def test_a_host_other_machines_can_reach_does_not_start_without_a_token(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLRT_SERVE_TOKEN", raising=False)
    code, err = serve_cli("--host", host)
    assert code == 2
    assert "TOOLRT_SERVE_TOKEN" in err and "Authorization: Bearer" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--host", "0.0.0.0", "--token", TOKEN), "--allow-host"),
        (("--token", "short"), "16 or more"),
        (("--token", "has a space in it ok"), "16 or more"),
        (("--max-sessions", "0"), "session limit"),
        (("--session-idle-timeout", "0"), "idle timeout"),
        (("--session-idle-timeout", "-5"), "idle timeout"),
        (("--session-idle-timeout", "nan"), "idle timeout"),
        (("--session-idle-timeout", "inf"), "idle timeout"),
    ],
    ids=[
        "every-interface-without-names",
        "short-token",
        "token-with-spaces",
        "no-sessions",
        "zero-idle",
        "negative-idle",
        "nan-idle",
        "endless-idle",
    ],
)
def test_unsafe_or_impossible_limits_are_usage_errors(
    extra: tuple[str, ...], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLRT_SERVE_TOKEN", raising=False)
    code, err = serve_cli(*extra)
    assert code == 2 and message in err
    assert TOKEN not in err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("localhost.example", False),
        ("", False),
    ],
)
def test_loopback_hosts_are_told_apart_from_reachable_ones(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def initialize_status(url: str, headers: dict[str, str]) -> int:
    with httpx2.Client(timeout=TIMEOUT_S, verify=tls_context()) as http:
        return http.post(url, json=INITIALIZE, headers={**ACCEPT, **headers}).status_code


def test_toolrt_serve_on_every_interface_runs_with_the_token_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLRT_SERVE_TOKEN", TOKEN)
    with http_server(tmp_path, extra=("--host", "0.0.0.0", "--allow-host", "toolrt.test")) as (url, _):
        url = url.replace("0.0.0.0", "127.0.0.1")
        port = url.split(":")[2].split("/")[0]
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert initialize_status(url, {}) == 401
        assert initialize_status(url, {"Authorization": "Bearer not-the-token-at-all"}) == 401
        assert initialize_status(url, bearer) == 200
        assert initialize_status(url, {**bearer, "Host": f"toolrt.test:{port}"}) == 200
        assert initialize_status(url, {**bearer, "Host": f"attacker.example:{port}"}) == 421
        assert initialize_status(url, {**bearer, "Origin": "http://attacker.example"}) == 403
    assert TOKEN not in (tmp_path / "serve.stderr").read_text()


def test_toolrt_serve_expires_idle_sessions_and_caps_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLRT_SERVE_TOKEN", raising=False)
    monkeypatch.setenv("TOOLRT_LOG_LEVEL", "DEBUG")  # says when each session ends
    extra = ("--max-sessions", "3", "--session-idle-timeout", "1")
    with http_server(tmp_path, extra=extra) as (url, _), httpx2.Client(timeout=TIMEOUT_S, verify=tls_context()) as http:

        def open_session() -> str:
            answer = http.post(url, json=INITIALIZE, headers=ACCEPT)
            assert answer.status_code == 200
            return str(answer.headers["mcp-session-id"])

        def alive(session_id: str) -> bool:
            return http.post(url, json=PING, headers={**ACCEPT, "mcp-session-id": session_id}).status_code == 200

        sessions = [open_session() for _ in range(5)]
        assert [alive(s) for s in sessions[:2]] == [False, False]  # they made room for the last three
        # Watched in the log, not by pinging: a ping is activity and would keep them alive.
        log = tmp_path / "serve.stderr"
        deadline = time.monotonic() + TIMEOUT_S
        while "idle for 1 s (0 open)" not in log.read_text(encoding="utf-8", errors="replace"):
            assert time.monotonic() < deadline, "idle sessions never expired"
            time.sleep(0.05)
        assert not any(alive(s) for s in sessions[2:])
