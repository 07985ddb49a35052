"""Lint warns (``cel-time``) when an expression's worst case, within the cost budget,
would still run past ``cel_time_limit_ms`` on the portable engine, and names the
schema bound to tighten and the value that brings it under; the estimate is tied to
what the portable engine really does at the schema's bounds.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from runtime.cli import main
from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.policy.cel import RULE_VARIABLES, get_engine, is_translated
from runtime.policy.celbudget import CLOSURE_SECONDS_PER_UNIT, PORTABLE_SECONDS_PER_UNIT
from runtime.settings import Settings
from tests.config.conftest import Lint


def schema(items: int | None = 1000, length: int = 20, rows: int = 50) -> dict[str, Any]:
    listed: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": length}}
    if items is not None:
        listed["maxItems"] = items
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["items", "nums", "rows", "name"],
        "properties": {
            "items": listed,
            "nums": {"type": "array", "maxItems": 2000, "items": {"type": "integer"}},
            "rows": {
                "type": "array",
                "maxItems": rows,
                "items": {
                    "type": "object",
                    "required": ["id", "tags"],
                    "properties": {
                        "id": {"type": "integer"},
                        "tags": {"type": "array", "maxItems": 40, "items": {"type": "string", "maxLength": 10}},
                    },
                },
            },
            "name": {"type": "string", "maxLength": 50},
            "free": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
    }


def findings(expression: str, of: dict[str, Any], time_limit_ms: int = 100, cost_limit: int = 100_000) -> list[Any]:
    variables, bounds, key = variable_types(of)
    typed = TypedCheck(variables, bounds, "bool", cost_limit, key=key, time_limit_ms=time_limit_ms)
    return type_findings(expression, (), typed)


def warned(expression: str, of: dict[str, Any], time_limit_ms: int = 100) -> list[Any]:
    return [f for f in findings(expression, of, time_limit_ms) if f.code == "cel-time"]


#: Expressions the closures do not translate (conversions), so the portable engine runs
#: them, and the size whose bound drives them.
OVER = [
    ("args.items.all(t, int(size(t)) < 64)", "items"),
    ("args.items.exists(t, string(size(t)) == '3')", "items"),
    ("args.nums.all(n, string(n) != 'q')", "nums"),
    ("args.nums.all(n, type(n) == int)", "nums"),
    ("args.nums.map(n, double(n)).all(d, d >= 0.0)", "nums"),
    ("args.nums.filter(n, int(n) % 2 == 0).size() >= 0", "nums"),
    ("args.rows.all(r, r.tags.all(t, string(t) != ''))", "rows"),
    ("args.rows.exists(r, int(r.id) == 3)", "rows"),
    ("args.items.all(t, uint(size(t)) < 64u)", "items"),
    ("args.items.exists_one(t, string(t) == 'x')", "items"),
]


@pytest.mark.parametrize(("expression", "driver"), OVER)
def test_an_expression_over_the_time_limit_on_the_portable_engine_warns_with_the_bound_and_value(
    expression: str, driver: str
) -> None:
    of = schema(rows=400) if "rows" in expression else schema()
    (finding,) = warned(expression, of)
    assert finding.warning
    assert "cel_time_limit_ms of 100 ms" in finding.message and "portable engine" in finding.message
    assert f"`args.{driver}` may hold up to" in finding.message
    target = int(re.search(r"lower that bound to ([\d,]+)", finding.message).group(1).replace(",", ""))  # type: ignore[union-attr]
    # The value it names brings the warning down, and one more does not.
    keyword = {"items": "maxItems", "nums": "maxItems", "rows": "maxItems"}[driver]
    fixed = {**of, "properties": {**of["properties"], driver: {**of["properties"][driver], keyword: target}}}
    assert warned(expression, fixed) == []
    over = {**of, "properties": {**of["properties"], driver: {**of["properties"][driver], keyword: target + 1}}}
    assert warned(expression, over) != []


@pytest.mark.parametrize(
    "expression",
    [
        "args.items.all(t, size(t) < 64)",  # translated: the closures run it far faster
        "args.nums.all(n, n >= 0)",
        "args.rows.all(r, r.tags.all(t, t != ''))",
        "args.items.all(t, int(size(t)) < 64) && size(args.items) < 5",
        "args.name.startsWith('a')",
        "int(size(args.name)) < 5",
    ],
)
def test_an_expression_within_the_limit_does_not_warn(expression: str) -> None:
    of = schema(items=100) if "int(size(t))" in expression else schema()
    assert warned(expression, of) == []


def test_a_list_without_max_items_is_told_to_add_one_of_a_given_size() -> None:
    expression = "args.items.all(t, int(size(t)) < 64)"
    unbounded = schema(items=None)
    # Over the cost budget too: the cost error says it, once.
    assert [f.code for f in findings(expression, unbounded) if f.code in ("cel-time", "cel-cost")] == ["cel-cost"]
    # Within a raised cost budget, the time warning names the keyword to add and its size.
    (finding,) = [f for f in findings(expression, unbounded, cost_limit=10**9) if f.code == "cel-time"]
    assert "`args.items` has no maxItems" in finding.message
    found = re.search(r"add `maxItems` of at most ([\d,]+) at input_schema properties.items", finding.message)
    assert found is not None
    assert warned(expression, schema(items=int(found.group(1).replace(",", "")))) == []


def test_the_time_limit_is_a_setting() -> None:
    expression = "args.items.all(t, int(size(t)) < 64)"
    assert warned(expression, schema(), time_limit_ms=100)
    assert warned(expression, schema(), time_limit_ms=1000) == []
    # In the closures, at 1 us a unit, a tight limit binds too.
    translated = "args.nums.all(n, n >= 0 && n < 10)"
    (finding,) = warned(translated, schema(), time_limit_ms=1)
    assert "closures" in finding.message
    assert warned(translated, schema(), time_limit_ms=100) == []


def test_values_of_no_declared_type_are_told_to_declare_one() -> None:
    (finding,) = warned(
        "has(args.free) && [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(i, string(args.free) != string(i))", schema(), 1
    )
    assert "lower that bound" not in finding.message or "free" not in finding.message


def test_the_estimate_is_tied_to_what_the_portable_engine_does() -> None:
    """A flagged expression at ten times the limit is stopped at the schema's bounds; one at
    a fifth of it is not (CPU time, so a loaded machine does not change the verdict)."""
    engine = get_engine("portable")
    flagged = "args.nums.all(n, string(n) != 'q')"  # 2,000 items at ~5 units each
    program = engine.compile(flagged, RULE_VARIABLES, 100_000, 100)
    assert not is_translated(program)
    (finding,) = warned(flagged, schema())
    estimate_ms = float(re.search(r"about ([\d,]+) ms", finding.message).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert estimate_ms >= 400
    data = {"args": {"items": [], "nums": list(range(2000)), "rows": [], "name": ""}}
    for name in ("tool", "session", "call"):
        data[name] = {}
    stopped = program.evaluate(engine.activation(data, RULE_VARIABLES))
    assert stopped.error is not None and "time budget of 100 ms" in stopped.error
    quiet = "args.items.all(t, int(size(t)) < 64)"
    small = schema(items=60)
    assert warned(quiet, small) == []
    program = engine.compile(quiet, RULE_VARIABLES, 100_000, 100)
    data["args"] = {"items": ["x" * 20] * 60, "nums": [], "rows": [], "name": ""}
    assert program.evaluate(engine.activation(data, RULE_VARIABLES)).value is True
    assert PORTABLE_SECONDS_PER_UNIT > 20 * CLOSURE_SECONDS_PER_UNIT


POLICY = """
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: lister}}
spec:
  description: lists
  handler: builtin:tool_search
  read_only: true
  input_schema:
    type: object
    required: [items]
    properties:
      items: {{type: array, maxItems: {items}, items: {{type: string, maxLength: 20}}}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: p}}
spec:
  rules:
    - name: slow
      effect: deny
      tools: ["*"]
      when: 'has(args.items) && args.items.exists(t, string(size(t)) == "3")'
"""


def test_a_policy_condition_warns_per_tool_and_strict_lint_fails(lint: Lint, tmp_path: Path) -> None:
    result = lint({"p.yaml": POLICY.format(items=2000)})
    (problem,) = [p for p in result.problems if p.code == "cel-time"]
    assert "lister" in problem.message and "lower that bound to" in problem.message
    assert lint({"p.yaml": POLICY.format(items=100)}).problems == ()
    folder = tmp_path / "ci"
    folder.mkdir()
    (folder / "p.yaml").write_text(POLICY.format(items=2000))
    out = io.StringIO()
    assert main(["lint", "--strict", str(folder)], stdout=out, stderr=io.StringIO()) == 1
    assert "[cel-time]" in out.getvalue()
    out = io.StringIO()
    assert main(["lint", str(folder)], stdout=out, stderr=io.StringIO()) == 0
    assert "warning[cel-time]" in out.getvalue()
    relaxed = Settings(cel_engine="portable", schema_engine="portable", cel_time_limit_ms=5000)
    assert lint({"p.yaml": POLICY.format(items=2000)}, relaxed).problems == ()


def big_text_schema() -> dict[str, Any]:
    """Strings and lists so long that their size charges alone pass the step rate's limit."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["a", "b", "words"],
        "properties": {
            "a": {"type": "string", "maxLength": 500_000},
            "b": {"type": "string", "maxLength": 500_000},
            "words": {"type": "array", "maxItems": 2_000, "items": {"type": "string", "maxLength": 20}},
        },
    }


WITHOUT_COMPREHENSION = [
    "args.a + args.b != args.b + args.a",
    "(args.a + args.b + args.a).size() > 10",
    "args.a.contains(args.b) || args.b.contains(args.a)",
    "args.a.startsWith(args.b) && args.b.endsWith(args.a)",
    'args.a.matches("^[a-z]+$") && args.b.matches("[0-9]")',
    "args.a == args.b || args.a < args.b",
    "args.a in args.words",
    "args.words + args.words == args.words",
    "size(args.words + args.words) < 3000",
    "string(args.words.size()) + args.a + args.b != ''",
]


@pytest.mark.parametrize("expression", WITHOUT_COMPREHENSION)
def test_an_expression_without_a_comprehension_gets_no_time_warning_for_its_sizes(expression: str) -> None:
    # Native string and list operations scan and build far faster per unit than the
    # engine's steps (the rate the warning uses); without a comprehension there are only
    # the syntax tree's few steps.
    assert warned(expression, big_text_schema()) == []


def test_the_warning_cannot_be_silenced_by_leaving_out_a_comprehension_that_is_there() -> None:
    assert warned("args.words.all(w, int(size(w)) < 64)", big_text_schema())
