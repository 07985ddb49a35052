"""Lint for a tool's input_schema: each finding code, at its exact path inside the schema."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.validation.schemacheck import SchemaFinding, check_input_schema


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def findings(schema: Any) -> list[tuple[tuple[str | int, ...], str, bool]]:
    return [(f.path, f.code, f.warning) for f in check_input_schema(schema)]


SOUND = [
    obj(path={"type": "string", "minLength": 1}),
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {"path": {"type": "string", "pattern": "^[a-z/]+$", "default": "src"}},
    },
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
    {
        "type": "object",
        "required": ["undeclared"],
        "properties": {},
    },  # open object: an undeclared required key can still be sent
    {
        "type": "object",
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": False,
        "required": ["x-a"],
    },
    obj(
        mode={"enum": ["a", "b"], "default": "a"},
        limit={"type": "integer", "minimum": 1, "default": 1, "examples": [1, 5]},
    ),
    obj(s={"type": "string", "x-foo": 3, "x-ui": {"widget": "text"}}),
]


@pytest.mark.parametrize("schema", SOUND)
def test_a_sound_schema_has_no_findings(schema: dict[str, Any]) -> None:
    assert check_input_schema(schema) == []


def test_schema_invalid_names_the_keyword_and_suggests_the_type() -> None:
    (finding,) = check_input_schema(obj(n={"type": "integr"}))
    assert finding == SchemaFinding(finding.path, "schema-invalid", finding.message, False)
    assert finding.path == ("properties", "n", "type")
    assert '"integr"' in finding.message
    assert "Did you mean `integer`?" in finding.message


def test_schema_invalid_for_a_wrongly_typed_bound() -> None:
    (finding,) = check_input_schema(obj(n={"type": "integer", "maximum": "x"}))
    assert (finding.path, finding.code) == (("properties", "n", "maximum"), "schema-invalid")
    assert "must be a number" in finding.message


def test_schema_invalid_stops_further_checks() -> None:
    # an unknown keyword beside a meta-schema error is not reported: the schema is not readable yet
    assert findings(obj(n={"type": "integr", "maxLenght": 1})) == [
        (("properties", "n", "type"), "schema-invalid", False)
    ]


@pytest.mark.parametrize("schema", [{"type": "string"}, {"properties": {"a": {"type": "string"}}}, True, {}])
def test_schema_not_object(schema: Any) -> None:
    assert findings(schema) == [((), "schema-not-object", False)]


@pytest.mark.parametrize(
    ("schema", "path", "suggestion"),
    [
        (obj(s={"type": "string", "maxLenght": 3}), ("properties", "s", "maxLenght"), "maxLength"),
        (
            obj(a={"type": "array", "items": {"type": "string", "minLenght": 1}}),
            ("properties", "a", "items", "minLenght"),
            "minLength",
        ),
        (
            obj(a={"anyOf": [{"type": "string", "patern": "x"}, {"type": "null"}]}),
            ("properties", "a", "anyOf", 0, "patern"),
            "pattern",
        ),
        (
            {"type": "object", "$defs": {"p": {"type": "string", "maxLenght": 1}}},
            ("$defs", "p", "maxLenght"),
            "maxLength",
        ),
        ({"type": "object", "requried": ["a"]}, ("requried",), "required"),
    ],
)
def test_schema_unknown_keyword_is_a_warning_with_a_suggestion(
    schema: dict[str, Any], path: tuple[str | int, ...], suggestion: str
) -> None:
    (finding,) = check_input_schema(schema)
    assert (finding.path, finding.code, finding.warning) == (path, "schema-unknown-keyword", True)
    assert f"Did you mean `{suggestion}`?" in finding.message
    assert "x-" in finding.message


def test_an_unknown_keyword_far_from_any_known_one_gets_no_suggestion() -> None:
    (finding,) = check_input_schema(obj(s={"type": "string", "zzqqy": 1}))
    assert finding.code == "schema-unknown-keyword"
    assert "Did you mean" not in finding.message


@pytest.mark.parametrize(
    ("schema", "path", "text"),
    [
        (
            obj(s={"type": "integer", "minimum": 1, "default": 0}),
            ("properties", "s", "default"),
            "the default must be >= 1, got 0",
        ),
        (
            obj(s={"type": "integer", "default": "x"}),
            ("properties", "s", "default"),
            'the default must be an integer, got "x"',
        ),
        (obj(s={"enum": ["a", "b"], "default": "c"}), ("properties", "s", "default"), "is not one of the enum values"),
        (
            obj(o={"type": "object", "properties": {"n": {"type": "integer", "default": 1.5}}}),
            ("properties", "o", "properties", "n", "default"),
            "must be an integer",
        ),
    ],
)
def test_schema_default_invalid(schema: dict[str, Any], path: tuple[str | int, ...], text: str) -> None:
    (finding,) = check_input_schema(schema)
    assert (finding.path, finding.code, finding.warning) == (path, "schema-default-invalid", False)
    assert text in finding.message


def test_schema_enum_invalid_points_at_the_member() -> None:
    (finding,) = check_input_schema(obj(s={"type": "string", "enum": ["a", 1, "b"]}))
    assert (finding.path, finding.code, finding.warning) == (
        ("properties", "s", "enum", 1),
        "schema-enum-invalid",
        False,
    )
    assert "enum value 1 can never be accepted" in finding.message


def test_schema_example_invalid_is_a_warning() -> None:
    assert findings(obj(a={"type": "string", "examples": ["ok", 1]})) == [
        (("properties", "a", "examples", 1), "schema-example-invalid", True)
    ]


def test_schema_required_undeclared_in_a_closed_object() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "pth"],
        "properties": {"path": {"type": "string"}},
    }
    (finding,) = check_input_schema(schema)
    assert (finding.path, finding.code, finding.warning) == (("required", 1), "schema-required-undeclared", False)
    assert "`pth` is required" in finding.message
    assert "Did you mean `path`?" in finding.message


def test_schema_required_undeclared_in_a_nested_closed_object() -> None:
    schema = obj(f={"type": "object", "additionalProperties": False, "required": ["x"], "properties": {}})
    assert findings(schema) == [(("properties", "f", "required", 0), "schema-required-undeclared", False)]


@pytest.mark.parametrize("ref", ["https://example.com/s.json", "other.json#/x", "urn:x"])
def test_schema_remote_ref(ref: str) -> None:
    (finding,) = check_input_schema(obj(a={"$ref": ref}))
    assert (finding.path, finding.code, finding.warning) == (("properties", "a", "$ref"), "schema-remote-ref", False)
    assert ref in finding.message


@pytest.mark.parametrize(
    ("pattern", "code"),
    [
        ("(?=a)b", "regex-unsupported"),
        ("(a)\\1", "regex-unsupported"),
        ("a++", "regex-unsupported"),
        ("(a+)+", "regex-catastrophic"),
        ("(", "regex-invalid"),
    ],
)
def test_pattern_findings(pattern: str, code: str) -> None:
    assert findings(obj(a={"type": "string", "pattern": pattern})) == [(("properties", "a", "pattern"), code, False)]


def test_pattern_property_names_are_checked_as_patterns() -> None:
    schema = {"type": "object", "patternProperties": {"(?!x)": {"type": "string"}}}
    assert findings(schema) == [(("patternProperties", "(?!x)"), "regex-unsupported", False)]


def test_every_finding_in_one_schema_is_reported() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["pth"],
        "properties": {
            "a": {"type": "string", "maxLenght": 1, "pattern": "(?<=a)b"},
            "b": {"$ref": "https://x/y"},
            "c": {"type": "integer", "default": "x"},
        },
    }
    assert sorted(findings(schema), key=str) == sorted(
        [
            (("properties", "a", "maxLenght"), "schema-unknown-keyword", True),
            (("properties", "a", "pattern"), "regex-unsupported", False),
            (("properties", "b", "$ref"), "schema-remote-ref", False),
            (("properties", "c", "default"), "schema-default-invalid", False),
            (("required", 0), "schema-required-undeclared", False),
        ],
        key=str,
    )


@pytest.mark.parametrize("schema", [[], "x", 3])
def test_a_non_schema_is_invalid(schema: Any) -> None:
    found = check_input_schema(schema)
    assert found
    assert {(f.path, f.code) for f in found} == {((), "schema-invalid")}


@pytest.mark.parametrize("schema", [[], "x"])
def test_a_non_schema_is_reported_once(schema: Any) -> None:
    assert len(check_input_schema(schema)) == 1


def test_schema_invalid_message_has_no_stray_punctuation() -> None:
    (finding,) = check_input_schema(obj(n={"type": "integr"}))
    assert "?." not in finding.message
