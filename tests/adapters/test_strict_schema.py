"""to_strict: schemas become OpenAI strict-mode schemas when that is faithful, else stay as they were."""

from __future__ import annotations

import copy

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.adapters.strict_schema import MAX_OBJECT_NESTING, accepts_null, strip_strict_nulls, to_strict

# Keywords a strict-mode schema may contain (everything else is rejected by the API).
ALLOWED = {
    "type",
    "title",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
}


def assert_strict_shape(schema, path="#"):
    """Every object closed and fully required; only supported keywords; recursively."""
    assert isinstance(schema, dict), path
    assert set(schema) <= ALLOWED, (path, set(schema) - ALLOWED)
    assert "default" not in schema
    types = schema.get("type")
    type_list = [types] if isinstance(types, str) else types or []
    if "object" in type_list:
        assert schema["additionalProperties"] is False, path
        assert schema["required"] == list(schema["properties"]), path
    if "array" in type_list:
        assert isinstance(schema["items"], dict), path
    if "type" not in schema:
        assert "anyOf" in schema or "$ref" in schema, path
    for name, sub in schema.get("properties", {}).items():
        assert_strict_shape(sub, f"{path}/properties/{name}")
    for i, sub in enumerate(schema.get("anyOf", [])):
        assert_strict_shape(sub, f"{path}/anyOf/{i}")
    if isinstance(schema.get("items"), dict):
        assert_strict_shape(schema["items"], f"{path}/items")
    for key in ("$defs", "definitions"):
        for name, sub in schema.get(key, {}).items():
            assert_strict_shape(sub, f"{path}/{key}/{name}")


def strict(schema):
    result = to_strict(schema)
    assert result.strict, result.reason
    assert_strict_shape(result.schema)
    return result.schema


def not_strict(schema, reason_part):
    original = copy.deepcopy(schema)
    result = to_strict(schema)
    assert not result.strict
    assert result.schema == original and result.schema is not schema
    assert reason_part in result.reason
    return result.reason


# --- transformations -----------------------------------------------------------------


def test_every_example_tool_is_strict(coding_snapshot):
    for tool in coding_snapshot.tools.values():
        strict(tool.spec.input_schema)


def test_file_read_becomes_required_nullable_and_closed(coding_snapshot):
    schema = strict(coding_snapshot.tools["file_read"].spec.input_schema)
    assert schema == {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Path relative to the workspace root. Length: 1 to 4096 characters.",
            },
            "offset": {
                "type": ["integer", "null"],
                "minimum": 1,
                "description": "First line to read (1-based). Default: 1. Optional: null means the default.",
            },
            "limit": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": 5000,
                "description": "Number of lines. Default: 2000. Optional: null means the default.",
            },
        },
        "required": ["path", "offset", "limit"],
        "additionalProperties": False,
    }


def test_the_input_schema_is_not_modified(coding_snapshot):
    for tool in coding_snapshot.tools.values():
        before = copy.deepcopy(tool.spec.input_schema)
        to_strict(tool.spec.input_schema)
        assert tool.spec.input_schema == before


def test_missing_additional_properties_becomes_false():
    schema = strict({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    assert schema["additionalProperties"] is False


def test_an_empty_parameter_list_is_strict():
    assert strict({"type": "object", "properties": {}}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_an_enum_without_a_type_gets_its_type_inferred():
    schema = strict(
        {
            "type": "object",
            "properties": {"mode": {"enum": ["a", "b"]}, "n": {"enum": [1, 2.5]}},
            "required": ["mode", "n"],
        }
    )
    assert schema["properties"]["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert schema["properties"]["n"]["type"] == "number"


def test_an_optional_enum_also_accepts_null_in_the_enum():
    schema = strict({"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}})
    assert schema["properties"]["mode"]["type"] == ["string", "null"]
    assert schema["properties"]["mode"]["enum"] == ["a", "b", None]


def test_an_optional_const_becomes_an_enum_with_null():
    schema = strict({"type": "object", "properties": {"v": {"const": "x"}}})
    assert schema["properties"]["v"]["enum"] == ["x", None]
    assert "const" not in schema["properties"]["v"]


def test_an_already_nullable_optional_is_left_as_it_is():
    schema = strict({"type": "object", "properties": {"a": {"type": ["string", "null"]}}})
    assert schema["properties"]["a"] == {"type": ["string", "null"]}


def test_optional_objects_and_arrays_become_any_of_with_null():
    schema = strict(
        {
            "type": "object",
            "properties": {
                "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "description": "Options."},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            },
        }
    )
    opts = schema["properties"]["opts"]
    assert opts["anyOf"][1] == {"type": "null"}
    assert opts["anyOf"][0]["properties"]["deep"]["type"] == ["boolean", "null"]
    assert opts["description"].startswith("Options.")
    tags = schema["properties"]["tags"]
    assert tags["anyOf"] == [{"type": "array", "items": {"type": "string"}, "maxItems": 5}, {"type": "null"}]


def test_array_items_are_transformed_too():
    schema = strict(
        {
            "type": "object",
            "properties": {
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
                        "required": ["old"],
                    },
                }
            },
            "required": ["edits"],
        }
    )
    item = schema["properties"]["edits"]["items"]
    assert item["required"] == ["old", "new"] and item["additionalProperties"] is False
    assert item["properties"]["new"]["type"] == ["string", "null"]


def test_supported_keywords_are_kept_and_unsupported_narrowing_is_described():
    schema = strict(
        {
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time", "pattern": "^2"},
                "site": {"type": "string", "format": "uri", "minLength": 3},
                "ids": {
                    "type": "array",
                    "items": {"type": "integer", "multipleOf": 2, "exclusiveMinimum": 0},
                    "uniqueItems": True,
                    "minItems": 1,
                },
            },
            "required": ["when", "site", "ids"],
        }
    )
    assert schema["properties"]["when"] == {"type": "string", "format": "date-time", "pattern": "^2"}
    assert schema["properties"]["site"] == {
        "type": "string",
        "description": 'Length: at least 3 characters. Format: "uri".',
    }
    ids = schema["properties"]["ids"]
    assert ids["minItems"] == 1 and "uniqueItems" not in ids and "Items must be unique." in ids["description"]
    assert ids["items"] == {"type": "integer", "multipleOf": 2, "exclusiveMinimum": 0}


def test_annotations_strict_mode_rejects_are_dropped():
    schema = strict(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"a": {"type": "string", "examples": ["x"], "$comment": "c", "deprecated": True}},
            "required": ["a"],
        }
    )
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_defs_and_refs_are_kept_and_an_optional_ref_becomes_nullable():
    schema = strict(
        {
            "type": "object",
            "properties": {
                "main": {"$ref": "#/$defs/point"},
                "other": {"$ref": "#/$defs/point", "description": "Another point."},
            },
            "required": ["main"],
            "$defs": {
                "point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                }
            },
        }
    )
    assert schema["properties"]["main"] == {"$ref": "#/$defs/point"}
    assert schema["properties"]["other"]["anyOf"] == [{"$ref": "#/$defs/point"}, {"type": "null"}]
    assert schema["properties"]["other"]["description"].startswith("Another point.")
    assert schema["$defs"]["point"]["additionalProperties"] is False


def test_a_recursive_schema_is_strict():
    schema = strict(
        {
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/node"}},
            "required": ["tree"],
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    },
                    "required": ["name", "children"],
                }
            },
        }
    )
    assert schema["$defs"]["node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/node"}


def test_any_of_branches_are_transformed_and_an_optional_any_of_gains_null():
    schema = strict(
        {
            "type": "object",
            "properties": {
                "v": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"k": {"type": "string"}}}]}
            },
        }
    )
    variants = schema["properties"]["v"]["anyOf"]
    assert variants[0] == {"type": "string"}
    assert variants[1]["required"] == ["k"]
    assert variants[2] == {"type": "null"}


def test_a_single_member_all_of_is_merged():
    schema = strict(
        {
            "type": "object",
            "properties": {"a": {"allOf": [{"type": "string", "pattern": "^x"}], "description": "A."}},
            "required": ["a"],
        }
    )
    assert schema["properties"]["a"] == {"type": "string", "pattern": "^x", "description": "A."}


# --- what stays non-strict ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (
            {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "additionalProperties must be false",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
            "additionalProperties must be false",
        ),
        ({"type": "object", "properties": {"m": {"type": "object"}}}, "free-form map"),
        ({"type": "object"}, "free-form map"),
        ({"type": "object", "patternProperties": {"^x": {"type": "string"}}, "properties": {}}, "'patternProperties'"),
        ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}, "'oneOf'"),
        ({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}}}, "allOf"),
        ({"type": "object", "properties": {"a": {"type": "string", "not": {"const": "x"}}}}, "'not'"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "if": {"required": ["a"]}, "then": {}}, "'if'"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "dependentRequired": {"a": ["b"]}},
            "'dependentRequired'",
        ),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "items"),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "string"}}
                },
            },
            "'prefixItems'",
        ),
        ({"type": "object", "properties": {"a": {}}}, "without a type"),
        ({"type": "object", "properties": {"a": True}}, "boolean"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "not declared"),
        ({"type": "object", "properties": {"a": {"$ref": "https://example.com/schema.json"}}}, "not a local reference"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "not a local reference"),
        ({"anyOf": [{"type": "object", "properties": {}}]}, "root"),
        ({"type": "string"}, "root must have type object"),
        ({"type": "object", "properties": {"a": {"type": "string", "x-custom": 1}}}, "'x-custom'"),
        ({"type": "object", "properties": {"a": {"type": "bytes"}}}, "unknown type"),
        ({"type": "object", "properties": {"a": {"enum": [{"k": 1}]}}}, "enum"),
    ],
)
def test_schemas_strict_mode_cannot_express_are_sent_unchanged(schema, reason):
    not_strict(schema, reason)


def test_the_reason_points_at_the_problem():
    reason = not_strict(
        {
            "type": "object",
            "properties": {
                "outer": {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": True}}}
            },
        },
        "additionalProperties",
    )
    assert "/properties/outer/properties/m" in reason


def test_objects_nested_past_the_limit_are_not_strict():
    def nested(levels: int) -> dict:
        schema: dict = {"type": "string"}
        for _ in range(levels):
            schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
        return schema

    strict(nested(MAX_OBJECT_NESTING))
    not_strict(nested(MAX_OBJECT_NESTING + 1), "nested more than")


def test_too_many_properties_or_enum_values_are_not_strict():
    not_strict({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5001)}}, "properties")
    not_strict({"type": "object", "properties": {"e": {"enum": [f"v{i}" for i in range(1001)]}}}, "enum values")


def test_a_deeply_nested_schema_is_refused_without_recursion_trouble():
    schema: dict = {"type": "string"}
    for _ in range(5000):
        schema = {"anyOf": [schema]}
    result = to_strict({"type": "object", "properties": {"a": schema}})
    assert not result.strict


# --- undoing the null emulation --------------------------------------------------------------


def test_nulls_for_optional_properties_are_removed(coding_snapshot):
    schema = coding_snapshot.tools["file_read"].spec.input_schema
    args = {"path": "a.py", "offset": None, "limit": None}
    assert strip_strict_nulls(args, schema) == {"path": "a.py"}
    assert args == {"path": "a.py", "offset": None, "limit": None}  # not modified


REQUIRED_SAMPLES = {
    "file_read": {"path": "a.py"},
    "file_edit": {"path": "a.py", "mode": "append"},
    "grep": {"pattern": "TODO"},
    "run_tests": {},
    "git_push": {"branch": "feature/x"},
}


@pytest.mark.parametrize("name", sorted(REQUIRED_SAMPLES))
def test_a_strict_call_with_nulls_validates_against_the_original_after_stripping(coding_snapshot, name):
    original = coding_snapshot.tools[name].spec.input_schema
    transformed = to_strict(original).schema
    optional = [p for p in original.get("properties", {}) if p not in original.get("required", [])]
    strict_call = {**REQUIRED_SAMPLES[name], **dict.fromkeys(optional)}
    jsonschema.validate(strict_call, transformed)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(strict_call, original)  # the nulls alone would fail validation
    jsonschema.validate(strip_strict_nulls(strict_call, original), original)


def test_nulls_the_original_accepts_or_requires_are_kept():
    schema = {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "string"}},
        "required": ["b"],
    }
    assert strip_strict_nulls({"a": None, "b": None}, schema) == {"a": None, "b": None}


def test_nulls_are_removed_in_nested_objects_arrays_and_refs():
    schema = {
        "type": "object",
        "properties": {
            "opts": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        },
        "$defs": {
            "item": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "note": {"type": "string"}},
                "required": ["name"],
            }
        },
    }
    args = {"opts": {"x": None}, "list": [{"name": "a", "note": None}, {"name": "b", "note": "n"}]}
    assert strip_strict_nulls(args, schema) == {"opts": {}, "list": [{"name": "a"}, {"name": "b", "note": "n"}]}


def test_accepts_null_reads_types_enums_refs_and_any_of():
    root = {"$defs": {"n": {"type": "null"}, "s": {"type": "string"}}}
    assert (
        accepts_null({})
        and accepts_null({"type": ["integer", "null"]})
        and accepts_null({"anyOf": [{"type": "string"}, {"type": "null"}]})
    )
    assert accepts_null({"$ref": "#/$defs/n"}, root) and not accepts_null({"$ref": "#/$defs/s"}, root)
    assert (
        not accepts_null({"type": "string"})
        and not accepts_null({"enum": ["a"]})
        and not accepts_null({"type": ["string", "null"], "enum": ["a"]})
    )


# --- properties ---------------------------------------------------------------------------------

_leaf = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": 0},
        {"type": "number", "default": 1.5},
        {"type": "boolean"},
        {"enum": ["a", "b"]},
        {"const": 3},
        {"type": "string", "minLength": 1, "format": "email"},
        {"type": ["string", "null"]},
        {},
        {"type": "object"},
        {"type": "string", "pattern": "^x"},
    ]
)


def _composite(children):
    props = st.dictionaries(st.sampled_from(["a", "b", "c", "d/e", "~f"]), children, max_size=4)
    return st.one_of(
        st.builds(
            lambda p, r: {"type": "object", "properties": p, "required": [k for k in p if r]}, props, st.booleans()
        ),
        st.builds(lambda p: {"type": "object", "properties": p, "additionalProperties": {"type": "string"}}, props),
        st.builds(lambda i: {"type": "array", "items": i}, children),
        st.builds(lambda xs: {"anyOf": xs}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda xs: {"oneOf": xs}, st.lists(children, min_size=1, max_size=2)),
    )


_schemas = st.recursive(_leaf, _composite, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), _schemas, max_size=3), st.booleans())
def test_any_schema_is_either_valid_strict_or_returned_unchanged(properties, all_required):
    schema = {"type": "object", "properties": properties, "required": list(properties) if all_required else []}
    before = copy.deepcopy(schema)
    result = to_strict(schema)
    assert schema == before
    if result.strict:
        assert_strict_shape(result.schema)
        jsonschema.Draft202012Validator.check_schema(result.schema)
    else:
        assert result.schema == schema and result.reason
