"""A check, compiled once per schema, that says when arguments are certainly valid.

The portable validator (jsonschema) costs tens of microseconds per call, most of a
call's cost. Most tool schemas are a flat object of strings, numbers, booleans, enums
and lists of those: for such a schema, :func:`compile_quick` builds a Python check
that returns True only when the arguments certainly satisfy it. Anything else, and
every call it does not vouch for, goes to the full validator, which finds and words
the problems: the check never rejects and never explains, so it cannot change a
verdict or a message, only skip the work on calls that are valid.

The subset: ``type`` (one of object, string, integer, number, boolean, array),
``properties``, ``required``, ``additionalProperties: false`` (or absent),
``minLength``/``maxLength``, ``minimum``/``maximum``, ``enum`` of strings,
``items``, ``minItems``/``maxItems``, and annotations. Integers are vouched for only
when they are Python ints (not bools, not floats such as ``1.0``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: Arguments in, True when certainly valid (False: ask the full validator).
QuickCheck = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated"})
_OBJECT_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
_VALUE_KEYS = _ANNOTATIONS | {"type", "minLength", "maxLength", "minimum", "maximum", "enum", "items"}
_VALUE_KEYS |= {"minItems", "maxItems"}


class _Outside(Exception):
    """The schema uses something outside the subset: no quick check."""


def compile_quick(schema: Any) -> QuickCheck | None:
    """The quick check of an object ``schema``, or None when it is outside the subset."""
    try:
        return _object(schema)
    except (_Outside, RecursionError):
        return None


def _number(value: Any) -> int | float:
    if type(value) is not int and type(value) is not float:
        raise _Outside
    return value  # type: ignore[no-any-return]


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise _Outside
    return value  # type: ignore[no-any-return]


def _object(schema: Any) -> QuickCheck:
    if type(schema) is not dict or schema.get("type") != "object" or not set(schema) <= _OBJECT_KEYS:
        raise _Outside
    extra = schema.get("additionalProperties", True)
    if extra is not True and extra is not False:
        raise _Outside
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if type(properties) is not dict or type(required) is not list or not all(type(r) is str for r in required):
        raise _Outside
    checks = {name: _value(sub) for name, sub in properties.items()}
    needed = tuple(required)
    closed = extra is False

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for name in needed:
            if name not in value:
                return False
        for key, item in value.items():
            sub = checks.get(key)
            if sub is None:
                if closed or type(key) is not str:
                    return False
            elif not sub(item):
                return False
        return True

    return check


def _value(schema: Any) -> QuickCheck:  # noqa: C901 - one branch per type of the subset
    if type(schema) is not dict or not set(schema) <= _VALUE_KEYS:
        raise _Outside
    kind = schema.get("type")
    if "enum" in schema:
        options = schema["enum"]
        if type(options) is not list or not options or not all(type(o) is str for o in options):
            raise _Outside
        if kind not in (None, "string") or set(schema) - _ANNOTATIONS - {"type", "enum"}:
            raise _Outside
        allowed = frozenset(options)
        return lambda value: type(value) is str and value in allowed
    if kind == "string":
        if set(schema) - _ANNOTATIONS - {"type", "minLength", "maxLength"}:
            raise _Outside
        low, high = _count(schema.get("minLength", 0)), schema.get("maxLength")
        top = None if high is None else _count(high)
        return lambda value: type(value) is str and low <= len(value) and (top is None or len(value) <= top)
    if kind in ("integer", "number"):
        if set(schema) - _ANNOTATIONS - {"type", "minimum", "maximum"}:
            raise _Outside
        least = None if "minimum" not in schema else _number(schema["minimum"])
        most = None if "maximum" not in schema else _number(schema["maximum"])
        whole = kind == "integer"

        def number(value: Any) -> bool:
            kind_of = type(value)
            if not (kind_of is int or (kind_of is float and not whole)):
                return False
            return (least is None or value >= least) and (most is None or value <= most)

        return number
    if kind == "boolean":
        if set(schema) - _ANNOTATIONS - {"type"}:
            raise _Outside
        return lambda value: type(value) is bool
    if kind == "array":
        if set(schema) - _ANNOTATIONS - {"type", "items", "minItems", "maxItems"}:
            raise _Outside
        each = _value(schema["items"]) if "items" in schema else None
        fewest, high = _count(schema.get("minItems", 0)), schema.get("maxItems")
        most_items = None if high is None else _count(high)

        def array(value: Any) -> bool:
            if type(value) is not list or len(value) < fewest or (most_items is not None and len(value) > most_items):
                return False
            return each is None or all(each(item) for item in value)

        return array
    raise _Outside


def vouches(check: QuickCheck | None, value: Mapping[str, Any]) -> bool:
    """Whether ``check`` (if any) vouches for ``value``; any failure of its own is a no."""
    if check is None:
        return False
    try:
        return check(value)
    except Exception:  # noqa: BLE001 - a value that breaks the quick check goes to the full validator
        return False
