"""Every CEL evaluation is bounded at run time, on both engines: an expression that runs
over its budget is stopped and is an evaluation error (a deny rule then matches: fail
closed), and the engine stays usable for the next evaluation.

- Expressions in the closures' subset (both engines) count their comprehension steps
  (runtime.policy.celclosure.MAX_STEPS).
- Expressions the portable engine evaluates itself count every tree node visited and
  every item copied or scanned (runtime.policy.celbudget), and stop at a deadline.
- The fast engine cannot be interrupted: it is checked before it starts, and values
  larger than its budget allows go to the portable engine (see test_cel_runtime_bound).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from cel_support import ENGINES, VARIABLES, compiled

from runtime.policy.cel import fast_available, get_engine, is_translated

BIG = list(range(3000))
TEXT = "a" * 200_000

# Outside the closures' subset (conversions, type tests, ...): the portable engine runs them itself.
ENGINE_RUN: list[tuple[str, str, dict[str, Any]]] = [
    ("nested-exists-with-conversions", "args.items.exists(x, args.items.exists(y, int(x) == int(y) + 9999999))", {}),
    ("nested-all-with-conversions", "args.items.all(x, args.items.all(y, string(x) != 'z'))", {}),
    ("map-copying-the-list-per-item", "args.items.map(x, args.items + [int(x)]).size() == 0", {}),
    ("filter-of-a-map-of-copies", "args.items.map(x, [int(x)] + args.items).filter(l, size(l) == 0).size() > 0", {}),
    ("in-over-the-list-per-item", "args.items.exists(x, int(x) + 9999999 in args.items)", {}),
    ("exists-one-nested", "args.items.exists_one(x, args.items.exists_one(y, uint(y) == uint(x) + 9999999u))", {}),
    ("string-growing-per-item", "args.items.map(x, args.text + string(x)).size() == 0", {}),
    ("list-equality-per-item", "args.items.exists(x, args.items == args.items + [int(x)])", {}),
    ("triple-nesting", "args.items.exists(x, args.items.exists(y, args.items.exists(z, int(z) < 0)))", {}),
    ("type-tests-per-pair", "args.items.exists(x, args.items.exists(y, type(x) != type(y)))", {}),
]

# In the closures' subset: evaluated without the engine, on either engine.
TRANSLATED: list[tuple[str, str]] = [
    ("nested-exists", "args.items.exists(x, args.items.exists(y, x == y + 9999999))"),
    ("nested-all", "args.items.all(x, args.items.all(y, x != -1))"),
    ("nested-map", "args.items.map(x, args.items.map(y, x + y)).size() == 0"),
    ("nested-filter", "args.items.filter(x, args.items.filter(y, y == x + 9999999).size() > 0).size() > 0"),
    ("exists-one-nested", "args.items.exists_one(x, args.items.exists_one(y, y == x + 9999999))"),
    ("exists-over-a-map-of-copies", "args.items.map(x, args.items).exists(l, l.exists(y, y < 0))"),
]


def _data(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"args": {"items": BIG, "text": TEXT, **(extra or {})}}


@pytest.mark.parametrize(("name", "source", "extra"), ENGINE_RUN, ids=[case[0] for case in ENGINE_RUN])
@pytest.mark.parametrize("translated", [False, True])
def test_the_portable_engine_stops_an_evaluation_over_its_budget(
    name: str, source: str, extra: dict[str, Any], translated: bool
) -> None:
    engine = get_engine("portable", translated=translated)
    program = engine.compile(source, VARIABLES)
    assert not is_translated(program)
    outcome = program.evaluate(engine.activation(_data(extra), VARIABLES))
    assert outcome.error is not None and "budget" in outcome.error, (name, outcome)
    assert not outcome.is_true
    # The lock was let go and the budget renewed: a small evaluation right after works.
    small = engine.compile("args.items.all(x, int(x) >= 0)", VARIABLES)
    assert small.evaluate(engine.activation({"args": {"items": [1, 2, 3]}}, VARIABLES)).is_true


@pytest.mark.parametrize(("name", "source"), TRANSLATED, ids=[case[0] for case in TRANSLATED])
@pytest.mark.parametrize("engine_name", ENGINES)
def test_translated_expressions_are_stopped_on_both_engines(name: str, source: str, engine_name: str) -> None:
    program, activation = compiled(engine_name, source, _data())
    assert is_translated(program)
    outcome = program.evaluate(activation)
    assert outcome.error is not None and "budget" in outcome.error, (name, outcome)


@pytest.mark.parametrize(("name", "source", "extra"), ENGINE_RUN, ids=[case[0] for case in ENGINE_RUN])
def test_small_inputs_stay_within_the_budget_and_both_engines_agree(
    name: str, source: str, extra: dict[str, Any]
) -> None:
    data = {"args": {"items": [1, 2, 3], "text": "ab", **extra}}
    values = []
    for engine_name in ("portable", "fast") if fast_available() else ("portable",):
        engine = get_engine(engine_name, translated=False)
        outcome = engine.compile(source, VARIABLES).evaluate(engine.activation(data, VARIABLES))
        assert outcome.error is None or "budget" not in outcome.error, (name, outcome)
        values.append((outcome.value, outcome.error is None))
    assert len(set(map(repr, values))) == 1, (name, values)


def test_a_cost_budget_stops_an_evaluation_before_the_time_limit() -> None:
    engine = get_engine("portable", translated=False)
    activation = engine.activation({"args": {"items": list(range(40))}}, VARIABLES)
    source = "args.items.all(x, int(x) >= 0)"
    assert engine.compile(source, VARIABLES).evaluate(activation).is_true
    outcome = engine.compile(source, VARIABLES, 30, 60_000).evaluate(activation)  # 300 steps, a minute
    assert outcome.error is not None and "budget of 30 cost units" in outcome.error
    assert "cel_cost_limit" in outcome.error


def test_other_threads_evaluate_while_a_runaway_evaluation_is_stopped() -> None:
    engine = get_engine("portable", translated=False)
    runaway = engine.compile(ENGINE_RUN[0][1], VARIABLES)
    small = engine.compile("int(args.n) == 1", VARIABLES)
    outcomes: list[Any] = []
    thread = threading.Thread(target=lambda: outcomes.append(runaway.evaluate(engine.activation(_data(), VARIABLES))))
    thread.start()
    answers = [small.evaluate(engine.activation({"args": {"n": 1}}, VARIABLES)) for _ in range(20)]
    thread.join()
    assert all(answer.is_true for answer in answers)
    assert outcomes[0].error is not None and "budget" in outcomes[0].error


TOOL = """
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
      items: {type: array, maxItems: 3000, items: {type: integer}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - name: runaway
      effect: deny
      tools: [lister]
      when: 'args.items.exists(x, args.items.exists(y, int(x) == int(y) + 9999999))'
"""


def test_lint_rejects_the_same_rule_under_the_default_cost_limit(tmp_path: Path) -> None:
    from runtime import load_snapshot
    from runtime.errors import ConfigError

    (tmp_path / "c.yaml").write_text(TOOL)
    with pytest.raises(ConfigError) as caught:
        load_snapshot([tmp_path])
    assert "cel-cost" in str(caught.value) or "may cost up to" in str(caught.value)
