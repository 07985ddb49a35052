"""The connection pool: one live session per declared MCP server, on its own loop.

Why a thread with its own event loop: a session is owned by a task (see
:mod:`runtime.mcpclient.connection`), and a task lives on one loop. The loops that
run turns come and go (``Runtime.run_turn_sync`` runs each turn on a fresh
``asyncio.run``), and a snapshot build (which lists the servers' tools) is plain sync
code. Sessions owned by any of those loops would die with it, so the pool runs its
sessions on one background loop for the life of the runtime; callers on any loop
await them through ``asyncio.wrap_future``, and sync callers block on the future.
The thread starts on first use: a config without McpServer documents never starts it.

Shutdown is bounded and leaves nothing pending: :meth:`McpPool.close` gives the sessions
``close_wait_s`` to close (each stdio server's process tree is stopped the SDK's way),
then the loop's thread cancels whatever is still running, lets the cancellations run to
completion (bounded again), closes the async generators and the default executor, and
closes the loop. A task that outlives even that keeps the thread (a daemon) and the loop
alive until it ends, rather than being destroyed while pending.
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

_CLOSE_WAIT_S = 15.0  # above the SDK's longest stdio teardown (stdin closed, SIGTERM, SIGKILL: about 6 s)
_DRAIN_S = 5.0  # for what close() cancelled to run its cancellation, then again for the async generators
_LIST_SLACK_S = 15.0  # beyond connect + listing: a stuck start still ends in a bounded time


class McpPool:
    """Sessions with the declared MCP servers, started lazily and restarted on failure.

    Safe to use from any thread and any event loop. :meth:`close` stops every session
    (and kills stdio servers' process trees), waiting at most ``close_wait_s`` for them
    before it cancels what is left."""

    def __init__(self, *, close_wait_s: float = _CLOSE_WAIT_S) -> None:
        self.close_wait_s = close_wait_s
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._sdk_found = False  # looked up until found: once there, it stays
        self._connections: dict[str, ServerConnection] = {}  # touched on the pool loop only
        self._retiring: set[asyncio.Task[None]] = set()

    # -- the loop -----------------------------------------------------------

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the pool loop (started on first use)."""
        with self._lock:
            if self._closed:
                coroutine.close()
                raise Unavailable("is not reachable: the runtime is closed")
            if not self._sdk_found and not sdk_available():
                coroutine.close()
                raise Unavailable(f"cannot be used: the MCP SDK is not installed ({INSTALL_HINT})")
            self._sdk_found = True
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
        """Stop every session and the pool's thread. Blocking, bounded (``close_wait_s``
        and a few seconds more); idempotent."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        closing = asyncio.run_coroutine_threadsafe(self._close_sessions(), loop)
        try:
            closing.result(timeout=self.close_wait_s)
        except concurrent.futures.TimeoutError:
            closing.cancel()  # the loop's thread runs the cancellation (see _run_loop)
            logger.warning("MCP sessions did not close within {:g} s; what is left is cancelled", self.close_wait_s)
        except Exception as err:  # noqa: BLE001 - shutdown goes on whatever a server did
            logger.warning("MCP sessions did not all close cleanly: {}", err)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=3 * _DRAIN_S)

    async def _close_sessions(self) -> None:
        """Close every session (each bounded), then end the calls still running."""
        closing = [c.close() for c in self._connections.values()]
        await asyncio.gather(*closing, *self._retiring, return_exceptions=True)
        self._connections.clear()
        # Anything still running (a call waiting out a backoff) ends now: its caller
        # hears of it instead of waiting on a loop that is about to stop.
        stragglers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in stragglers:
            task.cancel()
        if stragglers:
            await asyncio.wait(stragglers, timeout=_DRAIN_S)


def _start_loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    started = threading.Event()
    thread = threading.Thread(target=_run_loop, args=(loop, started), name="toolrt-mcp", daemon=True)
    thread.start()
    started.wait()
    return loop, thread


def _run_loop(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    """The pool's thread: run ``loop`` until it is stopped, then shut it down."""
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    try:
        loop.run_forever()
    finally:
        _shut_down(loop)


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs on the stopped ``loop`` and run it to its end (bounded), then
    close the async generators, the default executor and the loop, the way asyncio.run
    does. A task still running after all that is waited for without bound (close() has
    returned by then; this thread is a daemon): it is never destroyed while pending."""
    for _ in range(2):  # a task may start others on its way out: they are cancelled in turn
        tasks = asyncio.all_tasks(loop)
        if not tasks:
            break
        for task in tasks:
            task.cancel()
        done, _pending = loop.run_until_complete(asyncio.wait(tasks, timeout=_DRAIN_S))
        for task in done:  # an error raised while cancelled is retrieved here, not reported at collection
            if not task.cancelled() and task.exception() is not None:
                logger.debug("MCP task {} ended with {!r} while shutting down", task.get_name(), task.exception())
    for ending in (loop.shutdown_asyncgens(), loop.shutdown_default_executor()):
        try:
            loop.run_until_complete(asyncio.wait_for(ending, _DRAIN_S))
        except Exception as err:  # noqa: BLE001 - the loop is closed whatever is left behind
            logger.warning("the MCP pool's event loop did not shut down cleanly: {}", err)
    left = asyncio.all_tasks(loop)
    if left:
        logger.warning("{} MCP task(s) still running after being cancelled; waiting for them", len(left))
        loop.run_until_complete(asyncio.wait(left))
    loop.close()
