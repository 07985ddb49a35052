"""Every CEL evaluation is bounded in time as well as in cost units (setting
``cel_time_limit_ms``), on every path: the closures, the portable engine, and the fast
engine (checked before it starts; values its time allows not go to the portable one).

- With a cost budget too large to bind, a hostile expression over large inputs is
  stopped by the time limit as an evaluation error naming the setting, on both
  engines, in far less than the seconds it would otherwise hold the thread.
- On the event loop: while a hostile evaluation is being stopped, a concurrent call on
  the same loop gets its result, and the loop never stalls for long (a heartbeat task
  measures its longest gap).
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from cel_support import ENGINES, VARIABLES, compiled

from runtime import Call, Runtime, Session
from runtime.policy import celbudget
from runtime.policy.cel import get_engine, is_translated
from runtime.settings import Settings

HUGE_COST = 100_000_000  # the largest cel_cost_limit: the time limit binds first
LIMIT_MS = 50
# Generous: the evaluation's own CPU time is bounded by the limit; a loaded machine
# stretches a step, never the bound by this much.
SLACK = 10

N = 3000
TEXT = "a" * 1_000_000
DATA: dict[str, Any] = {
    "args": {
        "items": list(range(N)),
        "same": list(range(N)),
        "names": [f"name-{i:05d}" for i in range(1000)],
        "text": TEXT,
        "text2": "a" * 1_000_000,  # equal to text, not the same object: compared in full
        "m": {f"k{i}": i for i in range(N)},
    }
}

# In the closures' subset (either engine runs them without the engine).
TRANSLATED = [
    ("nested-all", "args.items.all(x, args.items.all(y, x + y >= 0))"),
    ("nested-exists", "args.items.exists(x, args.items.exists(y, x == y + 9999999))"),
    ("nested-map", "args.items.map(x, args.items.map(y, x + y)).size() == 0"),
    ("nested-filter", "args.items.filter(x, args.items.filter(y, y == x + 9999999).size() > 0).size() > 0"),
    ("nested-exists-one", "args.items.exists_one(x, args.items.exists_one(y, y == x + 9999999))"),
    ("membership-per-item", "args.items.all(x, x in args.same)"),
    ("negated-membership-per-item", "args.items.all(x, !(x + 9999999 in args.same))"),
    ("list-equality-per-item", "args.items.all(x, args.items == args.same)"),
    ("list-inequality-per-item", "args.items.exists(x, args.items != args.same)"),
    # Three 1 MB scans per item: with one, the whole evaluation takes about 1.5x the
    # limit, and a machine with faster memory could finish it with nothing to stop.
    (
        "string-equality-per-item",
        "args.items.all(x, args.text == args.text2 && args.text2 == args.text && args.text == args.text2)",
    ),
    (
        "string-ordering-per-item",
        "args.items.all(x, args.text <= args.text2 && args.text2 <= args.text && args.text >= args.text2)",
    ),
    (
        "contains-per-item",
        "args.items.all(x, !args.text.contains(args.text2 + 'b') && !args.text2.contains(args.text + 'b')"
        " && !args.text.contains(args.text2 + 'c'))",
    ),
    ("contains-per-pair", "args.items.all(x, args.names.all(n, !args.text.contains(n)))"),
    ("starts-with-per-item", "args.items.all(x, args.text.startsWith(args.text2))"),
    ("ends-with-per-item", "args.items.all(x, args.text.endsWith(args.text2))"),
    ("matches-per-item", "args.items.all(x, !args.text.matches('b'))"),
    ("string-built-per-item", "args.names.map(n, args.text + n).size() == 0"),
    ("string-built-per-pair", "args.names.all(n, args.names.all(o, (n + o).size() > 0))"),
    # Two lists copied per item: with one, the whole evaluation takes about 2x the limit.
    ("list-built-per-item", "args.items.map(x, args.items + args.same + [x]).size() == 0"),
    ("list-built-per-pair", "args.items.all(x, args.items.all(y, ([x] + [y]).size() == 2))"),
    ("map-keys-nested", "args.m.all(k, args.m.all(j, k != j + 'z'))"),
    ("map-values-nested", "args.m.all(k, args.m.exists(j, args.m[j] == args.m[k] + 9999999) || true)"),
    ("sibling-loops", " && ".join(["args.items.all(x, args.items.all(y, y >= 0))"] * 3)),
    ("triple-nesting", "args.items.all(x, args.items.all(y, args.items.all(z, z >= 0)))"),
    ("long-flat-body", "args.items.all(x, args.items.all(y, " + " && ".join(f"y != {-i}" for i in range(1, 60)) + "))"),
    ("ternary-heavy-branch", "args.items.all(x, x >= 0 ? args.items.all(y, y >= 0) : false)"),
    ("error-absorbed-per-item", "args.items.all(x, args.items.all(y, y / 0 == 1 || true))"),
    ("filter-then-nested", "args.items.filter(x, x >= 0).all(x, args.items.exists(y, y < 0) || true)"),
]

# Outside the subset: the portable engine evaluates them itself; the fast engine runs
# only values its budget allows and hands the rest to the portable engine.
ENGINE_RUN = [
    ("nested-exists-with-conversions", "args.items.exists(x, args.items.exists(y, int(x) == int(y) + 9999999))"),
    ("nested-all-with-strings", "args.items.all(x, args.items.all(y, string(x) != 'z'))"),
    ("map-copying-per-item", "args.items.map(x, args.items + [int(x)]).size() == 0"),
    ("type-tests-per-pair", "args.items.exists(x, args.items.exists(y, type(x) != type(y)))"),
    ("uint-per-pair", "args.items.exists_one(x, args.items.exists_one(y, uint(y) == uint(x) + 9999999u))"),
    ("string-grown-per-item", "args.items.map(x, args.text + string(x)).size() == 0"),
    ("double-per-pair", "args.items.all(x, args.items.all(y, double(x) + double(y) >= 0.0))"),
    ("dyn-per-pair", "args.items.all(x, args.items.all(y, dyn(x) != 'z'))"),
]


def _read(source: str) -> dict[str, Any]:
    """The arguments ``source`` reads: the portable engine converts every value it is
    given before its first step, and converting all of DATA (two 1 MB strings, 3,000-item
    lists and map) costs more CPU than the time limit on a loaded machine."""
    return {"args": {name: value for name, value in DATA["args"].items() if re.search(rf"args\.{name}\b", source)}}


def _stopped_in_time(engine_name: str, source: str, *, translated: bool = True) -> tuple[Any, float]:
    """The outcome of one evaluation and the CPU it took; the least CPU of up to three
    evaluations when the first goes over SLACK times the limit. Each evaluation must end
    in the budget error (checked by the caller on the returned outcome, and here on the
    others): a stop is a property of the program, but the CPU a run is charged is also
    one of the machine (a case charged 0.55 s once while a whole suite ran on the same
    two cores, 0.2 s alone on a busy machine; a virtual CPU may be charged for time the
    host held it)."""
    program, activation = compiled(engine_name, source, _read(source), HUGE_COST, LIMIT_MS, translated=translated)
    best: tuple[Any, float] | None = None
    for _ in range(3):
        started = time.thread_time()
        outcome = program.evaluate(activation)
        cpu = time.thread_time() - started
        if best is not None:
            assert outcome.error == best[0].error, (outcome, best[0])
        if best is None or cpu < best[1]:
            best = (outcome, cpu)
        if cpu < SLACK * LIMIT_MS / 1000 or not _is_budget_error(outcome):
            break
    assert best is not None
    return best


def _is_budget_error(outcome: Any) -> bool:
    error = outcome.error or ""
    return f"time budget of {LIMIT_MS} ms" in error or f"budget of {HUGE_COST:,} cost units" in error


@pytest.mark.parametrize(("name", "source"), TRANSLATED, ids=[case[0] for case in TRANSLATED])
@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_closures_stop_a_hostile_evaluation_at_the_time_limit(engine_name: str, name: str, source: str) -> None:
    assert is_translated(get_engine(engine_name).compile(source, VARIABLES)), name
    outcome, cpu = _stopped_in_time(engine_name, source)
    assert _is_budget_error(outcome), (name, outcome)
    assert not outcome.is_true
    assert cpu < SLACK * LIMIT_MS / 1000, (name, cpu)


@pytest.mark.parametrize(("name", "source"), ENGINE_RUN, ids=[case[0] for case in ENGINE_RUN])
@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("translated", [True, False])
def test_the_engines_stop_a_hostile_evaluation_at_the_time_limit(
    engine_name: str, translated: bool, name: str, source: str
) -> None:
    if engine_name == "fast" and not translated:
        pytest.skip("the fast engine alone cannot be interrupted: its bound is the translated engine's check")
    assert not is_translated(get_engine(engine_name).compile(source, VARIABLES)), name
    outcome, cpu = _stopped_in_time(engine_name, source, translated=translated)
    assert _is_budget_error(outcome), (name, outcome)
    assert not outcome.is_true
    assert cpu < SLACK * LIMIT_MS / 1000, (name, cpu)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_time_message_names_the_setting_and_the_limit(engine_name: str) -> None:
    outcome, _ = _stopped_in_time(engine_name, TRANSLATED[0][1])
    assert outcome.error == celbudget.time_message(LIMIT_MS)
    assert "cel_time_limit_ms" in outcome.error


@pytest.mark.parametrize("engine_name", ENGINES)
def test_small_inputs_evaluate_under_the_same_time_limit(engine_name: str) -> None:
    small = {"args": {**DATA["args"], "items": [1, 2, 3], "same": [1, 2, 3], "text": "ab", "text2": "ab"}}
    small["args"]["names"] = ["a", "b"]
    small["args"]["m"] = {"k1": 1}
    engine = get_engine(engine_name)
    for name, source in TRANSLATED + ENGINE_RUN:
        outcome = engine.compile(source, VARIABLES, HUGE_COST, LIMIT_MS).evaluate(engine.activation(small, VARIABLES))
        assert outcome.error is None or "budget" not in outcome.error, (name, outcome)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_time_spent_in_the_closures_counts_when_the_engine_takes_over(engine_name: str) -> None:
    # The closures run the comprehension, then meet what only the engine decides (a double
    # index): the engine gets what is left of the time limit, not a fresh one.
    source = "args.items.all(x, args.items.all(y, y >= 0)) && args.items[1.0] == 1"
    program = get_engine(engine_name).compile(source, VARIABLES, HUGE_COST, LIMIT_MS)
    assert is_translated(program)
    outcome, cpu = _stopped_in_time(engine_name, source)
    assert _is_budget_error(outcome), outcome
    assert cpu < SLACK * LIMIT_MS / 1000


def test_the_time_limit_is_a_setting_with_a_default() -> None:
    assert Settings().cel_time_limit_ms == celbudget.DEFAULT_TIME_LIMIT_MS == 100
    assert Settings(cel_time_limit_ms=5).cel_time_limit_ms == 5
    with pytest.raises(ValueError, match="cel_time_limit_ms"):
        Settings(cel_time_limit_ms=0)


# -- on the event loop --------------------------------------------------------------

CONFIG = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: lister}
spec:
  description: lists
  handler: builtin:tool_search
  read_only: true
  input_schema:
    type: object
    required: [items]
    properties:
      items: {type: array, maxItems: 90, items: {type: integer}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: pinger}
spec:
  description: answers
  handler: builtin:tool_search
  read_only: true
  input_schema: {type: object}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    # Lint-clean under the default budget (100,000 units), and seconds of CPU on the
    # portable engine at the schema's bound without a time limit.
    - name: costly
      effect: deny
      tools: [lister]
      when: 'args.items.exists(x, args.items.exists(y, int(x) == int(y) + 9999999))'
"""


async def _turns_beside_a_heartbeat(runtime: Runtime) -> tuple[Any, Any, float, float]:
    """The two calls' results, and the loop's longest stall between two beats of a
    heartbeat task: in the loop thread's CPU time (what the calls held it for, whatever
    the machine's load) and in wall time."""
    gaps: list[float] = []
    walls: list[float] = []
    beating = asyncio.Event()
    done = False

    async def heartbeat() -> None:
        last, last_wall = time.thread_time(), time.monotonic()
        while not done:
            await asyncio.sleep(0.002)
            now, now_wall = time.thread_time(), time.monotonic()
            gaps.append(now - last)
            walls.append(now_wall - last_wall)
            last, last_wall = now, now_wall
            beating.set()

    task = asyncio.create_task(heartbeat())
    await beating.wait()
    session = Session()
    hostile, other = await asyncio.gather(
        runtime.run_turn([Call("1", "lister", {"items": list(range(90))})], session),
        runtime.run_turn([Call("2", "pinger", {"query": "x"})], session),
    )
    done = True
    await task
    return hostile[0], other[0], max(gaps), max(walls)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_concurrent_call_gets_its_result_while_a_hostile_evaluation_is_stopped(
    engine_name: str, tmp_path: Path
) -> None:
    (tmp_path / "c.yaml").write_text(CONFIG)
    settings = Settings(cel_engine=engine_name, audit_sink="off")  # type: ignore[arg-type]
    runtime = Runtime([tmp_path], workspace_root=tmp_path, settings=settings)
    try:
        hostile, other, stall, wall = asyncio.run(_turns_beside_a_heartbeat(runtime))
    finally:
        runtime.close_sync()
    assert other.status.value == "ok", other.content
    if engine_name == "portable":
        # Stopped at the time limit: an evaluation error, so the deny rule matches.
        assert hostile.status.value == "denied", hostile.content
        assert "cel_time_limit_ms" in hostile.content or "costly" in hostile.content
    else:
        assert hostile.status.value == "ok", hostile.content  # the fast engine runs it in milliseconds
    limit = settings.cel_time_limit_ms / 1000
    # Without the time limit the portable engine holds the loop for seconds of CPU here.
    # Wall time is not asserted: a starved process stretches it whatever the bound.
    assert stall < SLACK * limit, f"the event loop was held {stall:.3f} s of CPU ({wall:.3f} s wall; limit {limit} s)"
