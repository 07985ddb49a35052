"""Stage 06, step 1: turn whatever a handler returned into text the model can read.

:func:`serialize` never raises: a handler's value is untrusted in shape as well as in
content, and a result must come out of the pipeline whatever it is.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from runtime.shaping._unicode import clean

# Values nested deeper than this are cut off: a pathological (or self-referencing
# through __iter__) structure must not exhaust the stack inside json.dumps.
_MAX_DEPTH = 64
# Outputs whose compact JSON fits on one short line stay on one line; longer ones are
# indented one value per line, so that head/tail truncation cuts at line breaks and
# artifact_read(pattern=...) can keep only the matching lines of a big result.
_ONE_LINE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Serialized:
    """A handler's value as text.

    ``structured`` is the JSON-compatible data when the value was structured (dict,
    list, number, model, dataclass), else None. ``notes`` says what had to be changed
    to produce valid text (non-finite numbers, cycles, binary data), for metadata.
    """

    text: str
    structured: Any = None  # JSON-compatible data, or None
    notes: tuple[str, ...] = ()


def serialize(value: Any) -> Serialized:
    """Turn a handler's return value into text (and JSON data when it is structured).

    - ``str``: as is; ``None``: ``""``.
    - ``bytes``: the UTF-8 text when it decodes (and has no NUL byte), otherwise a
      one-line description with the size and SHA-256: raw bytes never reach a model.
    - dict, list, tuple, set, int, float, bool, pydantic models, dataclasses: JSON
      (``ensure_ascii=False``); NaN and infinities become the strings ``"NaN"``,
      ``"Infinity"``, ``"-Infinity"`` (JSON has no such numbers) and a note says so.
    - anything else: ``str(value)``; a value whose ``__str__`` raises is described.
    """
    try:
        return _serialize(value)
    except Exception as err:  # noqa: BLE001 - a result must come out whatever the value is
        return Serialized(
            _describe_failure(value, err), None, (f"the value could not be serialized: {type(err).__name__}",)
        )


def _serialize(value: Any) -> Serialized:
    if value is None:
        return Serialized("")
    if isinstance(value, str):
        # Lone surrogates cannot be sent anywhere as UTF-8: replace them, keep the length.
        return Serialized(clean(value))
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        text = _bytes_text(data)
        if text is None:
            return Serialized(describe_binary(data), None, ("binary output replaced by a description",))
        return Serialized(text)
    if isinstance(
        value, BaseModel | Mapping | list | tuple | set | frozenset | int | float | Decimal
    ) or _is_dataclass_instance(value):
        notes: set[str] = set()
        data = _jsonable(value, notes, 0, set())
        return Serialized(_dumps(data), data, tuple(sorted(notes)))
    try:
        text = str(value)
    except Exception as err:  # noqa: BLE001 - a broken __str__ must not break the call
        return Serialized(_describe_failure(value, err), None, (f"str() of the value raised {type(err).__name__}",))
    if not isinstance(text, str):  # a __str__ returning a str subclass is fine; anything else is not
        return Serialized(f"<{type(value).__name__} object>")
    return Serialized(clean(text))


def describe_binary(data: bytes) -> str:
    """One line describing binary data: its size and SHA-256, never its content."""
    return f"<binary output: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}>"


def _bytes_text(data: bytes) -> str | None:
    # A NUL byte is valid UTF-8 but marks binary data (the usual heuristic of file(1),
    # git and grep); a model gains nothing from control bytes.
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def to_text(data: Any) -> str:
    """JSON-compatible ``data`` (as :func:`serialize` returns it) written as the text
    :func:`serialize` would write, e.g. again after redaction."""
    return _dumps(data)


def _dumps(data: Any) -> str:
    # allow_nan=False: _jsonable already replaced every non-finite float, so this
    # guarantees the text is strict JSON (a bug would raise, and be described).
    compact = json.dumps(data, ensure_ascii=False, allow_nan=False)
    if len(compact) <= _ONE_LINE_CHARS or not isinstance(data, dict | list):
        return compact
    return json.dumps(data, ensure_ascii=False, allow_nan=False, indent=2)


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _jsonable(value: Any, notes: set[str], depth: int, active: set[int]) -> Any:
    """``value`` as JSON-compatible data (str keys, lists, finite numbers)."""
    if value is None or isinstance(value, str | bool):
        return clean(value) if isinstance(value, str) else value
    if isinstance(value, int):
        return int(value)  # an IntEnum or int subclass becomes a plain number
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        notes.add("non-finite numbers (NaN, Infinity) are not valid JSON and were written as strings")
        return _NON_FINITE[repr(float(value))]
    if depth >= _MAX_DEPTH:
        notes.add(f"values nested deeper than {_MAX_DEPTH} levels were cut")
        return f"<nested deeper than {_MAX_DEPTH} levels>"
    if isinstance(value, Decimal):
        # A string keeps every digit; a float would round.
        if value.is_finite():
            return str(value)
        notes.add("non-finite numbers (NaN, Infinity) are not valid JSON and were written as strings")
        return "NaN" if value.is_nan() else ("-Infinity" if value < 0 else "Infinity")
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, notes, depth + 1, active)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        text = _bytes_text(data)
        if text is None:
            notes.add("binary values were replaced by a description")
            return describe_binary(data)
        return text
    if isinstance(value, BaseModel):
        # mode="json" already yields JSON types; go through _jsonable anyway for NaN.
        return _jsonable(value.model_dump(mode="json"), notes, depth + 1, active)
    key = id(value)
    if key in active:
        notes.add("a value that contains itself was cut at the repetition")
        return "<cycle>"
    active.add(key)
    try:
        if _is_dataclass_instance(value):
            # Not dataclasses.asdict: it deep-copies every field and fails on fields
            # that cannot be copied (locks, sockets, open files). Same result otherwise.
            return {
                f.name: _jsonable(getattr(value, f.name), notes, depth + 1, active) for f in dataclasses.fields(value)
            }
        if isinstance(value, Mapping):
            return {_key(k, notes): _jsonable(v, notes, depth + 1, active) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_jsonable(item, notes, depth + 1, active) for item in value]
        if isinstance(value, set | frozenset):
            items = [_jsonable(item, notes, depth + 1, active) for item in value]
            try:
                return sorted(items)  # deterministic output for the same set
            except TypeError:
                return items
    finally:
        active.discard(key)
    try:
        return clean(str(value))
    except Exception as err:  # noqa: BLE001 - one bad element must not lose the whole result
        notes.add("some values could not be turned into text")
        return _describe_failure(value, err)


def _key(key: Any, notes: set[str]) -> str:
    if isinstance(key, str):
        return clean(key)
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key) if not isinstance(key, float) or math.isfinite(key) else _NON_FINITE[repr(key)]
    if isinstance(key, enum.Enum):
        return _key(key.value, notes)
    try:
        return clean(str(key))
    except Exception as err:  # noqa: BLE001
        notes.add("some keys could not be turned into text")
        return _describe_failure(key, err)


def _describe_failure(value: Any, err: BaseException) -> str:
    try:
        name = type(value).__qualname__
    except Exception:  # noqa: BLE001 - a metaclass can break even this
        name = "object"
    return f"<unprintable {name} object: {type(err).__name__} while converting it to text>"
