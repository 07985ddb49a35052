"""CEL types for lint, read from JSON Schema, and the cost terms that bound them.

A tool's ``input_schema`` says what ``args`` holds; this module turns it into a
:class:`CelType` tree (string, int, double, bool, list, map, object with required
and optional fields, nullable, enum) that :mod:`runtime.policy.celcheck` types
expressions against. Each string, list and map also carries a *size variable*
(``args.items``, ``args.items[].name``) whose worst case comes from the schema's
``maxLength``/``maxItems``/``maxProperties`` or, when the schema sets none, from the
largest arguments the runtime accepts (:data:`MAX_ARGUMENT_BYTES`), the way
Kubernetes bounds CEL over a CRD by its maximum request size. The checker's cost
estimate is an expression over those variables (:class:`Cost`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.adapters.arguments import MAX_BYTES as MAX_ARGUMENT_BYTES
from runtime.validation.wording import json_type

# Smallest JSON encodings: a list item (`1,`), a map entry (`"":0,`). They bound how
# many items fit in the largest accepted arguments.
_MIN_ITEM_BYTES = 2
_MIN_ENTRY_BYTES = 5


# ---------------------------------------------------------------------------
# cost: an expression over size variables, evaluated with their worst cases


@dataclass(frozen=True, slots=True)
class Cost:
    """``op`` is ``c`` (constant ``value``), ``v`` (size variable ``name``), ``+``, ``*`` or ``max``."""

    op: str
    value: float = 0.0
    name: str = ""
    parts: tuple[Cost, ...] = ()

    def __add__(self, other: Cost) -> Cost:
        if self.op == "c" and other.op == "c":
            return Cost("c", self.value + other.value)
        if self.op == "c" and self.value == 0:
            return other
        if other.op == "c" and other.value == 0:
            return self
        return Cost("+", parts=(self, other))

    def __mul__(self, other: Cost) -> Cost:
        if self.op == "c" and other.op == "c":
            return Cost("c", self.value * other.value)
        if (self.op == "c" and self.value == 1) or (other.op == "c" and other.value == 0):
            return other
        if (other.op == "c" and other.value == 1) or (self.op == "c" and self.value == 0):
            return self
        return Cost("*", parts=(self, other))

    def evaluate(self, bounds: Mapping[str, float]) -> float:
        if self.op == "c":
            return self.value
        if self.op == "v":
            return bounds.get(self.name, 0.0)
        values = [part.evaluate(bounds) for part in self.parts]
        if self.op == "+":
            return sum(values)
        if self.op == "*":
            return math.prod(values)
        return max(values)

    def variables(self) -> set[str]:
        if self.op == "v":
            return {self.name}
        found: set[str] = set()
        for part in self.parts:
            found |= part.variables()
        return found


def const(value: float) -> Cost:
    return Cost("c", float(value))


def size_var(name: str) -> Cost:
    return Cost("v", name=name)


def larger(a: Cost, b: Cost) -> Cost:
    if a.op == "c" and b.op == "c":
        return a if a.value >= b.value else b
    return Cost("max", parts=(a, b))


ZERO = const(0)
ONE = const(1)


@dataclass(frozen=True, slots=True)
class SizeBound:
    """The worst case of one size variable, and where a schema would lower it."""

    limit: int
    declared: bool  # from maxLength/maxItems/maxProperties (else from the argument size cap)
    keyword: str  # the keyword that bounds it
    pointer: str  # where in the input schema to put it, e.g. properties.items


# ---------------------------------------------------------------------------
# types


@dataclass(frozen=True, slots=True)
class FieldInfo:
    type: CelType
    required: bool  # present in every valid call (required, or a top-level default filled in)


@dataclass(frozen=True, eq=False)
class CelType:
    """A CEL type as lint knows it.

    ``kind``: ``dyn bool int uint double number string bytes null list map object
    type timestamp duration``. ``number`` is JSON Schema's ``number``: an int or a
    double at run time (CEL compares them but does not mix them in arithmetic).
    """

    kind: str
    elem: CelType | None = None  # list items, map values
    key: CelType | None = None  # map keys
    fields: Mapping[str, FieldInfo] | None = None  # object: declared properties
    extra: CelType | None = None  # object: the type of undeclared keys; None = closed
    nullable: bool = False
    enum: tuple[Any, ...] | None = None
    size: Cost | None = None  # strings, bytes, lists, maps, objects: how large it can be
    label: str = ""  # how messages name it, e.g. args.count

    def describe(self) -> str:
        """How a message names this type: ``int``, ``list(string)``, ``string or null``."""
        if self.kind == "list":
            text = f"list({self.elem.describe() if self.elem else 'dyn'})"
        elif self.kind == "map":
            text = (
                f"map({self.key.describe() if self.key else 'string'}, {self.elem.describe() if self.elem else 'dyn'})"
            )
        elif self.kind == "object":
            text = "object"
        elif self.kind == "number":
            text = "number (int or double)"
        else:
            text = self.kind
        return f"{text} or null" if self.nullable else text

    def with_(self, **changes: Any) -> CelType:
        values = {
            name: getattr(self, name)
            for name in ("kind", "elem", "key", "fields", "extra", "nullable", "enum", "size", "label")
        }
        values.update(changes)
        return CelType(**values)


DYN = CelType("dyn")
BOOL = CelType("bool")
INT = CelType("int")
UINT = CelType("uint")
DOUBLE = CelType("double")
STRING = CelType("string", size=ZERO)
BYTES = CelType("bytes", size=ZERO)
NULL = CelType("null")
TYPE = CelType("type")
TIMESTAMP = CelType("timestamp")
DURATION = CelType("duration")
NUMERIC = frozenset({"int", "uint", "double", "number"})


def list_of(elem: CelType, size: Cost = ZERO) -> CelType:
    return CelType("list", elem=elem, size=size)


def map_of(key: CelType, value: CelType, size: Cost = ZERO) -> CelType:
    return CelType("map", elem=value, key=key, size=size)


def closed_object(fields: Mapping[str, CelType], label: str) -> CelType:
    """An object whose fields are all present and nothing else (``tool``, ``session``)."""
    return CelType(
        "object", fields={n: FieldInfo(t.with_(label=f"{label}.{n}"), True) for n, t in fields.items()}, label=label
    )


# ---------------------------------------------------------------------------
# JSON Schema -> CelType


@dataclass
class SchemaTypes:
    """The result of reading a schema: the type, and the worst case of each size variable."""

    root: CelType
    bounds: dict[str, SizeBound] = field(default_factory=dict)


def from_schema(schema: Any, name: str = "args", *, defaults_present: bool = True) -> SchemaTypes:
    """The type of values valid under ``schema``, read as CEL sees them.

    Top-level properties with a ``default`` count as present: the runtime fills them
    in before rules run (``defaults_present``)."""
    reader = _Reader()
    root = reader.read(schema, name, "", 1, top=defaults_present)
    return SchemaTypes(root, reader.bounds)


class _Reader:
    def __init__(self) -> None:
        self.bounds: dict[str, SizeBound] = {}

    def read(self, schema: Any, label: str, pointer: str, outer: int, *, top: bool = False) -> CelType:
        """``outer``: how many values of this kind may exist at once (the product of the
        enclosing lists' bounds): together they share the argument size cap."""
        if schema is True or not isinstance(schema, dict):
            return DYN.with_(label=label)
        if "$ref" in schema or "not" in schema:
            return DYN.with_(label=label)
        kinds, nullable = _kinds(schema)
        enum = schema.get("enum") if isinstance(schema.get("enum"), list) else None
        if "const" in schema:
            enum = [schema["const"]]
        if enum is not None:
            if any(v is None for v in enum):
                nullable = True
            value_kinds = {json_type(v) for v in enum if v is not None}
            if kinds is None:
                kinds = value_kinds
        if kinds is None or len(kinds) != 1:
            if kinds == {"integer", "number"}:
                kinds = {"number"}
            else:
                return DYN.with_(label=label, nullable=nullable or kinds is None)
        (kind,) = kinds
        enum_values = tuple(v for v in enum if v is not None) if enum is not None else None
        if kind == "string":
            size = self._bound(label, schema, "maxLength", MAX_ARGUMENT_BYTES // outer, pointer)
            return CelType("string", nullable=nullable, enum=enum_values, size=size, label=label)
        if kind in ("integer", "number", "boolean"):
            mapped = {"integer": "int", "number": "number", "boolean": "bool"}[kind]
            return CelType(mapped, nullable=nullable, enum=enum_values, label=label)
        if kind == "null":
            return NULL.with_(label=label)
        if kind == "array":
            size = self._bound(label, schema, "maxItems", MAX_ARGUMENT_BYTES // _MIN_ITEM_BYTES // outer, pointer)
            count = self.bounds[label].limit
            items = schema.get("items")
            elem = self.read(
                items if items is not None else True, f"{label}[]", _join(pointer, "items"), outer * max(1, count)
            )
            return CelType("list", elem=elem, nullable=nullable, size=size, label=label)
        # object
        properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required", [])) if isinstance(schema.get("required"), list) else set()
        for branch in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
            if isinstance(branch, dict) and isinstance(branch.get("properties"), dict):
                properties = {**properties, **branch["properties"]}
            if isinstance(branch, dict):
                required |= set(branch.get("required") or [])
        if "anyOf" in schema or "oneOf" in schema:
            return DYN.with_(label=label, nullable=nullable)
        size = self._bound(label, schema, "maxProperties", MAX_ARGUMENT_BYTES // _MIN_ENTRY_BYTES // outer, pointer)
        count = self.bounds[label].limit
        additional = schema.get("additionalProperties", True)
        if schema.get("patternProperties") or schema.get("unevaluatedProperties") is not None:
            additional = True
        extra: CelType | None
        if additional is False:
            extra = None
        else:
            extra = self.read(additional, f"{label}.*", _join(pointer, "additionalProperties"), outer * max(1, count))
        if not properties and extra is not None:
            return CelType("map", elem=extra, key=STRING, nullable=nullable, size=size, label=label)
        fields = {}
        for prop, sub in properties.items():
            sub_type = self.read(sub, f"{label}.{prop}", _join(pointer, "properties", prop), outer)
            present = prop in required or (top and isinstance(sub, dict) and "default" in sub)
            fields[prop] = FieldInfo(sub_type, present)
        return CelType("object", fields=fields, extra=extra, nullable=nullable, size=size, label=label)

    def _bound(self, label: str, schema: dict[str, Any], keyword: str, cap: int, pointer: str) -> Cost:
        declared = schema.get(keyword)
        limit = max(1, cap)
        is_declared = False
        if isinstance(declared, int) and not isinstance(declared, bool) and declared >= 0:
            is_declared = True
            limit = min(limit, max(1, declared))
        self.bounds[label] = SizeBound(limit, is_declared, keyword, pointer or "(the schema's root)")
        return size_var(label)


def _join(pointer: str, *parts: str) -> str:
    return ".".join(p for p in (pointer, *parts) if p)


def _kinds(schema: dict[str, Any]) -> tuple[set[str] | None, bool]:
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds = {declared}
    elif isinstance(declared, list) and all(isinstance(k, str) for k in declared):
        kinds = set(declared)
    else:
        kinds = None
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if (
                isinstance(branches, list)
                and branches
                and all(isinstance(b, dict) and isinstance(b.get("type"), str) and len(b) == 1 for b in branches)
            ):
                kinds = {b["type"] for b in branches}
        if kinds is None:
            if isinstance(schema.get("properties"), dict):
                kinds = {"object"}
            elif "items" in schema:
                kinds = {"array"}
    if kinds is None:
        return None, False
    nullable = "null" in kinds and len(kinds) > 1
    kinds.discard("null") if nullable else None
    if schema.get("nullable") is True:
        nullable = True
    return kinds, nullable
