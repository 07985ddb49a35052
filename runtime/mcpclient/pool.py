"""The connection pool: one live session per declared MCP server, on its own loop.

Why a thread with its own event loop: a session is owned by a task (see
:mod:`runtime.mcpclient.connection`), and a task lives on one loop. The loops that
run turns come and go (``Runtime.run_turn_sync`` runs each turn on a fresh
``asyncio.run``), and a snapshot build (which lists the servers' tools) is plain sync
code. Sessions owned by any of those loops would die with it, so the pool runs its
sessions on one background loop for the life of the runtime; callers on any loop
await them through ``asyncio.wrap_future``, and sync callers block on the future.
The thread starts on first use: a config without McpServer documents never starts it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from loguru import logger

from runtime.config.models import McpServerSpec
from runtime.mcpclient.connection import ServerConnection
from runtime.mcpclient.errors import Lost, McpFailure, Unavailable
from runtime.mcpclient.transports import INSTALL_HINT, sdk_available

T = TypeVar("T")

_CLOSE_WAIT_S = 15.0
_LIST_SLACK_S = 15.0  # beyond connect + listing: a stuck start still ends in a bounded time


class McpPool:
    """Sessions with the declared MCP servers, started lazily and restarted on failure.

    Safe to use from any thread and any event loop. :meth:`close` stops every session
    (and kills stdio servers' process trees)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._connections: dict[str, ServerConnection] = {}  # touched on the pool loop only
        self._retiring: set[asyncio.Task[None]] = set()

    # -- the loop -----------------------------------------------------------

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the pool loop (started on first use)."""
        with self._lock:
            if self._closed:
                coroutine.close()
                raise Unavailable("is not reachable: the runtime is closed")
            if not sdk_available():
                coroutine.close()
                raise Unavailable(f"cannot be used: the MCP SDK is not installed ({INSTALL_HINT})")
            if self._loop is None:
                self._loop, self._thread = _start_loop()
            # Scheduled under the lock: a close() that comes next finds it on the loop
            # (and ends it), instead of the loop being stopped or closed in between.
            return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _connection(self, name: str, spec: McpServerSpec) -> ServerConnection:
        """The connection for ``name``; a changed declaration (after a reload) gets a
        new one, and the old one is closed in the background."""
        connection = self._connections.get(name)
        if connection is None or connection.spec != spec:
            if connection is not None:
                task = asyncio.ensure_future(connection.close())
                self._retiring.add(task)
                task.add_done_callback(self._retiring.discard)
            connection = self._connections[name] = ServerConnection(name, spec)
        return connection

    # -- calls and listings ----------------------------------------------------

    async def call_tool(
        self,
        server: str,
        spec: McpServerSpec,
        tool: str,
        args: Mapping[str, Any],
        *,
        total_s: float,
        idle_s: float | None = None,
    ) -> Any:
        """The ``CallToolResult`` of ``server``'s ``tool``; raises :class:`McpFailure`.
        Awaitable from any event loop."""

        async def run() -> Any:
            return await self._connection(server, spec).call_tool(tool, args, total_s=total_s, idle_s=idle_s)

        future = self._submit(run())
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # close() ends the calls still out; that is their answer, not a cancellation
            # of the caller's task (which would cancel the caller's whole turn).
            task = asyncio.current_task()
            if future.cancelled() and task is not None and not task.cancelling():
                raise Lost("was shut down while the call was out (the runtime is closing)") from None
            raise

    def list_tools(self, servers: Mapping[str, McpServerSpec]) -> dict[str, list[Any] | McpFailure]:
        """Each server's listed tools (SDK ``Tool`` models), or why there are none.

        Blocking; the servers are asked concurrently, each bounded by its
        ``connect_timeout_s`` (to connect, then to list)."""

        async def listing(name: str, spec: McpServerSpec) -> list[Any]:
            return await self._connection(name, spec).list_tools()

        futures: dict[str, concurrent.futures.Future[list[Any]] | McpFailure] = {}
        for name, spec in servers.items():
            try:
                futures[name] = self._submit(listing(name, spec))
            except McpFailure as err:
                futures[name] = err
        results: dict[str, list[Any] | McpFailure] = {}
        for name, future in futures.items():
            if isinstance(future, McpFailure):
                results[name] = future
                continue
            try:
                results[name] = future.result(timeout=2 * servers[name].connect_timeout_s + _LIST_SLACK_S)
            except McpFailure as err:
                results[name] = err
            except concurrent.futures.TimeoutError:
                future.cancel()
                results[name] = Unavailable("did not list its tools in time")
        return results

    # -- shutdown ----------------------------------------------------------------

    def close(self) -> None:
        """Stop every session and the pool's thread. Blocking, bounded; idempotent."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def close_all() -> None:
            closing = [c.close() for c in self._connections.values()]
            await asyncio.gather(*closing, *self._retiring, return_exceptions=True)
            self._connections.clear()
            # Anything still running (a call waiting out a backoff) ends now: its caller
            # hears of it instead of waiting on a loop that is about to stop.
            stragglers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in stragglers:
                task.cancel()
            if stragglers:
                await asyncio.wait(stragglers, timeout=_CLOSE_WAIT_S)

        try:
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout=_CLOSE_WAIT_S)
        except Exception as err:  # noqa: BLE001 - shutdown goes on whatever a server did
            logger.warning("MCP sessions did not all close cleanly: {}", err)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_CLOSE_WAIT_S)
        if not thread.is_alive():
            loop.close()


def _start_loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        loop.run_forever()

    thread = threading.Thread(target=run, name="toolrt-mcp", daemon=True)
    thread.start()
    started.wait()
    return loop, thread
