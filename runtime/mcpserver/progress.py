"""A handler's ``ToolContext.progress(message)`` forwarded as ``notifications/progress``."""

from __future__ import annotations

import asyncio
import contextlib

from mcp.server.session import ServerSession

_DONE = object()
_FLUSH_TIMEOUT_S = 5.0  # a client that stopped reading must not hold the result back


class ProgressRelay:
    """Sends one ``tools/call``'s progress messages to the client, in order.

    :meth:`listener` may be called from any thread (sync handlers run in worker
    threads); messages go through a queue to one task on the event loop, so they keep
    their order and the progress number only grows. :meth:`aclose` sends what is
    still queued, so the client has every progress notification before the result.
    """

    def __init__(self, session: ServerSession) -> None:
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._sent = 0
        self._task = asyncio.create_task(self._forward())

    def listener(self, call_id: str, message: str | None) -> None:
        """The pipeline's progress listener (``Runtime.run_turn(on_progress=...)``)."""
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, message)
        except RuntimeError:
            pass  # the loop is closed: a handler thread outlived the server

    async def _forward(self) -> None:
        while (message := await self._queue.get()) is not _DONE:
            self._sent += 1
            try:
                await self._session.report_progress(self._sent, None, message if isinstance(message, str) else None)
            except Exception:  # noqa: BLE001 - progress is advisory: a closed stream must not fail the call
                continue

    async def aclose(self) -> None:
        """Send the queued messages (bounded in time), then stop."""
        self._queue.put_nowait(_DONE)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), _FLUSH_TIMEOUT_S)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
