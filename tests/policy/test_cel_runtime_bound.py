"""One CEL budget, in lint's cost units, kept at run time on both engines.

- Lint admits an expression whose worst case over the schema's bounds is within
  ``cel_cost_limit``; at run time the same expression over inputs at those bounds
  evaluates on both engines without a budget error (the run-time bound is never
  tighter than what lint admitted).
- The fast engine cannot be interrupted: before it runs, the sizes of the values the
  expression reads are measured against the largest its budget allows
  (runtime.policy.celsize); larger values are evaluated by the portable engine, which
  counts its steps and stops at the same budget, an evaluation error (fail closed).
- Hostile expressions over inputs at and beyond the bounds either evaluate or fail
  closed with a budget error, on both engines alike.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from cel_support import ENGINES, NO_TIME_LIMIT_MS, VARIABLES, evaluate

from runtime import Call, Runtime, Session
from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.policy import celbudget
from runtime.policy.cel import fast_available, get_engine
from runtime.policy.celsize import largest_size, measure, reads, worst_case
from runtime.settings import Settings

# A small budget keeps each over-budget case short; the bounds scale with it (a quarter
# of the budget, half the items: what is quadratic in N is as close to it as before).
LIMIT = 5_000

N = 25  # maxItems of the lists, maxProperties of the map
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "maxItems": N, "items": {"type": "integer"}},
        "names": {"type": "array", "maxItems": N, "items": {"type": "string", "maxLength": 40}},
        "nested": {
            "type": "array",
            "maxItems": 10,
            "items": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
        },
        "text": {"type": "string", "maxLength": 5_000},
        "m": {"type": "object", "maxProperties": N, "additionalProperties": {"type": "integer"}},
    },
}


def at_bounds() -> dict[str, Any]:
    """The largest arguments the schema accepts."""
    return {
        "items": list(range(N)),
        "names": ["n" * 39 + str(i % 10) for i in range(N)],
        "nested": [list(range(10)) for _ in range(10)],
        "text": "ab" * 2_500,
        "m": {f"k{i}": i for i in range(N)},
    }


def beyond_bounds(scale: int = 25) -> dict[str, Any]:
    """Arguments far larger than the schema's bounds (as an unbounded schema would accept).

    At the default scale the lists hold 25 times N items (one for every eight units of
    LIMIT) and the text is 50 times its bound: the costlier expressions run over LIMIT,
    the cheap ones still evaluate. The nested lists are ten times the bound on each side:
    the portable engine converts every value it is given, so a larger square would cost
    seconds before any step is counted, and a hundred times the items already runs each
    nested expression over the budget.
    """
    return {
        "items": list(range(N * scale)),
        "names": ["n" * 39 + str(i % 10) for i in range(N * scale)],
        "nested": [list(range(4 * scale)) for _ in range(4 * scale)],
        "text": "ab" * 5_000 * scale,
        "m": {f"k{i}": i for i in range(N * scale)},
    }


# Each is lint-clean under LIMIT with SCHEMA (checked below) and costly when the inputs grow.
EXPRESSIONS = [
    "args.items.all(x, x >= 0)",
    "args.items.exists(x, x == -1)",
    "args.items.exists_one(x, x == 3)",
    "args.items.map(x, x * 2).size() == size(args.items)",
    "args.items.filter(x, x % 2 == 0).size() >= 0",
    "args.items.all(x, args.items.exists(y, y == x))",
    "args.items.all(x, args.items.all(y, x + y >= 0))",
    "args.items.map(x, args.items.filter(y, y < x).size()).size() >= 0",
    "args.items.all(x, x in args.items)",
    "args.items.exists(x, int(x) + 9999999 in args.items)",
    "args.items.all(x, args.items.exists(y, int(y) == int(x)))",
    "args.items.map(x, string(x)).all(s, s.size() < 30)",
    "args.names.all(n, n.startsWith('n'))",
    "args.names.exists(n, n.contains('zz'))",
    "args.names.exists(n, n.matches('^q.*z$'))",
    "args.names.all(n, args.names.exists(o, o == n))",
    "args.names.map(n, n + n).all(s, s.size() > 0)",
    "args.nested.all(l, l.all(x, x >= 0))",
    "args.nested.exists(l, l.exists(x, x == -1))",
    "args.nested.map(l, l.size()).all(s, s >= 0)",
    "args.nested.all(l, size(l) >= 0) && size(args.nested) >= 0",
    "args.m.all(k, args.m[k] >= 0)",
    "args.m.exists(k, k.startsWith('z'))",
    "args.m.all(k, k in args.m)",
    "args.m.map(k, args.m[k]).all(v, v >= 0)",
    "args.text.contains('zz') || args.text.startsWith('b')",
    "args.text.matches('a.*c')",
    "args.text.size() > 0 && args.text.endsWith('ab')",
    "args.items.all(x, args.text.startsWith('ab'))",
    "args.items.filter(x, x > 2).map(x, x + 1).exists(y, y == 0)",
]


def _check(source: str) -> list[Any]:
    variables, bounds, key = variable_types(SCHEMA)
    typed = TypedCheck(variables, bounds, "bool", LIMIT, "rule", key=key)
    return [f for f in type_findings(source, ("rule",), typed) if not f.warning]


def _evaluate(engine_name: str, source: str, args: dict[str, Any], *, translated: bool = True) -> Any:
    return evaluate(engine_name, source, {"args": args}, LIMIT, NO_TIME_LIMIT_MS, translated=translated)


def _over_budget(outcome: Any) -> bool:
    return outcome.error is not None and ("budget" in outcome.error or "comprehension steps" in outcome.error)


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_every_hostile_expression_is_lint_clean_under_the_budget(source: str) -> None:
    assert _check(source) == [], source


@pytest.mark.parametrize("source", EXPRESSIONS)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_lint_admitted_worst_case_inputs_evaluate_within_the_budget(engine_name: str, source: str) -> None:
    outcome = _evaluate(engine_name, source, at_bounds())
    assert outcome.error is None, (source, outcome)
    assert isinstance(outcome.value, bool)


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_lint_admitted_worst_case_inputs_evaluate_on_the_portable_engine_alone(source: str) -> None:
    outcome = _evaluate("portable", source, at_bounds(), translated=False)
    assert outcome.error is None, (source, outcome)


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_both_engines_give_the_same_verdict_at_and_beyond_the_bounds(source: str) -> None:
    if not fast_available():
        pytest.skip("no fast extra")
    for args in (at_bounds(), beyond_bounds()):
        fast = _evaluate("fast", source, args)
        portable = _evaluate("portable", source, args)
        # Either both evaluate to the same value, or both fail closed on the budget.
        if _over_budget(fast) or _over_budget(portable):
            assert _over_budget(fast) and _over_budget(portable), (source, fast, portable)
        else:
            assert (fast.value, fast.error is None) == (portable.value, portable.error is None), (source, fast)


@pytest.mark.parametrize("source", EXPRESSIONS)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_beyond_the_bounds_an_expression_evaluates_or_fails_closed_on_the_budget(engine_name: str, source: str) -> None:
    outcome = _evaluate(engine_name, source, beyond_bounds())
    assert outcome.error is None or _over_budget(outcome), (source, outcome)
    assert outcome.error is not None or isinstance(outcome.value, bool)


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_the_fast_engine_never_runs_values_larger_than_its_budget_allows(source: str) -> None:
    # The fast engine's own evaluation is reached only when the measured sizes are within
    # the largest its budget allows; larger values go to the portable engine.
    largest = largest_size(source, VARIABLES, LIMIT)
    read = reads(source, VARIABLES)
    assert measure({"args": at_bounds()}, read, 10**9) >= 0
    big = measure({"args": beyond_bounds()}, read, largest)
    small_enough = big <= largest
    if not small_enough:
        assert big > largest
    # The estimate is sound: a value within it is a cost within the budget, so the
    # largest size allowed shrinks as the budget does.
    assert largest_size(source, VARIABLES, LIMIT // 10) <= largest


@pytest.mark.parametrize("limit", [1, 7, 100, LIMIT, 100_000, 10**9, 10**13])
def test_the_largest_size_is_the_last_size_whose_worst_case_is_within_the_limit(limit: int) -> None:
    # largest_size solves the cost bound from a guess instead of bisecting all of
    # [0, 2**40]: the answer must still be exactly where the cost crosses the limit.
    for source in EXPRESSIONS + NESTED_RUNAWAY + ["size(args.text + args.text) < 3", "!has(args.n) || args.n <= 5"]:
        cost = worst_case(source, VARIABLES)
        assert cost is not None, source
        largest = largest_size(source, VARIABLES, limit)
        if largest < 0:
            assert cost(0) > limit, source
        elif largest == 1 << 40:
            assert cost(largest) <= limit, source
        else:
            assert cost(largest) <= limit < cost(largest + 1), (source, limit, largest)


def test_an_expression_the_estimator_cannot_read_has_no_largest_size() -> None:
    assert worst_case("args.items.all(x,", VARIABLES) is None
    assert largest_size("args.items.all(x,", VARIABLES, LIMIT) == -1


NESTED_RUNAWAY = [
    "args.items.exists(x, args.items.exists(y, int(x) == int(y) + 9999999))",
    "args.items.all(x, args.items.all(y, string(x) != 'z'))",
    "args.items.map(x, args.items + [int(x)]).size() == 0",
    "args.items.exists(x, args.items == args.items + [int(x)])",
    "args.items.exists(x, args.items.exists(y, type(x) != type(y)))",
]


@pytest.mark.parametrize("source", NESTED_RUNAWAY)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_runaway_over_large_inputs_fails_closed_with_the_same_error_on_both_engines(
    engine_name: str, source: str
) -> None:
    outcome = _evaluate(engine_name, source, beyond_bounds(20))
    assert outcome.error is not None and "budget" in outcome.error, (source, outcome)
    assert f"{LIMIT:,} cost units" in outcome.error
    assert not outcome.is_true
    # The engine stays usable: the same expression over small inputs evaluates.
    assert _evaluate(engine_name, source, {"items": [1, 2], "names": ["a"], "text": "t"}).error is None


@pytest.mark.parametrize("engine_name", ENGINES)
def test_another_evaluation_completes_while_a_runaway_one_is_stopped(engine_name: str) -> None:
    engine = get_engine(engine_name)
    runaway = engine.compile(NESTED_RUNAWAY[0], VARIABLES, LIMIT)
    small = engine.compile("int(args.n) == 1", VARIABLES, LIMIT)
    outcomes: list[Any] = []
    started = threading.Event()

    def run() -> None:
        started.set()
        outcomes.append(runaway.evaluate(engine.activation({"args": beyond_bounds(20)}, VARIABLES)))

    thread = threading.Thread(target=run)
    thread.start()
    started.wait()
    answers = [small.evaluate(engine.activation({"args": {"n": 1}}, VARIABLES)) for _ in range(20)]
    thread.join()
    assert all(answer.is_true for answer in answers)
    assert outcomes[0].error is not None and "budget" in outcomes[0].error


def test_the_portable_budget_follows_the_cost_limit() -> None:
    assert celbudget.budget(LIMIT) == LIMIT * celbudget.STEPS_PER_UNIT
    assert celbudget.budget(LIMIT * 10) > celbudget.budget(LIMIT)  # a larger budget is never tighter


def test_the_fast_engine_budget_is_the_smaller_of_the_cost_and_the_time_limit() -> None:
    assert celbudget.fast_cost_limit(LIMIT, 60_000) == LIMIT
    assert celbudget.fast_cost_limit(10**8, 10) < 10**8
    assert celbudget.fast_cost_limit(10**8, 10) == 10 / 1000 / celbudget.FAST_SECONDS_PER_UNIT
    # A smaller time limit lets the fast engine itself take smaller values only.
    source = "args.items.all(x, x >= 0)"
    assert largest_size(source, VARIABLES, celbudget.fast_cost_limit(10**8, 1)) < largest_size(
        source, VARIABLES, celbudget.fast_cost_limit(10**8, 100)
    )


@pytest.mark.parametrize(
    ("source", "read"),
    [
        ("args.items.all(x, x > 0)", (("args", ("items",)),)),
        ("args.exists(k, k == 'a')", (("args", ()),)),
        ("args['a'].size() > 0 && tool.name == 'x'", (("tool", ()), ("args", ("a",)))),
        ("args[k] == 1", (("args", ()),)),
    ],
)
def test_only_the_values_an_expression_reads_are_measured(source: str, read: tuple[Any, ...]) -> None:
    assert reads(source, VARIABLES) == read


def test_a_large_argument_the_expression_never_reads_does_not_count() -> None:
    read = reads("args.items.all(x, x >= 0)", VARIABLES)
    assert measure({"args": {"items": [1, 2, 3], "content": "x" * 1_000_000}}, read, 10**9) == 3
    assert measure({"args": {"items": [[1] * 500], "content": ""}}, read, 10**9) == 500
    assert measure({"args": {"items": list(range(10_000))}}, read, 100) > 100  # stops early, over the cap


POLICY = """
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
      items: {type: array, maxItems: 40, items: {type: integer}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - name: guarded
      effect: deny
      tools: [lister]
      when: 'args.items.exists(x, args.items.exists(y, int(x) == int(y) + 9999999))'
"""


# The rule's nested scan over 40 items is lint-clean under this budget (about 13,000 units).
POLICY_LIMIT = 20_000


def _call(engine_name: str, tmp_path: Path, items: list[int]) -> Any:
    settings = Settings(  # type: ignore[arg-type]
        cel_engine=engine_name, cel_cost_limit=POLICY_LIMIT, cel_time_limit_ms=NO_TIME_LIMIT_MS, audit_sink="off"
    )
    runtime = Runtime([tmp_path], workspace_root=tmp_path, settings=settings)
    try:
        [result] = runtime.run_turn_sync([Call("1", "lister", {"items": items})], Session())
        return result
    finally:
        runtime.close_sync()


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_lint_clean_rule_runs_at_the_bounds_and_never_sees_inputs_beyond_them(
    engine_name: str, tmp_path: Path
) -> None:
    (tmp_path / "c.yaml").write_text(POLICY)
    at = _call(engine_name, tmp_path, list(range(40)))
    assert at.status.value == "ok", at.content
    # Validation rejects arguments beyond the schema's bounds before any rule reads them.
    beyond = _call(engine_name, tmp_path, list(range(3_000)))
    assert beyond.status.value == "invalid"
    assert "at most 40 items" in beyond.content
