"""Every class of config error: its code, its exact file:line:col, and a message that says what to do.

Each case is a small config dir (inline YAML). The test builds it with the fast engines
and compares the complete list of problems, so a case also proves that nothing else is
reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from runtime.config.compile import BuildResult, load_snapshot
from runtime.config.problems import Severity
from runtime.errors import ConfigError
from runtime.settings import Settings

FAST = Settings(cel_engine="fast", schema_engine="fast")
PORTABLE = Settings(cel_engine="portable", schema_engine="portable")

Lint = Callable[..., BuildResult]

# Line numbers of TOOL, for reading the expected positions below:
#  1 apiVersion   5 spec            9 type                     13 (rules / extra lines)
#  2 kind         6 description    10 additionalProperties
#  3 metadata     7 handler        11 properties
#  4 name         8 input_schema   12 path
TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata:
  name: t
spec:
  description: d
  handler: builtin:file_read
  input_schema:
    type: object
    additionalProperties: false
    properties:
      path: {type: string}
"""


def rule(expression: str) -> str:
    """TOOL plus one rule; ``expression`` is the YAML text after `expression: ` on line 15 (col 19)."""
    return TOOL + f"  rules:\n    - name: r\n      expression: {expression}\n      message: m\n"


def tool(old: str, new: str) -> str:
    assert old in TOOL
    return TOOL.replace(old, new)


INCLUDE_OUTPUT = "---\napiVersion: toolrt/v1\nkind: Include\nmetadata: {name: inc}\nspec: {packs: [output-default]}\n"

WORKFLOW = """\
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: w}
spec:
  steps:
    - id: build
      tool: t
    - id: test
      tool: t
      depends_on: [build]
"""

POLICY_BLOCK = """\
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - name: r
      effect: deny
      tools: ["*"]
      when: |
        has(args.path) &&
        sesion.user == "x"
"""


def redaction(regex: str) -> str:
    """A RedactionProfile whose one pattern is ``regex`` (YAML text at line 7, col 14)."""
    return (
        f"apiVersion: toolrt/v1\nkind: RedactionProfile\nmetadata: {{name: rp}}\nspec:\n  patterns:\n    - name: "
        f"p\n      regex: {regex}\n"
    )


class Dangling:
    """A symlink to a file that does not exist: found by discovery, unreadable."""


@dataclass(frozen=True)
class Case:
    files: dict[str, Any]
    expected: list[tuple[str, int, int, str]]
    hint: str  # part of the (first) message that tells the writer what to do
    warning: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    extra_paths: tuple[str, ...] = ()


def case(
    id_: str,
    files: dict[str, Any] | str,
    expected: list[tuple[Any, ...]] | tuple[Any, ...],
    hint: str,
    *,
    marks: Any = (),
    **options: Any,
) -> Any:
    """One table row. ``expected`` items are (line, col, code) in c.yaml or (file, line, col, code)."""
    files = {"c.yaml": files} if isinstance(files, str) else files
    rows = [expected] if isinstance(expected, tuple) else expected
    full = [row if len(row) == 4 else ("c.yaml", *row) for row in rows]
    return pytest.param(Case(files, full, hint, **options), id=id_, marks=marks)


BLOCK_MORE_INDENTED = POLICY_BLOCK.replace('        sesion.user == "x"', '          sesion.user == "x"')

CASES = [
    # -- files ------------------------------------------------------------------
    case(
        "path-not-found",
        {},
        ("missing.yaml", 0, 0, "path-not-found"),
        "pass a config directory or a YAML file",
        extra_paths=("missing.yaml",),
    ),
    case(
        "file-too-large",
        "# " + "x" * 2000 + "\n",
        (0, 0, "file-too-large"),
        "Split it into several files",
        settings={"max_config_file_bytes": 1024},
    ),
    case("file-unreadable", {"c.yaml": Dangling()}, (0, 0, "file-unreadable"), "cannot read the file"),
    case(
        "file-encoding",
        {"c.yaml": b"apiVersion: toolrt/v1\nkind: \xff\xfeTool\n"},
        (2, 1, "file-encoding"),
        "save it as UTF-8",
    ),
    # -- YAML -------------------------------------------------------------------
    case(
        "yaml-syntax",
        tool("  handler: builtin:file_read", "   handler: builtin:file_read"),
        (7, 11, "yaml-syntax"),
        "Fix the YAML at this position",
    ),
    case(
        "yaml-tag",
        tool("description: d", "description: !!python/object/apply:os.system [ls]"),
        (6, 16, "yaml-tag"),
        "Remove the tag",
    ),
    case("yaml-duplicate-key", TOOL + "  description: again\n", (13, 3, "yaml-duplicate-key"), "Remove one of them"),
    case(
        "yaml-alias-bomb",
        TOOL
        + "  x1: &a ["
        + ",".join(["x"] * 10)
        + "]\n"
        + "".join(f"  x{i + 2}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(5)),
        (13, 23, "yaml-alias-bomb"),
        "reduce the use of YAML aliases",
    ),
    case(
        "yaml-too-deep",
        tool("      path: {type: string}", "      path: " + "[" * 70 + "]" * 70),
        (12, 74, "yaml-too-deep"),
        "flatten the document",
    ),
    case(
        "yaml-value",
        tool("path: {type: string}", "path: {type: string, maxLength: .inf}"),
        (12, 39, "yaml-value"),
        "Use a finite number",
    ),
    case("yaml-key", tool("  description: d", "  [description]: d"), (6, 3, "yaml-key"), "keys must be plain strings"),
    case("yaml-merge", TOOL + "  <<: 5\n", (13, 3, "yaml-merge"), "needs a mapping"),
    # -- structure --------------------------------------------------------------
    case(
        "doc-not-mapping",
        "- apiVersion: toolrt/v1\n- kind: Tool\n",
        (1, 1, "doc-not-mapping"),
        "must be a mapping with apiVersion, kind, metadata and spec",
    ),
    case("missing-key", tool("  description: d\n", ""), (6, 3, "missing-key"), "add `description`"),
    case("unknown-api-version", tool("toolrt/v1", "toolrt/v2"), (1, 13, "unknown-api-version"), "use `toolrt/v1`"),
    case("unknown-kind", tool("kind: Tool", "kind: Toool"), (2, 7, "unknown-kind"), "Did you mean `Tool`?"),
    case(
        "unknown-key",
        tool("  handler:", "  timeout:\n    timout_s: 5\n  handler:"),
        (8, 5, "unknown-key"),
        "Did you mean `total_s`?",
    ),
    case("wrong-type", TOOL + "  read_only: yes please\n", (13, 14, "wrong-type"), "must be true or false"),
    case(
        "invalid-value",
        TOOL + "  risk: extreme\n",
        (13, 9, "invalid-value"),
        'must be one of "low", "medium", "high", "critical"',
    ),
    # -- cross-document -----------------------------------------------------------
    case(
        "duplicate-name",
        {"a.yaml": TOOL, "b.yaml": "# the same tool again\n" + TOOL},
        [("a.yaml", 4, 9, "duplicate-name"), ("b.yaml", 5, 9, "duplicate-name")],
        "Rename or remove one",
    ),
    case(
        "unknown-profile",
        TOOL + "  output: {profile: inline-larg}\n" + INCLUDE_OUTPUT,
        (13, 21, "unknown-profile"),
        "Did you mean `inline-large`?",
    ),
    case(
        "unknown-pack",
        "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: inc}\nspec:\n  packs: [redaction-defualt]\n",
        (5, 11, "unknown-pack"),
        "Did you mean `redaction-default`?",
    ),
    case(
        "unknown-builtin",
        tool("builtin:file_read", "builtin:file_raed"),
        (7, 12, "unknown-builtin"),
        "Did you mean `file_read`?",
    ),
    case(
        "unknown-mcp-server",
        tool("builtin:file_read", "mcp:gitub/create_issue")
        + (
            "---\napiVersion: toolrt/v1\nkind: McpServer\nmetadata: {name: github}\nspec: {transport: stdio, command: "
            "[gh-mcp]}\n"
        ),
        (7, 12, "unknown-mcp-server"),
        "Did you mean `github`?",
    ),
    case(
        "handler-unresolved",
        tool("builtin:file_read", "python:toolrt_no_such_module:run"),
        (7, 12, "handler-unresolved"),
        "put it beside the config files",
    ),
    case(
        "handler-template",
        tool("  handler: builtin:file_read", "  handler:\n    command:\n      argv: [cat, '{pth}']"),
        (9, 19, "handler-template"),
        "Did you mean `path`?",
    ),
    case(
        "unknown-tool",
        {"t.yaml": TOOL, "c.yaml": WORKFLOW.replace("      tool: t\n    - id: test", "      tool: tt\n    - id: test")},
        (7, 13, "unknown-tool"),
        "Did you mean `t`?",
    ),
    case(
        "unknown-step",
        {"t.yaml": TOOL, "c.yaml": WORKFLOW.replace("[build]", "[tset]")},
        (10, 20, "unknown-step"),
        "Did you mean `test`?",
    ),
    case(
        "workflow-cycle",
        {
            "t.yaml": TOOL,
            "c.yaml": WORKFLOW.replace(
                "      tool: t\n    - id: test", "      tool: t\n      depends_on: [test]\n    - id: test"
            ),
        },
        (8, 19, "workflow-cycle"),
        "Remove one of these dependencies",
    ),
    # -- input_schema ---------------------------------------------------------------
    case(
        "schema-invalid",
        tool(
            "      path: {type: string}",
            "      path:\n        type: object\n        properties:\n          inner: {type: strng}",
        ),
        (15, 25, "schema-invalid"),
        "Did you mean `string`?",
    ),
    case(
        "schema-not-object",
        tool(
            "    type: object\n    additionalProperties: false\n    properties:\n      path: {type: string}\n",
            "    type: array\n",
        ),
        (9, 5, "schema-not-object"),
        "must have `type: object`",
    ),
    case(
        "schema-unknown-keyword",
        tool("{type: string}", "{type: string, maxLenght: 5}"),
        (12, 39, "schema-unknown-keyword"),
        "Did you mean `maxLength`?",
        warning=True,
    ),
    case(
        "schema-default-invalid",
        tool("{type: string}", "{type: string, default: 5}"),
        (12, 37, "schema-default-invalid"),
        "Change the default or the schema",
    ),
    case(
        "schema-enum-invalid",
        tool("{type: string}", "{type: string, enum: [a, 3]}"),
        (12, 38, "schema-enum-invalid"),
        "Remove it or widen the schema",
    ),
    case(
        "schema-required-undeclared",
        tool("    properties:", "    required: [pth]\n    properties:"),
        (11, 16, "schema-required-undeclared"),
        "Did you mean `path`?",
    ),
    case(
        "schema-remote-ref",
        tool("{type: string}", "{$ref: 'https://example.com/s.json'}"),
        (12, 20, "schema-remote-ref"),
        "Inline it under `$defs`",
    ),
    # -- CEL ------------------------------------------------------------------------
    case("cel-syntax", rule("'args.path && && true'"), (15, 33, "cel-syntax"), "Fix the expression"),
    case("cel-type", rule("'1 + \"a\" == 2'"), (15, 22, "cel-type"), "Convert one side"),
    case("cel-undeclared", rule("'arg.path == \"x\"'"), (15, 20, "cel-undeclared"), "Did you mean `args`?"),
    case("cel-unknown-arg", rule("'args.pth == \"x\"'"), (15, 25, "cel-unknown-arg"), "Did you mean `path`?"),
    case(
        "cel-unknown-arg-open-schema",
        rule("'args.pth == \"x\"'").replace("    additionalProperties: false\n", ""),
        (14, 25, "cel-unknown-arg"),
        "Did you mean `path`?",
        warning=True,
    ),
    case(
        "cel-too-complex",
        rule("'" + "(" * 30 + "true" + ")" * 30 + "'"),
        (15, 19, "cel-too-complex"),
        "Split it into several rules",
    ),
    case("cel-in-block-scalar", POLICY_BLOCK, (11, 9, "cel-undeclared"), "Did you mean `session`?"),
    case(
        "cel-in-block-scalar-more-indented",
        BLOCK_MORE_INDENTED,
        (11, 11, "cel-undeclared"),
        "Did you mean `session`?",
    ),
    # -- regexes ----------------------------------------------------------------------
    case("regex-invalid", redaction("'[a-'"), (7, 14, "regex-invalid"), "Fix the pattern"),
    case("regex-unsupported", redaction("'(?<=a)b'"), (7, 14, "regex-unsupported"), "Rewrite the pattern without it"),
    case(
        "regex-unsupported-backref",
        rule("'args.path.matches(\"(a)\\\\1\")'"),
        (15, 38, "regex-unsupported"),
        "Rewrite the pattern without them",
    ),
    case(
        "regex-catastrophic",
        tool("{type: string}", "{type: string, pattern: '(a+)+'}"),
        (12, 37, "regex-catastrophic"),
        "`(a+)+` -> `a+`",
    ),
]


def _materialise(case_: Case, lint: Lint) -> BuildResult:
    dangling = [name for name, content in case_.files.items() if isinstance(content, Dangling)]
    files = {name: content for name, content in case_.files.items() if not isinstance(content, Dangling)}
    for name in dangling:
        os.symlink("does-not-exist.yaml", name)
    settings = FAST.model_copy(update=case_.settings) if case_.settings else FAST
    return lint(files, settings, case_.extra_paths)


@pytest.mark.parametrize("case_", CASES)
def test_each_error_class_is_reported_at_its_position(case_: Case, lint: Lint) -> None:
    result = _materialise(case_, lint)
    assert [(p.location.file, p.location.line, p.location.col, p.code) for p in result.problems] == case_.expected, (
        "\n".join(map(str, result.problems))
    )
    first = result.problems[0]
    assert first.severity is (Severity.warning if case_.warning else Severity.error)
    assert first.message.strip()
    assert case_.hint in first.message
    assert (result.snapshot is None) is not case_.warning


def test_the_table_covers_every_documented_code() -> None:
    documented = {
        "path-not-found", "file-too-large", "file-unreadable", "file-encoding",
        "yaml-syntax", "yaml-tag", "yaml-duplicate-key", "yaml-alias-bomb", "yaml-too-deep", "yaml-value", "yaml-key",
        "yaml-merge",
        "doc-not-mapping", "missing-key", "unknown-api-version", "unknown-kind", "unknown-key", "wrong-type",
        "invalid-value",
        "duplicate-name", "unknown-profile", "unknown-pack", "unknown-builtin", "unknown-mcp-server",
        "handler-unresolved", "handler-template",
        "unknown-tool", "unknown-step", "workflow-cycle",
        "schema-invalid", "schema-not-object", "schema-unknown-keyword", "schema-default-invalid",
        "schema-enum-invalid", "schema-required-undeclared", "schema-remote-ref",
        "cel-syntax", "cel-type", "cel-undeclared", "cel-unknown-arg", "cel-too-complex", "regex-invalid",
        "regex-unsupported", "regex-catastrophic",
    }  # fmt: skip
    covered = {row[3] for param in CASES for row in param.values[0].expected}
    assert documented - covered == set()


def test_duplicate_name_message_points_each_place_at_the_other(lint: Lint) -> None:
    result = lint({"a.yaml": TOOL, "b.yaml": "# again\n" + TOOL})
    messages = {p.location.file: p.message for p in result.problems}
    assert "here and at b.yaml:5:9" in messages["a.yaml"]
    assert "here and at a.yaml:4:9" in messages["b.yaml"]


def test_tool_versions_with_the_same_name_are_not_duplicates(lint: Lint) -> None:
    v1 = tool("  name: t\n", "  name: t\n  version: '1'\n")
    v2 = tool("  name: t\n", "  name: t\n  version: '2'\n")
    result = lint({"c.yaml": v1 + "---\n" + v2})
    assert result.problems == ()
    assert result.snapshot is not None


# ---------------------------------------------------------------------------
# engines


@pytest.mark.parametrize("settings", [FAST, PORTABLE], ids=["fast", "portable"])
def test_cel_syntax_error_is_reported_the_same_way_by_both_engines(settings: Settings, lint: Lint) -> None:
    result = lint({"c.yaml": rule("'args.path && && true'")}, settings)
    assert [(p.location.line, p.location.col, p.code) for p in result.problems] == [(15, 33, "cel-syntax")]


def test_cel_syntax_error_in_a_block_scalar_is_located_on_its_line_by_both_engines(lint: Lint) -> None:
    text = TOOL + (
        "  rules:\n    - name: r\n      expression: |\n        has(args.path) &&\n        args.path ==\n        "
        "== 3\n      message: m\n"
    )
    fast = lint({"c.yaml": text}, FAST)
    portable = lint({"c.yaml": text}, PORTABLE)
    expected = [("c.yaml", 18, 9, "cel-syntax")]
    assert [(p.location.file, p.location.line, p.location.col, p.code) for p in fast.problems] == expected
    assert [(p.location.file, p.location.line, p.location.col, p.code) for p in portable.problems] == expected


def test_both_engines_type_check_literals(lint: Lint) -> None:
    text = rule("'1 + \"a\" == 2'")
    assert [p.code for p in lint({"c.yaml": text}, FAST).problems] == ["cel-type"]
    portable = lint({"c.yaml": text}, PORTABLE)
    assert [p.code for p in portable.problems] == ["cel-type"]
    assert portable.snapshot is None


def test_engine_independent_checks_agree_between_engines(lint: Lint) -> None:
    text = rule('\'arg.path == "x" && args.pth == "y"\'')
    fast = [(str(p.location), p.code, p.message) for p in lint({"c.yaml": text}, FAST).problems]
    portable = [(str(p.location), p.code, p.message) for p in lint({"c.yaml": text}, PORTABLE).problems]
    assert fast == portable
    assert [code for _, code, _ in fast] == ["cel-undeclared", "cel-unknown-arg"]


# ---------------------------------------------------------------------------
# everything at once


def test_three_independent_errors_in_one_tool_are_all_reported(lint: Lint) -> None:
    text = (
        tool("builtin:file_read", "builtin:file_raed").replace("{type: string}", "{type: string, default: 5}")
        + "  output: {profile: nope}\n"
    )
    result = lint({"c.yaml": text})
    assert [(p.location.line, p.location.col, p.code) for p in result.problems] == [
        (7, 12, "unknown-builtin"),
        (12, 37, "schema-default-invalid"),
        (13, 21, "unknown-profile"),
    ]
    assert result.snapshot is None


def test_errors_in_different_documents_and_files_are_all_reported(lint: Lint) -> None:
    first = tool("name: t", "name: a").replace("builtin:file_read", "builtin:nope")
    second = tool("name: t", "name: b").replace("toolrt/v1", "toolrt/v9")
    third = tool("name: t", "name: c").replace("  handler:", "  timeout: {timout_s: 1}\n  handler:")
    result = lint({"c.yaml": first + "---\n" + second, "d.yaml": third, "e.yaml": "a: [\n"})
    assert [(p.location.file, p.location.line, p.code) for p in result.problems] == [
        ("c.yaml", 7, "unknown-builtin"),
        ("c.yaml", 14, "unknown-api-version"),
        ("d.yaml", 7, "unknown-key"),
        ("e.yaml", 2, "yaml-syntax"),
    ]


def test_load_snapshot_raises_config_error_with_every_problem(lint: Lint) -> None:
    lint(
        {
            "c.yaml": tool("builtin:file_read", "builtin:file_raed"),
            "d.yaml": tool("name: t", "name: u").replace("toolrt/v1", "toolrt/v2"),
        }
    )
    with pytest.raises(ConfigError) as raised:
        load_snapshot(["."], FAST)
    assert [(p.location.file, p.code) for p in raised.value.problems] == [
        ("c.yaml", "unknown-builtin"),
        ("d.yaml", "unknown-api-version"),
    ]
    assert "2 config error(s)" in str(raised.value)
    assert "c.yaml:7:12: error[unknown-builtin]" in str(raised.value)


def test_warnings_alone_still_give_a_snapshot_that_carries_them(lint: Lint) -> None:
    result = lint({"c.yaml": tool("{type: string}", "{type: string, maxLenght: 5}")})
    assert result.snapshot is not None
    assert [p.code for p in result.snapshot.warnings] == ["schema-unknown-keyword"]


# ---------------------------------------------------------------------------
# bugs found while writing these tests


@pytest.mark.parametrize("kind", ["{a: 1}", "[Tool]"])
def test_a_non_string_kind_is_a_problem_not_a_crash(kind: str, lint: Lint) -> None:
    result = lint({"c.yaml": tool("kind: Tool", f"kind: {kind}")})
    assert [(p.location.line, p.location.col, p.code) for p in result.problems] == [(2, 7, "unknown-kind")]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(TOOL + "  risk: extreme\n", id="enum"),
        pytest.param(tool("{type: string}", "{type: strng}"), id="schema-invalid-with-hint"),
        pytest.param(tool("kind: Tool", "kind: Toool"), id="unknown-kind"),
        pytest.param(TOOL + "  read_only: maybe\n", id="wrong-type"),
    ],
)
def test_messages_have_clean_punctuation(text: str, lint: Lint) -> None:
    (problem,) = lint({"c.yaml": text}).problems
    assert ".." not in problem.message
    assert "?." not in problem.message


def test_named_back_reference_is_unsupported_not_invalid(lint: Lint) -> None:
    (problem,) = lint({"c.yaml": redaction("'(?P<n>a)(?P=n)'")}).problems
    assert problem.code == "regex-unsupported"
