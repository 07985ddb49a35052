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
import sys
import types
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from runtime.context import ToolContext
from runtime.execution.processes import Progress
from runtime.snapshot import Handler

# Sync handlers share one bounded pool; a handler stuck past its timeout holds a
# worker until it returns, which is why the pool is generous.
_EXECUTOR = ThreadPoolExecutor(max_workers=32, thread_name_prefix="toolrt-handler")


@dataclass(slots=True)
class PythonOutcome:
    value: Any = None
    exception: BaseException | None = None
    timed_out: str | None = None  # "total" or "idle"
    abandoned: bool = False  # a sync handler still running after its timeout


async def call_python(
    handler: Handler,
    args: Mapping[str, Any],
    context: ToolContext | None,
    *,
    total_s: float,
    idle_s: float | None,
    on_progress: Callable[[str | None], None] | None = None,
) -> PythonOutcome:
    """Run ``handler`` with ``args`` (and ``context`` when it takes one; pass None otherwise).

    Whatever the handler raises (SystemExit and a CancelledError of its own making
    included) becomes an outcome; only a cancellation of the calling task goes on.
    ``on_progress`` hears each ``context.progress(message)`` after the idle timer is
    reset, on the handler's thread; what it raises is ignored.
    """
    function = handler.function
    if function is None:
        return PythonOutcome(exception=RuntimeError(f"handler {handler.target} is not resolved"))
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - always inside a task under asyncio
        raise RuntimeError("call_python must run inside a task")
    if handler.is_async and idle_s is None and context is None:
        started = _start(function, (dict(args),), loop, task, total_s)
        if isinstance(started, PythonOutcome):
            return started
        return await finish_started(started)
    progress = Progress(loop, loop.time() + total_s, idle_s)
    if context is not None:
        object.__setattr__(context, "_on_progress", _reporter(progress, on_progress))
        call_args: tuple[Any, ...] = (dict(args), context)
    else:
        call_args = (dict(args),)
    cancelling = task.cancelling()
    if handler.is_async:
        try:
            async with asyncio.timeout_at(loop.time() + total_s) as scope:
                progress.attach(scope)
                return PythonOutcome(value=await function(*call_args))
        except TimeoutError:
            _cancel(context)
            return PythonOutcome(timed_out=progress.which())
        except asyncio.CancelledError as err:
            if task.cancelling() > cancelling:
                _cancel(context)
                raise  # the turn is being cancelled
            return PythonOutcome(exception=err)  # raised by the handler itself
        except (Exception, SystemExit) as err:  # noqa: BLE001 - a failing handler becomes an error result
            return PythonOutcome(exception=err)
    run = functools.partial(contextvars.copy_context().run, function, *call_args)
    future = loop.run_in_executor(_EXECUTOR, run)
    try:
        async with asyncio.timeout_at(loop.time() + total_s) as scope:
            progress.attach(scope)
            return PythonOutcome(value=await asyncio.shield(future))
    except TimeoutError:
        _cancel(context)
        return PythonOutcome(timed_out=progress.which(), abandoned=not future.done())
    except asyncio.CancelledError as err:
        if task.cancelling() > cancelling:
            _cancel(context)
            raise
        return PythonOutcome(exception=err)
    except (Exception, SystemExit) as err:  # noqa: BLE001 - a failing handler becomes an error result
        return PythonOutcome(exception=err)


@types.coroutine
def _resume(coroutine: Any, suspended_on: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine already run up to its first suspension (what ``await``
    would do from there): whatever it waits for is handed to the task, and what the
    task sends or throws in (a cancellation) goes on to the coroutine."""
    waiting = suspended_on
    while True:
        try:
            sent = yield waiting
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - passed on to the coroutine, as await does
            try:
                waiting = coroutine.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting = coroutine.send(sent)
            except StopIteration as done:
                return done.value


def _reporter(progress: Progress, listener: Callable[[str | None], None] | None) -> Callable[[str | None], None]:
    """What ``ToolContext.progress`` calls: reset the idle timer, then tell the listener."""
    if listener is None:
        return lambda _message: progress.touch_threadsafe()

    def report(message: str | None) -> None:
        progress.touch_threadsafe()
        try:
            listener(message)
        except Exception:  # noqa: BLE001 - a failing listener must not fail the handler that reported progress
            pass

    return report


def _cancel(context: ToolContext | None) -> None:
    if context is not None:
        context.cancelled.set()


@dataclass(slots=True)
class Started:
    """An async handler run up to its first wait (:func:`start_eagerly`): what going on needs."""

    coroutine: Any
    first: Any  # what it waits for
    loop: asyncio.AbstractEventLoop
    task: asyncio.Task[Any]
    deadline: float
    cancelling: int


def start_eagerly(handler: Handler, args: Mapping[str, Any], total_s: float) -> PythonOutcome | Started | None:
    """The hot path's first half, with no coroutine of its own: an async handler that
    takes no context, with only a total limit, run up to its first wait (most
    in-process tools finish there, and need no timer at all). :func:`finish_started`
    goes on with one that waits. None when the handler is not of that kind, or when
    not called inside a task (then :func:`call_python` says why)."""
    function = handler.function
    if function is None or not handler.is_async:
        return None
    loop = asyncio.get_running_loop()
    task = _CURRENT_TASKS.get(loop) if _CURRENT_TASKS is not None else asyncio.current_task(loop)
    if task is None:
        return None
    return _start(function, (dict(args),), loop, task, total_s)


# Python 3.11's asyncio.current_task() is a Python function around this table (the
# running loop -> its current task), kept by the C tasks; read it directly on the hot
# path. Other versions (no such table) ask current_task().
_CURRENT_TASKS: dict[Any, Any] | None = (
    getattr(asyncio.tasks, "_current_tasks", None) if sys.version_info[:2] == (3, 11) else None
)


def _start(
    function: Any, call_args: tuple[Any, ...], loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any], total_s: float
) -> PythonOutcome | Started:
    cancelling = task.cancelling()
    deadline = loop.time() + total_s  # from the start: time before the first wait counts too
    try:
        coroutine = function(*call_args)
        first = coroutine.send(None)
    except StopIteration as done:
        return PythonOutcome(value=done.value)
    except (Exception, SystemExit, asyncio.CancelledError) as err:  # noqa: BLE001 - raised by the handler itself
        return PythonOutcome(exception=err)
    return Started(coroutine, first, loop, task, deadline, cancelling)


async def finish_started(started: Started) -> PythonOutcome:
    """Go on with a handler that waits, under one timer for the rest of its total
    limit. The timer cancels this task; that cancellation is always taken back, also
    when the handler swallows it."""
    task, cancelling = started.task, started.cancelling
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = started.loop.call_at(started.deadline, expire)
    try:
        value = await _resume(started.coroutine, started.first)
    except asyncio.CancelledError as err:
        if expired:
            task.uncancel()
            if task.cancelling() <= cancelling:
                return PythonOutcome(timed_out="total")
            raise  # cancelled from outside as well
        if task.cancelling() > cancelling:
            raise  # the turn is being cancelled
        return PythonOutcome(exception=err)  # raised by the handler itself
    except (Exception, SystemExit) as err:  # noqa: BLE001 - a failing handler becomes an error result
        return PythonOutcome(exception=err)
    finally:
        timer.cancel()
    if expired:
        task.uncancel()  # the handler caught our cancellation and returned (a partial) result
    return PythonOutcome(value=value)
