"""Workflow expressions are typed at lint, with either engine: a step's ``when`` and
``args`` and its compensation's ``args`` against the workflow's ``input_schema`` and
the results of the steps before it (``data`` from the tool's ``output_schema``), each
problem at file:line:col of the sub-expression, with the types involved and a fix."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from wfconfig import CONFIG, TOOLS_MODULE

from runtime.config.compile import build_snapshot
from runtime.settings import Settings

ENGINES = [pytest.param(Settings(cel_engine=e, schema_engine=e), id=e) for e in ("fast", "portable")]

TYPED_TOOL = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: counter}
spec:
  description: Echoes, with a declared output.
  handler: python:wftools:echo
  read_only: true
  input_schema: {type: object, properties: {value: {}, n: {type: integer}}}
  output_schema:
    type: object
    required: [echo, n]
    properties: {echo: {}, n: {type: integer}}
"""

INPUT = """
input_schema:
  type: object
  additionalProperties: false
  required: [count, path, tags, mode]
  properties:
    count: {type: integer}
    path: {type: string, maxLength: 100}
    tags: {type: array, maxItems: 10, items: {type: string, maxLength: 20}}
    mode: {type: string, enum: [fast, full]}
    note: {type: string, maxLength: 100}
    maybe: {type: [integer, "null"]}
    items: {type: array, items: {type: integer}}
"""


class Problem(NamedTuple):
    severity: str
    code: str
    message: str
    line: int
    col: int


def lint(tmp_path: Path, steps: str, settings: Settings) -> list[Problem]:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "wftools.py").write_text(TOOLS_MODULE)
    (config / "base.yaml").write_text(CONFIG)
    (config / "typed.yaml").write_text(TYPED_TOOL)
    body = textwrap.indent(textwrap.dedent(steps).strip(), "    ")
    head = textwrap.indent(textwrap.dedent(INPUT).strip(), "  ")
    (config / "wf.yaml").write_text(
        f"apiVersion: toolrt/v1\nkind: Workflow\nmetadata: {{name: wf}}\nspec:\n{head}\n  steps:\n{body}\n"
    )
    result = build_snapshot([config], settings)
    return [
        Problem(p.severity.value, p.code, p.message, p.location.line, p.location.col)
        for p in result.problems
        if p.location.file.endswith("wf.yaml")
    ]


FIRST = "- {id: a, tool: counter, args: {n: 1}}\n"


class Case(NamedTuple):
    id: str
    steps: str
    code: str
    words: tuple[str, ...]
    warning: bool = False


CASES = [
    Case(
        "when-int-vs-string",
        "- {id: s, tool: log, args: {text: x}, when: 'input.count > \"5\"'}",
        "cel-type",
        ("cannot order", "int", "string", "without quotes"),
    ),
    Case(
        "when-not-a-bool",
        "- {id: s, tool: log, args: {text: x}, when: 'input.path'}",
        "cel-result-type",
        ("not a bool",),
    ),
    Case(
        "when-a-size",
        "- {id: s, tool: log, args: {text: x}, when: 'size(input.tags)'}",
        "cel-result-type",
        ("int", "not a bool"),
    ),
    Case(
        "when-list-compared-with-string",
        "- {id: s, tool: log, args: {text: x}, when: 'input.tags == \"a\"'}",
        "cel-type",
        ("list(string)", "never equal"),
    ),
    Case(
        "when-enum-typo",
        "- {id: s, tool: log, args: {text: x}, when: 'input.mode == \"fastest\"'}",
        "cel-type",
        ("'fast', 'full'",),
    ),
    Case(
        "args-string-plus-int",
        "- {id: s, tool: log, args: {text: '${input.path + 1}'}}",
        "cel-type",
        ("`+` is not defined", "string", "int"),
    ),
    Case(
        "args-string-method-on-int",
        "- {id: s, tool: log, args: {text: '${string(input.count.startsWith(\"1\"))}'}}",
        "cel-type",
        ("works on strings",),
    ),
    Case(
        "args-index-of-string",
        "- {id: s, tool: log, args: {text: '${input.path[0]}'}}",
        "cel-type",
        ("no string indexing",),
    ),
    Case(
        "optional-input-read",
        "- {id: s, tool: log, args: {text: x}, when: 'input.note == \"x\"'}",
        "cel-optional",
        ("has(input.note)",),
        True,
    ),
    Case(
        "nullable-input-ordered",
        "- {id: s, tool: log, args: {text: x}, when: 'has(input.maybe) && input.maybe > 1'}",
        "cel-nullable",
        ("may be null",),
        True,
    ),
    Case(
        "step-ok-compared-with-string",
        FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.ok == \"true\"'}",
        "cel-type",
        ("true or false without quotes",),
    ),
    Case(
        "step-status-typo",
        FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.status == \"success\"'}",
        "cel-type",
        ("'ok'", "'skipped'"),
    ),
    Case(
        "step-content-ordered-with-int",
        FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.content > 5'}",
        "cel-type",
        ("cannot order", "string", "int"),
    ),
    Case(
        "step-data-typed-by-output-schema",
        FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.data.n == \"1\"'}",
        "cel-type",
        ("int", "without quotes"),
    ),
    Case(
        "step-data-int-in-text-args",
        FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: '${steps.a.data.n + \"x\"}'}}",
        "cel-type",
        ("`+` is not defined",),
    ),
    Case(
        "compensation-args-mistyped",
        FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, "
        "compensate: {tool: log, args: {text: '${steps.s.content - 1}'}}}",
        "cel-type",
        ("`-` is not defined",),
    ),
    Case(
        "when-over-an-unbounded-list",
        "- {id: s, tool: log, args: {text: x}, when: 'input.items.all(x, input.items.all(y, x != y))'}",
        "cel-cost",
        ("maxItems", "input.items"),
    ),
    Case(
        "macro-body-not-bool",
        "- {id: s, tool: log, args: {text: x}, when: 'input.tags.all(t, size(t))'}",
        "cel-type",
        ("needs a bool",),
    ),
]


@pytest.mark.parametrize("settings", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_mistyped_workflow_expression_is_reported_at_its_place(
    tmp_path: Path, case: Case, settings: Settings
) -> None:
    problems = lint(tmp_path, case.steps, settings)
    found = [p for p in problems if p.code == case.code]
    assert found, problems
    problem = found[0]
    assert problem.severity == ("warning" if case.warning else "error"), problems
    for word in case.words:
        assert word in problem.message, (word, problem.message)
    assert problem.line > 0 and problem.col > 0
    if not case.warning:
        assert all(p.code != "workflow-reference" for p in problems), problems  # one mistake, one message


@pytest.mark.parametrize("settings", ENGINES)
def test_the_column_points_at_the_sub_expression(tmp_path: Path, settings: Settings) -> None:
    line = "- {id: s, tool: log, args: {text: x}, when: 'input.path.size() > 0 && input.count > \"5\"'}"
    (problem,) = [p for p in lint(tmp_path, line, settings) if p.code == "cel-type"]
    text = (tmp_path / "config" / "wf.yaml").read_text().splitlines()[problem.line - 1]
    assert text[problem.col - 1 :].startswith('> "5"') or text[problem.col - 1 :].startswith('input.count > "5"')


WELL_TYPED = [
    "- {id: s, tool: log, args: {text: x}, when: 'input.count > 5 && input.mode == \"fast\"'}",
    "- {id: s, tool: log, args: {text: '${input.path + \"/\" + string(input.count)}'}}",
    "- {id: s, tool: log, args: {text: x}, when: 'has(input.note) && input.note.startsWith(\"a\")'}",
    "- {id: s, tool: log, args: {text: x}, when: 'input.tags.exists(t, t == \"x\")'}",
    "- {id: s, tool: log, args: {text: x}, when: 'has(input.maybe) && input.maybe != null && input.maybe > 1'}",
    FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: '${string(steps.a.data.n + 1)}'}, when: 'steps.a.ok'}",
    FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.status == \"skipped\"'}",
    FIRST + '- {id: s, tool: log, depends_on: [a], args: {text: x}, when: \'steps.a.status in ["failed", "unknown"]\'}',
    FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.status != \"not_run\"'}",
    FIRST + "- {id: s, tool: log, depends_on: [a], args: {text: '${steps.a.content}'}, "
    "compensate: {tool: log, args: {text: '${steps.s.content + steps.a.code}'}}}",
    "- {id: a, tool: echo, args: {value: 1}}\n"
    "- {id: s, tool: log, depends_on: [a], args: {text: x}, when: 'steps.a.data.echo == 1'}",
]


@pytest.mark.parametrize("settings", ENGINES)
@pytest.mark.parametrize("steps", WELL_TYPED)
def test_a_well_typed_workflow_lints_clean(tmp_path: Path, steps: str, settings: Settings) -> None:
    assert lint(tmp_path, steps, settings) == []


@pytest.mark.parametrize("settings", ENGINES)
def test_an_unknown_field_is_reported_once_by_the_reference_check(tmp_path: Path, settings: Settings) -> None:
    problems = lint(tmp_path, "- {id: s, tool: log, args: {text: '${input.paht}'}}", settings)
    assert [p.code for p in problems if p.severity == "error"] == ["cel-unknown-arg"]
    assert "Did you mean" in problems[0].message or "path" in problems[0].message
