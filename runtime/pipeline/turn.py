"""Stage 07 and scheduling: one turn's calls, run in a safe order, answered in order.

Maximal runs of consecutive read-only calls run concurrently (bounded); any other
call runs alone, after the run before it. Every call gets exactly one result, paired
by id and returned in the order the model made the calls, including calls that never
ran (duplicate id, interrupted turn, an earlier failure with ``stop_on_error``, the
turn deadline), each saying why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from runtime.codes import ResultCode
from runtime.pipeline import run_call
from runtime.pipeline.env import TurnEnv
from runtime.pipeline.shape import not_executed
from runtime.records import Call, Stage, Status, ToolResult


async def run_turn(
    calls: Sequence[Call],
    env: TurnEnv,
    *,
    parallel: bool = True,
    stop_on_error: bool = False,
    deadline_s: float | None = None,
    interrupt: asyncio.Event | None = None,
) -> list[ToolResult]:
    """Results for ``calls``, one each, in the same order."""
    if len(calls) == 1 and deadline_s is None and interrupt is None:
        return [await run_call(calls[0], env)]  # the common case: nothing to schedule
    results: list[ToolResult | None] = [None] * len(calls)
    runnable: list[int] = []
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if call.id in seen:
            results[index] = _skipped(
                env,
                call,
                f"another call in this turn already uses the id `{call.id}`; give every call its own id",
                ResultCode.duplicate_id,
            )
        else:
            seen.add(call.id)
            runnable.append(index)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s if deadline_s is not None else None
    limit = asyncio.Semaphore(env.settings.max_concurrency)
    batches = _batches(calls, runnable, env, parallel)
    for position, batch in enumerate(batches):
        stop_reason = _stop_reason(results, stop_on_error, deadline, interrupt, loop)
        if stop_reason is not None:
            for rest in batches[position:]:
                for index in rest:
                    results[index] = _skipped(env, calls[index], stop_reason[0], stop_reason[1])
            break
        if len(batch) == 1 and deadline is None and interrupt is None:
            results[batch[0]] = await run_call(calls[batch[0]], env)  # the common case: no tasks needed
            continue
        await _run_batch(calls, batch, env, results, limit, deadline, interrupt)
    return [
        r if r is not None else _skipped(env, calls[i], "it was not reached", ResultCode.not_reached)
        for i, r in enumerate(results)
    ]


def _skipped(env: TurnEnv, call: Call, why: str, code: str) -> ToolResult:
    """A "not executed" result, recorded in the audit log like any other."""
    result = not_executed(call, why, code)
    if env.audit is not None:
        env.audit(env, call, result, call.args)
    return result


def _batches(calls: Sequence[Call], runnable: list[int], env: TurnEnv, parallel: bool) -> list[list[int]]:
    batches: list[list[int]] = []
    previous_read_only = False
    for index in runnable:
        read_only = parallel and _is_read_only(calls[index], env)
        if read_only and previous_read_only:
            batches[-1].append(index)
        else:
            batches.append([index])
        previous_read_only = read_only
    return batches


def _is_read_only(call: Call, env: TurnEnv) -> bool:
    """Unknown tools and unparsable calls count as not read-only (they run alone)."""
    name, _, version = call.name.partition("@")
    tool = env.snapshot.tool(name, version or None)
    return tool is not None and tool.spec.read_only and call.parse_error is None


def _stop_reason(
    results: list[ToolResult | None],
    stop_on_error: bool,
    deadline: float | None,
    interrupt: asyncio.Event | None,
    loop: asyncio.AbstractEventLoop,
) -> tuple[str, str] | None:
    if interrupt is not None and interrupt.is_set():
        return "the turn was interrupted before this call started", ResultCode.interrupted
    if deadline is not None and loop.time() >= deadline:
        return "the turn's time limit passed before this call started", ResultCode.turn_deadline
    if stop_on_error and any(r is not None and r.is_error for r in results):
        return "an earlier call in this turn failed, and the turn stops at the first error", ResultCode.stopped_on_error
    return None


async def _run_batch(
    calls: Sequence[Call],
    batch: list[int],
    env: TurnEnv,
    results: list[ToolResult | None],
    limit: asyncio.Semaphore,
    deadline: float | None,
    interrupt: asyncio.Event | None,
) -> None:
    async def bounded(call: Call) -> ToolResult:
        async with limit:
            return await run_call(call, env)

    tasks: dict[asyncio.Future[Any], int] = {asyncio.ensure_future(bounded(calls[i])): i for i in batch}
    waiter: asyncio.Future[Any] | None = asyncio.ensure_future(interrupt.wait()) if interrupt is not None else None
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Future[Any]] = set(tasks)
    try:
        while pending:
            watch: set[asyncio.Future[Any]] = set(pending)
            if waiter is not None:
                watch.add(waiter)
            timeout = max(deadline - loop.time(), 0) if deadline is not None else None
            done, _ = await asyncio.wait(watch, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            pending -= done
            if not pending:
                break
            interrupted = waiter is not None and waiter.done()
            if interrupted or (deadline is not None and loop.time() >= deadline):
                why = (
                    "the turn was interrupted while it ran"
                    if interrupted
                    else "the turn's time limit passed while it ran"
                )
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                for task in pending:
                    index = tasks[task]
                    results[index] = _cut_short(
                        calls[index], env, why, ResultCode.interrupted if interrupted else ResultCode.turn_deadline
                    )
                pending = set()
    finally:
        if waiter is not None:
            waiter.cancel()
        # Cancelled from outside (the app dropped the turn): no call may run on unowned.
        orphans = [task for task in tasks if not task.done()]
        for task in orphans:
            task.cancel()
        if orphans:
            await asyncio.shield(asyncio.gather(*orphans, return_exceptions=True))
    for task, index in tasks.items():
        if results[index] is None and task.done() and not task.cancelled():
            results[index] = task.result()


def _cut_short(call: Call, env: TurnEnv, why: str, code: str) -> ToolResult:
    name, _, version = call.name.partition("@")
    tool = env.snapshot.tool(name, version or None)
    if tool is not None and not tool.spec.read_only:
        message = (
            f"Result unknown: {why}, so `{tool.name}` was stopped; it may or may not have taken effect. Check whether "
            "it did before retrying."
        )
        return ToolResult(call.id, call.name, message, Status.unknown, code, Stage.execute)
    return ToolResult(
        call.id,
        call.name,
        f"Stopped: {why}; call it again if you still need it.",
        Status.not_executed,
        code,
        Stage.execute,
    )
