"""An audit record's arguments as JSON text: redacted, capped, never failing.

The audit writer calls :func:`clean_json` first: one encoding of the arguments, and
when the text shows nothing to redact (the common case), that text is what is stored.
Otherwise the arguments are redacted string by string (:func:`redacted`) and encoded
the careful way (:func:`encode_args`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
from collections.abc import Mapping, Set
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from types import MappingProxyType
from typing import Any

from runtime.audit.jsontext import compact

#: Largest encoded ``args`` JSON kept per record (bytes of UTF-8); larger ones are
#: replaced by a marker object holding a preview.
ARGS_MAX_BYTES = 64 * 1024
#: Longest single string kept inside ``args``; a longer one is cut with a marker,
#: so one huge value does not push the whole mapping over ``ARGS_MAX_BYTES``.
STRING_MAX_CHARS = 8 * 1024
#: Deepest nesting kept inside ``args``; deeper values (or cycles) become a marker.
MAX_DEPTH = 32
#: Most items kept from one list or mapping inside ``args``.
MAX_ITEMS = 1000


class Encoded(str):
    """Arguments already encoded as JSON text (and redacted): stored as they are."""

    __slots__ = ()


def clean_json(args: Any, redactor: Any) -> str | None:
    """``args`` as the JSON text :func:`encode_args` gives, when that text proves there
    is nothing to redact in it; None when it does not (then use :func:`redacted`).

    The arguments are encoded once (the text the log stores). A text without a
    backslash has no escapes, so its ``"`` characters are exactly the edges of its
    strings, keys and values, which then read as they were given: they are scanned
    once, joined by newlines, as :func:`redacted` scans them (what it takes as proof,
    this takes too). A key that names a secret, a text with escapes, one too long to be
    stored as it is, a value JSON cannot carry, or a profile anchored to the whole
    text's edges returns None. Whatever the arguments' types, what is scanned is what
    would be stored.
    """
    if redactor.edge_anchored:
        return None
    try:
        text = compact(args)
    except (ValueError, TypeError, RecursionError):
        return None
    if len(text) > STRING_MAX_CHARS or "\\" in text:
        return None
    parts = text.split('"')
    secret = redactor.is_secret_key
    for index in range(1, len(parts) - 1, 2):
        # A key is the string a ":" follows (values are followed by ",", "]" or "}").
        if parts[index + 1][:1] == ":" and secret(parts[index]):
            return None
    if redactor.has_candidate("\n".join(parts[1::2])):
        return None
    return text


def redacted(args: Any, redactor: Any) -> Any:
    """``args`` with secrets redacted, cheaply in the common case.

    Every string of ``args`` (keys too) is gathered and the strings are scanned once,
    joined by newlines: a pattern that looks only at a string's characters and its line
    edges (``(?m)^``, ``$``, ``\\b``: a newline is a line edge and not a word character,
    like a string's own edges) finds a match in some string alone only if it finds one in
    the joined text. No candidate there means nothing to redact, and ``args`` is kept as
    it is. A key that names a secret (its value is hidden whatever it looks like), a
    pattern anchored to the whole text's edges, or a value of another type takes the
    careful path: each string redacted on its own.
    """
    if not redactor.edge_anchored:
        strings: list[str] = []
        if _gather(args, strings, redactor, 0) and not redactor.has_candidate("\n".join(strings)):
            return args
    return redactor.redact_value(plain(args, 0))[0]


def _gather(value: Any, strings: list[str], redactor: Any, depth: int) -> bool:
    """Append every string in ``value`` (keys too) to ``strings``; False when the
    value needs the careful path (a secret key, deep nesting, an unusual type)."""
    kind = type(value)
    if kind is str:
        strings.append(value)
        return True
    if value is None or kind is bool or kind is int or kind is float:
        return True
    if depth >= MAX_DEPTH:
        return False
    if kind is dict or kind is MappingProxyType:
        secret = redactor.is_secret_key
        for key, item in value.items():
            if type(key) is not str or secret(key):
                return False
            strings.append(key)
            if not _gather(item, strings, redactor, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        return all(_gather(item, strings, redactor, depth + 1) for item in value)
    return False


def plain(value: Any, depth: int) -> Any:
    """Mappings (read-only views too) as dicts, tuples and sets as lists, bytes that are
    UTF-8 and enums as what :func:`encode_args` stores for them, all the way down, for the
    careful path, which redacts strings inside dicts and lists only (a secret in a
    read-only view, a set or bytes would otherwise be stored in clear)."""
    if depth > MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, Mapping):
        return {key: plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, Set):
        return [plain(item, depth + 1) for item in _ordered(value)]  # in encode_args's order
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return value  # stored as base64, not as the text
    if isinstance(value, Enum) and not isinstance(value, str | int):
        return plain(value.value, depth + 1)
    return value


def _ordered(values: Any) -> list[Any]:
    items = list(values)
    try:
        items.sort()
    except TypeError:
        items.sort(key=repr)  # mixed types: still a stable order
    return items


def encode_args(args: Any) -> str | None:
    """``args`` as compact JSON text, or None for None. Never raises.

    Odd types are made JSON-safe: bytes as UTF-8 text when they decode, else
    ``{"$b64": ...}``; sets as (sorted when possible) lists; dates and times in ISO
    8601; enums by value; paths and decimals as text; anything else as its repr.
    Strings over :data:`STRING_MAX_CHARS`, containers over :data:`MAX_ITEMS` and
    nesting over :data:`MAX_DEPTH` are cut with markers. When the result is still
    over :data:`ARGS_MAX_BYTES` it is replaced by
    ``{"$truncated": true, "original_bytes": N, "preview": "<start of the JSON>"}``.
    """
    if args is None:
        return None
    if type(args) is Encoded:
        return str(args)
    try:
        # Plain, small arguments (nearly all of them) go straight through the C encoder.
        text = compact(args)
    except Exception:  # noqa: BLE001 - odd types, NaN, cycles or deep nesting: the careful path below
        pass
    else:
        if len(text) <= STRING_MAX_CHARS:  # so no string in it can be over the cap either
            return text
    try:
        text = compact(_safe(args, 0))
    except Exception as err:  # noqa: BLE001 - an audit record must never fail to encode
        return json.dumps({"$unencodable": f"{type(err).__name__}: {err}"[:500]})
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= ARGS_MAX_BYTES:
        return text
    return json.dumps(
        {"$truncated": True, "original_bytes": size, "preview": text[: ARGS_MAX_BYTES // 8]}, ensure_ascii=False
    )


def _safe(value: Any, depth: int) -> Any:
    """``value`` as plain JSON data (dict with str keys, list, str, int, float, bool, None)."""
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return value
    if kind is str:
        return cut(value)
    if kind is float:
        return value if math.isfinite(value) else repr(value)
    if depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= MAX_ITEMS:
                out["$more"] = f"{len(value) - MAX_ITEMS} more item(s) not kept"
                break
            out[key if type(key) is str else _key(key)] = _safe(item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return _items(value, len(value), depth)
    if isinstance(value, Set):
        items = _ordered(value)
        return _items(items, len(items), depth)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return cut(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return {"$b64": cut(base64.b64encode(raw[: STRING_MAX_CHARS * 3 // 4]).decode("ascii")), "bytes": len(raw)}
    if isinstance(value, Enum):
        return _safe(value.value, depth + 1)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bool | int):  # subclasses (IntEnum is handled above)
        return int(value)
    if isinstance(value, float):
        return _safe(float(value), depth)
    if isinstance(value, str):
        return cut(str(value))
    if isinstance(value, PurePath | Decimal):
        return cut(str(value))
    return cut(repr_of(value))


def _items(values: Any, total: int, depth: int) -> list[Any]:
    out = [_safe(item, depth + 1) for item in values[:MAX_ITEMS]]
    if total > MAX_ITEMS:
        out.append(f"<{total - MAX_ITEMS} more item(s) not kept>")
    return out


def _key(key: Any) -> str:
    if isinstance(key, Enum):
        key = key.value
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    return repr_of(key) if not isinstance(key, int | float | bool) and key is not None else json.dumps(key)


def cut(text: str) -> str:
    if len(text) <= STRING_MAX_CHARS:
        return text
    return f"{text[:STRING_MAX_CHARS]}...[{len(text) - STRING_MAX_CHARS} more chars]"


def repr_of(value: Any) -> str:
    try:
        return f"<{type(value).__name__} {repr(value)[:200]}>"
    except Exception:  # noqa: BLE001 - a broken __repr__ must not fail the batch
        return f"<{type(value).__name__}>"
