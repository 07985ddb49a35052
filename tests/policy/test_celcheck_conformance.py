"""The lint checker's verdicts against what both CEL engines do at run time.

For each (schema, expression): when the checker finds nothing, both engines evaluate
the expression to a bool, without error, on arguments valid under the schema (and
agree); when it reports a type error, both engines fail (an error or a non-bool) on
every such call, or give an answer that does not depend on the arguments (a
comparison of values of different types); when it warns that an optional field is
read without has(), both engines fail on the call that leaves the field out.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.policy.cel import RULE_VARIABLES, fast_available, get_engine

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["count", "path", "tags", "ratio", "mode", "limit", "filter", "labels", "flag", "maybe", "rows"],
    "properties": {
        "count": {"type": "integer", "minimum": 0},
        "path": {"type": "string", "maxLength": 200},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 20},
        "ratio": {"type": "number"},
        "mode": {"type": "string", "enum": ["fast", "full"]},
        "limit": {"type": "integer"},
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
        "extra": {"type": "string", "maxLength": 10},
    },
}

# Arguments valid under SCHEMA, chosen to exercise each field (numbers both as int and double).
SAMPLES: list[dict[str, Any]] = [
    {
        "count": 3,
        "path": "src/a.py",
        "tags": ["x", "y"],
        "ratio": 0.5,
        "mode": "fast",
        "limit": 10,
        "filter": {"depth": 2, "name": "n"},
        "labels": {"team": "a"},
        "flag": True,
        "maybe": 4,
        "rows": [{"id": 1, "note": "a"}],
        "extra": "e",
    },
    {
        "count": 0,
        "path": "",
        "tags": [],
        "ratio": 2,
        "mode": "full",
        "limit": -1,
        "filter": {"depth": 0},
        "labels": {},
        "flag": False,
        "maybe": 0,
        "rows": [],
    },
]

CLEAN = [
    "args.count > 2",
    "args.count <= 100 && args.path != ''",
    "args.ratio > 0.25",
    "args.ratio > 1",
    "double(args.ratio) * 2.0 > 1.0",
    "args.mode == 'fast' || args.mode == 'full'",
    "args.tags.all(t, size(t) < 10)",
    "args.tags.exists(t, t.startsWith('x')) || size(args.tags) == 0",
    "'x' in args.tags || true",
    "args.filter.depth < 5",
    "!has(args.filter.name) || args.filter.name.contains('n')",
    "has(args.extra) && args.extra == 'e' || !has(args.extra)",
    "args.path.matches('^src/') || args.path == ''",
    "'team' in args.labels && args.labels.team == 'a' || !('team' in args.labels)",
    "args.maybe == null || args.maybe > 1",
    "args.maybe != null && args.maybe > 1 || args.maybe == null",
    "args.rows.all(r, r.id > 0)",
    "args.rows.all(r, !has(r.note) || size(r.note) < 5)",
    "size(args.tags.filter(t, t != 'x')) >= 0",
    "args.tags.map(t, size(t)).all(n, n >= 0)",
    "args.flag == true || args.flag == false",
    "args.flag ? args.count >= 0 : args.limit < 1000",
    "tool.read_only || !tool.read_only",
    "string(args.count) != 'x'",
    "int(args.count) + 1 > 0",
    "size(args.path + '/x') > 0",
]

# The checker reports a type error; the expression errors (or is not a bool) at run time.
FAILING = [
    ("args.cnt > 50", "cel-unknown-arg"),
    ("args.count <= '100'", "cel-type"),
    ("size(args.path)", "cel-result-type"),
    ("args.path", "cel-result-type"),
    ("args.count", "cel-result-type"),
    ("args.ratio * 2.0 > 1.0", "cel-type"),
    ("args.count + 1.5 > 2.0", "cel-type"),
    ("args.path[0] == 's'", "cel-type"),
    ("args.tags.contains('x')", "cel-type"),
    ("args.count.startsWith('1')", "cel-type"),
    ("args.path > 5", "cel-type"),
    ("args.flag < 1", "cel-type"),
    ("args.filter.deep > 1", "cel-unknown-arg"),
    ("args.tags.all(t, size(t))", "cel-type"),
    ("args.count && true", "cel-type"),
    ("!args.path", "cel-type"),
    ("args.rows.all(r, r.id.size() > 0)", "cel-type"),
    ("size(args.count) > 0", "cel-type"),
    ("args.tags.map(t, t)", "cel-result-type"),
    ("args.path.lowerAscii() == 'a'", "cel-type"),
    ("tool.readonly == true", "cel-unknown-arg"),
    ("args.count in 'abc'", "cel-type"),
]

# Always the same answer whatever the call (different types never compare equal): lint errors.
CONSTANT = [
    ("args.count == '3'", False),
    ("args.path == 3", False),
    ("args.flag == 'true'", False),
    ("args.mode == 'slow'", False),
    ("args.count != '3'", True),
]

# Read without has(): fails on a call that leaves the field out.
OPTIONAL = [
    "args.extra == 'e'",
    "args.extra.size() > 0",
    "args.filter.name == 'n'",
    "args.labels.team == 'a'",
    "args.rows.all(r, r.note == 'a')",
]

ENGINES = ["portable", *(["fast"] if fast_available() else [])]


def _typed() -> TypedCheck:
    variables, bounds, key = variable_types(SCHEMA)
    return TypedCheck(variables, bounds, "bool", key=key)


def _evaluate(engine_name: str, expression: str, args: dict[str, Any]) -> Any:
    engine = get_engine(engine_name)
    program = engine.compile(expression, RULE_VARIABLES)
    data = {"args": args, "tool": {"read_only": True, "name": "t"}, "session": {}, "call": {}}
    return program.evaluate(engine.activation(data, RULE_VARIABLES))


def _compiles(engine_name: str, expression: str) -> bool:
    try:
        get_engine(engine_name).compile(expression, RULE_VARIABLES)
    except Exception:  # noqa: BLE001 - a compile error is one of the verdicts
        return False
    return True


@pytest.mark.parametrize("expression", CLEAN)
def test_an_expression_the_checker_passes_evaluates_to_a_bool_on_both_engines(expression: str) -> None:
    findings = type_findings(expression, (), _typed())
    assert findings == [], [f.message for f in findings]
    for args in SAMPLES:
        outcomes = [_evaluate(name, expression, args) for name in ENGINES]
        for outcome in outcomes:
            assert outcome.error is None, outcome.error
            assert isinstance(outcome.value, bool)
        assert len({o.value for o in outcomes}) == 1


@pytest.mark.parametrize(("expression", "code"), FAILING)
def test_an_expression_the_checker_rejects_fails_at_run_time_on_both_engines(expression: str, code: str) -> None:
    findings = type_findings(expression, (), _typed())
    assert code in [f.code for f in findings if not f.warning], [f.message for f in findings]
    for name in ENGINES:
        if not _compiles(name, expression):
            continue  # the engine rejects it itself (the fast one types literals)
        # On some valid call (not always every one: an empty list runs no body, a double
        # is fine where an int is not) the engine errors, or gives no bool.
        outcomes = [_evaluate(name, expression, args) for args in SAMPLES]
        assert any(o.error is not None or not isinstance(o.value, bool) for o in outcomes) or _engines_disagree(
            expression
        ), (name, outcomes)


def _engines_disagree(expression: str) -> bool:
    """cel-python sometimes answers where cel-cpp errors (a non-bool comprehension body)."""
    if len(ENGINES) < 2 or not all(_compiles(name, expression) for name in ENGINES):
        return False
    return any(len({repr(_evaluate(name, expression, args)) for name in ENGINES}) > 1 for args in SAMPLES)


@pytest.mark.parametrize(("expression", "value"), CONSTANT)
def test_a_comparison_the_checker_rejects_gives_one_answer_for_every_call(expression: str, value: bool) -> None:
    findings = type_findings(expression, (), _typed())
    assert [f.code for f in findings if not f.warning] == ["cel-type"], [f.message for f in findings]
    for name in ENGINES:
        if not _compiles(name, expression):
            continue
        assert {_evaluate(name, expression, args).value for args in SAMPLES} == {value}


@pytest.mark.parametrize("expression", OPTIONAL)
def test_an_optional_read_the_checker_warns_about_fails_when_the_field_is_left_out(expression: str) -> None:
    findings = type_findings(expression, (), _typed())
    assert [f.code for f in findings] == ["cel-optional"], [f.message for f in findings]
    assert findings[0].warning
    sparse = {**SAMPLES[1], "filter": {"depth": 1}, "labels": {}, "rows": [{"id": 1}]}
    for name in ENGINES:
        outcome = _evaluate(name, expression, sparse)
        assert outcome.error is not None, (name, outcome)
