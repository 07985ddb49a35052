"""toolrt's CEL checker against cel-expr-python's checker given the schema's types.

The JSON Schema's types feed both: toolrt's checker (:mod:`runtime.policy.celcheck`,
for either engine) and, with the fast engine, cel-expr-python's own checker with the
types declared as protocol-buffer messages (:mod:`runtime.policy.celdeclared`). Each
expression of the corpus says which verdict both give, or why cel-expr-python cannot
decide it (a class of ``celdeclared.UNDECIDED``), or what it cannot see (``blind``:
the schema says more than its types hold). Whatever the expression, cel-expr-python's
checker never rejects what toolrt's passes: at snapshot build its rejection is an error.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime.cli import main as cli_main
from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.policy import celdeclared

pytestmark = pytest.mark.skipif(not celdeclared.available(), reason="needs the fast extra (cel-expr-python, protobuf)")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["count", "path", "tags", "ratio", "mode", "filter", "labels", "flag", "maybe", "rows", "opts"],
    "properties": {
        "count": {"type": "integer", "minimum": 0},
        "path": {"type": "string", "maxLength": 200},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 20},
        "ratio": {"type": "number"},
        "mode": {"type": "string", "enum": ["fast", "full"]},
        "filter": {
            "type": "object",
            "required": ["depth"],
            "properties": {"depth": {"type": "integer"}, "name": {"type": "string"}},
            "additionalProperties": False,
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 50}, "maxProperties": 10},
        "flag": {"type": "boolean"},
        "maybe": {"type": ["integer", "null"]},
        "rows": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
            },
        },
        "opts": {"type": "object", "required": ["level"], "properties": {"level": {"type": "integer"}}},
        "grid": {
            "type": "array",
            "maxItems": 5,
            "items": {"type": "array", "maxItems": 5, "items": {"type": "integer"}},
        },
        "anything": {},
        "dash-name": {"type": "string"},
        "maybe_name": {"type": ["string", "null"], "maxLength": 10},
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 5},
    },
}

OK, ERROR = "ok", "error"

#: (expression, toolrt's verdict, cel-expr-python's verdict or UNDECIDED class or "blind: why")
CORPUS: list[tuple[str, str, str]] = [
    # both pass
    ("args.count > 2", OK, OK),
    ("args.count <= 100 && args.path != ''", OK, OK),
    ("args.path.startsWith('src/') || args.path.endsWith('.py')", OK, OK),
    ("args.path.matches('^src/[a-z]+$')", OK, OK),
    ("args.tags.all(t, size(t) < 10)", OK, OK),
    ("args.tags.exists(t, t == 'x')", OK, OK),
    ("'x' in args.tags", OK, OK),
    ("size(args.tags.filter(t, t != 'x')) >= 0", OK, OK),
    ("args.tags.map(t, size(t)).all(n, n >= 0)", OK, OK),
    ("args.filter.depth < 5", OK, OK),
    ("!has(args.filter.name) || args.filter.name.contains('n')", OK, OK),
    ("'team' in args.labels && args.labels.team == 'a' || !('team' in args.labels)", OK, OK),
    ("args.maybe == null || args.maybe > 1", OK, OK),
    ("args.rows.all(r, r.id > 0)", OK, OK),
    ("args.rows.all(r, !has(r.note) || size(r.note) < 5)", OK, OK),
    ("args.flag ? args.count >= 0 : args.path == ''", OK, OK),
    ("args.flag", OK, OK),
    ("tool.read_only || session.mode == 'plan'", OK, OK),
    ("string(args.count) != 'x'", OK, OK),
    ("int(args.ratio) > 0", OK, OK),
    ("args.ratio > 1", OK, OK),
    ("args.grid.all(row, row.all(c, c >= 0))", OK, OK),
    ("args.scores.all(k, args.scores[k] > 0)", OK, OK),
    ("has(args.anything) && args.anything == 3", OK, OK),
    ("has(args.anything) && args.anything.foo", OK, OK),
    ("args.flag ? args.count > 1 : args.path == ''", OK, OK),
    ("(args.flag ? args.ratio : 1) > 0", OK, OK),
    ("has(args.maybe_name) && args.maybe_name != null && args.maybe_name.startsWith('a')", OK, OK),
    ("size(args.path + '/x') > 0", OK, OK),
    ("call.index >= 0 && session.labels.all(k, k != '')", OK, OK),
    # both reject: wrong field, wrong types, not a bool
    ("args.cnt > 50", ERROR, ERROR),
    ("args.count <= '100'", ERROR, ERROR),
    ("args.count == '3'", ERROR, ERROR),
    ("args.path > 5", ERROR, ERROR),
    ("args.flag < 1", ERROR, ERROR),
    ("args.filter.deep > 1", ERROR, ERROR),
    ("has(args.nope)", ERROR, ERROR),
    ("tool.readonly == true", ERROR, ERROR),
    ("session.role == 'admin'", ERROR, ERROR),
    ("args.count.startsWith('1')", ERROR, ERROR),
    ("args.path.lowerAscii() == 'a'", ERROR, ERROR),
    ("args.tags.contains('x')", ERROR, ERROR),
    ("args.count + 1.5 > 2.0", ERROR, ERROR),
    ("args.tags.all(t, t > 1)", ERROR, ERROR),
    ("args.rows.all(r, r.id.size() > 0)", ERROR, ERROR),
    ("args.count && true", ERROR, ERROR),
    ("!args.path", ERROR, ERROR),
    ("size(args.count) > 0", ERROR, ERROR),
    ("args.count in 'abc'", ERROR, ERROR),
    ("args.maybe <= '3'", ERROR, ERROR),
    ("args.tags['x'] == 's'", ERROR, ERROR),
    ("args.flag ? 1 : 'a'", ERROR, ERROR),
    ("(args.flag ? args.count : args.path) == 1", ERROR, ERROR),
    ("(args.flag ? 1 : 2.0) > 0", ERROR, ERROR),
    ("size(args.path)", ERROR, ERROR),
    ("args.path", ERROR, ERROR),
    ("args.tags.map(t, t)", ERROR, ERROR),
    ("args.filter", ERROR, ERROR),
    ("args.labels", ERROR, ERROR),
    ("args.opts.level.size() > 1", ERROR, ERROR),
    # cel-expr-python cannot decide (celdeclared.UNDECIDED)
    ("args.count > 3.0", OK, "numeric"),
    ("args.count == 1u", OK, "numeric"),
    ("args.filter.depth < 2.5", OK, "numeric"),
    ("args.path == null", OK, "null"),
    ("args.tags != null", OK, "null"),
    ("'count' in args", OK, "record"),
    ("size(args) > 0", OK, "record"),
    ("args['count'] > 1", OK, "record"),
    ("args.opts.extra == 1", OK, "open"),
    ("args.rows.all(r, r.more == 1)", OK, "open"),
    # cel-expr-python's types hold less than the schema says
    ("args.mode == 'slow'", ERROR, "blind: enum values"),
    ("args.ratio * 2.0 > 1.0", ERROR, "blind: number is an int or a double"),
]

#: Policy conditions (a rule over many tools) may test for a field some tools lack.
POLICY_CORPUS: list[tuple[str, str, str]] = [
    ("has(args.other) && args.other > 1", OK, "guarded"),
    ("!has(args.other) || args.other == 'x'", OK, "guarded"),
    ("args.other > 1", ERROR, ERROR),
    ("args.count > 1", OK, OK),
]


def _typed(schema: Any = SCHEMA) -> TypedCheck:
    variables, bounds, key = variable_types(schema)
    return TypedCheck(variables, bounds, "bool", key=key)


def _ours(expression: str, typed: TypedCheck, *, own_schema: bool = True) -> str:
    found = [f for f in type_findings(expression, (), typed, own_schema=own_schema) if f.code != "cel-cost"]
    return ERROR if any(not f.warning for f in found) else OK


def _theirs(expression: str, typed: TypedCheck, *, own_schema: bool = True) -> celdeclared.Verdict:
    verdict = celdeclared.check_declared(expression, typed.variables, typed.key, "bool", own_schema=own_schema)
    assert verdict is not None
    return verdict


@pytest.mark.parametrize(("expression", "ours", "theirs"), CORPUS)
def test_both_checkers_agree_wherever_cel_expr_python_can_decide(expression: str, ours: str, theirs: str) -> None:
    typed = _typed()
    verdict = _theirs(expression, typed)
    assert _ours(expression, typed) == ours
    if theirs in (OK, ERROR):
        assert verdict.status == theirs, verdict
    elif theirs.startswith("blind"):
        assert verdict.status == OK, verdict  # it sees no error where the schema shows one
    else:
        assert (verdict.status, verdict.message) == ("undecided", theirs), verdict
        assert theirs in celdeclared.UNDECIDED


@pytest.mark.parametrize(("expression", "ours", "theirs"), POLICY_CORPUS)
def test_policy_conditions_agree_where_a_field_is_guarded_by_has(expression: str, ours: str, theirs: str) -> None:
    typed = _typed()
    verdict = _theirs(expression, typed, own_schema=False)
    assert _ours(expression, typed, own_schema=False) == ours
    assert verdict.status == (theirs if theirs in (OK, ERROR) else "undecided"), verdict


def test_cel_expr_python_never_rejects_what_toolrt_passes_across_the_corpus() -> None:
    typed = _typed()
    for expression, _ours_verdict, _theirs_verdict in CORPUS:
        if _ours(expression, typed) == OK:
            assert _theirs(expression, typed).status != ERROR, expression


def test_its_errors_name_the_schema_value_and_the_position() -> None:
    verdict = _theirs("args.count > 1 && args.filter.deep > 1", _typed())
    assert verdict.status == ERROR
    assert "`args.filter`" in verdict.message and "deep" in verdict.message
    assert (verdict.line, verdict.col) == (1, 30)
    result = _theirs("args.rows.map(r, r.id)", _typed())
    assert result.message == "the expression gives list(int), not a bool"


HOSTILE_SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"fooBar": {"type": "string"}, "foo_bar": {"type": "integer"}}},
    {"type": "object", "properties": {"Foo": {"type": "object"}, "foo": {"type": "object"}}},
    {"type": "object", "properties": {"a-b": {"type": "string"}, "9x": {"type": "integer"}, "": {}, "é": {}}},
    {"type": "object", "properties": {"in": {"type": "string"}, "package": {"type": "integer"}}},
    {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(3000)}},
    {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "object"}}}},
    {"type": "object", "properties": {"x": {"type": ["object", "null"], "properties": {"y": {"type": "integer"}}}}},
    {"type": "object", "properties": {"l": {"type": "array", "items": {"type": ["string", "null"]}}}},
    {"type": "object", "properties": {"l": {"type": ["array", "null"], "items": {"type": "string"}}}},
    {"type": "object", "properties": {"u": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "array", "items": {"type": "string"}},
    {"type": "string"},
    {},
]


def _nest(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "object", "required": ["n"], "properties": {"n": schema}}
    return schema


def test_any_schema_gives_a_verdict_without_a_word_on_stderr() -> None:
    # cel-cpp writes an invalid descriptor's problems to stderr (a library must not):
    # a child process shows whatever it would write.
    script = textwrap.dedent(
        """
        import json, sys
        from runtime.config.exprtypes import variable_types
        from runtime.policy.celdeclared import check_declared
        for schema in json.loads(sys.argv[1]):
          variables, _, key = variable_types(schema)
          for source in ("args.fooBar == 1", "has(args.Foo) && has(args.foo)", "args.x == null || args.x.y > 1",
                         "args.l == null", "args.p2999 > 1", "args.m.k.z == 1", "args.n.n.n.n > 1", "args.u == 1",
                         "size(args) > 0", "args.a == 1"):
            verdict = check_declared(source, variables, key)
            assert verdict is not None and verdict.status in ("ok", "error", "undecided"), verdict
        print("done")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps([*HOSTILE_SCHEMAS, _nest(40)])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert done.stderr == ""


def test_a_snapshot_built_with_the_fast_engine_and_lint_with_the_portable_one_give_the_same_findings(
    tmp_path: Path,
) -> None:
    rules = "\n".join(
        f"    - {{name: r{i}, expression: {expression!r}, message: m}}" for i, (expression, _o, _t) in enumerate(CORPUS)
    )
    (tmp_path / "tools.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: t}\nspec:\n  description: A tool.\n"
        "  handler: {builtin: echo}\n  read_only: true\n"
        f"  input_schema: {json.dumps(SCHEMA)}\n  rules:\n{rules}\n"
    )
    outputs = {}
    for engine in ("fast", "portable"):
        out = io.StringIO()
        cli_main(["lint", "--engine", engine, "--format", "json", str(tmp_path)], stdout=out)
        outputs[engine] = json.loads(out.getvalue())
    fast = [(p["code"], p["line"], p["col"]) for p in outputs["fast"]["problems"]]
    portable = [(p["code"], p["line"], p["col"]) for p in outputs["portable"]["problems"]]
    assert fast == portable
    assert len([c for c in fast if c[0] != "cel-cost"]) > 30
