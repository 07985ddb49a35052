"""Lint for a tool's ``input_schema`` and ``output_schema``: is each a JSON Schema that
will do what it says?

Finds, each with the path inside the schema:

- meta-schema violations (``type: integr``, ``maximum: "x"``);
- a top level that is not ``type: object`` (tool arguments are always an object, and
  so is MCP's ``structuredContent``);
- keywords JSON Schema silently ignores (``maxLenght``): a typo that disables a check;
- ``default``/``enum``/``examples`` values the schema itself rejects;
- ``required`` names missing from ``properties`` when no other key is allowed;
- ``pattern``s RE2 does not accept, and remote ``$ref``s (nothing is fetched).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from runtime.config.suggest import did_you_mean
from runtime.regex import RegexRejected, check_pattern
from runtime.validation.violations import python_validator, violations
from runtime.validation.wording import sentence

Path = tuple[str | int, ...]

KNOWN_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "$ref",
        "$defs",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$comment",
        "$vocabulary",
        "definitions",
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "items",
        "prefixItems",
        "contains",
        "unevaluatedItems",
        "unevaluatedProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_SINGLE = (
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)


@dataclass(frozen=True, slots=True)
class SchemaFinding:
    path: Path  # inside the input schema
    code: str
    message: str
    warning: bool = False


@functools.lru_cache(maxsize=1)
def _meta_validator() -> Any:
    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


def _meta_valid_fast(schema: Any) -> bool | None:
    try:
        import jsonschema_rs
    except ImportError:
        return None
    try:
        return bool(jsonschema_rs.meta.is_valid(schema))
    except Exception:  # noqa: BLE001 - let the portable meta-validator explain
        return None


def check_input_schema(schema: Any) -> list[SchemaFinding]:
    """All findings for one tool's input schema (empty when it is sound)."""
    return _check_schema(schema, "input_schema must have `type: object`: a tool's arguments are always a JSON object.")


def check_output_schema(schema: Any) -> list[SchemaFinding]:
    """All findings for one tool's output schema (empty when it is sound)."""
    return _check_schema(
        schema,
        "output_schema must have `type: object`: it describes the object a tool returns (MCP's structuredContent "
        "is always a JSON object). A tool that returns text or a list declares no output_schema.",
    )


def _check_schema(schema: Any, not_object: str) -> list[SchemaFinding]:
    findings: list[SchemaFinding] = []
    if _meta_valid_fast(schema) is not True:
        for v in violations(_meta_validator(), schema, root="the schema"):
            findings.append(
                SchemaFinding(
                    v.path,
                    "schema-invalid",
                    f"not a valid JSON Schema: {sentence(v.message)} Fix this keyword (Draft 2020-12).",
                )
            )
    if findings:
        return findings
    if not isinstance(schema, dict) or schema.get("type") != "object":
        findings.append(SchemaFinding((), "schema-not-object", not_object))
    for path, sub in _subschemas(schema, ()):
        findings.extend(_check_subschema(path, sub))
    return findings


def _subschemas(schema: Any, path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield from _subschemas(sub, (*path, key, name))
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for index, sub in enumerate(schema[key]):
                yield from _subschemas(sub, (*path, key, index))
    for key in _SCHEMA_SINGLE:
        if key in schema:
            yield from _subschemas(schema[key], (*path, key))


def _check_subschema(path: Path, schema: dict[str, Any]) -> Iterator[SchemaFinding]:
    for key in schema:
        if key not in KNOWN_KEYWORDS and not key.startswith("x-"):
            yield SchemaFinding(
                (*path, key),
                "schema-unknown-keyword",
                f"`{key}` is not a JSON Schema keyword, so it checks nothing.{did_you_mean(key, KNOWN_KEYWORDS)} "
                "(Prefix custom annotations with `x-`.)",
                warning=True,
            )
    ref = schema.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        yield SchemaFinding(
            (*path, "$ref"),
            "schema-remote-ref",
            f"`$ref: {ref}` points outside this schema; toolrt never fetches schemas. Inline it under `$defs` and use "
            "`#/$defs/...`.",
        )
    if isinstance(schema.get("pattern"), str):
        yield from _pattern_finding((*path, "pattern"), schema["pattern"])
    for name in schema.get("patternProperties", {}) if isinstance(schema.get("patternProperties"), dict) else {}:
        yield from _pattern_finding((*path, "patternProperties", name), name)
    yield from _check_values(path, schema)
    required = schema.get("required")
    properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    if (
        isinstance(required, list)
        and schema.get("additionalProperties") is False
        and not schema.get("patternProperties")
    ):
        for index, name in enumerate(required):
            if name not in properties:
                yield SchemaFinding(
                    (*path, "required", index),
                    "schema-required-undeclared",
                    f"`{name}` is required but not declared in `properties`, and `additionalProperties: false` "
                    f"forbids it: no call could ever be valid.{did_you_mean(name, properties)}",
                )


def _pattern_finding(path: Path, pattern: str) -> Iterator[SchemaFinding]:
    try:
        check_pattern(pattern)
    except RegexRejected as err:
        yield SchemaFinding(path, err.code, err.message)


def _check_values(path: Path, schema: dict[str, Any]) -> Iterator[SchemaFinding]:
    """``default``, ``enum`` members and ``examples`` must satisfy the schema they sit in."""
    if "default" not in schema and "enum" not in schema and "examples" not in schema:
        return  # nothing to check: no validator to build (most sub-schemas)
    bare = {
        k: v for k, v in schema.items() if k not in ("default", "examples", "enum", "const", "$defs", "definitions")
    }
    if "$ref" in bare:
        return  # resolving references needs the whole document; the meta check covers syntax
    try:
        validator = python_validator(bare)
    except Exception:  # noqa: BLE001 - an unusable sub-schema was reported by the meta check
        return
    if "default" in schema:
        problems = violations(validator, schema["default"], root="the default")
        if problems:
            yield SchemaFinding(
                (*path, "default"),
                "schema-default-invalid",
                f"default {_show(schema['default'])} does not satisfy its own schema: {problems[0].message}. Change "
                "the default or the schema.",
            )
        elif isinstance(schema.get("enum"), list) and schema["default"] not in schema["enum"]:
            yield SchemaFinding(
                (*path, "default"),
                "schema-default-invalid",
                f"default {_show(schema['default'])} is not one of the enum values. Add it to `enum` or change the "
                "default.",
            )
    if isinstance(schema.get("enum"), list):
        for index, member in enumerate(schema["enum"]):
            problems = violations(validator, member, root="the enum value")
            if problems:
                yield SchemaFinding(
                    (*path, "enum", index),
                    "schema-enum-invalid",
                    f"enum value {_show(member)} can never be accepted: {problems[0].message}. Remove it or widen the "
                    "schema.",
                )
    if isinstance(schema.get("examples"), list):
        for index, example in enumerate(schema["examples"]):
            problems = violations(validator, example, root="the example")
            if problems:
                yield SchemaFinding(
                    (*path, "examples", index),
                    "schema-example-invalid",
                    f"example {_show(example)} does not satisfy the schema: {problems[0].message}.",
                    warning=True,
                )


def _show(value: Any) -> str:
    from runtime.validation.wording import show

    return show(value)
