"""Configs that used to lint clean and then failed every call: each now fails `lint --strict`.

Every case is a config dir (inline YAML) whose CEL is wrong for the tool's input
schema: a wrong field, a wrong type, a non-bool condition, an optional field read
without has(), or an expression whose worst case would stall the runtime. The
expected finding names its code, where the sub-expression starts, and words of the
message that say what to do. Both engines must give the same findings.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.cli import main
from runtime.config.compile import build_snapshot
from runtime.policy.cel import fast_available
from runtime.settings import Settings
from tests.config.conftest import Lint

ENGINES = [Settings(cel_engine="portable", schema_engine="portable")] + (
    [Settings(cel_engine="fast", schema_engine="fast")] if fast_available() else []
)

SCHEMA = (
    """\
    type: object
    additionalProperties: false
    required: [count, path, items, ratio, mode, filter, labels, maybe, rows, flag]
    properties:
      count: {type: integer}
      path: {type: string, maxLength: 4096}
      items: {type: array, items: {type: string, maxLength: 100}}
      few: {type: array, maxItems: 1000, items: {type: integer}}
      ratio: {type: number}
      mode: {type: string, enum: [fast, full]}
      note: {type: string, maxLength: 100}
      filter:
        type: object
        required: [depth]
        properties: {depth: {type: integer}, name: {type: string, maxLength: 10}}
      labels: {type: object, additionalProperties: {type: integer}, maxProperties: 20}
      maybe: {type: [integer, "null"]}
"""
    "      rows: {type: array, maxItems: 50, items: {type: object, required: [id],"
    " properties: {id: {type: integer}, tags: {type: array, maxItems: 50, items: {type: string, maxLength: 20}}}}}\n"
    """\
      flag: {type: boolean}
      text: {type: string}
"""
)

#: Line of the `expression:` value in tool(): after the 21-line schema.
RULE_LINE = 30


def tool(expression: str, schema: str = SCHEMA, name: str = "t") -> str:
    return (
        f"apiVersion: toolrt/v1\nkind: Tool\nmetadata: {{name: {name}}}\nspec:\n  description: d\n  handler: "
        f"builtin:file_read\n  input_schema:\n{schema}  rules:\n    - name: r\n      expression: "
        f"'{expression}'\n      message: m\n"
    )


def policy(when: str, tools: str = '["*"]', effect: str = "deny", extra: str = "") -> str:
    return (
        "---\napiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: p}\nspec:\n  rules:\n"
        f"    - name: r\n      effect: {effect}\n      tools: {tools}\n      when: '{when}'\n{extra}"
    )


@dataclass(frozen=True)
class Case:
    id: str
    expression: str
    code: str
    words: tuple[str, ...]
    col: int | None = None  # column of the sub-expression inside the expression (1-based)
    warning: bool = False


# Tool rules typed against SCHEMA.
RULES = [
    Case("unknown-field", "args.cnt > 50", "cel-unknown-arg", ("`args.cnt` does not exist", "Did you mean `count`"), 6),
    Case("unknown-nested-field", "args.filter.dept > 1", "cel-unknown-arg", ("`args.filter.dept`", "depth"), 13, True),
    Case("unknown-field-in-list-item", "args.rows.all(r, r.idx > 0)", "cel-unknown-arg", ("`r.idx`", "id"), 20, True),
    Case(
        "int-ordered-with-string",
        'args.count <= "100"',
        "cel-type",
        ("cannot order", "int", "string", "without quotes: 100"),
        12,
    ),
    Case("int-equal-to-string", 'args.count == "5"', "cel-type", ("never equal", "always false"), 12),
    Case("string-equal-to-int", "args.path == 5", "cel-type", ("always false",), 11),
    Case("bool-equal-to-string", 'args.flag == "true"', "cel-type", ("true or false without quotes",), 11),
    Case("string-ordered-with-int", "args.path > 5", "cel-type", ("cannot order",), 11),
    Case("enum-value-not-in-enum", 'args.mode == "slow"', "cel-type", ("enum", "'fast', 'full'"), 14),
    Case("size-is-not-a-bool", "size(args.path)", "cel-result-type", ("is int, not a bool", "fail-open", "Compare it")),
    Case("string-is-not-a-bool", "args.path", "cel-result-type", ("is string, not a bool",)),
    Case("int-is-not-a-bool", "args.count", "cel-result-type", ("is int, not a bool", "Compare it")),
    Case("list-is-not-a-bool", 'args.items.filter(i, i != "")', "cel-result-type", ("not a bool",)),
    Case("ternary-of-strings", 'args.flag ? "a" : "b"', "cel-result-type", ("not a bool",)),
    Case("number-in-arithmetic", "args.ratio * 2.0 > 1.0", "cel-type", ("JSON number", "double(args.ratio)"), 12),
    Case("int-plus-double", "args.count + 1.5 > 2.0", "cel-type", ("does not mix int, uint and double",), 12),
    Case("string-indexed", 'args.path[0] == "/"', "cel-type", ("no string indexing",), 10),
    Case("list-contains-method", 'args.items.contains("x")', "cel-type", ("`x in list`",), 6),
    Case("method-on-int", 'args.count.startsWith("1")', "cel-type", ("works on strings", "string(...)"), 6),
    Case("macro-body-not-bool", "args.items.all(i, size(i))", "cel-type", ("needs a bool",), 19),
    Case("negated-string", "!args.path", "cel-type", ("needs a bool",), 2),
    Case("and-with-int", "args.count && true", "cel-type", ("needs a bool",), 1),
    Case("size-of-int", "size(args.count) > 0", "cel-type", ("size() takes",), 1),
    Case(
        "unknown-function", 'args.path.lowerAscii() == "a"', "cel-type", ("not a function both CEL engines know",), 11
    ),
    Case("in-on-a-string", 'args.count in "abc"', "cel-type", ("needs a list or a map", ".contains"), 12),
    Case("map-values-are-ints", '"a" in args.labels && args.labels.a == "x"', "cel-type", ("always false",), 37),
    Case("list-items-are-strings", "args.items.exists(i, i > 5)", "cel-type", ("cannot order",), 24),
    Case("list-member-of-wrong-type", "5 in args.items", "cel-type", ("never found",), 3),
    Case("field-of-a-string", 'args.path.name == "x"', "cel-type", ("has no fields",), 11),
    Case(
        "has-of-a-typo",
        'has(args.pth) && args.path != ""',
        "cel-unknown-arg",
        ("`args.pth` does not exist", "Did you mean `path`"),
        10,
    ),
    Case(
        "optional-read", 'args.note == "x"', "cel-optional", ("optional", "has(args.note)", "deny or ask rule"), 6, True
    ),
    Case("optional-nested-read", 'args.filter.name == "x"', "cel-optional", ("has(args.filter.name)",), 13, True),
    Case("optional-read-in-macro", "args.few.all(x, x > 0)", "cel-optional", ("has(args.few)",), 6, True),
    Case("map-key-read-unguarded", "args.labels.team > 1", "cel-optional", ('"team" in args.labels',), 13, True),
    Case("nullable-compared", "args.maybe > 5", "cel-nullable", ("may be null", "args.maybe != null"), 6, True),
    Case("required-field-tested-for-null", "args.path != null", "cel-type", ("never null", "has(args.path)"), 11, True),
    Case(
        "nested-comprehension-over-bounded-lists",
        "args.few.all(x, args.few.all(y, x != y || x == y))",
        "cel-cost",
        ("maxItems", "properties.few", "cel_cost_limit"),
    ),
    Case(
        "comprehension-over-unbounded-list",
        'args.items.all(i, i.startsWith("a"))',
        "cel-cost",
        ("add `maxItems` at input_schema properties.items",),
    ),
    Case("map-over-unbounded-list", "args.items.map(i, i + i).size() > 0", "cel-cost", ("maxItems",)),
    Case("regex-per-item-of-unbounded-list", 'args.items.exists(i, i.matches("^a+$"))', "cel-cost", ("maxItems",)),
    Case(
        "rows-times-unbounded-items",
        "args.rows.all(a, args.items.exists(i, i == string(a.id)))",
        "cel-cost",
        ("add `maxItems` at input_schema properties.items",),
    ),
    Case(
        "string-repeated-per-item",
        'args.items.map(i, args.path + args.path + args.path).exists(s, s.contains("x"))',
        "cel-cost",
        ("maxItems",),
    ),
]


def _findings(result, code: str):  # type: ignore[no-untyped-def]
    return [p for p in result.problems if p.code == code]


@pytest.mark.parametrize("settings", ENGINES, ids=lambda s: s.cel_engine)
@pytest.mark.parametrize("case", RULES, ids=lambda c: c.id)
def test_a_rule_that_would_fail_at_run_time_fails_lint(lint: Lint, case: Case, settings: Settings) -> None:
    result = lint({"c.yaml": tool(case.expression.replace("'", "''"))}, settings)
    found = _findings(result, case.code)
    assert found, "\n".join(map(str, result.problems)) or "lint found nothing"
    problem = found[0]
    for words in case.words:
        assert words in problem.message, problem.message
    assert problem.is_error is not case.warning
    assert problem.location.line == RULE_LINE
    if case.col is not None:
        assert problem.location.col == 19 + case.col, str(problem)  # `expression: '` ends at column 19


GOOD = [
    "args.count > 2",
    'has(args.note) && args.note == "x"',
    "!has(args.note) || args.note.size() < 5",
    "args.note.size() < 5 || !has(args.note)",
    'has(args.filter.name) ? args.filter.name == "n" : true',
    '"team" in args.labels && args.labels.team > 1',
    "args.maybe != null && args.maybe > 5",
    "args.maybe == null || args.maybe > 5",
    "args.ratio > 1",
    "double(args.ratio) * 2.0 > 1.0",
    "args.rows.all(r, r.id > 0 && (!has(r.tags) || r.tags.all(t, size(t) < 10)))",
    "args.rows.all(a, args.rows.exists(b, a.id == b.id))",
    'args.path.matches("^src/") && !args.path.contains("..")',
    'args.mode == "fast"',
    "args.flag",
    "tool.read_only && size(args.items) < 10",
]


@pytest.mark.parametrize("settings", ENGINES, ids=lambda s: s.cel_engine)
@pytest.mark.parametrize("expression", GOOD)
def test_a_rule_that_runs_lints_clean(lint: Lint, expression: str, settings: Settings) -> None:
    result = lint({"c.yaml": tool(expression.replace("'", "''"))}, settings)
    assert result.problems == (), "\n".join(map(str, result.problems))
    assert result.snapshot is not None


def test_both_engines_give_the_same_findings(lint: Lint) -> None:
    if len(ENGINES) < 2:
        pytest.skip("the fast engine is not installed")
    for case in RULES:
        text = tool(case.expression.replace("'", "''"))
        portable, fast = (lint({"c.yaml": text}, settings) for settings in ENGINES)
        assert [(str(p.location), p.code) for p in portable.problems if p.code != "cel-type"] == [
            (str(p.location), p.code) for p in fast.problems if p.code != "cel-type"
        ], case.id
        assert [p.is_error for p in portable.problems] == [p.is_error for p in fast.problems], case.id


# ---------------------------------------------------------------------------
# policy rules: typed against every tool their globs match

TOOL_A = tool(
    "true",
    schema=(
        "    type: object\n    additionalProperties: false\n    required: [count]\n    properties:\n      count: "
        "{type: integer}\n"
    ),
    name="tool_a",
)
TOOL_B = tool(
    "true",
    schema=(
        "    type: object\n    additionalProperties: false\n    required: [count]\n    properties:\n      count: "
        "{type: string, maxLength: 10}\n"
    ),
    name="tool_b",
)
TOOL_C = tool(
    "true",
    schema=(
        "    type: object\n    additionalProperties: false\n    required: [path]\n    properties:\n      path: {type: "
        "string, maxLength: 100}\n"
    ),
    name="other_c",
)
TOOLS = {"a.yaml": TOOL_A, "b.yaml": TOOL_B, "c.yaml": TOOL_C}

POLICIES = [
    Case("glob-over-tools-with-different-types", "args.count > 5", "cel-type", ("for tool `tool_b`", "cannot order")),
    Case(
        "glob-field-missing-in-one-tool", 'args.count > 5 || args.path == "x"', "cel-unknown-arg", ("does not exist",)
    ),
    Case("when-not-a-bool", "size(tool.name)", "cel-result-type", ("not a bool", "fail-open")),
    Case("tool-attribute-typo", "tool.readonly", "cel-unknown-arg", ("Did you mean `read_only`",)),
    Case("tool-risk-enum", 'tool.risk == "severe"', "cel-type", ("'low', 'medium', 'high', 'critical'",)),
    Case("session-mode-enum", 'session.mode == "admin"', "cel-type", ("'default', 'plan', 'accept_edits', 'bypass'",)),
    Case("session-label-unguarded", 'session.labels.team == "x"', "cel-optional", ("session.labels",), warning=True),
    Case(
        "tool-label-compared-with-int", '"tier" in tool.labels && tool.labels.tier > 1', "cel-type", ("cannot order",)
    ),
    Case("commands-compared-with-string", 'commands.exists(c, c == "rm")', "cel-type", ("always false",)),
    Case("call-index-compared-with-string", 'call.index == "0"', "cel-type", ("always false",)),
    Case("unknown-field-of-session", 'session.role == "admin"', "cel-unknown-arg", ("`session.role` does not exist",)),
]


@pytest.mark.parametrize("settings", ENGINES, ids=lambda s: s.cel_engine)
@pytest.mark.parametrize("case", POLICIES, ids=lambda c: c.id)
def test_a_policy_condition_is_typed_against_each_tool_it_matches(lint: Lint, case: Case, settings: Settings) -> None:
    result = lint(
        {**TOOLS, "p.yaml": policy(case.expression.replace("'", "''"), tools='["tool_*", "other_*"]')}, settings
    )
    found = [p for p in result.problems if p.code == case.code and p.location.file == "p.yaml"]
    assert found, "\n".join(map(str, result.problems)) or "lint found nothing"
    for words in case.words:
        assert words in found[0].message, found[0].message
    assert found[0].is_error is not case.warning
    assert found[0].location.line == 10


def test_a_policy_rule_testing_for_a_field_some_tools_lack_lints_clean(lint: Lint) -> None:
    when = 'has(args.path) && args.path.startsWith("/")'
    result = lint({**TOOLS, "p.yaml": policy(when)})
    assert result.problems == (), "\n".join(map(str, result.problems))


def test_a_policy_finding_names_the_tools_it_holds_for(lint: Lint) -> None:
    result = lint({**TOOLS, "p.yaml": policy("args.count > 5", tools='["tool_*"]')})
    (problem,) = result.problems
    assert "for tool `tool_b`" in problem.message and "tool_a" not in problem.message


def test_a_reason_expression_must_be_a_string(lint: Lint) -> None:
    result = lint(
        {**TOOLS, "p.yaml": policy("true", tools='["tool_a"]', extra="      reason_expression: 'args.count'\n")}
    )
    (problem,) = result.problems
    assert problem.code == "cel-result-type" and "not a string" in problem.message
    assert (problem.location.line, problem.is_error) == (11, True)


def test_a_command_rule_over_a_line_without_max_length_is_rejected_with_the_bound_to_add(lint: Lint) -> None:
    shell = tool(
        "true",
        name="shell",
        schema="    type: object\n    required: [line]\n    properties:\n      line: {type: string}\n",
    ).replace("  rules:", "  command_line: line\n  rules:")
    result = lint(
        {"s.yaml": shell, "p.yaml": policy("commands.exists(c, commands.exists(d, c == d))", tools='["shell"]')}
    )
    (problem,) = [p for p in result.problems if p.code == "cel-cost"]
    assert "maxLength" in problem.message and "properties.line" in problem.message


def test_the_cost_limit_is_a_setting(lint: Lint) -> None:
    text = tool("args.rows.all(r, r.id > 0)")
    assert lint({"c.yaml": text}).problems == ()
    tight = Settings(cel_engine="portable", schema_engine="portable", cel_cost_limit=50)
    (problem,) = lint({"c.yaml": text}, tight).problems
    assert (
        problem.code == "cel-cost"
        and "limit of 50" in problem.message
        and "maxItems at properties.rows" in problem.message
    )


def test_lint_strict_exits_1_on_each_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for index, case in enumerate(RULES):
        folder = tmp_path / f"c{index}"
        folder.mkdir()
        (folder / "c.yaml").write_text(tool(case.expression.replace("'", "''")), encoding="utf-8")
        out = io.StringIO()
        assert main(["lint", "--strict", str(folder)], stdout=out, stderr=io.StringIO()) == 1, case.id
        assert f"[{case.code}]" in out.getvalue(), case.id


def test_shipped_examples_and_packs_lint_clean_under_strict() -> None:
    root = Path(__file__).resolve().parents[2]
    for folder in ("examples/coding-agent", "examples/customer-service", "policies"):
        result = build_snapshot([root / folder], Settings())
        assert result.problems == (), "\n".join(map(str, result.problems))


# ---------------------------------------------------------------------------
# settings that would do nothing


def _plain_tool(extra: str, schema: str) -> str:
    return (
        f"apiVersion: toolrt/v1\nkind: Tool\nmetadata: {{name: w}}\nspec:\n  description: d\n  handler: "
        f"builtin:file_read\n{extra}  input_schema:\n{schema}"
    )


@pytest.mark.parametrize(
    ("extra", "warned"),
    [
        ("  retry: {attempts: 2}\n", True),
        ("  retry: {attempts: 2}\n  read_only: true\n", False),
        ("  retry: {attempts: 2}\n  idempotent: true\n", False),
        ("", False),
    ],
    ids=["write-tool", "read-only", "idempotent", "no-retry"],
)
def test_retry_on_a_tool_that_is_never_retried_is_a_warning(lint: Lint, extra: str, warned: bool) -> None:
    result = lint({"c.yaml": _plain_tool(extra, "    type: object\n")})
    codes = [(p.code, p.is_error, p.location.line) for p in result.problems]
    assert codes == ([("retry-unsafe", False, 7)] if warned else [])
    if warned:
        assert "idempotent: true" in result.problems[0].message


def test_a_default_on_a_required_field_is_a_warning_at_the_default(lint: Lint) -> None:
    schema = (
        "    type: object\n    required: [a]\n    properties:\n      a: {type: string, default: x}\n      b: {type: "
        "string, default: y}\n"
    )
    result = lint({"c.yaml": _plain_tool("", schema)})
    (problem,) = result.problems
    assert (problem.code, problem.is_error, problem.location.line) == ("schema-default-unused", False, 11)
    assert "`a` is required" in problem.message


# ---------------------------------------------------------------------------
# one mistake, one message

BROKEN_TOOL = (
    "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: mytool}\nspec:\n  descripton: d\n  handler: "
    "builtin:file_read\n"
)
NAMING_IT = (
    "---\napiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: p}\nspec:\n  rules:\n    - {name: a, effect: deny, "
    "tools: [mytool]}\n---\napiVersion: toolrt/v1\nkind: PolicyTest\nmetadata: {name: pt}\nspec:\n  cases:\n    - "
    "{name: c, tool: mytool, expect: {decision: deny}}\n"
)


def test_a_misspelt_key_is_one_message_not_also_a_missing_key(lint: Lint) -> None:
    result = lint({"t.yaml": BROKEN_TOOL})
    assert [(p.code, p.location.line, p.location.col) for p in result.problems] == [("unknown-key", 5, 3)]
    assert "Did you mean `description`?" in result.problems[0].message


def test_a_broken_tool_is_not_reported_again_by_every_rule_and_test_naming_it(lint: Lint) -> None:
    result = lint({"t.yaml": BROKEN_TOOL + NAMING_IT})
    assert [p.code for p in result.problems] == ["unknown-key"]


def test_a_tool_that_does_not_exist_is_still_reported_where_it_is_named(lint: Lint) -> None:
    result = lint(
        {"t.yaml": BROKEN_TOOL.replace("descripton", "description") + NAMING_IT.replace("mytool", "othertool")}
    )
    assert sorted(p.code for p in result.problems) == ["unknown-tool", "unknown-tool"]
