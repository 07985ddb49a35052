"""Lint of Workflow documents: every broken workflow is reported at its place with a
code and a message saying what to fix; a clean one compiles into the snapshot."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from wfconfig import CONFIG, TOOLS_MODULE

from runtime.config.compile import build_snapshot
from runtime.settings import Settings

ENGINES = [pytest.param(Settings(cel_engine=e, schema_engine=e), id=e) for e in ("fast", "portable")]


def lint(tmp_path: Path, steps: str, *, head: str = "", settings: Settings | None = None) -> list[tuple[str, str, str]]:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "wftools.py").write_text(TOOLS_MODULE)
    (config / "base.yaml").write_text(CONFIG)
    body = textwrap.indent(textwrap.dedent(steps).strip(), "    ")
    extra = textwrap.indent(textwrap.dedent(head).strip(), "  ") + "\n" if head.strip() else ""
    (config / "wf.yaml").write_text(
        f"apiVersion: toolrt/v1\nkind: Workflow\nmetadata: {{name: wf}}\nspec:\n{extra}  steps:\n{body}\n"
    )
    result = build_snapshot([config], settings or Settings())
    return [(p.severity.value, p.code, p.message) for p in result.problems if p.location.file.endswith("wf.yaml")]


def codes(problems: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    return [(severity, code) for severity, code, _ in problems]


CASES = [
    pytest.param("- {id: a, tool: log, args: {text: x}, depends_on: [a]}", "workflow-cycle", id="self-dependency"),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, depends_on: [b]}\n- {id: b, tool: log, args: {text: x}, depends_on: "
        "[a]}",
        "workflow-cycle",
        id="two-step-cycle",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, depends_on: [c]}\n- {id: b, tool: log, args: {text: x}, depends_on: "
        "[a]}\n- {id: c, tool: log, args: {text: x}, depends_on: [b]}",
        "workflow-cycle",
        id="three-step-cycle",
    ),
    pytest.param("- {id: a, tool: log, args: {text: x}, depends_on: [ghost]}", "unknown-step", id="unknown-dependency"),
    pytest.param("- {id: a, tool: nosuchtool}", "unknown-tool", id="unknown-tool"),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, compensate: {tool: nosuchtool}}",
        "unknown-tool",
        id="unknown-compensation-tool",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}}\n- {id: a, tool: log, args: {text: y}}",
        "duplicate-name",
        id="duplicate-step-id",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: '${steps.b.content}'}}\n- {id: b, tool: log, args: {text: x}, depends_on: "
        "[a]}",
        "workflow-reference",
        id="reads-a-later-step",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: '${steps.b.content}'}}\n- {id: b, tool: log, args: {text: x}}",
        "workflow-reference",
        id="reads-a-sibling-not-upstream",
    ),
    pytest.param("- {id: a, tool: log, args: {text: '${steps.a.content}'}}", "workflow-reference", id="reads-itself"),
    pytest.param(
        "- {id: a, tool: log, args: {text: '${steps.ghost.content}'}}", "unknown-step", id="reads-an-unknown-step"
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}}\n- {id: b, tool: log, depends_on: [a], args: {text: "
        "'${steps.a.result}'}}",
        "workflow-reference",
        id="unknown-step-field",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}}\n- {id: b, tool: log, depends_on: [a], args: {text: x}, when: "
        "'steps[\"c\"].ok'}",
        "unknown-step",
        id="bracket-reference-unknown",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, when: 'steps.b.ok'}\n- {id: b, tool: log, args: {text: x}, depends_on: "
        "[a]}",
        "workflow-reference",
        id="when-reads-a-later-step",
    ),
    pytest.param("- {id: a, tool: log, args: {text: '${args.text}'}}", "cel-undeclared", id="undeclared-variable"),
    pytest.param("- {id: a, tool: log, args: {text: '${input.text +}'}}", "cel-syntax", id="syntax-error"),
    pytest.param(
        "- {id: a, tool: log, args: {text: 'start ${input.text'}}", "workflow-template", id="unclosed-template"
    ),
    pytest.param("- {id: a, tool: log, args: {text: '${ }'}}", "workflow-template", id="empty-template"),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, compensate: builtin}",
        "workflow-compensation",
        id="builtin-compensation-on-another-tool",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, retry: {attempts: 2}}", "workflow-retry", id="retry-on-a-write"
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, compensate: {tool: log, args: {text: '${steps.b.content}'}}}\n- {id: "
        "b, tool: log, args: {text: x}}",
        "workflow-reference",
        id="compensation-reads-a-step-not-upstream",
    ),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, when: 'input.flag.exists(x, x.exists(y, y.exists(z, z)))'}",
        "cel-too-complex",
        id="too-deep-comprehension",
    ),
    pytest.param("- {id: a, tool: log, args: {text: x}, timeout_s: 0}", "schema", id="zero-timeout"),
    pytest.param("- {id: a, tool: log, args: {text: x}, on_failure: retry}", "schema", id="unknown-on-failure"),
    pytest.param(
        "- {id: a, tool: log, args: {text: x}, compensate: restore}", "schema", id="unknown-compensation-word"
    ),
]


@pytest.mark.parametrize("settings", ENGINES)
@pytest.mark.parametrize(("steps", "code"), CASES)
def test_a_broken_workflow_is_an_error_at_its_place(tmp_path: Path, steps: str, code: str, settings: Settings) -> None:
    problems = lint(tmp_path, steps, settings=settings)
    errors = [(c, m) for s, c, m in problems if s == "error"]
    assert errors, problems
    assert any(c == code or (code == "schema" and c not in ("workflow-reference",)) for c, _ in errors), errors
    for _, message in errors:
        assert len(message) > 20


def test_a_reference_to_a_later_step_says_to_add_it_to_depends_on(tmp_path: Path) -> None:
    problems = lint(
        tmp_path, "- {id: a, tool: log, args: {text: '${steps.b.content}'}}\n- {id: b, tool: log, args: {text: x}}"
    )
    assert any("depends_on" in message for _, _, message in problems)


def test_a_reference_through_a_chain_of_dependencies_is_upstream(tmp_path: Path) -> None:
    steps = """
    - {id: a, tool: echo, args: {value: 1}}
    - {id: b, tool: echo, depends_on: [a], args: {value: 2}}
    - {id: c, tool: log, depends_on: [b], args: {text: '${string(steps.a.data.echo) + steps["b"].content}'}}
    """
    assert lint(tmp_path, steps) == []


def test_a_literal_dollar_brace_is_not_an_expression(tmp_path: Path) -> None:
    assert lint(tmp_path, "- {id: a, tool: log, args: {text: 'costs $${price}'}}") == []


def test_an_undeclared_input_field_is_an_error_for_a_closed_schema(tmp_path: Path) -> None:
    head = "input_schema: {type: object, additionalProperties: false, properties: {path: {type: string}}}"
    problems = lint(tmp_path, "- {id: a, tool: log, args: {text: '${input.paht}'}}", head=head)
    assert codes(problems) == [("error", "cel-unknown-arg")]
    assert "path" in problems[0][2]


def test_an_undeclared_input_field_is_a_warning_for_an_open_schema(tmp_path: Path) -> None:
    head = "input_schema: {type: object, properties: {path: {type: string}}}"
    assert codes(lint(tmp_path, "- {id: a, tool: log, args: {text: '${input.other}'}}", head=head)) == [
        ("warning", "cel-unknown-arg")
    ]


def test_on_failure_compensate_without_any_compensation_is_a_warning(tmp_path: Path) -> None:
    assert codes(lint(tmp_path, "- {id: a, tool: log, args: {text: x}, on_failure: compensate}")) == [
        ("warning", "workflow-compensation")
    ]


def test_a_workflow_named_like_a_tool_is_an_error_unless_hidden(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "wftools.py").write_text(TOOLS_MODULE)
    (config / "base.yaml").write_text(CONFIG)
    doc = (
        "apiVersion: toolrt/v1\nkind: Workflow\nmetadata: {name: log}\nspec:\n  expose: %s\n  steps:\n    - {id: a, "
        "tool: echo}\n"
    )
    (config / "wf.yaml").write_text(doc % "true")
    assert any(p.code == "duplicate-name" for p in build_snapshot([config]).problems)
    (config / "wf.yaml").write_text(doc % "false")
    result = build_snapshot([config])
    assert result.snapshot is not None and "log" in result.snapshot.workflows


def test_a_bad_input_schema_is_reported(tmp_path: Path) -> None:
    problems = lint(tmp_path, "- {id: a, tool: echo}", head="input_schema: {type: objekt}")
    assert any(s == "error" for s, _, _ in problems)


def test_a_clean_workflow_compiles_with_its_order_and_risk(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "wftools.py").write_text(TOOLS_MODULE)
    (config / "base.yaml").write_text(CONFIG)
    (config / "wf.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Workflow\nmetadata: {name: wf}\nspec:\n  steps:\n"
        "    - {id: last, tool: file_delete, depends_on: [mid], args: {path: x}, compensate: builtin}\n"
        "    - {id: mid, tool: echo, depends_on: [first]}\n"
        "    - {id: first, tool: echo}\n"
    )
    result = build_snapshot([config])
    assert result.snapshot is not None, result.problems
    workflow = result.snapshot.workflows["wf"]
    assert [s.id for s in workflow.steps] == ["first", "mid", "last"]
    assert workflow.risk == "medium" and workflow.read_only is False
    assert workflow.restore_tool == "file_edit" and workflow.remove_tool == "file_delete"
    assert result.snapshot.tool("wf") is not None
