"""Calling ``python:module:function`` handlers under total and idle timeouts.

Async handlers run on the event loop and are cancelled on timeout. Sync handlers run
in a worker thread so that they cannot block the loop; a thread cannot be killed, so
on timeout the call is answered at once ("still running, result unknown"), the
context's ``cancelled`` event is set for handlers that check it, and the thread is
left to finish. Tools that must be killable declare ``process_isolation: true``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from runtime.context import ToolContext
from runtime.execution.processes import Progress
from runtime.snapshot import Handler

# Sync handlers share one bounded pool; a handler stuck past its timeout holds a
# worker until it returns, which is why the pool is generous.
_EXECUTOR = ThreadPoolExecutor(max_workers=32, thread_name_prefix="toolrt-handler")


@dataclass(frozen=True, slots=True)
class PythonOutcome:
    value: Any = None
    exception: BaseException | None = None
    timed_out: str | None = None  # "total" or "idle"
    abandoned: bool = False  # a sync handler still running after its timeout


async def call_python(handler: Handler, args: Mapping[str, Any], context: ToolContext | None, *, total_s: float, idle_s: float | None) -> PythonOutcome:
    """Run ``handler`` with ``args`` (and ``context`` when it takes one; pass None otherwise)."""
    function = handler.function
    if function is None:
        return PythonOutcome(exception=RuntimeError(f"handler {handler.target} is not resolved"))
    loop = asyncio.get_running_loop()
    if handler.is_async and idle_s is None and context is None:
        return await _async_total_only(function, (dict(args),), loop, total_s)
    progress = Progress(loop, loop.time() + total_s, idle_s)
    if context is not None:
        object.__setattr__(context, "_on_progress", lambda _message: progress.touch_threadsafe())
        call_args: tuple[Any, ...] = (dict(args), context)
    else:
        call_args = (dict(args),)
    if handler.is_async:
        try:
            async with asyncio.timeout_at(loop.time() + total_s) as scope:
                progress.attach(scope)
                return PythonOutcome(value=await function(*call_args))
        except TimeoutError:
            if context is not None:
                context.cancelled.set()
            return PythonOutcome(timed_out=progress.which())
        except Exception as err:  # noqa: BLE001 - a failing handler becomes an error result
            return PythonOutcome(exception=err)
    run = functools.partial(contextvars.copy_context().run, function, *call_args)
    future = loop.run_in_executor(_EXECUTOR, run)
    try:
        async with asyncio.timeout_at(loop.time() + total_s) as scope:
            progress.attach(scope)
            return PythonOutcome(value=await asyncio.shield(future))
    except TimeoutError:
        if context is not None:
            context.cancelled.set()
        return PythonOutcome(timed_out=progress.which(), abandoned=not future.done())
    except asyncio.CancelledError:
        if context is not None:
            context.cancelled.set()
        raise
    except Exception as err:  # noqa: BLE001 - a failing handler becomes an error result
        return PythonOutcome(exception=err)


async def _async_total_only(function: Any, call_args: tuple[Any, ...], loop: asyncio.AbstractEventLoop, total_s: float) -> PythonOutcome:
    """The hot path (an async handler with only a total limit): one timer, no context
    manager. The timer cancels this task; the cancellation it caused is taken back."""
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - always inside a task under asyncio
        raise RuntimeError("call_python must run inside a task")
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = loop.call_at(loop.time() + total_s, expire)
    try:
        return PythonOutcome(value=await function(*call_args))
    except asyncio.CancelledError:
        if expired and task.uncancel() == 0:
            return PythonOutcome(timed_out="total")
        raise
    except Exception as err:  # noqa: BLE001 - a failing handler becomes an error result
        return PythonOutcome(exception=err)
    finally:
        timer.cancel()
