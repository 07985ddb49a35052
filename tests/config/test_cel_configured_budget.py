"""Every CEL program a snapshot holds is bounded by the configured budget
(``cel_cost_limit``, ``cel_time_limit_ms``): tool rules, policy conditions and the
batch that evaluates them together, reason expressions, workflow conditions and
argument expressions. A smaller budget binds every evaluation path (the closures too),
and an evaluation over it fails closed with a message naming the budget and its setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from cel_support import ENGINES, compiled, evaluate

from runtime.config.compile import load_snapshot
from runtime.policy.cel import POLICY_VARIABLES, get_engine
from runtime.policy.celbudget import cost_message, time_message
from runtime.settings import Settings

COST, TIME_MS = 4_321, 77

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
    required: [items, name]
    properties:
      items: {type: array, maxItems: 20, items: {type: integer}}
      name: {type: string, maxLength: 20}
  rules:
    - {name: positive, expression: 'args.items.all(x, x >= 0)', message: no negatives}
    - {name: int-converted, expression: 'args.items.all(x, int(x) >= 0)', message: no negatives}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - name: first
      effect: deny
      tools: [lister]
      when: 'args.items.exists(x, x == 13)'
      reason_expression: '"found " + args.name'
    - name: second
      effect: ask
      tools: [lister]
      when: 'args.items.exists(x, x == 14) || args.name.startsWith("z")'
    - name: third
      effect: deny
      tools: [lister]
      when: 'args.items.exists(x, int(x) == 15)'
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: flow}
spec:
  input_schema:
    type: object
    required: [items]
    properties: {items: {type: array, maxItems: 20, items: {type: integer}}}
  steps:
    - {id: a, tool: lister, args: {items: "${input.items}", name: "a"}}
    - id: b
      tool: lister
      depends_on: [a]
      when: 'input.items.all(x, x >= 0)'
      args: {items: "${input.items.map(x, x + 1)}", name: "${'b' + string(size(input.items))}"}
"""


def _programs(value: Any, seen: set[int]) -> Iterator[Any]:
    """Every compiled CEL program reachable from ``value`` (they carry their budget)."""
    if id(value) in seen or value is None or isinstance(value, (str, bytes, int, float, bool, Path)):
        return
    seen.add(id(value))
    if hasattr(value, "budget") and hasattr(value, "evaluate") and hasattr(value, "source"):
        yield value
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _programs(getattr(value, field.name), seen)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _programs(item, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _programs(item, seen)
    elif hasattr(value, "__slots__"):
        for name in getattr(value, "__slots__", ()):
            yield from _programs(getattr(value, name, None), seen)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_every_program_of_a_snapshot_carries_the_configured_budget(engine_name: str, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CONFIG)
    settings = Settings(cel_engine=engine_name, cel_cost_limit=COST, cel_time_limit_ms=TIME_MS)  # type: ignore[arg-type]
    snapshot = load_snapshot([tmp_path], settings)
    programs = list(_programs(snapshot, set()))
    sources = {program.source for program in programs}
    # Rules, conditions, the reason, the workflow's condition and argument expressions.
    for expected in (
        "args.items.all(x, x >= 0)",
        "args.items.all(x, int(x) >= 0)",
        "args.items.exists(x, x == 13)",
        '"found " + args.name',
        "args.items.exists(x, int(x) == 15)",
        "input.items.all(x, x >= 0)",
    ):
        assert expected in sources, (expected, sorted(sources))
    assert any("input.items.map(x, x + 1)" in source for source in sources), sorted(sources)
    if engine_name == "fast":
        assert any(source.startswith("[") for source in sources), "the conditions' batch"
    assert {program.budget for program in programs} == {(COST, TIME_MS)}


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_batch_of_conditions_fails_closed_on_the_configured_budget(engine_name: str, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CONFIG)
    # Each condition fits 200 units over the schema's 20 items, the three together do
    # not: no batch is planned (decided at build), each condition is evaluated alone.
    tight = load_snapshot([tmp_path], Settings(cel_engine=engine_name, cel_cost_limit=200, cel_time_limit_ms=TIME_MS))  # type: ignore[arg-type]
    assert [plan for plan in tight.when_plans.values() if plan.batch is not None] == []
    settings = Settings(cel_engine=engine_name, cel_cost_limit=2_000, cel_time_limit_ms=TIME_MS)  # type: ignore[arg-type]
    snapshot = load_snapshot([tmp_path], settings)
    engine = get_engine(engine_name)
    # Values larger than any call could send (lint's bounds hold for calls): the budget,
    # not the default one, stops every program with the same message; the batch settles
    # nothing (at once, on the fast engine: its values are over its budget).
    data = {"args": {"items": list(range(50_000)), "name": "n"}, "tool": {}, "session": {}, "call": {}, "commands": []}
    plans = [plan for plan in snapshot.when_plans.values() if plan.batch is not None]
    rules = [rule.when for policy in snapshot.policies for rule in policy.rules if rule.when is not None]
    assert rules and (plans or engine_name == "portable")
    for program in rules:
        outcome = program.evaluate(engine.activation(data, POLICY_VARIABLES))
        assert outcome.error in (cost_message(2_000), time_message(TIME_MS)), (program.source, outcome)
    for plan in plans:
        outcome = plan.batch.evaluate(engine.activation(data, POLICY_VARIABLES))
        assert outcome.error is not None and "evaluated one by one" in outcome.error, outcome


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize(
    "source",
    [
        "args.items.all(x, x >= 0)",
        "args.items.exists(x, x < 0)",
        "args.items.map(x, x + 1).size() > 0",
        "args.items.filter(x, x > 0).size() >= 0",
        "args.items.exists_one(x, x == 1)",
        "args.items.all(x, x in args.items)",
        "args.items.all(x, args.items.all(y, true))",
        "args.names.all(n, (n + n).size() > 0)",
    ],
)
def test_a_small_cost_limit_binds_the_closures(engine_name: str, source: str) -> None:
    engine = get_engine(engine_name)
    big = {"args": {"items": list(range(400)), "names": ["n" * 200] * 400}}
    small = {"args": {"items": [1, 2, 3], "names": ["a"]}}
    program, activation = compiled(engine_name, source, big, 1_000, variables=POLICY_VARIABLES)
    outcome = program.evaluate(activation)
    assert outcome.error == cost_message(1_000), outcome
    assert "cel_cost_limit" in outcome.error
    assert program.evaluate(engine.activation(small, POLICY_VARIABLES)).error is None
    # The same program under a larger budget evaluates the same values.
    assert evaluate(engine_name, source, big, 1_000_000, variables=POLICY_VARIABLES).error is None
