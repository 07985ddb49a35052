"""The quick check vouches only for arguments the full validator finds valid, and never
changes a verdict or a message of the portable validator."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.validation.arguments import ArgumentValidator
from runtime.validation.quickcheck import compile_quick, vouches

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "maxLength": 20, "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
        "ratio": {"type": "number", "minimum": -1.5, "maximum": 2},
        "mode": {"enum": ["fast", "full"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3, "minItems": 1},
        "dry_run": {"type": "boolean", "description": "annotations are fine"},
    },
}
OPEN = {**SCHEMA, "additionalProperties": True}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=25),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner))
names = st.sampled_from(["path", "limit", "ratio", "mode", "tags", "dry_run", "other", ""])
near = st.one_of(
    values,
    st.sampled_from(["fast", "full", "FAST", 1, 1.0, 500, 501, 0, True, -1.5, 2.0, 2.5, "a" * 20, "a" * 21, ""]),
    st.lists(st.sampled_from(["a", "abcd", "abcde", 1, None]), max_size=4),
)
arguments = st.dictionaries(names, near, max_size=7)


# Drawing the arguments costs far more than checking them, so each drawn value is checked
# against both schemas: 750 values make the 1,500 (arguments, schema) cases that 1,500
# values with one drawn schema made.
@settings(max_examples=750, deadline=None)
@given(arguments)
def test_the_quick_check_vouches_only_for_valid_arguments(args: dict[str, Any]) -> None:
    for schema in (SCHEMA, OPEN):
        check = compile_quick(schema)
        assert check is not None
        if vouches(check, args):
            assert jsonschema.Draft202012Validator(schema).is_valid(args), args


@settings(max_examples=300, deadline=None)
@given(arguments)
def test_the_portable_validator_answers_as_jsonschema_does(args: dict[str, Any]) -> None:
    problems = ArgumentValidator(SCHEMA, engine="portable").validate(args)
    assert (not problems) == jsonschema.Draft202012Validator(SCHEMA).is_valid(args)


def test_plainly_valid_arguments_are_vouched_for() -> None:
    check = compile_quick(SCHEMA)
    assert vouches(check, {"path": "a", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False, "ratio": 1})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "^a"}}},
        {"type": "object", "properties": {"p": {"type": "string", "format": "email"}}},
        {"type": "object", "properties": {"p": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
        {"type": "object", "properties": {"p": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "object", "properties": {"p": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"p": {"enum": ["a", 1]}}},
        {"type": "object", "properties": {"p": {"enum": ["a"], "maxLength": 0}}},
        {"type": "object", "properties": {"p": {"type": "integer", "exclusiveMinimum": 0}}},
        {"type": "object", "properties": {"p": {"type": "string", "maxLength": -1}}},
        {"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "string"}]}}},
        {"type": "object", "properties": {"p": {"type": "object"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "minProperties": 1},
        {"type": "array"},
        {"properties": {}},
        True,
    ],
)
def test_schemas_outside_the_subset_get_no_quick_check(schema: Any) -> None:
    assert compile_quick(schema) is None
