"""A tool's policy conditions are batched (one evaluation on the fast engine) only when
the batch fits the budget, and a batch never sends a call to the portable engine.

Decided at snapshot build from lint's cost estimate over the tool's schema: conditions
that each fit the budget but not together are evaluated one by one from the start, and
a batch whose values are too large for the fast engine's size check settles nothing at
once (each condition is then evaluated alone, on the fast engine when it fits), instead
of running on the portable engine up to the time limit first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.config.compile import load_snapshot
from runtime.policy.cel import POLICY_VARIABLES, fast_available, get_engine
from runtime.policy.conditions import outcome_of, settle_batch
from runtime.settings import Settings

pytestmark = pytest.mark.skipif(not fast_available(), reason="batches are planned for the fast engine only")

TOOL = """
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: lister}}
spec:
  description: lists
  handler: builtin:tool_search
  read_only: true
  input_schema:
    type: object
    required: [items, name]
    properties:
      items: {{type: array, maxItems: {items}, items: {{type: integer}}}}
      name: {{type: string, maxLength: {length}}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: p}}
spec:
  rules:
{rules}
"""

# None of these is translated into closures (conversions) or read directly.
CONDITIONS = [
    "args.items.exists(x, int(x) == 15)",
    'args.items.exists(x, string(x) == "16")',
    "args.items.all(x, double(x) >= 0.0)",
    "int(size(args.name)) > 100000",
    'args.items.exists(x, string(x + 1) == "3") || string(size(args.items)) == "3"',
]


def config(tmp_path: Path, conditions: list[str], items: int = 20, length: int = 50) -> Path:
    rules = "".join(
        f"    - {{name: r{i}, effect: {'deny' if i % 2 else 'ask'}, tools: [lister], when: '{when}'}}\n"
        for i, when in enumerate(conditions)
    )
    (tmp_path / "c.yaml").write_text(TOOL.format(items=items, length=length, rules=rules))
    return tmp_path


def plan_of(root: Path, **settings: Any) -> tuple[Any, Any]:
    snapshot = load_snapshot([root], Settings(cel_engine="fast", **settings))
    return snapshot, snapshot.when_plans.get("lister")


@pytest.mark.parametrize("count", [2, 3, 4, 5])
@pytest.mark.parametrize(("items", "limit"), [(20, 100_000), (2_000, 100_000), (200, 3_000), (50, 1_000)])
def test_conditions_that_fit_alone_but_not_together_are_not_batched(
    tmp_path: Path, count: int, items: int, limit: int
) -> None:
    from runtime.config.exprtypes import TypedCheck, type_findings, variable_types

    conditions = CONDITIONS[:count]
    root = config(tmp_path, conditions, items=items)
    snapshot, plan = plan_of(root, cel_cost_limit=limit)
    tool = snapshot.tools["lister"]
    schema = (tool if hasattr(tool, "spec") else next(iter(tool.values()))).spec.input_schema
    variables, bounds, key = variable_types(schema, None, with_commands=True)
    costs = []
    for source in conditions:
        found = type_findings(source, (), TypedCheck(variables, bounds, "bool", 10**18, key=key))
        assert not [f for f in found if not f.warning], found
    from runtime.policy.celast import parse
    from runtime.policy.celcheck import check

    limits = {name: float(bound.limit) for name, bound in bounds.items()}
    for source in conditions:
        costs.append(check(parse(source), variables, own_schema=False).cost.evaluate(limits))
    assert max(costs) <= limit or plan is None or plan.batch is None
    batched = plan is not None and plan.batch is not None
    assert batched == (sum(costs) + 1 + len(costs) <= limit), (costs, limit)


def test_a_batch_whose_values_are_too_large_for_the_fast_engine_never_runs_on_the_portable_one(
    tmp_path: Path,
) -> None:
    # The batch reads the items and a long name: one size bounds all the values the fast
    # engine's check measures, so a long name puts the batch over it; each item
    # condition alone reads only the 20 items and runs on the fast engine.
    conditions = CONDITIONS[:4]
    root = config(tmp_path, conditions, items=20, length=400_000)
    snapshot, plan = plan_of(root)
    assert plan is not None and plan.batch is not None
    rules = snapshot.rule_index["lister"]
    engine = get_engine("fast")
    for items, name in (([1, 15, 3], "n" * 300_000), ([16], "x" * 150_000), ([], "y" * 200_001), ([2], "short")):
        data = {"args": {"items": items, "name": name}, "tool": {}, "session": {}, "call": {}, "commands": []}
        activation = engine.activation(data, POLICY_VARIABLES)
        known = settle_batch(plan, rules, lambda activation=activation: activation)
        for rule in rules:
            settled = outcome_of(rule, known, data["args"], lambda activation=activation: activation)
            alone = rule.when.evaluate(engine.activation(data, POLICY_VARIABLES))
            assert (settled.value, settled.error) == (alone.value, alone.error), rule.when.source
        guard = getattr(plan.batch, "_guard", None)
        assert guard is not None
        assert guard._portable is None, "the batch was evaluated on the portable engine"
    # A short name fits the batch: it settles every condition in one evaluation.
    data = {"args": {"items": [15], "name": "n"}, "tool": {}, "session": {}, "call": {}, "commands": []}
    known = settle_batch(plan, rules, lambda: engine.activation(data, POLICY_VARIABLES))
    assert all(id(rule) in known for rule in rules)
