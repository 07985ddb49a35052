"""Regexes declared in config: RE2 syntax, linear-time matching, checked at load time.

Every pattern a platform team writes (redaction patterns, ``matches()`` in CEL,
``pattern`` in an input schema) runs on a linear-time engine, so no pattern can hang
the runtime. Patterns are still checked for nested unbounded quantifiers such as
``(a+)+``: they are the classic catastrophic-backtracking form, and a pattern copied
from here into a backtracking engine (Python, JavaScript, a database) would hang there.
"""

from __future__ import annotations

import functools
import re._constants as sre_constants
import re._parser as sre_parse
import warnings
from collections.abc import Callable
from typing import Any

import re2

_MAX_PATTERN_CHARS = 4000

_RE2_HINTS = {
    "invalid perl operator: (?=": "look-ahead `(?=...)` is not supported",
    "invalid perl operator: (?!": "negative look-ahead `(?!...)` is not supported",
    "invalid perl operator: (?<=": "look-behind `(?<=...)` is not supported",
    "invalid perl operator: (?<!": "negative look-behind `(?<!...)` is not supported",
    "invalid perl operator: (?>": "atomic groups `(?>...)` are not supported",
    "bad repetition operator: ++": "possessive quantifiers such as `++` are not supported",
    "invalid named capture group: (?P=": "named back-references `(?P=name)` are not supported",
    "invalid perl operator: (?P=": "named back-references `(?P=name)` are not supported",
    "invalid perl operator: (?P>": "recursion `(?P>name)` is not supported",
    "bad repetition operator: *+": "possessive quantifiers such as `*+` are not supported",
}


class RegexRejected(ValueError):
    """A pattern the linter refuses; ``code`` is the problem code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def compile_re2(pattern: str, *, case_insensitive: bool = False) -> Any:
    """Compile ``pattern`` with RE2, or raise :class:`RegexRejected` saying how to fix it."""
    return _compile_cached(pattern, case_insensitive)


def compile_alternation(source: str) -> Any:
    """Compile the alternation of patterns each already checked by :func:`check_pattern`;
    only the parts are held to the length limit, not their sum. Raises
    :class:`RegexRejected` if RE2 refuses the whole (e.g. too large a program)."""
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(source, options)
    except re2.error as err:
        detail = err.args[0].decode("utf-8", "replace") if err.args and isinstance(err.args[0], bytes) else str(err)
        raise RegexRejected("regex-invalid", f"{detail}. Split the profile into several profiles.") from None


@functools.lru_cache(maxsize=4096)
def _compile_cached(pattern: str, case_insensitive: bool) -> Any:
    check_pattern(pattern)
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise write to the app's stderr
    options.case_sensitive = not case_insensitive
    return re2.compile(pattern, options)


@functools.lru_cache(maxsize=4096)
def re2_tester(pattern: str) -> Callable[[str], bool]:
    """Whether ``pattern`` matches anywhere in a string (RE2, partial match: CEL's
    ``matches``), compiled once. Raises ``re2.error`` for a pattern RE2 refuses.

    Built for a yes/no answer on every call: no capture groups are tracked and no
    match object is made, which takes a third of the time of ``search``. This needs
    the binding's compiled object; without it, ``search`` answers.
    """
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise write to the app's stderr
    options.never_capture = True
    compiled = re2.compile(pattern, options)
    raw = getattr(compiled, "_regexp", None)
    anchor = getattr(getattr(getattr(re2, "_re2", None), "RE2", None), "Anchor", None)
    if raw is None or anchor is None or not hasattr(raw, "Match"):
        search = compiled.search
        return lambda text: search(text) is not None
    match, unanchored = raw.Match, anchor.UNANCHORED

    def test(text: str) -> bool:
        data = text.encode("utf-8")
        return bool(match(unanchored, data, 0, len(data))[0][0] >= 0)

    return test


def check_pattern(pattern: str) -> None:
    """Raise :class:`RegexRejected` unless ``pattern`` is valid, RE2-compatible and not catastrophic."""
    if len(pattern) > _MAX_PATTERN_CHARS:
        raise RegexRejected(
            "regex-too-long",
            f"pattern is {len(pattern)} characters; the limit is {_MAX_PATTERN_CHARS}. Split it into several patterns.",
        )
    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options)
    except re2.error as err:
        detail = err.args[0].decode("utf-8", "replace") if err.args and isinstance(err.args[0], bytes) else str(err)
        for needle, hint in _RE2_HINTS.items():
            if detail.startswith(needle):
                raise RegexRejected(
                    "regex-unsupported",
                    f"{hint} in RE2 syntax (linear-time matching). Rewrite the pattern without it, e.g. match the "
                    "context and use a capture group.",
                ) from None
        if "(?P=" in pattern and detail.startswith("invalid perl operator: (?P"):
            raise RegexRejected(
                "regex-unsupported",
                "named back-references `(?P=name)` are not supported in RE2 syntax (linear-time matching). Rewrite "
                "the pattern without them.",
            ) from None
        if detail.startswith("invalid escape sequence: \\") and detail[-1:].isdigit():
            raise RegexRejected(
                "regex-unsupported",
                "back-references such as `\\1` are not supported in RE2 syntax (linear-time matching). Rewrite the "
                "pattern without them.",
            ) from None
        raise RegexRejected(
            "regex-invalid", f"invalid regular expression: {detail}. Fix the pattern (RE2 syntax)."
        ) from None
    nested = _nested_unbounded_quantifier(pattern)
    if nested:
        raise RegexRejected(
            "regex-catastrophic",
            f"nested unbounded quantifier `{nested}`: this form backtracks catastrophically in backtracking engines. "
            "Rewrite it without a repeated group that itself repeats, e.g. `(a+)+` -> `a+`.",
        )


def _nested_unbounded_quantifier(pattern: str) -> str | None:
    """The first ``(x+)+``-style construct in ``pattern``, or None.

    Flags an unbounded repeat whose body is an unbounded repeat plus only optional
    pieces (``(a+)+``, ``(.*)*``, ``(\\w+\\s?)*``): the ambiguous shape. ``(ab+)+`` is
    not flagged, because the literal ``a`` starts every iteration. Best effort:
    patterns Python's parser cannot read (RE2-only syntax) are not analysed.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. FutureWarning for POSIX classes such as [[:alpha:]]
            parsed = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - RE2 accepted it; Python's parser is only a helper here
        return None
    return "(...+)+" if _has_nested(list(parsed)) else None


_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)


def _children(op: Any, arg: Any) -> list[list[Any]]:
    if op in _REPEATS:
        return [list(arg[2])]
    if op == sre_constants.SUBPATTERN:
        return [list(arg[-1])]
    if op == sre_constants.BRANCH:
        return [list(branch) for branch in arg[1]]
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [list(arg[1])]
    return []


def _has_nested(items: list[Any]) -> bool:
    for op, arg in items:
        if op in _REPEATS and arg[1] == sre_constants.MAXREPEAT and _body_is_ambiguous(list(arg[2])):
            return True
        if any(_has_nested(child) for child in _children(op, arg)):
            return True
    return False


def _body_is_ambiguous(body: list[Any]) -> bool:
    while len(body) == 1 and body[0][0] == sre_constants.SUBPATTERN:
        body = list(body[0][1][-1])
    if len(body) == 1 and body[0][0] == sre_constants.BRANCH:
        # (a+|b)+ : one alternative is itself ambiguous under the outer repeat
        return any(_body_is_ambiguous(list(branch)) for branch in body[0][1][1])
    repeats = [i for i, (op, arg) in enumerate(body) if op in _REPEATS and arg[1] == sre_constants.MAXREPEAT]
    if not repeats:
        return False
    others = [item for i, item in enumerate(body) if i not in repeats]
    return all(_min_width([item]) == 0 for item in others)


def _min_width(items: list[Any]) -> int:
    sub = sre_parse.SubPattern(sre_parse.State(), items)
    return int(sub.getwidth()[0])
