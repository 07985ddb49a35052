"""Scheduling a turn: one result per call, in order, paired by id; consecutive read-only
calls run concurrently (bounded), anything else alone; duplicate ids, stop_on_error,
the turn deadline and interrupts still answer every call."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_support import ConfigDir, call, make_env

from runtime.pipeline.turn import run_turn
from runtime.records import Call, Session, Stage, Status
from runtime.settings import Settings
from runtime.snapshot import Snapshot

HANDLERS = """
import asyncio
import time
from pathlib import Path

from runtime.errors import ToolError

EVENTS = []
STATE = {"in_flight": 0, "max": 0}
ARRIVED = {}


def reset():
    EVENTS.clear()
    STATE.update(in_flight=0, max=0)
    ARRIVED.clear()


async def nap(args):
    # With "group" and "until", a nap stays in its handler until that many naps of its
    # group have arrived (or "s" seconds pass), so calls meant to overlap do overlap on a
    # loaded machine, and calls run one after another time out of the wait instead.
    STATE["in_flight"] += 1
    STATE["max"] = max(STATE["max"], STATE["in_flight"])
    EVENTS.append(("start", args.get("tag"), time.monotonic()))
    group = args.get("group")
    ARRIVED[group] = ARRIVED.get(group, 0) + 1
    try:
        if group is None:
            await asyncio.sleep(args.get("s", 0.3))
        else:
            deadline = time.monotonic() + args.get("s", 0.3)
            while ARRIVED[group] < args["until"] and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
    finally:
        STATE["in_flight"] -= 1
        EVENTS.append(("end", args.get("tag"), time.monotonic()))
    return f"tag={args.get('tag')}"


def quick(args):
    return f"tag={args.get('tag')}"


def fail(args):
    raise ToolError(f"failed on purpose ({args.get('tag')})")


async def cancel_logging_nap(args, context):
    try:
        await asyncio.sleep(args.get("s", 2))
    except asyncio.CancelledError:
        (Path(context.workspace_root) / "cancelled.log").write_text(str(args.get("tag")))
        raise
    return "finished"


def system_exit(args):
    raise SystemExit(2)


async def async_system_exit(args):
    raise SystemExit(2)


async def raises_cancelled(args):
    raise asyncio.CancelledError()


async def swallow(args):
    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        return "partial result"  # clean up and return what it has: a common pattern
    return "full result"
"""

ANY = {"type": "object", "properties": {"tag": {"type": "string"}, "s": {"type": "number"}}}
BYPASS = Session(mode="bypass")


class Turn:
    """The snapshot, its handler module (events, in-flight counter) and a runner."""

    def __init__(self, config: ConfigDir, workspace: Path) -> None:
        c = config.handlers(HANDLERS)
        c.tool("nap", c.py("nap"), read_only=True, input_schema=ANY)
        c.tool("nap_write", c.py("nap"), input_schema=ANY)
        c.tool("quick", c.py("quick"), read_only=True, input_schema=ANY)
        c.tool("quick_write", c.py("quick"), input_schema=ANY)
        c.tool("fail", c.py("fail"), read_only=True, input_schema=ANY)
        c.tool("fail_write", c.py("fail"), input_schema=ANY)
        c.tool("slow_write", c.py("cancel_logging_nap"), input_schema=ANY)
        c.tool("slow_ro", c.py("cancel_logging_nap"), read_only=True, input_schema=ANY)
        c.tool("system_exit", c.py("system_exit"), read_only=True, input_schema=ANY)
        c.tool("async_system_exit", c.py("async_system_exit"), read_only=True, input_schema=ANY)
        c.tool("raises_cancelled", c.py("raises_cancelled"), read_only=True, input_schema=ANY)
        c.tool("swallow", c.py("swallow"), read_only=True, input_schema=ANY, timeout={"total_s": 0.2})
        c.tool("nap_limited", c.py("nap"), read_only=True, input_schema=ANY, timeout={"total_s": 0.2})
        self.snapshot: Snapshot = c.snapshot()
        self.module: ModuleType = c.loaded_module()
        self.workspace = workspace
        self.module.reset()

    async def run(
        self, calls: list[Call], *, session: Session = BYPASS, settings: Settings | None = None, **options: Any
    ):
        return await run_turn(
            calls, make_env(self.snapshot, self.workspace, session=session, settings=settings), **options
        )

    @property
    def max_in_flight(self) -> int:
        return self.module.STATE["max"]

    def times(self, tag: str) -> tuple[float, float]:
        events = {(kind, t): at for kind, t, at in self.module.EVENTS}
        return events[("start", tag)], events[("end", tag)]

    def started(self) -> list[str]:
        return [t for kind, t, _ in self.module.EVENTS if kind == "start"]


@pytest.fixture
def turn(config: ConfigDir, workspace: Path) -> Turn:
    return Turn(config, workspace)


def nap(tag: str, s: float = 0.3, *, tool: str = "nap", id: str | None = None) -> Call:  # noqa: A002
    return call(tool, {"tag": tag, "s": s}, id=id or tag)


def meeting_nap(tag: str, group: str, until: int, *, tool: str = "nap") -> Call:
    """A nap that waits (up to 10 s) until ``until`` naps of ``group`` are in their handlers."""
    return call(tool, {"tag": tag, "s": 10.0, "group": group, "until": until}, id=tag)


async def test_results_come_back_in_call_order_paired_by_id(turn: Turn) -> None:
    calls = [
        nap("a", 0.2),
        call("quick", {"tag": "b"}, id="b"),
        call("quick_write", {"tag": "c"}, id="c"),
        call("nope", id="d"),
        call("quick", {"tag": 5}, id="e"),
        nap("f", 0.05),
    ]
    results = await turn.run(calls)
    assert [r.call_id for r in results] == ["a", "b", "c", "d", "e", "f"]
    assert [r.name for r in results] == [c.name for c in calls]
    assert [r.status for r in results] == [Status.ok, Status.ok, Status.ok, Status.invalid, Status.invalid, Status.ok]
    assert [results[i].content for i in (0, 1, 2, 5)] == ["tag=a", "tag=b", "tag=c", "tag=f"]


async def test_consecutive_read_only_calls_run_concurrently(turn: Turn) -> None:
    results = await turn.run([meeting_nap(t, "abc", 3) for t in "abc"])
    assert all(r.status is Status.ok for r in results)
    assert turn.max_in_flight == 3  # all three were in their handler at once


async def test_a_write_call_splits_read_only_calls_into_batches(turn: Turn) -> None:
    results = await turn.run(
        [
            meeting_nap("a", "ab", 2),
            meeting_nap("b", "ab", 2),
            nap("w", 0.2, tool="nap_write"),
            meeting_nap("d", "de", 2),
            meeting_nap("e", "de", 2),
        ]
    )
    assert all(r.status is Status.ok for r in results)
    (a0, a1), (b0, b1), (w0, w1), (d0, d1), (e0, e1) = (turn.times(t) for t in "abwde")
    assert max(a0, b0) < min(a1, b1)  # a and b overlapped
    assert w0 >= max(a1, b1)  # the write waited for both
    assert w1 <= min(d0, e0)  # and ran alone before the next batch
    assert max(d0, e0) < min(d1, e1)
    assert turn.max_in_flight == 2


async def test_parallel_false_runs_one_call_at_a_time(turn: Turn) -> None:
    started = time.monotonic()
    await turn.run([nap("a", 0.1), nap("b", 0.1), nap("c", 0.1)], parallel=False)
    assert time.monotonic() - started >= 0.3
    assert turn.max_in_flight == 1
    assert turn.started() == ["a", "b", "c"]


async def test_max_concurrency_bounds_a_read_only_batch(turn: Turn) -> None:
    results = await turn.run([meeting_nap(t, "pair", 2) for t in "abcdef"], settings=Settings(max_concurrency=2))
    assert all(r.status is Status.ok for r in results)
    assert turn.max_in_flight == 2


async def test_duplicate_ids_are_answered_not_executed_for_the_later_calls(turn: Turn) -> None:
    calls = [
        nap("first", 0.01, id="same"),
        nap("second", 0.01, id="same"),
        nap("other", 0.01, id="other"),
        nap("third", 0.01, id="same"),
    ]
    results = await turn.run(calls)
    assert [r.call_id for r in results] == ["same", "same", "other", "same"]
    assert [r.status for r in results] == [Status.ok, Status.not_executed, Status.ok, Status.not_executed]
    assert results[0].content == "tag=first"
    for dup in (results[1], results[3]):
        assert dup.code == "duplicate_id" and dup.stage is Stage.respond
        assert "already uses the id `same`" in dup.content
    assert sorted(turn.started()) == ["first", "other"]


async def test_stop_on_error_answers_the_rest_not_executed(turn: Turn) -> None:
    calls = [
        call("quick", {"tag": "a"}, id="a"),
        call("fail", {"tag": "b"}, id="b"),
        nap("c", 0.01),
        nap("d", 0.01, tool="nap_write"),
    ]
    results = await turn.run(calls, parallel=False, stop_on_error=True)
    assert [r.status for r in results] == [Status.ok, Status.error, Status.not_executed, Status.not_executed]
    assert [r.code for r in results[2:]] == ["stopped_on_error", "stopped_on_error"]
    assert "an earlier call in this turn failed" in results[2].content
    assert turn.started() == []


async def test_without_stop_on_error_later_calls_still_run(turn: Turn) -> None:
    results = await turn.run([call("fail_write", {"tag": "x"}, id="x"), nap("y", 0.01)])
    assert [r.status for r in results] == [Status.error, Status.ok]


# A deadline or interrupt must land while given calls run; on a loaded machine the first
# limit can pass before they start, which proves nothing, so the turn runs again with the
# limit scaled up (every run still checks what holds whenever the limit lands).
SCALES = (1, 4, 16)


async def test_deadline_cuts_a_running_write_short_as_unknown_and_skips_the_rest(turn: Turn, workspace: Path) -> None:
    calls = [
        nap("a", 0.05),
        call("slow_write", {"tag": "w", "s": 30}, id="w"),
        nap("c", 0.01),
        call("quick_write", {"tag": "d"}, id="d"),
    ]
    for k in SCALES:
        turn.module.reset()
        started = time.monotonic()
        results = await turn.run(calls, deadline_s=0.4 * k)
        elapsed = time.monotonic() - started
        assert elapsed < 25  # cut at the deadline, not after the write's 30 s
        assert [r.call_id for r in results] == ["a", "w", "c", "d"]
        if results[0].status is Status.ok and results[1].status is not Status.not_executed:
            break  # the deadline landed while the write ran
    else:
        raise AssertionError(f"the write never started before the deadline: {results}")
    assert [r.call_id for r in results] == ["a", "w", "c", "d"]
    assert results[0].status is Status.ok
    assert (results[1].status, results[1].code) == (Status.unknown, "turn_deadline")
    assert results[1].content.startswith(
        "Result unknown: the turn's time limit passed while it ran, so `slow_write` was stopped"
    )
    assert "Check whether it did before retrying." in results[1].content
    for skipped in results[2:]:
        assert (skipped.status, skipped.code) == (Status.not_executed, "turn_deadline")
        assert "time limit passed before this call started" in skipped.content
    assert (workspace / "cancelled.log").read_text() == "w"


async def test_deadline_stops_running_read_only_calls_as_not_executed(turn: Turn) -> None:
    for k in SCALES:
        turn.module.reset()
        results = await turn.run([nap("a", 3 * k), nap("b", 0.01)], deadline_s=0.3 * k)
        assert (results[0].status, results[0].code) == (Status.not_executed, "turn_deadline")
        if sorted(turn.started()) == ["a", "b"] and results[1].status is not Status.not_executed:
            break  # both started before the deadline
    else:
        raise AssertionError(f"the calls never started before the deadline: {results}")
    assert results[0].content.startswith("Stopped: the turn's time limit passed while it ran")
    assert results[1].status is Status.ok


async def test_an_interrupt_while_calls_run_still_answers_every_call_once(turn: Turn) -> None:
    calls = [nap("a", 30), nap("b", 30), nap("w", 0.01, tool="nap_write"), nap("d", 0.01)]
    for k in SCALES:
        turn.module.reset()
        interrupt = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2 * k, interrupt.set)
        started = time.monotonic()
        results = await turn.run(calls, interrupt=interrupt)
        assert time.monotonic() - started < 25  # stopped at the interrupt, not after the calls' 30 s
        assert [r.call_id for r in results] == ["a", "b", "w", "d"]
        assert all(r.status is Status.not_executed and r.code == "interrupted" for r in results)
        assert turn.module.STATE["in_flight"] == 0
        if sorted(turn.started()) == ["a", "b"]:
            break  # the interrupt landed while both read-only calls ran
    else:
        raise AssertionError("the read-only calls never both started before the interrupt")
    assert results[0].content.startswith("Stopped: the turn was interrupted while it ran")
    assert "interrupted before this call started" in results[2].content
    assert sorted(turn.started()) == ["a", "b"]
    assert turn.module.STATE["in_flight"] == 0  # the running handlers were cancelled, not left behind


async def test_an_interrupt_during_a_write_makes_its_result_unknown(turn: Turn) -> None:
    interrupt = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, interrupt.set)
    (result,) = await turn.run([call("slow_write", {"tag": "w", "s": 3}, id="w")], interrupt=interrupt)
    assert (result.status, result.code) == (Status.unknown, "interrupted")
    assert result.content.startswith("Result unknown: the turn was interrupted while it ran")


async def test_an_interrupt_set_before_the_turn_runs_nothing(turn: Turn) -> None:
    interrupt = asyncio.Event()
    interrupt.set()
    results = await turn.run([nap("a", 0.01), call("quick_write", id="b")], interrupt=interrupt)
    assert [(r.status, r.code) for r in results] == [(Status.not_executed, "interrupted")] * 2
    assert turn.started() == []


@pytest.mark.parametrize(
    "between", [call("no_such_tool", id="x"), Call(id="x", name="nap", args=None, parse_error="bad JSON")]
)
async def test_unknown_and_unparsable_calls_count_as_not_read_only(turn: Turn, between: Call) -> None:
    results = await turn.run([nap("a", 0.15), between, nap("b", 0.15)])
    assert results[1].status is Status.invalid
    assert turn.max_in_flight == 1
    assert turn.times("b")[0] >= turn.times("a")[1]


async def test_a_failing_call_never_loses_its_siblings_results(turn: Turn) -> None:
    results = await turn.run(
        [nap("a", 0.1), call("fail", {"tag": "f"}, id="f"), call("quick", {"tag": 1}, id="bad"), nap("b", 0.1)]
    )
    assert [r.status for r in results] == [Status.ok, Status.error, Status.invalid, Status.ok]
    assert [r.content for r in (results[0], results[3])] == ["tag=a", "tag=b"]


SYSTEM_EXIT_CHILD = """
import json, sys
from runtime.records import Call, Session
from runtime.runtime import Runtime

config, workspace, tool = sys.argv[1:4]
rt = Runtime([config], workspace_root=workspace)
try:
    calls = [Call(id="x", name=tool, args={}), Call(id="y", name="quick", args={"tag": "y"})]
    results = rt.run_turn_sync(calls, Session(mode="bypass"))
except BaseException as err:
    print(json.dumps({"raised": type(err).__name__}))
else:
    print(json.dumps({"results": [[r.call_id, r.status.value, r.content] for r in results]}))
"""


@pytest.mark.parametrize("tool", ["system_exit", "async_system_exit"])
def test_a_handler_raising_system_exit_becomes_an_error_result(turn: Turn, config: ConfigDir, tool: str) -> None:
    # In a child process: the escaping SystemExit leaves tasks behind whose finalizers,
    # run later by the GC, trip CPython 3.11's AST recursion check in this process.
    script = turn.workspace / "child.py"
    script.write_text(SYSTEM_EXIT_CHILD)
    child = subprocess.run(
        [sys.executable, str(script), str(config.path), str(turn.workspace), tool],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    outcome = json.loads(child.stdout.strip().splitlines()[-1])
    assert "raised" not in outcome, f"run_turn raised {outcome.get('raised')}"
    (x_id, x_status, _), (y_id, y_status, _) = outcome["results"]
    assert (x_id, y_id) == ("x", "y")
    assert x_status not in ("ok", "internal") and y_status == "ok"


@pytest.mark.parametrize("calls", [["raises_cancelled"], ["raises_cancelled", "quick"]], ids=["alone", "in-a-batch"])
async def test_a_handler_raising_cancelled_error_becomes_an_error_result(turn: Turn, calls: list[str]) -> None:
    results = await turn.run([call(name, {"tag": name}, id=name) for name in calls])
    assert [r.call_id for r in results] == calls
    assert results[0].is_error and results[0].code not in ("not_reached", "internal_error")
    assert all(r.status is Status.ok for r in results[1:])


async def test_a_handler_that_swallows_its_timeout_does_not_break_the_next_timeout_in_the_turn(turn: Turn) -> None:
    try:
        results = await turn.run([call("swallow", id="a"), nap("b", 5, tool="nap_limited")], parallel=False)
    except asyncio.CancelledError:
        pytest.fail("run_turn raised CancelledError")
    assert [(r.status, r.content) for r in results][0] == (Status.ok, "partial result")
    assert (results[1].status, results[1].code) == (Status.timeout, "timeout")


async def test_a_swallowed_timeout_leaves_no_cancel_request_on_the_callers_task(turn: Turn) -> None:
    (result,) = await turn.run([call("swallow", id="a")])
    assert result.content == "partial result"
    assert asyncio.current_task().cancelling() == 0


# ---------------------------------------------------------------------------
# property: whatever the model sends, one well-formed result per call, in order

NAMES = ["quick", "quick_write", "fail", "fail_write", "nap", "nope", "", "quick@2", "nap_write"]
ARG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
ARGS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "tag": st.one_of(st.text(max_size=10), ARG_VALUES),
            "s": st.sampled_from([0, 0.001, 0.002]),
            "junk": ARG_VALUES,
        },
    ),
)
CALL = st.tuples(st.sampled_from(NAMES), st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), ARGS, st.booleans())
OPTIONS = st.fixed_dictionaries(
    {"parallel": st.booleans(), "stop_on_error": st.booleans(), "deadline_s": st.sampled_from([None, None, 5.0, 0.0])}
)
SESSIONS = st.sampled_from([BYPASS, Session(), Session(mode="plan")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(CALL, max_size=12), options=OPTIONS, session=SESSIONS, interrupted=st.booleans())
def test_any_list_of_calls_gets_one_result_per_call_in_order(
    turn: Turn, specs: list[tuple[str, str, Any, bool]], options: dict[str, Any], session: Session, interrupted: bool
) -> None:
    calls = []
    for index, (name, call_id, args, bad_json) in enumerate(specs):
        if args is None and bad_json:
            calls.append(
                Call(id=call_id, name=name, args=None, index=index, parse_error="Arguments are not valid JSON.")
            )
        else:
            calls.append(Call(id=call_id, name=name, args=args, index=index))

    async def go():
        interrupt = asyncio.Event() if interrupted else None
        if interrupt is not None:
            interrupt.set()
        return await turn.run(calls, session=session, interrupt=interrupt, **options)

    results = asyncio.run(go())
    assert len(results) == len(calls)
    seen: set[str] = set()
    for c, r in zip(calls, results, strict=True):
        assert r.call_id == c.id and r.name == c.name
        assert isinstance(r.content, str) and r.content.strip()
        assert isinstance(r.status, Status) and r.status is not Status.internal, r.content
        assert r.is_error == (r.status is not Status.ok)
        if c.id in seen:
            assert r.code == "duplicate_id"
        seen.add(c.id)
