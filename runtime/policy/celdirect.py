"""The simplest CEL conditions, evaluated in Python without building an activation.

Most business rules and policy conditions read one or two arguments:
``!args.path.contains("..")``, ``has(args.path) && args.path.matches('...')``. A CEL
engine evaluates them in microseconds, but turning the arguments into CEL values first
(the activation) and calling back into Python for a cached ``matches`` cost several
times that, on every call. Conditions made only of the forms below are compiled once
into Python closures instead:

- ``has(args.f)``
- ``args.f.matches(s)``, ``.contains(s)``, ``.startsWith(s)``, ``.endsWith(s)``
- ``args.f == s`` and ``!=`` where ``s`` is a string literal, ``true`` or ``false``
- ``!``, ``&&``, ``||``, parentheses, ``true``, ``false``

where ``f`` is a plain field name and ``s`` a string literal. A closure answers
``True`` or ``False`` only when it is certain CEL would answer the same; whenever the
real engine would see something else (a missing field, a value of another type,
which CEL may turn into an error or compare differently) it answers ``None`` and the
caller evaluates the compiled CEL program as usual. ``&&`` and ``||`` short-circuit
as CEL's do: ``false && x`` is false and ``true || x`` is true whatever
``x`` is. When the left side is unknown, the whole condition goes to the engine,
which has its own rules for an error on either side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runtime.policy.celops import string_literal
from runtime.policy.celrefs import LexError, Token, tokenize
from runtime.regex import re2_tester

#: Arguments in, True / False when certain, None when the CEL program must decide.
DirectCheck = Callable[[Mapping[str, Any]], bool | None]

_STRING_METHODS = {
    "contains": lambda value, literal: literal in value,
    "startsWith": lambda value, literal: value.startswith(literal),
    "endsWith": lambda value, literal: value.endswith(literal),
}
_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_RESERVED = frozenset({"true", "false", "null", "in", "has", "args"})


class _NotDirect(Exception):
    """The expression uses something outside the subset: leave it to the CEL engine."""


def compile_direct(source: str) -> DirectCheck | None:
    """A Python closure equivalent to ``source`` on the subset above, or None."""
    try:
        tokens = tokenize(source)
    except LexError:
        return None
    if not tokens or len(tokens) > 200:
        return None
    parser = _Parser(tokens)
    try:
        check = parser.expression()
    except (_NotDirect, IndexError):
        return None
    if parser.at < len(tokens):
        return None
    return check


class _Parser:
    """Recursive descent over the tokens, building closures as it goes."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.at = 0

    def _peek(self) -> str | None:
        return self.tokens[self.at].text if self.at < len(self.tokens) else None

    def _take(self, text: str | None = None, kind: str | None = None) -> Token:
        token = self.tokens[self.at]
        if (text is not None and token.text != text) or (kind is not None and token.kind != kind):
            raise _NotDirect
        self.at += 1
        return token

    def expression(self) -> DirectCheck:
        left = self._conjunction()
        while self._peek() == "||":
            self._take("||")
            left = _either(left, self._conjunction())
        return left

    def _conjunction(self) -> DirectCheck:
        left = self._unary()
        while self._peek() == "&&":
            self._take("&&")
            left = _both(left, self._unary())
        return left

    def _unary(self, negated: bool = False) -> DirectCheck:
        if self._peek() == "!":
            self._take("!")
            return _negated(self._unary(negated=True))
        return self._primary(negated)

    def _primary(self, negated: bool) -> DirectCheck:
        text = self._peek()
        if text == "(":
            self._take("(")
            inner = self.expression()
            self._take(")")
            return inner
        if text in ("true", "false"):
            self._take()
            constant = text == "true"
            return lambda _args: constant
        if text == "has":
            self._take("has")
            self._take("(")
            field = self._field()
            self._take(")")
            return lambda args: field in args
        field = self._field()
        following = self._peek()
        if following == ".":
            self._take(".")
            method = self._take(kind="ident").text
            self._take("(")
            literal = _string_literal(self._take(kind="string"))
            self._take(")")
            return _string_method(field, method, literal)
        if following in ("==", "!=") and not negated:  # CEL reads `!args.f == x` as `(!args.f) == x`
            self._take()
            return _comparison(field, self._literal(), negate=following == "!=")
        raise _NotDirect

    def _field(self) -> str:
        self._take("args", kind="ident")
        self._take(".")
        name = self._take(kind="ident").text
        if name in _RESERVED or self._peek() in ("[", "("):
            raise _NotDirect
        if self._peek() == "." and self.at + 2 < len(self.tokens) and self.tokens[self.at + 2].text != "(":
            raise _NotDirect  # args.a.b: nested fields are left to CEL
        return name

    def _literal(self) -> str | bool:
        token = self._take()
        if token.kind == "string":
            return _string_literal(token)
        if token.text in ("true", "false"):
            return token.text == "true"
        raise _NotDirect


def _string_method(field: str, method: str, literal: str) -> DirectCheck:
    if method == "matches":
        try:
            test_pattern = re2_tester(literal)
        except Exception as err:  # noqa: BLE001 - an invalid pattern is CEL's to report
            raise _NotDirect from err

        def matches(args: Mapping[str, Any]) -> bool | None:
            value = args.get(field)
            if type(value) is not str:
                return None
            try:
                return test_pattern(value)
            except UnicodeEncodeError:
                return None  # a lone surrogate: the engine decides (an error, failing closed)

        return matches
    test = _STRING_METHODS.get(method)
    if test is None:
        raise _NotDirect

    def string_test(args: Mapping[str, Any]) -> bool | None:
        value = args.get(field)
        return test(value, literal) if type(value) is str else None

    return string_test


def _comparison(field: str, literal: str | bool, *, negate: bool) -> DirectCheck:
    kind = type(literal)

    def equals(args: Mapping[str, Any]) -> bool | None:
        value = args.get(field)
        if type(value) is not kind:
            return None  # CEL's cross-type equality rules: let the engine answer
        return (value == literal) is not negate

    return equals


def _negated(inner: DirectCheck) -> DirectCheck:
    def negated(args: Mapping[str, Any]) -> bool | None:
        value = inner(args)
        return None if value is None else not value

    return negated


def _both(left: DirectCheck, right: DirectCheck) -> DirectCheck:
    def both(args: Mapping[str, Any]) -> bool | None:
        first = left(args)
        if first is not True:
            return first  # False, or None: the engine decides (it has rules for errors on either side)
        return right(args)

    return both


def _either(left: DirectCheck, right: DirectCheck) -> DirectCheck:
    def either(args: Mapping[str, Any]) -> bool | None:
        first = left(args)
        if first is not False:
            return first
        return right(args)

    return either


def _string_literal(token: Token) -> str:
    """The value of a CEL string literal; only the common escapes are decoded here
    (anything rarer leaves the expression to the engine, which knows them all)."""
    value = string_literal(token.text, _SIMPLE_ESCAPES)
    if value is None:
        raise _NotDirect  # a bytes literal, or an escape left to the engine
    return value
