"""Work that grows with the size of a value is charged by that size, in lint's units, on
every path: strings and lists built by ``+`` (a unit per 100 characters, per item),
lists and strings compared or scanned (``==``, ``in``, ``contains``, ``matches``).

- A hostile expression that builds (or scans) far more than its budget is stopped on
  the closures of both engines and on the portable engine alone, by the cost budget
  (not the time limit), holding no more memory than the budget lets it build.
- Lint's estimate agrees: it rejects the same expressions over the same bounds, the
  closures never count more than lint estimated (a budget equal to the estimate
  always suffices), and they count the same work (a tenth of it does not).
"""

from __future__ import annotations

import math
import tracemalloc
from typing import Any

import pytest
from cel_support import ENGINES, NO_TIME_LIMIT_MS, VARIABLES, evaluate

from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.policy import celclosure
from runtime.policy.cel import fast_available, get_engine, is_translated
from runtime.policy.celast import parse
from runtime.policy.celbudget import DEFAULT_COST_LIMIT, cost_message
from runtime.policy.celcheck import check
from runtime.policy.celmeter import METER


def schema(scale: int = 1) -> dict[str, Any]:
    """The input schema, its bounds divided by ``scale``."""
    return {
        "type": "object",
        "properties": {
            "names": {"type": "array", "maxItems": 1000 // scale, "items": {"type": "string", "maxLength": 10}},
            "blob": {"type": "string", "maxLength": 400_000 // scale},
            "items": {"type": "array", "maxItems": 3000 // scale, "items": {"type": "integer"}},
            "words": {"type": "array", "maxItems": 200 // scale, "items": {"type": "string", "maxLength": 2000}},
            "pairs": {
                "type": "array",
                "maxItems": 300 // scale,
                "items": {"type": "array", "maxItems": 300 // scale, "items": {"type": "integer"}},
            },
        },
    }


def at_bounds(scale: int = 1) -> dict[str, Any]:
    """The largest arguments ``schema(scale)`` accepts."""
    return {
        "names": [f"n{i:09d}" for i in range(1000 // scale)],
        "blob": "b" * (400_000 // scale),
        "items": list(range(3000 // scale)),
        "words": ["w" * 1999 + str(i % 10) for i in range(200 // scale)],
        "pairs": [list(range(300 // scale)) for _ in range(300 // scale)],
    }


SCHEMA = schema()
AT_BOUNDS = at_bounds()
# Lint's estimate is checked by running each expression to completion, so over a quarter
# of the bounds: what each one counts grows with the bounds as lint's estimate does.
SMALL = 4
SMALL_SCHEMA = schema(SMALL)
SMALL_AT_BOUNDS = at_bounds(SMALL)

# Each builds, copies or scans far more than the default budget over the data above.
HOSTILE = [
    ("the-example", "args.names.map(n, args.blob + n).size() == 0"),
    ("prefix-per-item", "args.names.map(n, n + args.blob).size() == 0"),
    ("both-sides-per-item", "args.names.map(n, args.blob + n + args.blob).size() == 0"),
    ("built-then-measured", "args.names.all(n, (args.blob + n).size() > 0)"),
    ("built-then-compared", "args.names.exists(n, args.blob + n == n)"),
    ("built-then-scanned", "args.names.exists(n, (args.blob + n).contains('zz'))"),
    ("built-then-matched", "args.names.exists(n, (args.blob + n).matches('z$'))"),
    ("built-then-prefix-test", "args.names.exists(n, (n + args.blob).startsWith('zz'))"),
    ("built-in-filter", "args.names.filter(n, (args.blob + n).size() < 0).size() > 0"),
    ("built-in-exists-one", "args.names.exists_one(n, (args.blob + n).size() < 0)"),
    ("built-in-ternary", "args.names.all(n, n.size() > 0 ? (args.blob + n).size() > 0 : true)"),
    ("built-in-both-branches", "args.names.all(n, (n.size() > 0 ? args.blob + n : n + args.blob).size() > 0)"),
    ("built-in-logic", "args.names.all(n, n == '' || (args.blob + n).size() > 0)"),
    ("built-per-pair", "args.words.all(w, args.words.all(v, (w + v).size() > 0))"),
    ("built-per-pair-three", "args.words.all(w, args.words.all(v, (w + v + w).size() > 0))"),
    ("words-onto-the-blob", "args.words.map(w, args.blob + w).size() == 0"),
    ("list-per-item", "args.items.map(x, args.items + [x]).size() == 0"),
    ("list-per-item-both-sides", "args.items.map(x, [x] + args.items + [x]).size() == 0"),
    ("list-per-pair", "args.pairs.all(p, args.pairs.all(q, (p + q).size() > 0))"),
    ("list-equality-per-item", "args.items.all(x, args.items == args.items + [])"),
    ("list-inequality-per-pair", "args.pairs.all(p, args.pairs.all(q, p == q))"),
    ("membership-per-item", "args.items.all(x, x in args.items)"),
    ("membership-per-pair", "args.pairs.all(p, p.all(x, x in p || true))"),
    ("scan-per-item", "args.items.all(x, !args.blob.contains('zz'))"),
    ("regex-per-item", "args.items.all(x, !args.blob.matches('z'))"),
    ("string-order-per-item", "args.items.all(x, args.blob <= args.blob + '')"),
    ("string-equality-per-pair", "args.words.all(w, args.words.exists(v, w == v))"),
]


def _lint_estimate(source: str, over: dict[str, Any] = SCHEMA) -> float:
    variables, bounds, _ = variable_types(over)
    cost = check(parse(source), variables).cost
    return cost.evaluate({name: float(bound.limit) for name, bound in bounds.items()})


def _lint_findings(source: str, limit: int) -> list[Any]:
    variables, bounds, key = variable_types(SCHEMA)
    typed = TypedCheck(variables, bounds, "bool", limit, "rule", key=key)
    return [f for f in type_findings(source, ("rule",), typed) if not f.warning]


def _read(source: str) -> dict[str, Any]:
    """The arguments at the bounds that ``source`` reads (the portable engine converts
    every value it is given: 90,000 integers of ``pairs`` would cost more than the
    expression's own steps up to its budget)."""
    return {"args": {name: value for name, value in AT_BOUNDS.items() if f"args.{name}" in source}}


def _evaluate(engine_name: str, source: str, cost_limit: int, *, translated: bool = True) -> Any:
    return evaluate(engine_name, source, _read(source), cost_limit, NO_TIME_LIMIT_MS, translated=translated)


def _closure_units(source: str, cost_limit: int, data: dict[str, Any]) -> tuple[str, int]:
    """What the closures make of ``source`` over ``data``, and the units they counted."""
    closure = celclosure.translate(source, VARIABLES, cost_limit, NO_TIME_LIMIT_MS)
    assert closure is not None, source
    env = celclosure.scope({"args": data})
    try:
        celclosure.run_in(closure, env)
    except celclosure.OverBudget:
        return "over", env[METER][0]
    return "within", env[METER][0] if env[METER] else 0


@pytest.mark.parametrize(("name", "source"), HOSTILE, ids=[case[0] for case in HOSTILE])
def test_lint_rejects_each_hostile_expression_over_its_bounds(name: str, source: str) -> None:
    assert _lint_estimate(source) > DEFAULT_COST_LIMIT, name
    findings = _lint_findings(source, DEFAULT_COST_LIMIT)
    assert [f.code for f in findings] == ["cel-cost"], (name, findings)


@pytest.mark.parametrize(("name", "source"), HOSTILE, ids=[case[0] for case in HOSTILE])
@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_closures_stop_a_hostile_expression_on_its_cost(engine_name: str, name: str, source: str) -> None:
    assert is_translated(get_engine(engine_name).compile(source, VARIABLES)), name
    outcome = _evaluate(engine_name, source, DEFAULT_COST_LIMIT)
    assert outcome.error == cost_message(DEFAULT_COST_LIMIT), (name, outcome)
    assert not outcome.is_true


@pytest.mark.parametrize(("name", "source"), HOSTILE, ids=[case[0] for case in HOSTILE])
def test_the_portable_engine_alone_stops_a_hostile_expression_on_its_cost(name: str, source: str) -> None:
    limit = 20_000  # a fifth of the default: the same stop, sooner
    outcome = _evaluate("portable", source, limit, translated=False)
    assert outcome.error == cost_message(limit), (name, outcome)


@pytest.mark.parametrize(("name", "source"), HOSTILE, ids=[case[0] for case in HOSTILE])
def test_the_closures_never_count_more_than_lint_estimated(name: str, source: str) -> None:
    estimate = _lint_estimate(source, SMALL_SCHEMA)
    verdict, used = _closure_units(source, math.ceil(estimate), SMALL_AT_BOUNDS)
    assert verdict == "within", (name, used, estimate)
    assert used <= estimate, (name, used, estimate)
    # And they count the same work: a tenth of lint's estimate does not suffice.
    assert _closure_units(source, math.floor(estimate / 10), SMALL_AT_BOUNDS)[0] == "over", (name, used, estimate)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_example_builds_no_more_than_its_budget_allows(engine_name: str) -> None:
    # 1,000 names onto a 400 KB string would build 400 MB; the budget (100,000 units of
    # 100 characters) lets it build 10 MB before it is stopped.
    engine = get_engine(engine_name)
    program = engine.compile(HOSTILE[0][1], VARIABLES, DEFAULT_COST_LIMIT, NO_TIME_LIMIT_MS)
    activation = engine.activation({"args": AT_BOUNDS}, VARIABLES)
    tracemalloc.start()
    try:
        outcome = program.evaluate(activation)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.error == cost_message(DEFAULT_COST_LIMIT)
    assert peak < 40_000_000, peak


def test_the_same_expression_over_small_values_evaluates() -> None:
    small = {"names": ["a", "b"], "blob": "xyz", "items": [1, 2], "words": ["w"], "pairs": [[1], [2]]}
    for name, source in HOSTILE:
        for engine_name in ("portable", "fast") if fast_available() else ("portable",):
            engine = get_engine(engine_name)
            outcome = engine.compile(source, VARIABLES).evaluate(engine.activation({"args": small}, VARIABLES))
            assert outcome.error is None, (name, engine_name, outcome)
