"""Config regexes: RE2 syntax, linear-time matching, catastrophic shapes rejected at load time."""

from __future__ import annotations

import warnings

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.regex import RegexRejected, check_pattern, compile_re2, re2_tester

ACCEPTED = [
    "abc",
    "^[a-z]+$",
    "(ab+)+",  # the literal `a` starts every iteration: not ambiguous
    "(ab)*",
    "(a|b)*",
    "(a?)+",
    "(a+){2,5}",  # bounded outer repeat
    "(\\s*,\\s*)*",  # the required comma separates iterations
    "(?P<name>a)",
    "(?i)abc",
    "\\pL+",
    "\\Qa+\\E",
    "^T-\\d{1,10}$",
    "(^|/)\\.env(\\.[^/]*)?$",
    "a" * 4000,
]


@pytest.mark.parametrize("pattern", ACCEPTED, ids=lambda p: p[:30])
def test_accepted_patterns(pattern: str) -> None:
    check_pattern(pattern)
    assert compile_re2(pattern) is not None


REJECTED = [
    ("(a+)+", "regex-catastrophic"),
    ("(.*)*", "regex-catastrophic"),
    ("(\\w+\\s?)*", "regex-catastrophic"),
    ("(x+x+)+y", "regex-catastrophic"),
    ("(a*)*b", "regex-catastrophic"),
    ("(?:a+)+", "regex-catastrophic"),
    ("((a+))+", "regex-catastrophic"),
    ("(a+b?)+", "regex-catastrophic"),
    ("(a*b*)*", "regex-catastrophic"),
    ("(a+){2,}", "regex-catastrophic"),
    ("x(?:y+z*)+", "regex-catastrophic"),
    ("(\\d+)*$", "regex-catastrophic"),
    ("(?=x)", "regex-unsupported"),
    ("(?!x)", "regex-unsupported"),
    ("(?<=x)", "regex-unsupported"),
    ("(?<!x)", "regex-unsupported"),
    ("(?>x)", "regex-unsupported"),
    ("(a)\\1", "regex-unsupported"),
    ("a++", "regex-unsupported"),
    ("a*+", "regex-unsupported"),
    ("(", "regex-invalid"),
    ("[a-", "regex-invalid"),
    ("a{2,1}", "regex-invalid"),
    ("*a", "regex-invalid"),
    ("a" * 4001, "regex-too-long"),
]


@pytest.mark.parametrize(("pattern", "code"), REJECTED, ids=lambda p: str(p)[:30])
def test_rejected_patterns(pattern: str, code: str) -> None:
    with pytest.raises(RegexRejected) as caught:
        check_pattern(pattern)
    assert caught.value.code == code
    assert caught.value.message == str(caught.value)
    with pytest.raises(RegexRejected):
        compile_re2(pattern)


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("(?=x)", "look-ahead"),
        ("(?!x)", "negative look-ahead"),
        ("(?<=x)", "look-behind"),
        ("(?<!x)", "negative look-behind"),
        ("(?>x)", "atomic groups"),
        ("(a)\\1", "back-references"),
        ("a++", "possessive"),
        ("(", "missing )"),
        ("(a+)+", "`(a+)+` -> `a+`"),
        ("a" * 4001, "4001 characters; the limit is 4000"),
    ],
)
def test_rejection_messages_say_what_is_wrong(pattern: str, words: str) -> None:
    with pytest.raises(RegexRejected) as caught:
        check_pattern(pattern)
    assert words in caught.value.message


@pytest.mark.parametrize("pattern", ["(a+|b)+", "(?:a|b+)*"])
def test_nested_unbounded_quantifier_inside_an_alternation_is_catastrophic(pattern: str) -> None:
    with pytest.raises(RegexRejected) as caught:
        check_pattern(pattern)
    assert caught.value.code == "regex-catastrophic"


def test_case_insensitive_compile() -> None:
    insensitive = compile_re2("hello", case_insensitive=True)
    assert insensitive.search("SAY HELLO") is not None
    assert compile_re2("hello").search("SAY HELLO") is None
    assert compile_re2("hello").search("say hello") is not None


def test_compiled_patterns_are_cached_per_case_mode() -> None:
    assert compile_re2("abc") is compile_re2("abc")
    assert compile_re2("abc") is not compile_re2("abc", case_insensitive=True)


def test_re2_semantics() -> None:
    assert compile_re2("^x$").search("x\n") is None  # $ is the end of text
    assert compile_re2("^\\d$").search("\u0663") is None  # \d is ASCII
    assert compile_re2("\\pL").search("é") is not None


def test_a_linear_pattern_on_a_long_input_returns() -> None:
    assert compile_re2("a*a*a*b").search("a" * 100_000) is None
    assert compile_re2("a*a*a*b").search("a" * 100_000 + "b") is not None


def test_re2_itself_runs_a_catastrophic_shape_in_linear_time() -> None:
    # rejected by the linter for portability, but RE2 would not hang on it either
    with pytest.raises(RegexRejected):
        compile_re2("(x+x+)+y")
    options = re2.Options()
    options.log_errors = False
    assert re2.compile("(x+x+)+y", options).search("x" * 50_000) is None


def test_checking_a_posix_class_emits_no_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_pattern("[[:alpha:]]+")
    assert [str(w.message) for w in caught] == []


TESTER_PATTERNS = [
    "abc",
    "^a.*z$",
    r"(?i)(?:(^|/)\.(git|ssh|env(\.[^/]*)?|netrc|pgpass)(/|$))|(?:\.(pem|key|p12|pfx)(/|$))",
    r"\d{3}-\d{4}",
    "é+",
    "",
    r"\bword\b",
]


@pytest.mark.parametrize("pattern", TESTER_PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("abcz/.-_é0123456789 ENVgitsh\n")), max_size=30))
def test_the_yes_no_tester_agrees_with_re2_search(pattern: str, text: str) -> None:
    assert re2_tester(pattern)(text) is (re2.compile(pattern).search(text) is not None)


def test_the_tester_refuses_a_pattern_re2_refuses_without_writing_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(re2.error):
        re2_tester("(?=look-ahead)")
    assert capfd.readouterr().err == ""
