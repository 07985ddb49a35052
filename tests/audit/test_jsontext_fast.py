"""The audit log's JSON text is the same whichever encoder writes it.

``runtime.audit.jsontext`` hands plain values to orjson (the ``fast`` extra) and the
rest to the standard encoder; the hash chain is computed over this text, so a single
differing byte would make every later record fail ``toolrt audit verify``. Each case
holds the fast path against the standard encoder itself, errors included.
"""

from __future__ import annotations

import enum
import json
import math
import random
import struct
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import pytest

from runtime.audit import jsontext
from runtime.audit.chain import row_body
from runtime.audit.record import COLUMNS

orjson = pytest.importorskip("orjson")

STANDARD = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Colour(enum.Enum):
    red = 1


class Mode(str, enum.Enum):
    fast = "fast"


class Level(enum.IntEnum):
    high = 3


class Text(str):
    pass


class Number(int):
    pass


class Ratio(float):
    pass


class Table(dict):  # type: ignore[type-arg]
    pass


class Items(list):  # type: ignore[type-arg]
    pass


@dataclass
class Point:
    x: int


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


VALUES: list[Any] = [
    {},
    [],
    (),
    "",
    None,
    True,
    False,
    0,
    -1,
    2**63 - 1,
    -(2**63),
    2**64 - 1,
    2**64,
    -(2**63) - 1,
    10**40,
    0.0,
    -0.0,
    1e-4,
    -1e-4,
    9.999e-5,
    1e-5,
    1e16,
    9999999999999998.0,
    1e22,
    5e-324,
    1.7976931348623157e308,
    0.1,
    1 / 3,
    1764770000.123456,
    float("nan"),
    float("inf"),
    float("-inf"),
    {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False},
    {"k": [1, 2.5, None, True, {"deep": [[], {}]}]},
    {"quote": 'a "b" \\ c', "ctl": "\x00\x01\x1f\x7f\b\f\n\r\t", "u": "\u2028\u2029\ufeff"},
    {"emoji": "\U0001f600 \u00e9 \u4e2d\u6587 \u0627\u0644\u0639\u0631\u0628\u064a\u0629", "zwj": "a\u200db"},
    {"lone": "x\ud800y"},
    ["\udfff"],
    {1: "int key"},
    {1.5: "float key"},
    {True: "bool key"},
    {None: "none key"},
    {"a": 1, 2: "mixed keys"},
    {Text("sub"): "str subclass key"},
    Mode.fast,
    {"mode": Mode.fast},
    {"level": Level.high},
    [Number(5)],
    [Ratio(0.5)],
    Table(a=1),
    Items([1, 2]),
    OrderedDict(a=1),
    {"x": [1, 2, (3, 4)]},
    {"huge": "x" * 200_000},
    {"many": list(range(5000))},
    {"floats": [0.5, 1e-7, 3.0]},
    {"nan": [1.0, float("nan")]},
    {"inf": {"x": float("inf")}},
    _nested(150),
    _nested(199),
    _nested(200),
    _nested(201),
    _nested(260),
    [None] * 25,
    (1764770000.5, "s", None, "r", None, "c1", "noop", None, '{"a":1}', "allow", None, "ok", None, 0.25, 0),
    ("\u00e9" * 3, 1e-5, 12.0),
]

UNENCODABLE: list[Any] = [
    {"colour": Colour.red},
    [uuid.UUID(int=7)],
    {"point": Point(1)},
    {"set": {1, 2}},
    {"bytes": b"raw"},
    {"obj": object()},
]


def _standard(value: Any) -> tuple[str, Any]:
    try:
        return "ok", STANDARD.encode(value)
    except (ValueError, TypeError, RecursionError) as err:
        return "error", type(err)


def _fast(value: Any) -> tuple[str, Any]:
    try:
        return "ok", jsontext.compact(value)
    except (ValueError, TypeError, RecursionError) as err:
        return "error", type(err)


@pytest.mark.parametrize("value", VALUES + UNENCODABLE, ids=[f"value{i}" for i in range(len(VALUES + UNENCODABLE))])
def test_compact_writes_what_the_standard_encoder_writes(value: Any) -> None:
    assert _fast(value) == _standard(value)


@pytest.mark.parametrize("value", VALUES, ids=[f"value{i}" for i in range(len(VALUES))])
def test_compact_utf8_is_the_same_text_as_utf8_or_the_same_error(value: Any) -> None:
    expected: Any
    try:
        expected = STANDARD.encode(value).encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as err:
        expected = type(err)
    try:
        got: Any = jsontext.compact_utf8(value)
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as err:
        got = type(err)
    assert got == expected


def test_random_floats_of_every_magnitude_are_written_alike() -> None:
    rng = random.Random(17)
    numbers = [struct.unpack("d", rng.randbytes(8))[0] for _ in range(20_000)]
    numbers += [rng.choice((1, -1)) * 10 ** rng.uniform(-8, 20) for _ in range(20_000)]
    numbers += [math.nextafter(edge, direction) for edge in (1e-4, 1e16) for direction in (0.0, math.inf)]
    for chunk in range(0, len(numbers), 1000):
        row = numbers[chunk : chunk + 1000]
        assert _fast(row) == _standard(row)
        for number in row[:50]:
            assert _fast(number) == _standard(number)


def test_every_character_is_escaped_alike() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert jsontext.compact(text) == STANDARD.encode(text)
    assert jsontext.compact({text[:5000]: text[5000:10000]}) == STANDARD.encode({text[:5000]: text[5000:10000]})


def test_only_plain_values_take_the_fast_path() -> None:
    plain = [{"a": [1, "b", None, True, 0.5]}, (1, 2), "x", 3]
    not_plain = [{"a": Mode.fast}, [1e-5], {1: 2}, [float("nan")], Items(), {"a": Table()}, _nested(201)]
    assert all(jsontext._plain(value) for value in plain)
    assert not any(jsontext._plain(value) for value in not_plain)


def test_a_row_body_is_the_json_array_the_chain_was_always_computed_over() -> None:
    row = (1764770000.123456, "session", None, "req", None, "c1", "noop", None, '{"p":"\\u00e9"}', "allow")
    assert row_body(row) == STANDARD.encode(row).encode("utf-8")
    with pytest.raises(UnicodeEncodeError):
        row_body((1.5, "\ud800"))
    with pytest.raises(ValueError):
        row_body((float("nan"), "x"))


def _row_body_or_error(row: Any) -> Any:
    try:
        return row_body(row)
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as err:
        return type(err)


def _standard_body_or_error(row: Any) -> Any:
    if len(row) == len(COLUMNS) and row[-1] is None:
        row = row[:-1]  # (a row without staged is hashed as rows were before the column)
    try:
        return STANDARD.encode(row).encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as err:
        return type(err)


ROW = (1764770000.123456, "s", "ana", "req", None, "c1", "noop", "1.0", '{"p":1}', "allow", None, "ok", None)
ROW += (0.42, 0, None, None, None, None, "d1e0", None)
ODD_CELLS = [
    None, 0, 1, -1, 2**63, 2**70, True, False, 0.0, -0.0, 1e-4, 9.99e-5, 1e16, 9.99e15, -1.5, 1e-7, 1e20, 123.456,
    float("nan"), float("inf"), -float("inf"), "", "0", "\ud800", "naïve ✓", '"\\', Text("t"), Number(3), Ratio(0.5),
    Mode.fast, Level.high, [1, "a"], {"k": 1.5}, (1e-7,), b"x", uuid.UUID(int=1),
]  # fmt: skip


@pytest.mark.parametrize("at", range(len(COLUMNS)), ids=list(COLUMNS))
def test_a_row_body_is_the_standard_text_whatever_odd_value_a_column_holds(at: int) -> None:
    # The usual row takes a fast path that checks its two number columns by position:
    # every column, the number columns included, holds every odd value in turn.
    for cell in ODD_CELLS:
        row = (*ROW[:at], cell, *ROW[at + 1 :])
        assert _row_body_or_error(row) == _standard_body_or_error(row), (COLUMNS[at], cell)
        assert _row_body_or_error(list(row)) == _standard_body_or_error(row), (COLUMNS[at], cell)
        assert _row_body_or_error(row[:-1]) == _standard_body_or_error(row[:-1]), (COLUMNS[at], cell)


def test_rows_of_other_lengths_and_random_number_columns_are_written_alike() -> None:
    for size in range(len(ROW) + 2):
        row = (ROW + ("extra",))[:size]
        assert _row_body_or_error(row) == _standard_body_or_error(row)
    rng = random.Random(5)
    for _ in range(5000):
        ts = struct.unpack("d", rng.randbytes(8))[0] if rng.random() < 0.5 else 10 ** rng.uniform(-6, 18)
        duration = rng.choice((None, rng.uniform(-1, 1) * 10 ** rng.uniform(-8, 18)))
        row = (ts, *ROW[1:13], duration, *ROW[14:])
        assert _row_body_or_error(row) == _standard_body_or_error(row)
