"""JSON Schema violations in words a model (or a person) can act on.

Shared by per-call argument validation and by config structure validation, so that
every "what is wrong" message in toolrt reads the same way:
``limit`` must be an integer <= 500, got "ten".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from runtime.config.suggest import did_you_mean

_TYPE_PHRASES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def show(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: Any) -> str:
    """The JSON type name of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sentence(text: str) -> str:
    """``text`` ending with exactly one full stop (or its own ``?``/``!``)."""
    text = text.rstrip()
    return text if text.endswith((".", "?", "!")) else text + "."


def field_name(path: Sequence[str | int], root: str = "the arguments") -> str:
    """``filter.limit`` / ``items[2]`` / ``the arguments`` for the empty path."""
    if not path:
        return root
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return f"`{text}`"


def pointer(path: Sequence[str | int]) -> str:
    """RFC 6901 JSON pointer of ``path``."""
    return "".join("/" + _short(str(p), 200).replace("~", "~0").replace("/", "~1") for p in path)


def type_phrase(types: str | Iterable[str]) -> str:
    names = [types] if isinstance(types, str) else list(types)
    return " or ".join(_TYPE_PHRASES.get(t, t) for t in names)


def constraints_phrase(schema: Any) -> str:
    """Bounds declared beside ``type`` (`` <= 500``), so a type error says everything at once."""
    if not isinstance(schema, dict):
        return ""
    parts = []
    for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
            parts.append(f"{op} {schema[key]}")
    if isinstance(schema.get("enum"), list):
        parts.append("one of " + ", ".join(show(v) for v in schema["enum"][:10]))
    return (" " + " and ".join(parts)) if parts else ""


def describe(
    keyword: str, path: Sequence[str | int], instance: Any, value: Any, schema: Any, root: str = "the arguments"
) -> str:
    """One violation of ``keyword`` (whose schema value is ``value``) by ``instance`` at ``path``."""
    name = field_name(path, root)
    got = f", got {show(instance)}"
    if keyword == "type":
        return f"{name} must be {type_phrase(value)}{constraints_phrase(schema)}{got}"
    if keyword == "required":
        missing = [p for p in value if isinstance(instance, dict) and p not in instance]
        listed = ", ".join(f"`{p}`" for p in missing) or show(value)
        where = "" if not path else f" in {name}"
        return (
            f"missing required {'field' if root != 'the arguments' else 'argument'}{'s' if len(missing) > 1 else ''} "
            f"{listed}{where}"
        )
    if keyword == "additionalProperties":
        allowed = sorted(schema.get("properties", {})) if isinstance(schema, dict) else []
        extra = [k for k in instance if k not in allowed] if isinstance(instance, dict) else []
        hint = did_you_mean(extra[0], allowed) if extra and allowed else ""
        allowed_text = f"; allowed: {', '.join(allowed)}" if allowed else ""
        what = "unknown argument" if root == "the arguments" else "unknown key"
        where = "" if not path else f" in {name}"
        named = ", ".join(f"`{_short(e)}`" for e in extra[:10]) + (
            f" and {len(extra) - 10} more" if len(extra) > 10 else ""
        )
        return f"{what}{'s' if len(extra) > 1 else ''} {named}{where}{allowed_text}.{hint}".replace("..", ".")
    if keyword == "enum":
        options = ", ".join(show(v) for v in value[:20])
        hint = did_you_mean(instance, [v for v in value if isinstance(v, str)]) if isinstance(instance, str) else ""
        return f"{name} must be one of {options}{got}.{hint}".replace("..", ".")
    if keyword == "const":
        return f"{name} must be {show(value)}{got}"
    bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if keyword in bounds:
        return f"{name} must be {bounds[keyword]} {value}{got}"
    if keyword in ("minLength", "maxLength"):
        length = len(instance) if isinstance(instance, str) else "?"
        bound = "at least" if keyword == "minLength" else "at most"
        return f"{name} must be {bound} {value} characters long, got {length}"
    if keyword in ("minItems", "maxItems"):
        count = len(instance) if isinstance(instance, list) else "?"
        bound = "at least" if keyword == "minItems" else "at most"
        return f"{name} must have {bound} {value} items, got {count}"
    if keyword in ("minProperties", "maxProperties"):
        count = len(instance) if isinstance(instance, dict) else "?"
        bound = "at least" if keyword == "minProperties" else "at most"
        return f"{name} must have {bound} {value} keys, got {count}"
    if keyword == "pattern":
        return f"{name} must match the pattern `{value}`{got}"
    if keyword == "multipleOf":
        return f"{name} must be a multiple of {value}{got}"
    if keyword == "uniqueItems":
        return f"{name} must not contain duplicate items"
    if keyword == "format":
        return f"{name} must be a valid {value}{got}"
    if keyword in ("anyOf", "oneOf"):
        return f"{name} does not match {'any' if keyword == 'anyOf' else 'exactly one'} of the allowed forms{got}"
    if keyword == "not":
        return f"{name} has a value that is not allowed{got}"
    if keyword == "false":
        return f"{name} is not allowed"
    return f"{name} is invalid ({keyword}){got}"
