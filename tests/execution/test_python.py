"""call_python's fast path for async handlers: run eagerly up to the first wait (no
timer when the handler never waits), then under the total timeout; cancellation and
errors behave exactly as with a plain ``await``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime.execution.python import PythonOutcome, Started, call_python, finish_started, start_eagerly
from runtime.snapshot import Handler


def handler(function: Any) -> Handler:
    return Handler(kind="python", target="t:f", function=function, is_async=True)


async def test_a_handler_that_never_waits_returns_without_a_timer() -> None:
    async def quick(args):  # noqa: ANN001, ANN202
        return args["n"] + 1

    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    outcome = await call_python(handler(quick), {"n": 1}, None, total_s=5, idle_s=None)
    assert outcome.value == 2 and outcome.exception is None
    assert len(loop._scheduled) == before  # type: ignore[attr-defined]


async def test_a_handler_that_waits_gets_the_results_of_what_it_awaited() -> None:
    async def twice(args):  # noqa: ANN001, ANN202
        first = await asyncio.sleep(0.01, result="a")
        second = await asyncio.get_running_loop().run_in_executor(None, lambda: "b")
        return first + second

    outcome = await call_python(handler(twice), {}, None, total_s=5, idle_s=None)
    assert outcome.value == "ab"


async def test_a_handler_that_waits_too_long_times_out() -> None:
    async def slow(args):  # noqa: ANN001, ANN202
        await asyncio.sleep(10)

    outcome = await call_python(handler(slow), {}, None, total_s=0.1, idle_s=None)
    assert outcome.timed_out == "total"


@pytest.mark.parametrize("when", ["before", "after"])
async def test_an_error_before_or_after_the_first_wait_is_an_outcome(when: str) -> None:
    async def broken(args):  # noqa: ANN001, ANN202
        if when == "after":
            await asyncio.sleep(0)
        raise KeyError("x")

    outcome = await call_python(handler(broken), {}, None, total_s=5, idle_s=None)
    assert isinstance(outcome.exception, KeyError)


async def test_a_handler_catching_an_exception_thrown_into_its_wait_sees_it() -> None:
    seen: list[str] = []

    async def waits(args):  # noqa: ANN001, ANN202
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    task = asyncio.ensure_future(call_python(handler(waits), {}, None, total_s=5, idle_s=None))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]


async def test_a_handler_that_swallows_the_timeout_still_returns_its_value() -> None:
    async def stubborn(args):  # noqa: ANN001, ANN202
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "partial"

    outcome = await call_python(handler(stubborn), {}, None, total_s=0.1, idle_s=None)
    assert outcome.value == "partial"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_time_spent_before_the_first_wait_counts_toward_the_total_timeout() -> None:
    import time

    async def slow_start(args):  # noqa: ANN001, ANN202
        time.sleep(0.3)
        await asyncio.sleep(0.3)
        return "done"

    outcome = await call_python(handler(slow_start), {}, None, total_s=0.4, idle_s=None)
    assert outcome.timed_out == "total"


# The pipeline's own entry to the same path (start_eagerly, then finish_started only for
# a handler that waits), which spares the coroutines of the stage on every call.


async def test_start_eagerly_returns_the_outcome_of_a_handler_that_never_waits() -> None:
    async def quick(args):  # noqa: ANN001, ANN202
        return args["n"] * 2

    outcome = start_eagerly(handler(quick), {"n": 21}, 5)
    assert isinstance(outcome, PythonOutcome) and outcome.value == 42


async def test_start_eagerly_hands_on_a_handler_that_waits_and_it_finishes_with_its_value() -> None:
    async def slow(args):  # noqa: ANN001, ANN202
        return await asyncio.sleep(0.01, result="done")

    started = start_eagerly(handler(slow), {}, 5)
    assert isinstance(started, Started)
    outcome = await finish_started(started)
    assert outcome.value == "done" and outcome.timed_out is None


async def test_a_started_handler_past_its_total_limit_times_out_and_the_task_is_not_left_cancelled() -> None:
    async def hang(args):  # noqa: ANN001, ANN202
        await asyncio.sleep(30)

    started = start_eagerly(handler(hang), {}, 0.05)
    assert isinstance(started, Started)
    outcome = await finish_started(started)
    assert outcome.timed_out == "total"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_start_eagerly_turns_what_the_handler_raises_before_waiting_into_an_outcome() -> None:
    async def broken(args):  # noqa: ANN001, ANN202
        raise SystemExit(3)

    outcome = start_eagerly(handler(broken), {}, 5)
    assert isinstance(outcome, PythonOutcome) and isinstance(outcome.exception, SystemExit)


async def test_start_eagerly_leaves_sync_handlers_and_unresolved_ones_to_call_python() -> None:
    def sync(args):  # noqa: ANN001, ANN202
        return 1

    assert start_eagerly(Handler(kind="python", target="t:f", function=sync, is_async=False), {}, 5) is None
    assert start_eagerly(Handler(kind="python", target="t:f", function=None, is_async=True), {}, 5) is None


async def test_the_handler_gets_its_own_copy_of_the_arguments() -> None:
    seen: list[Any] = []

    async def keep(args):  # noqa: ANN001, ANN202
        seen.append(args)
        args["x"] = 2

    given = {"x": 1}
    start_eagerly(handler(keep), given, 5)
    assert given == {"x": 1} and seen[0] is not given
