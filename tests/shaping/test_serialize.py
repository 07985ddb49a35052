"""serialize(): every handler value becomes text (and JSON data when structured); it never raises."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import json
import threading
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.shaping.serialize import Serialized, serialize


def test_str_is_returned_as_is() -> None:
    assert serialize("hello\nworld") == Serialized("hello\nworld", None)


def test_none_becomes_empty_text() -> None:
    assert serialize(None) == Serialized("", None)


def test_lone_surrogates_in_str_become_replacement_characters_of_the_same_length() -> None:
    result = serialize("a\ud800b")
    assert result.text == "a\ufffdb"
    result.text.encode("utf-8")  # sendable


def test_utf8_bytes_become_text() -> None:
    assert serialize("héllo 你好".encode()).text == "héllo 你好"


def test_undecodable_bytes_become_a_one_line_description_never_raw_bytes() -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 5
    result = serialize(data)
    assert result.text == f"<binary output: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}>"
    assert "\n" not in result.text
    assert result.structured is None
    assert result.notes


def test_bytes_with_a_nul_byte_are_described_as_binary() -> None:
    assert serialize(b"abc\x00def").text.startswith("<binary output: 7 bytes, sha256 ")


def test_bytearray_and_memoryview_are_treated_like_bytes() -> None:
    assert serialize(bytearray(b"abc")).text == "abc"
    assert serialize(memoryview(b"abc")).text == "abc"


def test_dict_becomes_json_text_and_structured_data() -> None:
    result = serialize({"name": "café", "n": 3, "ok": True, "none": None})
    assert json.loads(result.text) == {"name": "café", "n": 3, "ok": True, "none": None}
    assert "café" in result.text  # ensure_ascii=False: no \u00e9 escapes
    assert result.structured == {"name": "café", "n": 3, "ok": True, "none": None}


def test_lists_tuples_and_sets_become_json_arrays() -> None:
    assert serialize([1, "a"]).structured == [1, "a"]
    assert serialize((1, 2)).structured == [1, 2]
    assert serialize({3, 1, 2}).structured == [1, 2, 3]  # sorted: the same set gives the same text


@pytest.mark.parametrize(("value", "text"), [(3, "3"), (2.5, "2.5"), (True, "true"), (False, "false")])
def test_scalars_become_json(value: Any, text: str) -> None:
    result = serialize(value)
    assert result.text == text
    assert result.structured == value


def test_short_json_stays_on_one_line_and_long_json_is_indented_one_value_per_line() -> None:
    assert "\n" not in serialize({"a": 1}).text
    big = serialize([{"id": i, "name": f"item {i}"} for i in range(100)])
    assert big.text.count("\n") > 100
    assert json.loads(big.text) == big.structured


def test_nan_and_infinity_become_strings_and_a_note_says_so() -> None:
    result = serialize({"a": float("nan"), "b": float("inf"), "c": [float("-inf")], "d": 1.5})
    assert json.loads(result.text) == {"a": "NaN", "b": "Infinity", "c": ["-Infinity"], "d": 1.5}
    assert "NaN" in result.text and "nan" not in result.text.replace("NaN", "")
    assert any("non-finite" in note for note in result.notes)


def test_output_is_always_strict_json() -> None:
    result = serialize([float("nan"), Decimal("NaN"), Decimal("-Infinity")])
    json.loads(result.text, parse_constant=lambda name: pytest.fail(f"invalid JSON constant {name}"))


def test_pydantic_models_are_dumped_in_json_mode() -> None:
    class Item(BaseModel):
        id: uuid.UUID
        when: dt.datetime
        tags: set[str]

    item = Item(id=uuid.UUID(int=1), when=dt.datetime(2024, 5, 1, 12, 0), tags={"x"})
    result = serialize(item)
    assert result.structured == {
        "id": "00000000-0000-0000-0000-000000000001",
        "when": "2024-05-01T12:00:00",
        "tags": ["x"],
    }
    assert json.loads(result.text) == result.structured


def test_dataclasses_become_objects_even_with_fields_that_cannot_be_copied() -> None:
    @dataclasses.dataclass
    class Job:
        name: str
        lock: Any
        children: list[Any]

    result = serialize(Job("build", threading.Lock(), [Job("test", None, [])]))
    assert result.structured["name"] == "build"
    assert isinstance(result.structured["lock"], str)  # described, not crashed
    assert result.structured["children"] == [{"name": "test", "lock": None, "children": []}]


def test_nested_special_values_become_json_types() -> None:
    class Color(enum.Enum):
        red = "r"

    value = {
        "when": dt.date(2024, 1, 2),
        "took": dt.timedelta(seconds=1.5),
        "price": Decimal("10.10"),
        "path": Path("/tmp/x"),
        "color": Color.red,
        "blob": b"\xff\xfe",
        "text": b"ok",
        1: "int key",
        None: "none key",
        (1, 2): "tuple key",
    }
    data = serialize(value).structured
    assert data["when"] == "2024-01-02"
    assert data["took"] == 1.5
    assert data["price"] == "10.10"  # every digit kept
    assert data["path"] == "/tmp/x"
    assert data["color"] == "r"
    assert data["blob"].startswith("<binary output: 2 bytes")
    assert data["text"] == "ok"
    assert data["1"] == "int key"
    assert data["null"] == "none key"
    assert data["(1, 2)"] == "tuple key"


def test_a_value_that_contains_itself_is_cut_at_the_cycle() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    result = serialize(loop)
    assert result.structured == [1, "<cycle>"]
    assert any("contains itself" in note for note in result.notes)


def test_the_same_object_twice_is_not_a_cycle() -> None:
    shared = {"a": 1}
    assert serialize([shared, shared]).structured == [{"a": 1}, {"a": 1}]


def test_very_deep_nesting_is_cut_instead_of_overflowing_the_stack() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    result = serialize(deep)
    json.loads(result.text)
    assert any("nested deeper" in note for note in result.notes)


def test_other_objects_use_str() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert serialize(Thing()) == Serialized("a thing", None)


def test_an_object_whose_str_raises_gets_a_description() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    result = serialize(Broken())
    assert result.text == (
        "<unprintable test_an_object_whose_str_raises_gets_a_description.<locals>.Broken object: RuntimeError "
        "while converting it to text>"
    )


def test_a_broken_element_inside_a_list_does_not_lose_the_rest() -> None:
    class Broken:
        def __str__(self) -> str:
            raise ValueError("no")

    result = serialize([1, Broken(), 3])
    assert result.structured[0] == 1 and result.structured[2] == 3
    assert result.structured[1].startswith("<unprintable")


def test_a_model_whose_dump_raises_does_not_raise() -> None:
    class Bad(BaseModel):
        def model_dump(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            raise RuntimeError("nope")

    result = serialize(Bad())
    assert result.text.startswith("<unprintable")
