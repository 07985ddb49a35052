"""runtime.policy.conditions: how a tool's policy conditions are planned at build and settled per call."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.policy.cel import POLICY_VARIABLES, Outcome, get_engine
from runtime.policy.conditions import NOTHING_KNOWN, holds_without_cel, outcome_of, settle_batch
from runtime.settings import Settings
from runtime.snapshot import CompiledPolicyRule, Snapshot
from runtime.testing import FakeTool, snapshot_from_yaml

POLICY = """\
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - {name: tool-only, effect: deny, tools: [t], when: 'tool.read_only == false'}
    - {name: big, effect: deny, tools: [t], when: 'has(args.n) && args.n > 10'}
    - {name: tags, effect: ask, tools: [t], when: 'has(args.tags) && args.tags.exists(x, x == "prod")'}
    - {name: simple, effect: deny, tools: [t], when: 'args.path.startsWith("/etc")'}
    - {name: plain, effect: allow, tools: [t]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: t}
spec:
  description: A tool.
  handler: python:fakes:t
  read_only: true
  input_schema:
    type: object
    properties:
      path: {type: string, maxLength: 100}
      n: {type: integer}
      tags: {type: array, items: {type: string, maxLength: 10}, maxItems: 5}
"""


def build(engine: str) -> Snapshot:
    settings = Settings(cel_engine=engine, schema_engine="portable")
    return snapshot_from_yaml(POLICY, fakes={"t": FakeTool()}, settings=settings)


def rules_of(snapshot: Snapshot) -> dict[str, CompiledPolicyRule]:
    return {rule.name: rule for rule in snapshot.rule_index["t"]}


def activation_for(snapshot: Snapshot, args: dict[str, Any]) -> Any:
    data = {"args": args, "tool": {"name": "t", "read_only": True}, "session": {}, "call": {}, "commands": []}
    return get_engine(snapshot.cel_engine).activation(data, POLICY_VARIABLES)


@pytest.mark.parametrize("engine", ["fast", "portable"])
def test_a_condition_on_the_tool_alone_is_folded_at_build(engine: str) -> None:
    snapshot = build(engine)
    rule = rules_of(snapshot)["tool-only"]
    plan = snapshot.when_plans["t"]
    assert plan.known[id(rule)] == Outcome(value=False)
    assert holds_without_cel(rule, plan.known, {}) is False


def test_the_fast_engine_batches_the_conditions_that_need_it_and_settles_them_in_one_evaluation() -> None:
    snapshot = build("fast")
    rules = snapshot.rule_index["t"]
    plan = snapshot.when_plans["t"]
    assert plan.batch is not None and len(plan.positions) == 2
    built: list[int] = []

    def activation() -> Any:
        built.append(1)
        return activation_for(snapshot, {"n": 11, "tags": ["dev"]})

    known = settle_batch(plan, rules, activation)
    assert len(built) == 1
    by_name = rules_of(snapshot)
    assert known[id(by_name["big"])] == Outcome(value=True)
    assert known[id(by_name["tags"])] == Outcome(value=False)


def test_a_batch_that_errors_settles_none_of_its_conditions() -> None:
    snapshot = build("fast")
    rules = snapshot.rule_index["t"]
    plan = snapshot.when_plans["t"]
    known = settle_batch(plan, rules, lambda: activation_for(snapshot, {"n": "eleven"}))
    by_name = rules_of(snapshot)
    assert id(by_name["big"]) not in known
    # evaluated alone, the error is its own, and a deny rule's error fails closed upstream
    outcome = outcome_of(by_name["big"], known, {"n": "eleven"}, lambda: activation_for(snapshot, {"n": "eleven"}))
    assert outcome.error is not None


@pytest.mark.parametrize("engine", ["fast", "portable"])
def test_a_simple_condition_is_read_directly_without_building_an_activation(engine: str) -> None:
    snapshot = build(engine)
    rule = rules_of(snapshot)["simple"]

    def no_activation() -> Any:
        raise AssertionError("the activation was built")

    assert outcome_of(rule, NOTHING_KNOWN, {"path": "/etc/passwd"}, no_activation) == Outcome(value=True)
    assert holds_without_cel(rule, NOTHING_KNOWN, {"path": "src/a.py"}) is False
    # a value of another type: the direct check is not certain, the program decides (an error)
    outcome = outcome_of(rule, NOTHING_KNOWN, {"path": 7}, lambda: activation_for(snapshot, {"path": 7}))
    assert outcome.error is not None
    assert holds_without_cel(rule, NOTHING_KNOWN, {"path": 7}) is None


@pytest.mark.parametrize("engine", ["fast", "portable"])
@pytest.mark.parametrize(
    ("args", "big", "tags"),
    [
        ({}, False, False),
        ({"n": 3}, False, False),
        ({"n": 30}, True, False),
        ({"tags": ["prod"]}, False, True),
        ({"n": 11, "tags": ["a", "prod"]}, True, True),
    ],
)
def test_every_way_of_settling_gives_the_programs_answer(
    engine: str, args: dict[str, Any], big: bool, tags: bool
) -> None:
    snapshot = build(engine)
    rules = snapshot.rule_index["t"]
    plan = snapshot.when_plans.get("t")
    known = settle_batch(plan, rules, lambda: activation_for(snapshot, args)) if plan is not None else NOTHING_KNOWN
    by_name = rules_of(snapshot)
    for name, expected in (("big", big), ("tags", tags)):
        rule = by_name[name]
        settled = outcome_of(rule, known, args, lambda: activation_for(snapshot, args))
        assert rule.when is not None
        alone = rule.when.evaluate(activation_for(snapshot, args))
        assert settled == alone == Outcome(value=expected)
    assert holds_without_cel(by_name["plain"], known, args) is True
