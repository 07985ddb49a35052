"""The plain decoding path (runtime.adapters.arguments._plain_object) gives exactly what
the full decoder and walk give, for hostile arguments as for the usual ones."""

from __future__ import annotations

import pytest

from runtime.adapters import arguments
from runtime.adapters.arguments import decode_noting_nulls

CASES = [
    '{"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": false}',
    '{"a": 1, "a": 2}',
    '{"a": "x:y", "a": 1}',
    '{"a": "x:y", "b": 1}',
    '{"a": 1, "b": {"a": 1, "a": 2}}',
    '{"a": {"b": 1}}',
    '{"a": [{"b": 1, "b": 2}]}',
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": 1e999}',
    '{"a": -1e999}',
    '{"a": 1.5, "b": -0.0, "c": 2E10}',
    '{"a": ' + "9" * 5000 + "}",
    '{"a": ' + "9" * 30 + "}",
    '{"a": "\\ud800"}',
    '{"\\ud800": 1}',
    '{"a": "\\u00e9"}',
    '{"a": "é"}',
    '{"a": "\\n\\t\\"\\\\"}',
    '{"a": null}',
    '{"a": "null"}',
    '{"null": "None"}',
    '{"a": [null]}',
    '{"a": [[null]]}',
    '{"a": [[1]]}',
    '{"a": [1, "null", true]}',
    "[1, 2]",
    '"text"',
    "42",
    "null",
    '{"a": 1,}',
    '{"a" 1}',
    '{"a": 1} {"b": 2}',
    '{"a": 1}   ',
    '  {"a": 1}',
    '{"a": "{"}',
    '{"a": "}", "b": ":"}',
    '{"a": "\x00", "b": "raw\nnewline"}',
    '{"a": ' + "[" * 70 + "]" * 70 + "}",
    '{"a": ' + "[" * 10 + "]" * 10 + "}",
    '{"\\"": 1}',
    "{}",
    '{"": ""}',
]


def _full(raw: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object, object]:
    with monkeypatch.context() as patch:
        patch.setattr(arguments, "_plain_object", lambda _raw: None)
        return decode_noting_nulls(raw)


@pytest.mark.parametrize("raw", CASES)
def test_the_plain_path_agrees_with_the_full_decoder(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    args, problem, maybe_null = decode_noting_nulls(raw)
    full_args, full_problem, full_null = _full(raw, monkeypatch)
    assert (args, problem) == (full_args, full_problem)
    if not full_null:
        assert not maybe_null  # nulls are noted exactly where the full walk finds none
    if full_null and args is not None and "null" in raw and "[[" not in raw:
        assert maybe_null


@pytest.mark.parametrize(
    "raw",
    ['{"a": 1, "a": 2}', '{"a": "x:y", "a": 1}', '{"a": "t:1", "b": "u:2", "a": 3}', '{"k": 1, "k": "v"}'],
)
def test_a_repeated_key_is_rejected_whatever_colons_the_strings_hold(raw: str) -> None:
    args, problem, _ = decode_noting_nulls(raw)
    assert args is None and problem is not None and "repeats the key" in problem


def test_the_usual_arguments_take_the_plain_path() -> None:
    raw = '{"path": "src/app.py", "limit": 10, "tags": ["a"], "dry_run": false}'
    assert arguments._plain_object(raw) == {"path": "src/app.py", "limit": 10, "tags": ["a"], "dry_run": False}
