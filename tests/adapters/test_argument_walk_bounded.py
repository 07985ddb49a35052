"""Arguments decoded from a text no longer than the size limit cannot exceed it, so the
walk settles their ASCII strings where it meets them: it still finds exactly the problem
the full walk finds (same message, same pointer) on every decoded text, and the size
claim itself holds (the values never count more than the text's length)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.adapters.arguments import MAX_BYTES, _decoder, _walk

texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["\ud800", "a\udc00b", "é", "\x00", "~/", "x" * 40, "\ud83d\ude00"]),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), texts)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=30,
)


def _size(value: Any) -> int:
    """What the walk counts: characters of strings and keys, one more per key and per container."""
    if type(value) is str:
        return len(value)
    if type(value) is dict:
        return 1 + sum(len(k) + 1 + _size(v) for k, v in value.items())
    if type(value) is list:
        return 1 + sum(_size(v) for v in value)
    return 0


# Drawing a nested value costs far more than walking it, so each drawn value is walked
# at every depth limit and in both encodings: 600 values make 9,600 (value, depth,
# encoding) cases, where 1,500 values with one drawn depth and encoding made 1,500.
@settings(max_examples=600, deadline=None)
@given(st.dictionaries(texts, values, max_size=6))
def test_the_bounded_walk_finds_what_the_full_walk_finds_on_decoded_text(root: dict[str, Any]) -> None:
    for ascii_only in (True, False):
        raw = json.dumps(root, ensure_ascii=ascii_only)
        decoded = _decoder().decode(raw)
        if type(decoded) is not dict:
            return  # a repeated key or a bad number: reported before any walk
        assert _size(decoded) <= len(raw)
        for max_depth in range(1, 9):
            for max_bytes in (len(raw), len(raw) + 10, MAX_BYTES):
                nulls_full: list[Any] = []
                nulls_bounded: list[Any] = []
                full = _walk(decoded, max_bytes=max_bytes, max_depth=max_depth, nulls=nulls_full)
                bounded = _walk(decoded, max_bytes=max_bytes, max_depth=max_depth, nulls=nulls_bounded, bounded=True)
                assert bounded == full
                assert bool(nulls_bounded) == bool(nulls_full)
