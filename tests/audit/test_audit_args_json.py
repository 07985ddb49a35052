"""The audit log's one-encoding path for arguments (argsjson.clean_json).

The arguments are encoded once, and that text is stored when it proves there is
nothing to redact. Whatever the arguments hold, a text it returns must be exactly what
the careful path (each string redacted on its own, then encoded) stores; it may only
decline (return None) more often than needed, never store a secret.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict
from enum import Enum, IntEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import load_snapshot
from runtime.audit import AuditRecord
from runtime.audit.argsjson import clean_json, encode_args, plain
from runtime.audit.jsontext import compact
from runtime.regex import compile_re2
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledPattern, CompiledRedaction

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shaping"))
from redaction_corpus import negatives, positives  # noqa: E402

SHIPPED = load_snapshot([Path(__file__).resolve().parents[2] / "policies"]).redactor
TOKEN = "ghp_" + "a1B2" * 9


def careful(args: Any, redactor: Redactor) -> str | None:
    """What redacting each string on its own stores."""
    return encode_args(redactor.redact_value(plain(args, 0))[0])


def stored(args: Any, redactor: Redactor) -> str | None:
    """What an audit record with ``args`` and ``redactor`` stores."""
    record = AuditRecord(1.5, args=args)
    record.redactor = redactor
    return record.to_row()[8]


def assert_sound(args: Any, redactor: Redactor) -> str | None:
    text = clean_json(args, redactor)
    expected = careful(args, redactor)
    if text is not None:
        assert text == expected, args
    assert stored(args, redactor) == expected, args
    return text


def shapes(text: str) -> list[Any]:
    return [
        {"command": text},
        {"path": "src/app.py", "limit": 10, "note": text, "dry_run": False},
        {"tags": ["a", text, "b"]},
        {"outer": {"inner": {"deep": (text, 1.5, None)}}},
        {"list": [{"k": text}], "n": 3},
        {text[:60]: "value"},
        {"a": text[: len(text) // 2], "b": text[len(text) // 2 :]},  # cut over two strings
    ]


def _corpus() -> list[str]:
    texts = [text for text, _secret in positives()]
    return texts[:: max(1, len(texts) // 300)] + negatives()[::2]


@pytest.mark.parametrize("text", _corpus())
def test_one_encoding_stores_what_redacting_each_string_stores(text: str) -> None:
    for args in shapes(text):
        assert_sound(args, SHIPPED)


@pytest.mark.parametrize(("text", "secret"), positives()[::7])
def test_no_secret_of_the_corpus_is_stored_in_clear(text: str, secret: str) -> None:
    for args in shapes(text)[:5]:
        if clean_json(args, SHIPPED) is not None:
            assert secret not in json.loads(clean_json(args, SHIPPED) or "null").__repr__(), args


class Mode(str, Enum):
    FAST = "fast"


class Level(IntEnum):
    HIGH = 3


class Loud(str):
    def __str__(self) -> str:
        return "LOUD"


class Shuffled(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def]
        return reversed(list(super().items()))


HOSTILE: list[Any] = [
    {"password": "hunter2"},
    {"Password": "x", "path": "a"},
    {"cfg": {"db": {"API_KEY": "plain"}}},
    {"items": [{"token": 12345678}]},
    {"note": 'he said "' + TOKEN + '"'},  # quotes escaped: declined
    {"note": "line\n" + TOKEN},  # newline escaped: declined
    {"note": "back\\slash " + TOKEN},
    {"k": TOKEN},
    {TOKEN: 1},
    {"a": "AKIA", "b": "IOSFODNN7EXAMPLE"},
    {"nested": [[[[TOKEN]]]]},
    {1: TOKEN},
    {True: TOKEN, None: "x", 1.5: "y"},
    {"mode": Mode.FAST, "level": Level.HIGH},
    {"s": Loud(TOKEN)},
    {"s": Loud("clean")},
    Shuffled({"a": "clean", "b": TOKEN}),
    OrderedDict([("a", TOKEN)]),
    MappingProxyType({"token": "abc"}),
    {"bytes": TOKEN.encode()},
    {"nan": float("nan")},
    {"inf": float("-inf")},
    {"big": 2**80},
    {"surrogate": "\ud800" + TOKEN},
    {"long": "x" * 9000 + TOKEN},
    {"long": "x" * 9000},
    {"set": {TOKEN}},
    {"tuple": (TOKEN,)},
    {"empty": {}, "list": [], "s": ""},
    {"mail": "maria.lopez@example.org"},
    {"key:with:colons": TOKEN},
    {"value": "password"},  # a value that looks like a secret key name
    {"url": "redis://:hunter2@db:6379/0"},
    {"ctrl": "\x7f" + TOKEN},
    {"unicode": "café ☕ " + TOKEN},
    {"sep": "\u2028" + TOKEN},
    [TOKEN, "x"],
    TOKEN,
]


@pytest.mark.parametrize("args", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_arguments_are_stored_as_the_careful_path_stores_them(args: Any) -> None:
    assert_sound(args, SHIPPED)
    text = stored(args, SHIPPED) or ""
    for clear in ("hunter2", "12345678", "a1B2a1B2", "maria.lopez"):
        if clear in repr(args) and not isinstance(args, str):
            assert clear not in text, text


def test_a_cycle_is_declined_not_raised() -> None:
    args: dict[str, Any] = {"a": TOKEN}
    args["self"] = args
    assert clean_json(args, SHIPPED) is None
    assert "a1B2a1B2" not in (stored(args, SHIPPED) or "")


def test_clean_arguments_are_stored_from_one_encoding() -> None:
    args = {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False}
    assert clean_json(args, SHIPPED) == json.dumps(args, separators=(",", ":"))


def test_the_compact_encoder_writes_what_the_standard_encoder_writes() -> None:
    standard = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for value in [*HOSTILE[:20], (1.5, None, "é", 0.1 + 0.2, 1e16, -0.0, 2**70), [], "", 1796279260.9186234]:
        try:
            expected = standard.encode(value)
        except (TypeError, ValueError):
            with pytest.raises((TypeError, ValueError)):
                compact(value)
            continue
        assert compact(value) == expected


def _redactor(*sources: str, secret_keys: str | None = None) -> Redactor:
    patterns = tuple(CompiledPattern(f"p{i}", compile_re2(source), "[X]", None) for i, source in enumerate(sources))
    return Redactor((CompiledRedaction("custom", patterns, None, secret_keys),))


@pytest.mark.parametrize(
    ("sources", "value"),
    [
        ((r"^\d{6}$",), "123456"),
        ((r"(?m)^\d{6}$",), "123456"),
        ((r"(?m)^\d{6}$",), "x123456"),
        ((r"\bpin\d{4}\b",), "pin1234"),
        ((r'[^"]pin\d{4}',), "pin1234"),  # the quote JSON puts around a string is no context
        ((r"pin\d{4}[^,]",), "pin1234"),
        ((r"(?i)(?m)^secret=\S+$",), "SECRET=abc"),
        ((r"\d{6}\z",), "x 123456"),
    ],
)
def test_patterns_see_each_string_as_it_stands_alone(sources: tuple[str, ...], value: str) -> None:
    redactor = _redactor(*sources)
    for args in ({"code": value}, {"a": "zz", "code": [value], "b": "zz"}, {value: 1}):
        assert_sound(args, redactor)


def test_secret_keys_of_a_custom_profile_decline_the_one_encoding() -> None:
    redactor = _redactor(r"zzzz", secret_keys=r"pin|card_?number")
    assert clean_json({"PIN": "1234"}, redactor) is None
    assert clean_json({"outer": [{"card_number": 4111}]}, redactor) is None
    assert clean_json({"note": "pin"}, redactor) is not None  # a value, not a key
    assert_sound({"Card_Number": "4111 1111 1111 1111"}, redactor)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
PIECES = st.sampled_from(
    [TOKEN, "AKIA", "IOSFODNN7EXAMPLE", "password", "api_key", "maria.lopez@example.org", '"', "\\", "\n", ":", ","]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSONISH, st.lists(PIECES, max_size=3), st.text(max_size=8))
def test_random_arguments_with_secret_pieces_are_stored_as_the_careful_path_stores_them(
    base: Any, pieces: list[str], key: str
) -> None:
    args = {key or "k": base, "extra": "".join(pieces), "".join(pieces) or "p": [base, *pieces]}
    assert_sound(args, SHIPPED)
