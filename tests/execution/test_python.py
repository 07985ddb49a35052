"""call_python's fast path for async handlers: run eagerly up to the first wait (no
timer when the handler never waits), then under the total timeout; cancellation and
errors behave exactly as with a plain ``await``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime.execution.python import call_python
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
