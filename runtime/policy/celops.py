"""The operations of CEL's values, as the closures of :mod:`runtime.policy.celclosure` run them.

Each takes plain Python values (str, bool, int within 64 bits, float, None, list,
dict) and returns CEL's result, or raises :class:`CelError` where CEL reports an
error, or :class:`Defer` where the engine must decide (a value of another kind).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from runtime.regex import re2_tester

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1


class CelError(Exception):
    """CEL reports an error for this evaluation."""


class Defer(Exception):
    """The closure cannot be certain: the CEL engine evaluates instead."""


class OverBudget(CelError):
    """The evaluation ran over its cost or time budget (:mod:`runtime.policy.celmeter`)."""


def plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is made only of values the engines convert (JSON types, ints
    within 64 bits). The engines convert a variable whole when it is read, and report
    any part they cannot represent as an error of the evaluation."""
    kind = type(value)
    if kind is str or kind is bool or kind is float or value is None:
        return True
    if kind is int:
        return INT_MIN <= value <= INT_MAX
    if depth > 64:
        return False
    if kind is dict:
        return all(type(key) is str and plain(item, depth + 1) for key, item in value.items())
    if kind is list:
        return all(plain(item, depth + 1) for item in value)
    return False


_NULL, _BOOL, _NUMBER, _STRING, _LIST, _MAP = range(6)


def category(value: Any) -> int:
    kind = type(value)
    if kind is str:
        return _STRING
    if kind is bool:
        return _BOOL
    if kind is int or kind is float:
        return _NUMBER
    if value is None:
        return _NULL
    if kind is list:
        return _LIST
    if kind is dict:
        return _MAP
    raise Defer


def equal(a: Any, b: Any) -> bool:
    kind = category(a)
    if kind != category(b):
        return False
    if kind == _NUMBER:
        return bool(a == b)
    if kind == _LIST:
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if kind == _MAP:
        if len(a) != len(b):
            return False
        for key, value in a.items():
            if type(key) is not str:
                raise Defer
            if key not in b or not equal(value, b[key]):
                return False
        return True
    return bool(a == b)


def member(item: Any, container: Any) -> bool:
    kind = type(container)
    if kind is list:
        return any(equal(item, x) for x in container)
    if kind is dict:
        if type(item) is str:  # a map's keys are strings here
            return item in container
        raise Defer  # another kind of key: the engine's rules (some are no overload, some false)
    category(container)
    raise CelError("no matching overload for _in_")


def in_range(value: int) -> int:
    if INT_MIN <= value <= INT_MAX:
        return value
    raise CelError("integer overflow")


def arith(op: str, a: Any, b: Any) -> Any:
    ka, kb = type(a), type(b)
    if ka is int and kb is int:
        if op == "+":
            return in_range(a + b)
        if op == "-":
            return in_range(a - b)
        if op == "*":
            return in_range(a * b)
        if b == 0:
            raise CelError("division by zero" if op == "/" else "modulus by zero")
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # truncates toward zero, as C
        return in_range(quotient) if op == "/" else a - b * quotient  # a remainder is always in range
    if ka is float and kb is float:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if b == 0.0:
                if a == 0.0 or math.isnan(a):
                    return math.nan
                return math.copysign(math.inf, a) * math.copysign(1.0, b)
            return a / b
        raise CelError("no matching overload for _%_ on doubles")
    if op == "+" and ka is kb and (ka is str or ka is list):
        return a + b
    category(a)
    category(b)
    raise CelError(f"no matching overload for _{op}_")


def order(op: str, a: Any, b: Any) -> bool:
    ka, kb = type(a), type(b)
    if (ka is int or ka is float) and (kb is int or kb is float):
        pass
    elif not (ka is kb and (ka is str or ka is bool)):
        category(a)
        category(b)
        raise CelError(f"no matching overload for _{op}_")
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def size_of(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is list or kind is dict:
        return len(value)
    category(value)
    raise CelError("no matching overload for size")


def string_test(name: str) -> Callable[[Any, Any], bool]:
    def test(text: Any, part: Any) -> bool:
        if type(text) is not str or type(part) is not str:
            category(text)
            category(part)
            raise CelError(f"no matching overload for {name}")
        if name == "contains":
            return part in text
        if name == "startsWith":
            return text.startswith(part)
        return text.endswith(part)

    return test


_PATTERNS: dict[str, Callable[[str], bool]] = {}


def matches(text: Any, pattern: Any, tester: Callable[[str], bool] | None = None) -> bool:
    if type(text) is not str or type(pattern) is not str:
        category(text)
        category(pattern)
        raise CelError("no matching overload for matches")
    try:
        if tester is None:
            tester = _PATTERNS.get(pattern)
            if tester is None:
                tester = re2_tester(pattern)
                if len(_PATTERNS) < 1024:
                    _PATTERNS[pattern] = tester
        return tester(text)
    except Exception as err:  # noqa: BLE001 - a bad pattern or unencodable text: CEL reports an error
        raise CelError(f"matches: {err}") from None


def select(value: Any, field: str) -> Any:
    if type(value) is dict:
        try:
            return value[field]
        except KeyError:
            raise CelError(f"no such key: {field}") from None
    category(value)
    raise CelError(f"type has no field {field}")


def index(container: Any, key: Any) -> Any:
    kind = type(container)
    if kind is list and type(key) is int:
        if 0 <= key < len(container):
            return container[key]
        raise CelError(f"index out of bounds: {key}")
    if kind is dict and type(key) is str:
        try:
            return container[key]
        except KeyError:
            raise CelError(f"no such key: {key}") from None
    if (kind is list and type(key) is float) or (kind is dict and type(key) is not str):
        raise Defer  # a double index, a key of another kind: the engine's conversion rules
    category(container)
    category(key)
    raise CelError("no matching overload for _[_]")  # or a lookup the engine words (double index, int key)


def truth(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise CelError("no matching overload: a logical operand is not a bool")


def string_literal(text: str, escapes: dict[str, str]) -> str | None:
    """The value of the CEL string literal ``text`` (raw and triple-quoted forms too), with
    the escapes ``escapes`` maps decoded; None for a bytes literal, a malformed one, or an
    escape outside ``escapes`` (the engine, which knows them all, decides those)."""
    raw = text[:1] in ("r", "R")
    if raw:
        text = text[1:]
    quote = text[:3] if text[:3] in ("'''", '"""') else text[:1]
    if quote not in ("'", '"', "'''", '"""') or len(text) < 2 * len(quote):
        return None
    body = text[len(quote) : len(text) - len(quote)]
    if raw or "\\" not in body:
        return body
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        escaped = escapes.get(body[index + 1 : index + 2])
        if escaped is None:
            return None
        out.append(escaped)
        index += 2
    return "".join(out)
