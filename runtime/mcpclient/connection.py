"""One MCP server's session: started on first use, watched, torn down, restarted.

Everything here runs on the pool's event loop (see :mod:`runtime.mcpclient.pool`).

Ownership: the SDK's transports and ``ClientSession`` hold anyio task groups and
cancel scopes, which must be exited by the task that entered them. So each session
has one long-lived *owner* task that enters the transport and the session, completes
the handshake, then waits until it is told to stop or the transport ends, and exits
everything itself. Calls are separate tasks that share the session: the SDK matches
concurrent requests to answers by id.

Restart policy: a session that ends unexpectedly (process exited, connection dropped),
whose call timed out (the server may be stuck; its process tree is killed), or that
cannot be started is *retired*; the next call starts a new one. Consecutive failures
back the restarts off (0.5 s, doubling, at most 30 s) so that a crash loop does not
spin; any answer from the server resets the count. A caller waits out a short
remaining backoff; during a longer one it gets an error at once, saying when the next
attempt will be.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from loguru import logger

from runtime._version import __version__
from runtime.config.models import McpServerSpec, McpTransport
from runtime.mcpclient.errors import Lost, Refused, TimedOut, Unavailable
from runtime.mcpclient.transports import open_transport, tls_context

T = TypeVar("T")

_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 30.0
_MAX_BACKOFF_WAIT_S = 2.0  # a caller waits out at most this much of a backoff; beyond, it fails fast
_TEARDOWN_WAIT_S = 10.0  # the SDK's stdio shutdown takes at most ~6 s (stdin close, SIGTERM, SIGKILL)
_CANCEL_WAIT_S = 2.0  # for a timed-out request to send its courtesy cancel
_MAX_PAGES = 100  # tools/list pages: a server whose cursor never ends cannot hang a build


@dataclass(eq=False)
class _Live:
    """One session and the task that owns it."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    session: Any = None
    owner: asyncio.Task[None] | None = None
    retired: bool = False


class ServerConnection:
    """The session with one declared server (as ``spec`` declares it)."""

    def __init__(self, name: str, spec: McpServerSpec) -> None:
        self.name = name
        self.spec = spec
        self._live: _Live | None = None
        self._starting: _Live | None = None  # the session whose handshake is under way
        self._lock = asyncio.Lock()
        self._dying: set[asyncio.Task[None]] = set()  # owners told to stop, not finished yet
        self._failures = 0
        self._retry_at = 0.0
        self._closed = False
        self._tls: ssl.SSLContext | None = None  # built at the first HTTP connect, lent to every later one

    def _alive(self) -> bool:
        live = self._live
        return live is not None and not live.retired and not live.ended.is_set()

    async def _session(self) -> tuple[Any, _Live]:
        """The live session, started (or restarted) if needed."""
        if self._alive() and self._live is not None:
            return self._live.session, self._live
        async with self._lock:  # one start at a time; the others then find it alive
            if self._alive() and self._live is not None:
                return self._live.session, self._live
            if self._closed:
                raise Unavailable("is closed (the runtime is shutting down)")
            wait = self._retry_at - asyncio.get_running_loop().time()
            if wait > _MAX_BACKOFF_WAIT_S:
                raise Unavailable(
                    f"failed {self._failures} time(s) in a row; the next attempt to start it is in {wait:.1f} s"
                )
            if wait > 0:
                await asyncio.sleep(wait)
            await self._bury()
            live = await self._start()
            return live.session, live

    async def _start(self) -> _Live:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        ready.add_done_callback(
            lambda f: f.cancelled() or f.exception()
        )  # an answer nobody waits for any more is not an error
        live = _Live()
        live.owner = loop.create_task(self._own(live, ready), name=f"toolrt-mcp-{self.name}")
        timeout = self.spec.connect_timeout_s
        self._starting = live
        # A session given up during its handshake is stopped, not cancelled: its owner
        # leaves the handshake and tears the transport down the SDK's way (a native
        # cancel can cut that short and leave a stdio server running).
        try:
            async with asyncio.timeout(timeout):
                live.session = await asyncio.shield(ready)
        except TimeoutError:
            self._retire(live, f"did not complete the MCP handshake within {timeout:g} s")
            raise Unavailable(f"did not complete the MCP handshake within {timeout:g} s (connect_timeout_s)") from None
        except asyncio.CancelledError:
            live.retired = True
            live.stop.set()
            self._dying.add(live.owner)
            raise
        except Exception as err:
            if self._closed:
                raise Unavailable("was closed before its handshake was done (the runtime is closing)") from None
            self._retire(live, f"could not be started: {_describe(err)}")
            raise Unavailable(f"could not be started: {_describe(err)}") from err
        finally:
            if self._starting is live:
                self._starting = None
        self._live = live
        logger.debug("MCP server {} connected", self.name)
        return live

    async def _own(self, live: _Live, ready: asyncio.Future[Any]) -> None:
        """The owner task: enters and exits the transport and the session."""
        started = False
        try:
            from mcp.client.session import ClientSession
            from mcp_types import Implementation

            if self.spec.transport is McpTransport.http and self._tls is None:
                self._tls = tls_context()
            async with (
                open_transport(self.spec, live.ended, self._tls) as (read, write),
                ClientSession(read, write, client_info=Implementation(name="toolrt", version=__version__)) as session,
            ):
                handshake = asyncio.ensure_future(session.initialize())
                await _first(handshake, live.stop.wait())
                if handshake.cancelled():  # stopped first (given up, or closing): leave, tearing down
                    if not ready.done():
                        ready.set_exception(Unavailable("was stopped during its handshake"))
                    return
                handshake.result()  # the handshake's own failure, if it failed
                if not ready.done():
                    ready.set_result(session)
                    started = True
                await _first(live.stop.wait(), live.ended.wait())
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except Exception as err:  # noqa: BLE001 - whatever ended the session, the waiting caller hears of it
            if not ready.done():
                ready.set_exception(err)
            elif not live.stop.is_set():
                logger.warning("MCP server {}: its session failed: {}", self.name, _describe(err))
        finally:
            live.ended.set()
        if started and not live.stop.is_set():
            self._retire(live, "ended the connection (its process exited or the connection dropped)")

    def _retire(self, live: _Live, reason: str) -> None:
        """Stop using ``live`` (once): its owner tears it down in the background and
        the next call starts a new session after the backoff."""
        if live.retired:
            return
        live.retired = True
        live.stop.set()
        if live.owner is not None and not live.owner.done():
            self._dying.add(live.owner)
        if self._live is live:
            self._live = None
        if self._closed:
            return
        self._failures += 1
        delay = min(_MAX_BACKOFF_S, _BACKOFF_S * 2 ** (self._failures - 1))
        self._retry_at = asyncio.get_running_loop().time() + delay
        logger.warning(
            "MCP server {} {}; it is restarted on the next call (not before {:.1f} s)", self.name, reason, delay
        )

    async def _bury(self) -> None:
        """Wait (bounded) for retired sessions to finish tearing down; cancel stragglers."""
        if not self._dying:
            return
        dying = set(self._dying)
        _, pending = await asyncio.wait(dying, timeout=_TEARDOWN_WAIT_S)
        for task in pending:
            task.cancel()
        if pending:  # a cancelled task is still running until it has run its cancellation
            await asyncio.wait(pending, timeout=_CANCEL_WAIT_S)
        self._dying -= dying

    async def call_tool(self, tool: str, args: Mapping[str, Any], *, total_s: float, idle_s: float | None) -> Any:
        """The server's ``CallToolResult`` for ``tool(args)``, or an :class:`McpFailure`.

        Connecting is bounded by ``connect_timeout_s``; the call itself by ``total_s``
        and, if given, ``idle_s`` without a progress notification from the server."""
        session, live = await self._session()
        loop = asyncio.get_running_loop()
        last = [loop.time()]

        async def progressed(_progress: float, _total: float | None, _message: str | None) -> None:
            last[0] = loop.time()

        request = asyncio.ensure_future(session.call_tool(tool, dict(args), progress_callback=progressed))
        return await self._answer(live, request, f"call to `{tool}`", loop.time() + total_s, total_s, idle_s, last)

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (all pages), bounded by ``connect_timeout_s``."""
        from mcp_types import PaginatedRequestParams

        session, live = await self._session()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.spec.connect_timeout_s
        tools: list[Any] = []
        cursor: str | None = None
        for _page in range(_MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            request = asyncio.ensure_future(session.list_tools(params=params))
            page = await self._answer(
                live, request, "tool listing", deadline, self.spec.connect_timeout_s, None, [loop.time()]
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _answer(
        self,
        live: _Live,
        request: asyncio.Future[T],
        what: str,
        deadline: float,
        total_s: float,
        idle_s: float | None,
        last: list[float],
    ) -> T:
        """Wait for ``request`` under the deadline and idle limit; translate the SDK's
        exceptions (this is the one place that does)."""
        MCPError, CONNECTION_CLOSED, ValidationError = _sdk_errors()  # noqa: N806 - the SDK's names
        try:
            limit = await _wait(request, deadline, idle_s, last)
        except asyncio.CancelledError:
            request.cancel()
            raise
        if limit is not None:
            request.cancel()
            await asyncio.wait({request}, timeout=_CANCEL_WAIT_S)
            seconds = total_s if limit == "total" else (idle_s or 0.0)
            self._retire(live, f"did not answer a {what} within {seconds:g} s")
            raise TimedOut(
                f"did not answer within {seconds:g} s" + (" (no progress)" if limit == "idle" else ""),
                limit=limit,
                seconds=seconds,
            )
        try:
            result = request.result()
        except MCPError as err:
            # Connection closed, or (HTTP) the server no longer knows our session: retire it.
            if err.code == CONNECTION_CLOSED or err.message == "Session terminated":
                self._retire(live, f"lost the connection during a {what}")
                raise Lost(f"lost the connection before answering ({err.message})") from err
            self._answered()
            raise Refused(f"answered with an error: {err.message} (code {err.code})") from err
        except (RuntimeError, ValidationError) as err:
            # The SDK rejects an answer that breaks the protocol or the tool's output schema.
            self._answered()
            raise Refused(f"sent an answer that was rejected: {_describe(err)}") from err
        except Exception as err:
            self._retire(live, f"failed during a {what}: {_describe(err)}")
            raise Lost(f"failed before answering: {_describe(err)}") from err
        self._answered()
        return result

    def _answered(self) -> None:
        self._failures = 0
        self._retry_at = 0.0

    async def close(self) -> None:
        """Stop the session (and one still in its handshake) and wait (bounded) for its teardown."""
        self._closed = True
        for live in (self._live, self._starting):
            if live is not None:
                self._retire(live, "is closing")
        await self._bury()


@functools.cache
def _sdk_errors() -> tuple[Any, int, Any]:
    """The SDK's error type, its connection-closed code and pydantic's validation error:
    imported once, at the first answer (not at module import: the SDK is optional)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED
    from pydantic import ValidationError

    return MCPError, CONNECTION_CLOSED, ValidationError


async def _wait(request: asyncio.Future[Any], deadline: float, idle_s: float | None, last: list[float]) -> str | None:
    """None once ``request`` is done; "total" or "idle" when a limit passes first.
    ``last[0]`` is the time of the latest progress, moved by the progress callback."""
    loop = asyncio.get_running_loop()
    while True:
        now = loop.time()
        if now >= deadline:
            return "total"
        if idle_s is not None and now >= last[0] + idle_s:
            return "idle"
        timeout = deadline - now if idle_s is None else min(deadline - now, last[0] + idle_s - now)
        done, _ = await asyncio.wait({request}, timeout=timeout)
        if done:
            return None


async def _first(*waits: Awaitable[Any]) -> None:
    """Return when the first of ``waits`` finishes."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


def _describe(err: BaseException) -> str:
    """One line for an exception, looking inside exception groups (the SDK's task
    groups wrap the real cause)."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
