"""Per-call argument validation: the same pointers and messages with either schema engine."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.validation.arguments import ArgumentProblem, ArgumentValidator

ENGINES = ("fast", "portable")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "limit"],
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 10},
        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
        "mode": {"enum": ["replace", "append", "insert"]},
        "id": {"type": "string", "pattern": "^T-\\d{1,4}$"},
        "filter": {
            "type": "object",
            "additionalProperties": False,
            "required": ["field"],
            "properties": {"field": {"type": "string"}, "max": {"type": "number", "exclusiveMaximum": 10}},
        },
        "tags": {
            "type": "array",
            "items": {"type": "string", "maxLength": 3},
            "minItems": 1,
            "maxItems": 3,
            "uniqueItems": True,
        },
        "note": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
        "count": {"type": ["integer", "null"], "minimum": 0},
    },
}
OK = {"path": "a", "limit": 1}

ALLOWED = "allowed: count, filter, id, limit, mode, note, path, tags"

INVALID: list[tuple[str, Any, list[tuple[str, str]]]] = [
    (
        "type with bounds",
        {"path": "a", "limit": "ten"},
        [("/limit", '`limit` must be an integer >= 1 and <= 500, got "ten"')],
    ),
    (
        "float for integer",
        {"path": "a", "limit": 2.5},
        [("/limit", "`limit` must be an integer >= 1 and <= 500, got 2.5")],
    ),
    (
        "bool for integer",
        {"path": "a", "limit": True},
        [("/limit", "`limit` must be an integer >= 1 and <= 500, got true")],
    ),
    ("above maximum", {"path": "a", "limit": 501}, [("/limit", "`limit` must be <= 500, got 501")]),
    ("below minimum", {"path": "a", "limit": 0}, [("/limit", "`limit` must be >= 1, got 0")]),
    (
        "huge integer",
        {"path": "a", "limit": 2**80},
        [("/limit", "`limit` must be <= 500, got 1208925819614629174706176")],
    ),
    (
        "huge negative integer",
        {"path": "a", "limit": -(2**80)},
        [("/limit", "`limit` must be >= 1, got -1208925819614629174706176")],
    ),
    ("required", {"limit": 1}, [("", "missing required argument `path`")]),
    (
        "unknown argument with a suggestion",
        {**OK, "pth": "x"},
        [("/pth", f"unknown argument `pth`; {ALLOWED}. Did you mean `path`?")],
    ),
    (
        "unknown arguments, one close",
        {**OK, "limt": 2, "zzzz": 1},
        [
            ("/limt", f"unknown argument `limt`; {ALLOWED}. Did you mean `limit`?"),
            ("/zzzz", f"unknown argument `zzzz`; {ALLOWED}."),
        ],
    ),
    (
        "enum with a suggestion",
        {**OK, "mode": "repalce"},
        [("/mode", '`mode` must be one of "replace", "append", "insert", got "repalce". Did you mean `replace`?')],
    ),
    (
        "enum without a suggestion",
        {**OK, "mode": "zzz"},
        [("/mode", '`mode` must be one of "replace", "append", "insert", got "zzz".')],
    ),
    ("min length", {"path": "", "limit": 1}, [("/path", "`path` must be at least 1 characters long, got 0")]),
    ("max length", {"path": "a" * 11, "limit": 1}, [("/path", "`path` must be at most 10 characters long, got 11")]),
    ("pattern", {**OK, "id": "T-12345"}, [("/id", '`id` must match the pattern `^T-\\d{1,4}$`, got "T-12345"')]),
    (
        "pattern: RE2 $ does not match before a final newline",
        {**OK, "id": "T-12\n"},
        [("/id", '`id` must match the pattern `^T-\\d{1,4}$`, got "T-12\\n"')],
    ),
    (
        "pattern: RE2 \\d is ASCII only",
        {**OK, "id": "T-\u0661\u0662"},
        [("/id", '`id` must match the pattern `^T-\\d{1,4}$`, got "T-\u0661\u0662"')],
    ),
    (
        "pattern: ^ anchors at the start of text",
        {**OK, "id": "x\nT-12"},
        [("/id", '`id` must match the pattern `^T-\\d{1,4}$`, got "x\\nT-12"')],
    ),
    ("nested required", {**OK, "filter": {}}, [("/filter", "missing required argument `field` in `filter`")]),
    (
        "nested: unknown key, type and exclusive bound",
        {**OK, "filter": {"field": 1, "max": 10, "extra": 1}},
        [
            ("/filter/extra", "unknown argument `extra` in `filter`; allowed: field, max."),
            ("/filter/field", "`filter.field` must be a string, got 1"),
            ("/filter/max", "`filter.max` must be < 10, got 10"),
        ],
    ),
    ("min items", {**OK, "tags": []}, [("/tags", "`tags` must have at least 1 items, got 0")]),
    ("max items", {**OK, "tags": ["a", "b", "c", "d"]}, [("/tags", "`tags` must have at most 3 items, got 4")]),
    ("unique items", {**OK, "tags": ["a", "a"]}, [("/tags", "`tags` must not contain duplicate items")]),
    (
        "array items",
        {**OK, "tags": ["abcd", 5]},
        [
            ("/tags/0", "`tags[0]` must be at most 3 characters long, got 4"),
            ("/tags/1", "`tags[1]` must be a string, got 5"),
        ],
    ),
    (
        "anyOf: the branch of the value's type is explained",
        {**OK, "note": "toolong"},
        [("/note", "`note` must be at most 5 characters long, got 7")],
    ),
    ("anyOf: no branch of the value's type", {**OK, "note": 5}, [("/note", "`note` must be a string or null, got 5")]),
    ("nullable type list: bound", {**OK, "count": -1}, [("/count", "`count` must be >= 0, got -1")]),
    (
        "nullable type list: type",
        {**OK, "count": "x"},
        [("/count", '`count` must be an integer or null >= 0, got "x"')],
    ),
    ("arguments not an object: list", [], [("", "the arguments must be an object, got []")]),
    ("arguments not an object: string", "x", [("", 'the arguments must be an object, got "x"')]),
    ("arguments not an object: null", None, [("", "the arguments must be an object, got null")]),
]


@pytest.fixture(scope="module")
def validators() -> dict[str, ArgumentValidator]:
    return {engine: ArgumentValidator(SCHEMA, engine) for engine in ENGINES}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_requested_engine_is_used(engine: str) -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^T-[0-9]{1,4}$"}}}
    assert ArgumentValidator(schema, engine).engine == engine


def test_a_schema_with_a_class_escape_in_a_pattern_uses_the_portable_engine(
    validators: dict[str, ArgumentValidator],
) -> None:
    # SCHEMA's `id` pattern uses \d, so "fast" falls back to the portable (RE2) validator: one meaning for every pattern
    assert {engine: validator.engine for engine, validator in validators.items()} == {
        "fast": "portable",
        "portable": "portable",
    }


def _with_pattern(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"w": {"type": "string", "pattern": pattern}}}


@pytest.mark.parametrize(
    ("schema", "engine"),
    [
        pytest.param(_with_pattern("^\\s+$"), "portable", id="\\s"),
        *(pytest.param(_with_pattern(f"^a\\{c}b$"), "portable", id=f"\\{c}") for c in "SbBwWdD"),
        pytest.param(
            {"type": "object", "patternProperties": {"^x\\d$": {"type": "string"}}},
            "portable",
            id="patternProperties key",
        ),
        pytest.param(
            {"type": "object", "properties": {"t": {"type": "array", "items": {"type": "string", "pattern": "\\w"}}}},
            "portable",
            id="nested in items",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/d"}},
                "$defs": {"d": {"type": "string", "pattern": "\\s"}},
            },
            "portable",
            id="nested in $defs",
        ),
        pytest.param(_with_pattern("^[ \\t]+$"), "fast", id="explicit class"),
        pytest.param(_with_pattern("^a\\.b\\+c$"), "fast", id="other escapes"),
        pytest.param(_with_pattern("^\\pL+$"), "fast", id="unicode property"),
        pytest.param(
            {"type": "object", "properties": {"w": {"type": "string", "description": "\\s and \\d"}}},
            "fast",
            id="escape outside a pattern",
        ),
        pytest.param(
            {"type": "object", "properties": {"pattern": {"type": "string"}}}, "fast", id="property named pattern"
        ),
    ],
)
def test_a_class_escape_in_a_pattern_selects_the_portable_engine(schema: dict[str, Any], engine: str) -> None:
    assert ArgumentValidator(schema, "fast").engine == engine
    assert ArgumentValidator(schema, "portable").engine == "portable"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("args", "expected"), [pytest.param(args, expected, id=label) for label, args, expected in INVALID]
)
def test_invalid_arguments_are_explained(
    engine: str, args: Any, expected: list[tuple[str, str]], validators: dict[str, ArgumentValidator]
) -> None:
    problems = validators[engine].validate(args)
    assert [(p.pointer, p.message) for p in problems] == expected
    assert all(isinstance(p, ArgumentProblem) for p in problems)


VALID: list[tuple[str, Any]] = [
    ("minimal", OK),
    (
        "everything",
        {
            "path": "src",
            "limit": 500,
            "mode": "insert",
            "id": "T-1234",
            "filter": {"field": "f", "max": 9.5},
            "tags": ["a", "bcd"],
            "note": "hi",
            "count": 0,
        },
    ),
    ("nullable anyOf null", {**OK, "note": None}),
    ("nullable type list null", {**OK, "count": None}),
    ("integer-valued float is an integer", {"path": "a", "limit": 5.0}),
    ("length counts code points", {"path": "\U0001f600" * 10, "limit": 1}),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("args", [pytest.param(args, id=label) for label, args in VALID])
def test_valid_arguments_give_no_problems(engine: str, args: Any, validators: dict[str, ArgumentValidator]) -> None:
    assert validators[engine].validate(args) == ()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [2**80, -(2**80), 2**64, 2**63])
def test_huge_integers_do_not_crash(engine: str, value: int) -> None:
    unbounded = ArgumentValidator(
        {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}, engine
    )
    assert unbounded.validate({"n": value, "x": value}) == ()
    assert [p.pointer for p in unbounded.validate({"n": value, "x": "y"})] == ["/x"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_ten_thousand_element_list_validates(engine: str) -> None:
    validator = ArgumentValidator(
        {"type": "object", "properties": {"t": {"type": "array", "items": {"type": "integer"}}}}, engine
    )
    assert validator.validate({"t": list(range(10_000))}) == ()
    problems = validator.validate({"t": [*range(9_999), "x"]})
    assert [(p.pointer, p.message) for p in problems] == [("/t/9999", '`t[9999]` must be an integer, got "x"')]


@pytest.mark.parametrize("engine", ENGINES)
def test_pointer_escapes_slash_and_tilde(engine: str) -> None:
    validator = ArgumentValidator(
        {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}, engine
    )
    assert [p.pointer for p in validator.validate({"a/b": 1, "c~d": 2})] == ["/a~1b", "/c~0d"]


@pytest.mark.parametrize("engine", ENGINES)
def test_ref_into_defs_is_followed(engine: str) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/positive"}},
        "$defs": {"positive": {"type": "integer", "minimum": 1}},
    }
    problems = ArgumentValidator(schema, engine).validate({"a": 0})
    assert [(p.pointer, p.message) for p in problems] == [("/a", "`a` must be >= 1, got 0")]


@pytest.mark.parametrize("engine", ENGINES)
def test_format_is_an_annotation(engine: str) -> None:
    assert (
        ArgumentValidator(
            {"type": "object", "properties": {"e": {"type": "string", "format": "email"}}}, engine
        ).validate({"e": "not an email"})
        == ()
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("pattern", "value", "valid"),
    [
        ("^a.c$", "a\nc", False),
        ("^a.c$", "a\U0001f600c", True),
        ("(?i)^abc$", "ABC", True),
        ("abc", "xxabcxx", True),
        ("^\\w+$", "é", False),
        ("^(a|b)*c$", "ab" * 1000 + "c", True),
    ],
)
def test_pattern_semantics_agree(engine: str, pattern: str, value: str, valid: bool) -> None:
    validator = ArgumentValidator(
        {"type": "object", "properties": {"w": {"type": "string", "pattern": pattern}}}, engine
    )
    assert (validator.validate({"w": value}) == ()) is valid


@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        # jsonschema-rs reads \s and \b as Unicode, RE2 as ASCII; such schemas use the portable validator
        # for "fast" too, so both give RE2's answer
        ("^\\s$", "\u00a0"),
        ("^\\s$", "\u2003"),
        ("\\bfoo\\b", "éfooé"),
        ("^\\s$", " "),
        ("\\bfoo\\b", "a foo b"),
    ],
)
def test_unicode_classes_give_the_same_result_in_both_engines(pattern: str, value: str) -> None:
    schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": pattern}}}
    assert ArgumentValidator(schema, "fast").validate({"w": value}) == ArgumentValidator(schema, "portable").validate(
        {"w": value}
    )


def test_multiple_of_a_decimal_fraction_gives_the_same_result_in_both_engines() -> None:
    schema = {"type": "object", "properties": {"i": {"type": "number", "multipleOf": 0.1}}}
    assert ArgumentValidator(schema, "fast").validate({"i": 0.3}) == ArgumentValidator(schema, "portable").validate(
        {"i": 0.3}
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_each_missing_required_argument_is_reported_once(engine: str, validators: dict[str, ArgumentValidator]) -> None:
    problems = validators[engine].validate({})
    assert [(p.pointer, p.message) for p in problems] == [
        ("", "missing required argument `path`"),
        ("", "missing required argument `limit`"),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_object_matching_no_anyof_branch_is_not_called_the_wrong_type(engine: str) -> None:
    schema = {
        "type": "object",
        "properties": {"o": {"anyOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}]}},
    }
    (problem,) = ArgumentValidator(schema, engine).validate({"o": {}})
    assert problem.pointer == "/o"
    assert "must be an object" not in problem.message
