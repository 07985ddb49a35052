"""An event loop of the runtime's own, in one daemon thread, for callers without one.

``Runtime.run_turn_sync`` runs turns here rather than on a loop made and torn down per
call (``asyncio.run``): a background job (``on_timeout: background``) is a task that
must outlive the turn that started it, and a loop torn down when the turn returns
would cancel it while the model was told it goes on. ``Runtime.close_sync`` stops the
jobs on this loop, then the loop and its thread.

Each coroutine runs in a copy of the caller's context (``contextvars``), so that an
OpenTelemetry span or a log binding active where the sync call was made still applies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A started event loop running forever in a daemon thread until :meth:`stop`."""

    def __init__(self, name: str = "toolrt-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def running(self) -> bool:
        """True while the loop's thread is alive."""
        return self._thread.is_alive()

    def in_loop_thread(self) -> bool:
        """True when called from the loop's own thread (where blocking on it would deadlock)."""
        return threading.current_thread() is self._thread

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coroutine`` on the loop, in a copy of the caller's context."""
        return self._start(coroutine)[0]

    def _start(self, coroutine: Coroutine[Any, Any, T]) -> tuple[concurrent.futures.Future[T], list[asyncio.Task[T]]]:
        context = contextvars.copy_context()
        result: concurrent.futures.Future[T] = concurrent.futures.Future()
        started: list[asyncio.Task[T]] = []

        def copy(done: asyncio.Task[T]) -> None:
            if done.cancelled():
                result.set_exception(concurrent.futures.CancelledError())
            elif (error := done.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(done.result())

        def start() -> None:
            result.set_running_or_notify_cancel()
            task = self.loop.create_task(coroutine, context=context)
            started.append(task)
            task.add_done_callback(copy)

        self.loop.call_soon_threadsafe(start)
        return result, started

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result. Interrupted while
        waiting (KeyboardInterrupt), the coroutine is cancelled."""
        future, started = self._start(coroutine)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                self.loop.call_soon_threadsafe(lambda: [task.cancel() for task in started])
            raise

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the loop and join its thread. Safe to call more than once."""
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if not self.in_loop_thread():
                self._thread.join(timeout)
