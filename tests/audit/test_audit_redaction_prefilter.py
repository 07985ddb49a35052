"""The audit log's cheap path for arguments: every string gathered and scanned once.

Whatever the arguments hold, what is stored must be exactly what redacting each
string on its own stores: the secrets corpus in every shape of arguments, secrets
split over several strings, secret keys, read-only mappings, and patterns anchored to
a string's edges or its lines.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from runtime import load_snapshot
from runtime.audit.argsjson import encode_args
from runtime.audit.argsjson import plain as _plain
from runtime.audit.argsjson import redacted as _redacted
from runtime.regex import compile_re2
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledPattern, CompiledRedaction

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shaping"))
from redaction_corpus import negatives, positives  # noqa: E402

SHIPPED = load_snapshot([Path(__file__).resolve().parents[2] / "policies"]).redactor


def careful(args: Any, redactor: Redactor) -> str | None:
    """What redacting each string on its own stores."""
    return encode_args(redactor.redact_value(_plain(args, 0))[0])


def shapes(text: str) -> list[Any]:
    """``text`` in the places arguments can hold it."""
    return [
        {"command": text},
        {"path": "src/app.py", "limit": 10, "note": text, "dry_run": False},
        {"tags": ["a", text, "b"]},
        {"outer": {"inner": {"deep": (text, 1.5, None)}}},
        MappingProxyType({"body": text, "mode": "fast"}),
        {"list": [{"k": text}], "n": 3},
        {text[:60]: "value"},
    ]


def _corpus() -> list[str]:
    texts = [text for text, _secret in positives()]
    return texts[:: max(1, len(texts) // 300)] + negatives()[::2]


@pytest.mark.parametrize("text", _corpus())
def test_the_cheap_path_stores_what_redacting_each_string_stores(text: str) -> None:
    for args in shapes(text):
        assert encode_args(_redacted(args, SHIPPED)) == careful(args, SHIPPED), args


@pytest.mark.parametrize(
    "args",
    [
        {"password": "hunter2"},
        {"cfg": {"db": {"Password": "hunter2"}}},
        {"items": [{"api_key": 12345678}]},
        MappingProxyType({"token": "abc", "path": "x"}),
        {"headers": MappingProxyType({"Authorization": "Bearer abcdef"})},
        {"a": "AKIA", "b": "IOSFODNN7EXAMPLE"},  # a key split over two strings: each alone is clean
        {"text": "mail maria.lopez@example.org today"},
        {"nested": [[[["ghp_" + "a1B2" * 9]]]]},
        {1: "ghp_" + "a1B2" * 9},
        {"bytes": b"ghp_" + b"a1B2" * 9},
    ],
)
def test_secret_keys_and_unusual_values_are_redacted_as_the_careful_path_does(args: Any) -> None:
    stored = encode_args(_redacted(args, SHIPPED))
    assert stored == careful(args, SHIPPED)
    for clear in ("hunter2", "12345678", "abcdef", "maria.lopez", "a1B2a1B2"):
        if clear in str(args):
            assert clear not in (stored or ""), stored


def _redactor(*sources: str) -> Redactor:
    patterns = tuple(CompiledPattern(f"p{i}", compile_re2(source), "[X]", None) for i, source in enumerate(sources))
    return Redactor((CompiledRedaction("custom", patterns, None),))


@pytest.mark.parametrize(
    ("source", "value", "hidden"),
    [
        (r"^\d{6}$", "123456", True),
        (r"\A\d{6}", "123456 rest", True),
        (r"\d{6}\z", "rest 123456", True),
        (r"(?m)^\d{6}$", "123456", True),
        (r"(?m)^\d{6}$", "line\n123456\nline", True),
        (r"(?m)^\d{6}$", "x123456", False),
        (r"\bpin\d{4}\b", "pin1234", True),
        (r"\bpin\d{4}\b", "xpin1234", False),
        (r"(?i)(?m)^secret=\S+$", "SECRET=abc", True),
        (r"(?m)(?-m:^)\d{6}", "123456", True),
    ],
)
def test_patterns_anchored_to_a_strings_edges_or_lines_see_each_string(source: str, value: str, hidden: bool) -> None:
    redactor = _redactor(source)
    for args in ({"code": value}, {"a": "zz", "code": [value], "b": "zz"}, {"k": {"code": value}}):
        stored = encode_args(_redacted(args, redactor))
        assert stored == careful(args, redactor)
        assert ("[X]" in (stored or "")) is hidden, (source, args, stored)


def test_edge_anchors_are_told_from_line_anchors() -> None:
    assert _redactor(r"^\d{6}$").edge_anchored
    assert _redactor(r"\Aabc").edge_anchored
    assert _redactor(r"(?m)^a", r"b\z").edge_anchored
    assert _redactor(r"(?m)(?-m:^a)").edge_anchored
    assert not _redactor(r"(?m)^\d{6}$").edge_anchored
    assert not _redactor(r"(?i)(?m)^a$").edge_anchored
    assert not _redactor(r"[^a]b\b").edge_anchored
    assert not SHIPPED.edge_anchored  # the shipped packs take the cheap path


def test_clean_arguments_are_kept_as_they_are() -> None:
    args = {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False}
    assert _redacted(args, SHIPPED) is args


def test_arguments_nested_deeper_than_the_limit_take_the_careful_path() -> None:
    args: Any = "ghp_" + "a1B2" * 9
    for _ in range(60):
        args = {"d": args}
    assert "a1B2a1B2" not in (encode_args(_redacted(args, SHIPPED)) or "")
