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


async def call_python(handler: Handler, args: Mapping[str, Any], context: ToolContext, *, total_s: float, idle_s: float | None) -> PythonOutcome:
    """Run ``handler`` with ``args`` (and ``context`` when it takes one)."""
    function = handler.function
    if function is None:
        return PythonOutcome(exception=RuntimeError(f"handler {handler.target} is not resolved"))
    call_args: tuple[Any, ...] = (dict(args), context) if handler.takes_context else (dict(args),)
    loop = asyncio.get_running_loop()
    progress = Progress(loop, loop.time() + total_s, idle_s)
    object.__setattr__(context, "_on_progress", lambda _message: progress.touch_threadsafe())
    if handler.is_async:
        try:
            async with asyncio.timeout_at(loop.time() + total_s) as scope:
                progress.attach(scope)
                return PythonOutcome(value=await function(*call_args))
        except TimeoutError:
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
        context.cancelled.set()
        return PythonOutcome(timed_out=progress.which(), abandoned=not future.done())
    except asyncio.CancelledError:
        context.cancelled.set()
        raise
    except Exception as err:  # noqa: BLE001 - a failing handler becomes an error result
        return PythonOutcome(exception=err)
