"""One activation serves every expression of a call (business rules, then policy
conditions): evaluating many expressions in turn on one activation gives each the
outcome it gets on an activation of its own, in any order, with the comprehension step
budget counted afresh for each, and a variable found plain once stays plain."""

from __future__ import annotations

import random
from typing import Any

import pytest
from test_cel_conformance import ACTIVATIONS, CORPUS

from runtime.policy.cel import POLICY_VARIABLES, Outcome, get_engine, known_plain
from runtime.policy.celbudget import DEFAULT_COST_LIMIT
from runtime.policy.celdata import call_activation
from runtime.records import Call, Session
from runtime.testing import FakeTool, snapshot_from_yaml

EXPRESSIONS = [source for source, _verdicts in CORPUS]


def _data(name: str) -> dict[str, Any]:
    return {"commands": [], **ACTIVATIONS[name]}


def _same(a: Outcome, b: Outcome) -> bool:
    if (a.error is None) != (b.error is None):
        return False
    return a.error == b.error if a.error is not None else repr(a.value) == repr(b.value)


@pytest.mark.parametrize("engine_name", ["fast", "portable"])
@pytest.mark.parametrize("activation_name", sorted(ACTIVATIONS))
def test_many_expressions_on_one_activation_read_as_each_on_its_own(engine_name: str, activation_name: str) -> None:
    engine = get_engine(engine_name)
    programs = []
    for source in EXPRESSIONS:
        try:
            programs.append(engine.compile(source, POLICY_VARIABLES))
        except Exception:  # noqa: BLE001 - an expression this engine refuses at compile: not evaluated
            continue
    alone = [program.evaluate(engine.activation(_data(activation_name), POLICY_VARIABLES)) for program in programs]
    for seed in range(3):
        order = list(range(len(programs)))
        random.Random(seed).shuffle(order)
        shared = engine.activation(_data(activation_name), POLICY_VARIABLES)
        for index in order:
            outcome = programs[index].evaluate(shared)
            assert _same(outcome, alone[index]), (programs[index].source, outcome, alone[index])


def test_the_cost_budget_starts_afresh_for_each_expression_of_one_activation() -> None:
    engine = get_engine("fast")
    # Each item costs 4 units (`x == 0`: 3, and one): each evaluation alone is within the
    # budget; together they would not be.
    count = DEFAULT_COST_LIMIT // 4 - 10
    program = engine.compile("args.l.all(x, x == 0)", POLICY_VARIABLES)
    shared = engine.activation({"args": {"l": [0] * count}}, POLICY_VARIABLES)
    for _ in range(5):
        assert program.evaluate(shared) == Outcome(value=True)


def test_a_budget_overrun_in_one_expression_does_not_carry_into_the_next() -> None:
    engine = get_engine("portable")
    big = engine.compile("args.l.all(x, args.l.all(y, true))", POLICY_VARIABLES)
    small = engine.compile("args.l.exists(x, x == 3)", POLICY_VARIABLES)
    shared = engine.activation({"args": {"l": list(range(1000))}}, POLICY_VARIABLES)
    assert "budget of 100,000 cost units" in (big.evaluate(shared).error or "")
    assert small.evaluate(shared) == Outcome(value=True)


def test_a_value_outside_plain_json_is_still_left_to_the_engine_on_a_shared_activation() -> None:
    engine = get_engine("fast")
    program = engine.compile('args.path.startsWith("/etc")', POLICY_VARIABLES)
    shared = engine.activation({"args": {"path": ("/etc",)}}, POLICY_VARIABLES)
    first, second = program.evaluate(shared), program.evaluate(shared)
    assert first.error is not None and _same(first, second)


SNAPSHOT_YAML = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: t}
spec:
  description: A tool.
  handler: python:fakes:t
  read_only: true
  input_schema: {type: object, properties: {path: {type: string, maxLength: 50}}}
"""


def test_args_marked_plain_by_validate_read_the_same_as_args_walked_by_the_closures() -> None:
    snapshot = snapshot_from_yaml(SNAPSHOT_YAML, fakes={"t": FakeTool()})
    tool = snapshot.tools["t"]
    program = get_engine(snapshot.cel_engine).compile(
        'args.path.startsWith("/etc") && tool.name == "t"', POLICY_VARIABLES
    )
    for path in ("/etc/x", "/tmp", ""):
        args = {"path": path}
        marked = call_activation(snapshot.cel_engine, Call("1", "t", args), tool, args, Session(), args_plain=True)
        walked = call_activation(snapshot.cel_engine, Call("1", "t", args), tool, args, Session())
        assert _same(program.evaluate(marked), program.evaluate(walked))


def test_marking_plain_has_no_effect_on_an_engine_activation() -> None:
    raw = get_engine("fast", translated=False).activation({"args": {"a": 1}}, POLICY_VARIABLES)
    known_plain(raw, "args")  # not a closures' activation: nothing to mark, nothing raised
