"""OpenAI strict mode: turn a tool's input schema into the subset strict mode accepts.

With ``strict: true`` OpenAI constrains decoding to the schema, but only accepts a
subset of JSON Schema (the Structured Outputs "supported schemas"):

- every object lists all of its properties in ``required`` and has
  ``additionalProperties: false``; an optional property is emulated by a required
  one that may be ``null``;
- supported keywords: ``type``, ``properties``, ``required``,
  ``additionalProperties: false``, ``items``, ``enum``, ``const``, ``anyOf`` (not at
  the root), local ``$ref`` into root ``$defs``/``definitions`` (recursion allowed),
  ``title``/``description``; strings: ``pattern``, ``format`` (date-time, time, date,
  duration, email, hostname, ipv4, ipv6, uuid); numbers: ``minimum``, ``maximum``,
  ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``; arrays: ``minItems``,
  ``maxItems``;
- not allowed: ``default``, ``allOf``, ``oneOf``, ``not``, ``if``/``then``/``else``,
  ``dependentRequired``/``dependentSchemas``, ``patternProperties``,
  ``propertyNames``, ``unevaluated*``, ``prefixItems``, ``contains``, and for strings
  ``minLength``/``maxLength``;
- limits: the root is an object; at most 10 levels of object nesting, 5,000
  properties, 1,000 enum values, 120,000 characters of names and enum/const values
  (15,000 for one enum of more than 250 values).

:func:`to_strict` transforms a schema when it can do so *faithfully*:

1. Anything the original accepts stays expressible: an optional property becomes
   required and nullable (``type: [T, "null"]``; ``anyOf [S, {"type": "null"}]`` for
   objects, arrays, ``$ref`` and ``anyOf``; ``null`` is added to an ``enum``), and
   :func:`strip_strict_nulls` turns those nulls back into "not given" before the
   arguments are validated against the original schema.
2. Keywords strict mode rejects but that only narrow a value (``minLength``,
   ``maxLength``, ``uniqueItems``, ``minProperties``, ``maxProperties``, an unsupported
   ``format``) and annotations (``default``, ``examples``, ...) are removed from the
   schema and said in the ``description`` instead ("Default: 1."); the validate
   stage still enforces every one of them against the original schema.
3. An object with declared ``properties`` and no ``additionalProperties`` gets
   ``additionalProperties: false`` (undeclared keys have no meaning to the tool).

Anything that changes the *shape* of valid values cannot be expressed, and the
original schema is sent with ``strict: false`` instead: ``additionalProperties``
true or a schema, an object without ``properties`` (a free-form map),
``patternProperties``, composition other than ``anyOf`` (``oneOf``, ``allOf`` with more
than one member, ``not``, ``if``), an array without ``items`` or with tuple items, a
schema without a type (any value), ``required`` names not in ``properties``, remote or
nested refs, unknown keywords, and anything over the limits above. The
:class:`StrictSchema` result says why.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.validation.wording import json_type

# Limits of OpenAI Structured Outputs (one place, so that a change upstream is one edit).
MAX_OBJECT_NESTING = 10
MAX_PROPERTIES = 5_000
MAX_ENUM_VALUES = 1_000
MAX_STRING_CHARS = 120_000
LARGE_ENUM_VALUES = 250
LARGE_ENUM_CHARS = 15_000
# Deeper than this the schema is rejected before strict-mode limits are even counted
# (it bounds the recursion of the transformation itself).
_MAX_SCHEMA_DEPTH = 64

SUPPORTED_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

# Kept as they are.
_KEEP = frozenset(
    {
        "type",
        "title",
        "description",
        "enum",
        "const",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
# Handled structurally below.
_STRUCTURE = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "format",
    }
)
# Annotations strict mode rejects or has no use for: dropped silently.
_DROP = frozenset(
    {
        "$schema",
        "$comment",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
# Narrowing keywords strict mode rejects: dropped from the schema, said in the description.
_DESCRIBE = ("minLength", "maxLength", "uniqueItems", "minProperties", "maxProperties")
_REF_RE = re.compile(r"^#(?:/(?:\$defs|definitions)/[^/]+)?$")


@dataclass(frozen=True, slots=True)
class StrictSchema:
    """A schema to send and whether to send it with ``strict: true``.

    When ``strict`` is False, ``schema`` is (a copy of) the original and ``reason``
    says what strict mode could not express, with the JSON pointer of where.
    """

    schema: dict[str, Any]
    strict: bool
    reason: str | None = None


class _NotStrict(Exception):
    def __init__(self, reason: str, path: tuple[str, ...]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


@dataclass(slots=True)
class _Budget:
    properties: int = 0
    enum_values: int = 0
    chars: int = 0
    notes: dict[int, list[str]] = field(default_factory=dict)


def to_strict(schema: Mapping[str, Any]) -> StrictSchema:
    """The strict-mode form of ``schema``, or the original with ``strict=False`` and why. Never raises."""
    try:
        return StrictSchema(_Transformer(schema).run(), True)
    except _NotStrict as err:
        where = _pointer(err.path)
        return StrictSchema(_copy(schema), False, f"{err.reason} (at {where})")
    except Exception as err:  # noqa: BLE001 - a schema that breaks the transformation is sent as it is
        return StrictSchema(_copy(schema), False, f"the schema could not be transformed: {type(err).__name__}")


def strip_strict_nulls(args: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Undo the nullable-optional emulation: drop ``null`` values the original schema does not accept.

    A ``null`` for a property that is optional in ``schema`` (the ORIGINAL schema)
    and whose own schema does not accept null means "not given" under strict mode, so
    it is removed; nested objects and array items are followed through
    ``properties``, ``items``, local ``$ref`` and a single non-null ``anyOf`` branch.
    Everything else is returned unchanged (a new dict; ``args`` is not modified).
    """
    if type(args) is dict and not _holds_none(args):
        return dict(args)  # the common case: no null anywhere, nothing to drop
    try:
        result = _strip(args, schema, schema, 0)
    except Exception:  # noqa: BLE001 - the arguments go to validation unchanged then
        return dict(args)
    return result if isinstance(result, dict) else dict(args)


def _holds_none(args: dict[str, Any]) -> bool:
    """Whether a ``null`` is anywhere in decoded arguments; True for anything that is not
    plain decoded JSON (dicts, lists, scalars), which then takes the full walk."""
    stack: list[Any] = [args]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif value is None or not (kind is str or kind is int or kind is float or kind is bool):
            return True
    return False


def accepts_null(schema: Any, root: Any = None, _seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``schema`` accepts ``null`` (an unconstrained schema does)."""
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, Mapping):
        return False
    if "type" in schema:
        types = schema["type"]
        if not (types == "null" or (isinstance(types, list) and "null" in types)):
            return False
    if "const" in schema and schema["const"] is not None:
        return False
    if "enum" in schema and (not isinstance(schema["enum"], list) or None not in schema["enum"]):
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and not any(accepts_null(s, root, _seen) for s in schema[key]):
            return False
    if isinstance(schema.get("allOf"), list) and not all(accepts_null(s, root, _seen) for s in schema["allOf"]):
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in _seen:
            return False
        target = _resolve(root if root is not None else schema, ref)
        return target is not None and accepts_null(target, root, _seen | {ref})
    return "not" not in schema


# ---------------------------------------------------------------------------


class _Transformer:
    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.root = schema
        self.budget = _Budget()

    def run(self) -> dict[str, Any]:
        root = self.root
        if not isinstance(root, Mapping):
            raise _NotStrict("the schema is not an object", ())
        if "anyOf" in root or "$ref" in root:
            raise _NotStrict("the root must be a plain object schema, not anyOf or $ref", ())
        types = _types(root)
        if types is not None and types != ["object"]:
            raise _NotStrict("the root must have type object", ())
        result = self.node(root, (), depth=0, nesting=0)
        for key in ("$defs", "definitions"):
            defs = root.get(key)
            if defs is None:
                continue
            if not isinstance(defs, Mapping):
                raise _NotStrict(f"{key} is not an object", (key,))
            converted = {}
            for name, sub in defs.items():
                self.budget.chars += len(name)
                converted[name] = self.node(sub, (key, name), depth=1, nesting=1)
            result[key] = converted
        self.check_budget()
        return result

    def check_budget(self) -> None:
        b = self.budget
        if b.properties > MAX_PROPERTIES:
            raise _NotStrict(f"{b.properties:,} properties, strict mode allows {MAX_PROPERTIES:,}", ())
        if b.enum_values > MAX_ENUM_VALUES:
            raise _NotStrict(f"{b.enum_values:,} enum values, strict mode allows {MAX_ENUM_VALUES:,}", ())
        if b.chars > MAX_STRING_CHARS:
            raise _NotStrict(
                f"{b.chars:,} characters of names and enum values, strict mode allows {MAX_STRING_CHARS:,}", ()
            )

    def node(self, schema: Any, path: tuple[str, ...], *, depth: int, nesting: int) -> dict[str, Any]:
        """The strict form of one (sub)schema; raises _NotStrict."""
        if depth > _MAX_SCHEMA_DEPTH:
            raise _NotStrict(f"the schema is nested more than {_MAX_SCHEMA_DEPTH} levels", path)
        if not isinstance(schema, Mapping):
            raise _NotStrict("a boolean or non-object schema", path)
        schema = self.merge_all_of(schema, path)
        notes: list[str] = []
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _KEEP:
                out[key] = copy.deepcopy(value)
            elif key == "default":
                notes.append(f"Default: {_show(value)}.")
            elif key not in _DROP and key not in _DESCRIBE and key not in _STRUCTURE:
                raise _NotStrict(f"keyword {key!r} is not supported in strict mode", path)
        notes.extend(_describe(schema))
        if "$defs" in schema or "definitions" in schema:
            if path:
                raise _NotStrict("$defs below the root", path)
        if "format" in schema:
            fmt = schema["format"]
            if fmt in SUPPORTED_FORMATS:
                out["format"] = fmt
            else:
                notes.append(f"Format: {_show(fmt)}.")

        if "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str) or not _REF_RE.match(ref) or _resolve(self.root, ref) is None:
                raise _NotStrict(f"$ref {_show(ref)} is not a local reference to $defs/definitions", path)
            siblings = set(out) - {"title", "description"}
            if siblings or any(k in schema for k in ("anyOf", "properties", "items")):
                raise _NotStrict("$ref beside other constraints", path)
            ref_node: dict[str, Any] = {"$ref": ref}
            if out or notes:  # a $ref cannot carry siblings: wrap it to keep the description
                wrapped: dict[str, Any] = {"anyOf": [ref_node]}
                if "description" in out:
                    wrapped["description"] = out["description"]
                _add_notes(wrapped, notes)
                return wrapped
            return ref_node

        if "anyOf" in schema:
            variants = schema["anyOf"]
            if not isinstance(variants, list) or not variants:
                raise _NotStrict("anyOf must be a non-empty list", path)
            out["anyOf"] = [
                self.node(v, (*path, "anyOf", str(i)), depth=depth + 1, nesting=nesting) for i, v in enumerate(variants)
            ]

        types = _types(schema, path)
        if types is None and "anyOf" not in schema:
            types = self.infer_type(schema, path)
            if types is None:
                raise _NotStrict("a schema without a type (any value) cannot be strict", path)
            out["type"] = types[0] if len(types) == 1 else types
        if types is not None:
            unknown = [t for t in types if t not in _TYPES]
            if unknown:
                raise _NotStrict(f"unknown type {_show(unknown[0])}", path)
        types = types or []

        if "enum" in schema:
            self.count_enum(schema["enum"], path)
        if "const" in schema:
            self.count_values([schema["const"]], path)

        if "object" in types or "properties" in schema:
            self.object(schema, out, path, depth=depth, nesting=nesting)
        elif "required" in schema or "additionalProperties" in schema:
            raise _NotStrict("object keywords on a schema that is not an object", path)

        if "array" in types or "items" in schema:
            items = schema.get("items")
            if not isinstance(items, Mapping):
                raise _NotStrict("an array needs one `items` schema in strict mode", path)
            out["items"] = self.node(items, (*path, "items"), depth=depth + 1, nesting=nesting)

        _add_notes(out, notes)
        if "type" in out:  # type first, for whoever reads the exported definitions
            out = {"type": out.pop("type"), **out}
        return out

    def object(
        self, schema: Mapping[str, Any], out: dict[str, Any], path: tuple[str, ...], *, depth: int, nesting: int
    ) -> None:
        if nesting + 1 > MAX_OBJECT_NESTING:
            raise _NotStrict(f"objects nested more than {MAX_OBJECT_NESTING} levels", path)
        properties = schema.get("properties")
        extra = schema.get("additionalProperties", None)
        if extra is not None and extra is not False:
            raise _NotStrict("additionalProperties must be false (or absent) in strict mode", path)
        if properties is None:
            if extra is not False:
                raise _NotStrict("an object without `properties` (a free-form map) cannot be strict", path)
            properties = {}
        if not isinstance(properties, Mapping):
            raise _NotStrict("properties is not an object", path)
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise _NotStrict("required is not a list of names", path)
        missing = [r for r in required if r not in properties]
        if missing:
            raise _NotStrict(f"required names a property that is not declared: {_show(missing[0])}", path)
        converted: dict[str, Any] = {}
        for name, sub in properties.items():
            self.budget.properties += 1
            self.budget.chars += len(name)
            sub_path = (*path, "properties", name)
            node = self.node(sub, sub_path, depth=depth + 1, nesting=nesting + 1)
            if name not in required and not accepts_null(sub, self.root):
                node = _nullable(node)
            converted[name] = node
        out.setdefault("type", "object")
        out["properties"] = converted
        out["required"] = list(converted)
        out["additionalProperties"] = False

    def merge_all_of(self, schema: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
        """``allOf`` with one member and no clashing keys is the same as its member merged in."""
        if "allOf" not in schema:
            return schema
        members = schema["allOf"]
        if not isinstance(members, list) or len(members) != 1 or not isinstance(members[0], Mapping):
            raise _NotStrict("allOf (other than one member) is not supported in strict mode", path)
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        clash = set(merged) & set(members[0]) - {"description", "title"}
        if clash:
            raise _NotStrict(f"allOf repeats {_show(sorted(clash)[0])}", path)
        return {**members[0], **merged}

    def infer_type(self, schema: Mapping[str, Any], path: tuple[str, ...]) -> list[str] | None:
        """A type implied by enum/const/properties/items, when the schema does not say it."""
        if "enum" in schema or "const" in schema:
            values = schema.get("enum") if "enum" in schema else [schema["const"]]
            if not isinstance(values, list) or not values:
                raise _NotStrict("enum must be a non-empty list", path)
            found: list[str] = []
            for value in values:
                name = _json_type(value)
                if name is None:
                    raise _NotStrict("enum values must be strings, numbers, booleans or null", path)
                if name not in found:
                    found.append(name)
            if "integer" in found and "number" in found:
                found.remove("integer")
            return found
        if "properties" in schema:
            return ["object"]
        if "items" in schema:
            return ["array"]
        return None

    def count_enum(self, values: Any, path: tuple[str, ...]) -> None:
        if not isinstance(values, list) or not values:
            raise _NotStrict("enum must be a non-empty list", path)
        self.budget.enum_values += len(values)
        chars = self.count_values(values, path)
        if len(values) > LARGE_ENUM_VALUES and chars > LARGE_ENUM_CHARS:
            raise _NotStrict(
                f"an enum of {len(values)} values with {chars:,} characters (strict mode allows {LARGE_ENUM_CHARS:,})",
                path,
            )

    def count_values(self, values: list[Any], path: tuple[str, ...]) -> int:
        chars = 0
        for value in values:
            if _json_type(value) is None:
                raise _NotStrict("enum/const values must be strings, numbers, booleans or null", path)
            chars += len(value) if isinstance(value, str) else len(json.dumps(value))
        self.budget.chars += chars
        return chars


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` also accepting null (the strict-mode form of an optional property)."""
    note = (
        "Optional: null means not given."
        if "Default:" not in node.get("description", "")
        else "Optional: null means the default."
    )
    types = node.get("type")
    type_list = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    if type_list and not ({"object", "array"} & set(type_list)) and "anyOf" not in node:
        result = dict(node)
        if "null" not in type_list:
            result["type"] = [*type_list, "null"]
        if "enum" in result and None not in result["enum"]:
            result["enum"] = [*result["enum"], None]
        if "const" in result:
            result["enum"] = [result.pop("const"), None]
        _add_notes(result, [note])
        return result
    if "anyOf" in node and set(node) <= {"anyOf", "description", "title"}:
        result = dict(node)
        result["anyOf"] = [*node["anyOf"], {"type": "null"}]
        _add_notes(result, [note])
        return result
    inner = {k: v for k, v in node.items() if k not in ("description", "title")}
    result = {"anyOf": [inner, {"type": "null"}]}
    if "description" in node:
        result["description"] = node["description"]
    _add_notes(result, [note])
    return result


def _strip(value: Any, schema: Any, root: Any, depth: int) -> Any:
    if depth > _MAX_SCHEMA_DEPTH or not isinstance(schema, Mapping):
        return value
    for _ in range(8):  # follow a few $ref hops
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            break
        target = _resolve(root, ref)
        if not isinstance(target, Mapping):
            return value
        schema = target
    variants = schema.get("anyOf")
    if isinstance(variants, list):
        non_null = [v for v in variants if not (isinstance(v, Mapping) and v.get("type") == "null")]
        return _strip(value, non_null[0], root, depth + 1) if len(non_null) == 1 else value
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return value
        required = schema.get("required") or []
        result = {}
        for key, item in value.items():
            sub = properties.get(key)
            if item is None and sub is not None and key not in required and not accepts_null(sub, root):
                continue
            result[key] = _strip(item, sub, root, depth + 1) if sub is not None else item
        return result
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_strip(item, items, root, depth + 1) for item in value]
    return value


def _resolve(root: Any, ref: str) -> Any:
    """The target of a local ``#/...`` reference, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _types(schema: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[str] | None:
    types = schema.get("type")
    if types is None:
        return None
    if isinstance(types, str):
        return [types]
    if isinstance(types, list) and types and all(isinstance(t, str) for t in types):
        return list(types)
    raise _NotStrict("type must be a name or a list of names", path)


_SCALARS = frozenset({"null", "boolean", "integer", "number", "string"})


def _json_type(value: Any) -> str | None:
    """The JSON type of a scalar ``enum``/``const`` value; None for anything else."""
    kind = json_type(value)
    return kind if kind in _SCALARS else None


def _describe(schema: Mapping[str, Any]) -> list[str]:
    """Sentences for the narrowing keywords strict mode rejects (they are dropped from the schema)."""
    notes = [_range("Length", schema.get("minLength"), schema.get("maxLength"), "characters")]
    notes.append(_range("Properties set", schema.get("minProperties"), schema.get("maxProperties"), ""))
    if schema.get("uniqueItems") is True:
        notes.append("Items must be unique.")
    return [n for n in notes if n]


def _range(label: str, low: Any, high: Any, unit: str) -> str:
    unit = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{label}: {_show(low)} to {_show(high)}{unit}."
    if low is not None:
        return f"{label}: at least {_show(low)}{unit}."
    if high is not None:
        return f"{label}: at most {_show(high)}{unit}."
    return ""


def _add_notes(node: dict[str, Any], notes: list[str]) -> None:
    text = " ".join(n for n in notes if n)
    if not text:
        return
    description = node.get("description")
    node["description"] = (
        f"{description.rstrip()} {text}" if isinstance(description, str) and description.strip() else text
    )


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _pointer(path: tuple[str, ...]) -> str:
    if not path:
        return "the root"
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _copy(schema: Any) -> dict[str, Any]:
    try:
        return copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else {}
    except Exception:  # noqa: BLE001
        return dict(schema) if isinstance(schema, Mapping) else {}
