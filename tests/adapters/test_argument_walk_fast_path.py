"""The argument walk's exact-type fast path tells the same problem, at the same pointer,
as the general checks it stands in for; strict mode's null stripping keeps its meaning
when there is no null to strip."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.adapters.arguments import _Bad, _bad_message, _non_finite, _pointer, _surrogate, _too_deep, _walk
from runtime.adapters.strict_schema import _strip, strip_strict_nulls


def reference_walk(root: Any, *, max_bytes: int, max_depth: int) -> str | None:
    """The walk as it was before the fast path: every value through the general checks."""
    size = 0
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(root, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            size += len(value)
            if size > max_bytes:
                return (
                    f"arguments are too large: more than {max_bytes:,} characters of text;"
                    " pass large content by reference (a file path) or in smaller pieces"
                )
            problem = _surrogate(value, path, "")
            if problem:
                return problem
            continue
        if value is None or isinstance(value, bool | int):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                return (
                    f"arguments contain {_non_finite(value)} at {_pointer(path)}, which is not a JSON number;"
                    " use a finite number, null or a string"
                )
            continue
        if isinstance(value, _Bad):
            return _bad_message(value, _pointer(path))
        if depth > max_depth:
            return _too_deep(depth, max_depth) + f" (at {_pointer(path)})"
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"the object at {_pointer(path)} has a key that is not a string ({type(key).__name__})"
                size += len(key) + 1
                problem = _surrogate(key, (*path, key), " in a key")
                if problem:
                    return problem
                stack.append((item, depth + 1, (*path, key)))
            size += 1
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1, (*path, i)) for i, item in enumerate(value))
            size += 1
        else:
            return f"arguments contain a {type(value).__name__} at {_pointer(path)}, which is not a JSON value"
        if size > max_bytes:
            return (
                f"arguments are too large: more than {max_bytes:,} characters;"
                " pass large content by reference (a file path) or in smaller pieces"
            )
    return None


class Text(str):
    pass


texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["\ud800", "a\udc00b", "é", "\x00", "~/", "x" * 40]),
    st.builds(Text, st.text(max_size=5)),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
    st.sampled_from([_Bad("constant", "NaN"), _Bad("duplicate", "k"), b"bytes", object(), 1 + 2j]),
)
keys = st.one_of(texts, st.integers(), st.sampled_from([None, ("t",)]))


def containers(children: Any) -> Any:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        st.dictionaries(st.text(max_size=4), children, max_size=3).map(MappingProxyType),
        st.dictionaries(st.text(max_size=4), children, max_size=3).map(OrderedDict),
    )


values = st.recursive(scalars, containers, max_leaves=30)


# Drawing a nested value costs far more than walking it, so each drawn value is walked
# at every depth limit: 600 values make 4,800 (value, depth, size limit) cases, where
# 1,500 values with one drawn depth made 1,500.
@settings(max_examples=600, deadline=None)
@given(st.dictionaries(keys, values, max_size=5), st.integers(20, 400))
def test_the_walk_finds_the_problem_the_general_checks_find(root: dict, max_bytes: int) -> None:
    for max_depth in range(1, 9):
        expected = reference_walk(root, max_bytes=max_bytes, max_depth=max_depth)
        assert _walk(root, max_bytes=max_bytes, max_depth=max_depth) == expected


@pytest.mark.parametrize(
    ("root", "pointer"),
    [
        ({"a": [{"b": "\ud800"}]}, "/a/0/b"),
        ({"a": {"~x/y": [1, "\udc00"]}}, "/a/~0x~1y/1"),
        ({"a": [[[[[[[[[[1]]]]]]]]]]}, "/a/0/0/0/0/0/0/0"),
        ({"a": [float("inf")]}, "/a/0"),
        ({"a": {"b": {1: 2}}}, "/a/b"),
    ],
)
def test_problems_deep_in_the_arguments_name_their_place(root: dict, pointer: str) -> None:
    problem = _walk(root, max_bytes=10_000, max_depth=8)
    assert problem is not None and pointer in problem, problem


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=20,
)
SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "string"},
        "b": {"type": "object", "properties": {"c": {"type": "integer"}}},
        "d": {"type": "array", "items": {"type": "object", "properties": {"e": {"type": "string"}}}},
        "n": {"type": ["string", "null"]},
    },
    "required": ["a"],
}


@settings(max_examples=800, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "d", "n", "x"]), json_values, max_size=5))
def test_stripping_strict_nulls_gives_what_the_full_walk_gives(args: dict) -> None:
    assert strip_strict_nulls(args, SCHEMA) == _strip(args, SCHEMA, SCHEMA, 0)


def test_a_null_for_an_optional_argument_is_still_dropped() -> None:
    assert strip_strict_nulls({"a": "x", "b": None, "d": [{"e": None}], "n": None}, SCHEMA) == {
        "a": "x",
        "d": [{}],
        "n": None,
    }
