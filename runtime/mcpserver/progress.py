"""A handler's ``ToolContext.progress(message)`` forwarded as ``notifications/progress``."""

from __future__ import annotations

import asyncio
import collections
import contextlib

from mcp.server.session import ServerSession

# Progress is advisory: a handler that reports faster than the client reads (or a
# handler thread that goes on reporting after its call ended) must not grow memory
# without end. The oldest waiting messages give way; the latest is always sent.
MAX_WAITING = 100
_FLUSH_TIMEOUT_S = 5.0  # a client that stopped reading must not hold the result back


class ProgressRelay:
    """Sends one ``tools/call``'s progress messages to the client, in order.

    :meth:`listener` may be called from any thread (sync handlers run in worker
    threads); messages wait in a bounded buffer (at most :data:`MAX_WAITING`) for one
    task on the event loop, so they keep their order and the progress number only
    grows. :meth:`aclose` sends what is still waiting, so the client has the progress
    notifications before the result; messages reported after that are dropped.
    """

    def __init__(self, session: ServerSession) -> None:
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._waiting: collections.deque[str | None] = collections.deque(
            maxlen=MAX_WAITING
        )  # appends and pops are thread-safe
        self._wake = asyncio.Event()
        self._woken = False  # a wake-up is on its way to the loop: no need for another
        self._closed = False
        self._sent = 0
        self._task = asyncio.create_task(self._forward())

    def listener(self, call_id: str, message: str | None) -> None:
        """The pipeline's progress listener (``Runtime.run_turn(on_progress=...)``)."""
        if self._closed:
            return
        self._waiting.append(message if isinstance(message, str) else None)
        if self._woken:
            return
        self._woken = True
        try:
            self._loop.call_soon_threadsafe(self._wake.set)
        except RuntimeError:
            pass  # the loop is closed: a handler thread outlived the server

    async def _forward(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Cleared before draining: a message appended from now on is either drained
            # below or sends a new wake-up.
            self._woken = False
            while self._waiting:
                message = self._waiting.popleft()
                self._sent += 1
                try:
                    await self._session.report_progress(self._sent, None, message)
                except Exception:  # noqa: BLE001 - progress is advisory: a closed stream must not fail the call
                    continue
            if self._closed:
                return

    async def aclose(self) -> None:
        """Send the waiting messages (bounded in time), then stop."""
        self._closed = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), _FLUSH_TIMEOUT_S)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
