"""Simple CEL conditions evaluated in Python must give the engines' verdicts, or none."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.policy.cel import RULE_VARIABLES, Outcome, get_engine
from runtime.policy.celdirect import compile_direct

DIRECT = [
    "has(args.path)",
    "!has(args.path)",
    '!args.path.contains("..")',
    "args.path.startsWith('/etc') || args.path.endsWith('.sh')",
    "has(args.path) && args.path.matches('(?i)(^|/)\\\\.env$')",
    'args.mode == "fast"',
    "args.mode != 'fast'",
    "args.dry_run == true",
    "args.dry_run != false && has(args.mode)",
    "(has(args.path) && !(args.path == 'a\\'b')) || false",
    "args.path.matches(r'\\d+')",
    "true",
    "!false && true",
    "args.path.contains('''x''')",
]

NOT_DIRECT = [
    "size(args.path) > 3",  # functions outside the subset
    "args.a.b == 'x'",  # nested fields
    "args['path'] == 'x'",  # index form
    "!args.flag == false",  # CEL reads this as (!args.flag) == false
    "args.limit == 10",  # numbers: CEL's cross-type equality is the engine's
    "'x' == args.mode",  # literal on the left
    "args.path.matches('x') == true",  # comparison of a call
    "session.id == 'a'",  # other variables
    ".args.path == 'x'",  # root-scoped form
    "args.path == 'a\\x41'",  # escapes beyond the common ones
    "args.path == b'x'",  # bytes
    "args.mode in ['a', 'b']",
    "args.path.startsWith('a') ? true : false",
    "has(args.path",  # broken
    "",
]


@pytest.mark.parametrize("source", DIRECT)
def test_simple_conditions_compile_to_a_direct_check(source: str) -> None:
    assert compile_direct(source) is not None


@pytest.mark.parametrize("source", NOT_DIRECT)
def test_anything_else_is_left_to_the_engine(source: str) -> None:
    assert compile_direct(source) is None


def test_verdicts_on_typical_arguments() -> None:
    check = compile_direct("has(args.path) && args.path.matches('(?i)(^|/)\\\\.env$')")
    assert check is not None
    assert check({"path": "app/.ENV"}) is True
    assert check({"path": "app/env"}) is False
    assert check({}) is False  # has() is false, so && is false whatever follows
    assert check({"path": 7}) is None  # not a string: the engine decides (an error, failing closed)
    negated = compile_direct('!args.path.contains("..")')
    assert negated is not None
    assert negated({"path": "a/../b"}) is False and negated({"path": "a/b"}) is True and negated({}) is None


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "fast", "/etc/passwd", "a/../b", "run.sh", "/tmp/x", "app/.env", "a'b", "x", "123", "É"]),
    st.text(max_size=6),
    st.lists(st.just("x"), max_size=2),
    st.dictionaries(st.just("k"), st.just("v"), max_size=1),
)
ARGS = st.dictionaries(st.sampled_from(["path", "mode", "dry_run"]), VALUES, max_size=3)


@pytest.mark.parametrize("engine_name", ["fast", "portable"])
@pytest.mark.parametrize("source", DIRECT)
@settings(max_examples=60, deadline=None)
@given(args=ARGS)
def test_a_direct_verdict_is_the_engines_verdict(engine_name: str, source: str, args: dict[str, Any]) -> None:
    engine = get_engine(engine_name, translated=False)  # the engine itself, not the closures in front of it
    check = compile_direct(source)
    assert check is not None
    verdict = check(args)
    if verdict is None:
        return  # left to the engine
    outcome = engine.compile(source, RULE_VARIABLES).evaluate(engine.activation({"args": args}, RULE_VARIABLES))
    if engine_name == "fast" and _holds_nul(args):
        # The fast engine cannot read NUL characters: it fails (closed) instead of answering wrongly.
        assert outcome.error is not None and "NUL" in outcome.error
        return
    assert outcome.error is None, f"{source} on {args!r}: direct said {verdict}, the engine failed: {outcome.error}"
    assert outcome.value is verdict, f"{source} on {args!r}: direct said {verdict}, the engine {outcome.value!r}"


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


@pytest.mark.parametrize("value", ["\x00.env", "a\x00b", "x\x00", "\x00"])
def test_the_fast_engine_fails_closed_on_a_nul_character_instead_of_cutting_the_string(value: str) -> None:
    pytest.importorskip("cel_expr_python")
    engine = get_engine("fast", translated=False)
    for source in ('args.path.contains(".env")', "size(args.path) > 0", '!args.path.startsWith("a")'):
        outcome = engine.compile(source, RULE_VARIABLES).evaluate(
            engine.activation({"args": {"path": value}}, RULE_VARIABLES)
        )
        assert outcome.error is not None and "NUL" in outcome.error, (source, outcome)
        # The closures in front of it read the whole string, NUL included: the right answer.
        translated = get_engine("fast")
        exact = translated.compile(source, RULE_VARIABLES).evaluate(
            translated.activation({"args": {"path": value}}, RULE_VARIABLES)
        )
        expected = {
            'args.path.contains(".env")': ".env" in value,
            "size(args.path) > 0": len(value) > 0,
            '!args.path.startsWith("a")': not value.startswith("a"),
        }[source]
        assert exact == Outcome(value=expected), (source, exact)
    nested = engine.activation({"args": {"path": "ok", "meta": {"k": [value]}}}, RULE_VARIABLES)
    assert engine.compile('args.path == "ok"', RULE_VARIABLES).evaluate(nested).error is not None
