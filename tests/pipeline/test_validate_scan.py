"""Stage 03's one walk over the arguments says (too deep, an integer beyond 64 bits, plain
JSON data). Its "plain" is what lets the CEL closures skip their own walk of ``args``, so
it must never say plain where the closures' own check would not; and the business rules
and policy conditions read the same values either way."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.pipeline.validate import scan, scan_arguments
from runtime.policy.celops import plain


class Text(str):
    """A str subclass: not plain (the closures test exact types)."""


class Number(int):
    pass


def _reference(value: Any, limit: int, depth: int = 1) -> tuple[bool, bool]:
    """(too deep, huge) by plain recursion, as the stage defines them."""
    if isinstance(value, bool):
        return False, False
    if isinstance(value, int):
        return False, type(value) is int and not -(2**63) <= value <= 2**63 - 1
    children: list[Any]
    if isinstance(value, dict | MappingProxyType | OrderedDict):
        children = list(value.values())
    elif type(value) in (list, tuple):
        children = list(value)
    else:
        return False, False
    if depth > limit and depth > 1:
        return True, False
    deep = huge = False
    for child in children:
        d, h = _reference(child, limit, depth + 1)
        deep, huge = deep or d, huge or h
    return deep, huge


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.text(max_size=3).map(Text),
    st.integers(0, 9).map(Number),
    st.binary(max_size=3),
)
keys = st.one_of(st.text(max_size=4), st.text(max_size=2).map(Text), st.integers(0, 3))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(MappingProxyType),
    ),
    max_leaves=25,
)
arguments = st.one_of(
    st.dictionaries(keys, values, max_size=6),
    st.dictionaries(st.text(max_size=4), values, max_size=6).map(OrderedDict),
)


# Drawing nested arguments costs far more than scanning them, so each drawn value is
# scanned at every depth limit: 300 and 200 values make 1,200 and 800 (value, limit)
# cases, where 600 and 400 values with one drawn limit made 600 and 400.
LIMITS = (1, 2, 3, 64)


@settings(max_examples=300, deadline=None)
@given(arguments)
def test_plain_is_said_only_of_what_the_closures_find_plain(args: Any) -> None:
    for limit in LIMITS:
        too_deep, huge, is_plain = scan(args, limit)
        assert scan_arguments(args, limit) == (too_deep, huge)
        if not too_deep:
            assert is_plain == (type(args) is dict and plain(args)), args
        else:
            assert not is_plain


@settings(max_examples=200, deadline=None)
@given(arguments)
def test_depth_and_size_verdicts_are_those_of_a_plain_recursion(args: Any) -> None:
    for limit in LIMITS:
        too_deep, huge, _ = scan(args, limit)
        deep_ref, huge_ref = _reference(args, limit)
        assert too_deep == deep_ref
        if not too_deep:
            assert huge == huge_ref


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "a", "n": 1, "f": 1.5, "b": True, "z": None, "tags": ["a"], "m": {"k": [1, {"x": "y"}]}}, True),
        ({"path": Text("a")}, False),
        ({"n": Number(3)}, False),
        ({"t": ("a",)}, False),
        ({"m": {1: "a"}}, False),
        ({1: "a"}, False),
        ({"m": MappingProxyType({"a": 1})}, False),
        ({"deep": [[["x", Text("y")]]]}, False),
        ({"b": b"bytes"}, False),
        ({"n": 2**63}, False),  # beyond 64 bits: refused by the stage anyway
        ({"n": -(2**63)}, True),
        ({}, True),
    ],
)
def test_plain_examples(args: Any, expected: bool) -> None:
    assert scan(args, 64)[2] is expected
