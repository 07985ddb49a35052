"""CEL expressions translated into Python closures at snapshot build.

Building a CEL engine's activation (turning the call's data into the engine's
values) and running its interpreter costs tens of microseconds with the fast engine
and about a millisecond with the portable one, on every call. The subset of CEL that
real rules use is translated here, once, from the project's own syntax tree
(:mod:`runtime.policy.celast`) into nested Python closures that read the plain data
directly:

- literals (int, double, string, bool, null), lists and maps of them;
- variables, field selection, ``has()``, indexing;
- ``==`` ``!=`` (CEL's equality: no implicit conversion, numbers by value, a bool is
  never a number), ``<`` ``<=`` ``>`` ``>=``, ``in``;
- ``+`` ``-`` ``*`` ``/`` ``%`` and unary ``-`` on ints (int64: overflow and division
  by zero are errors) and doubles (IEEE), ``+`` on strings and lists;
- ``!`` ``&&`` ``||`` with CEL's error-absorbing semantics, ``c ? a : b``;
- ``size``, ``contains``, ``startsWith``, ``endsWith``, ``matches`` (RE2, a literal
  pattern compiled once);
- ``all``, ``exists``, ``exists_one``, ``map``, ``filter``.

A closure returns a value only when it is certain that CEL gives that value. Every
error it meets raises :class:`CelError`; ``&&``, ``||``, ``all`` and ``exists``
absorb errors the way CEL does, so an error that escapes is one CEL reports too, and
the caller then asks the engine for its own wording of it (an error is the rare path;
this way messages stay the engine's). A value outside the plain JSON types, or an
integer beyond 64 bits, raises :class:`Defer`: the engine decides. Anything outside
the subset is not translated at all (:func:`translate` returns None). The
conformance test (tests/policy/test_cel_closures.py) holds the closures to the
engines' values over the corpus and generated expressions.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from runtime.policy.celast import Node, ParseError, parse
from runtime.policy.celbudget import (
    BUILD_CHARS_PER_UNIT,
    DEFAULT_COST_LIMIT,
    DEFAULT_TIME_LIMIT_MS,
    REGEX_CHARS_PER_UNIT,
    SCAN_CHARS_PER_UNIT,
)
from runtime.policy.celmeter import (
    METER,
    Limits,
    add,
    charge_built,
    charge_compared,
    charge_scanned,
    comprehension,
    meter,
    weight,
)
from runtime.policy.celops import (
    INT_MAX,
    INT_MIN,
    CelError,
    Defer,
    OverBudget,
    arith,
    category,
    equal,
    in_range,
    index,
    matches,
    member,
    order,
    plain,
    select,
    size_of,
    string_literal,
    string_test,
    truth,
)
from runtime.regex import re2_tester

__all__ = ["METER", "CelError", "Closure", "Defer", "OverBudget", "run", "run_in", "scope", "translate"]

#: The data in (variable name -> plain value), the expression's value out.
Closure = Callable[[dict[str, Any]], Any]

# A key no CEL identifier can spell: the variables already found plain in this
# activation (METER, beside it, holds the evaluation's meter).
_CHECKED = "\x00checked"


class _NotSubset(Exception):
    pass


def translate(
    source: str,
    variables: tuple[str, ...],
    cost_limit: int = DEFAULT_COST_LIMIT,
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
) -> Closure | None:
    """``source`` as a Python closure over ``{variable: value}``, or None when it uses
    something outside the subset (the engine then evaluates it). An evaluation stops
    with :class:`OverBudget` past ``cost_limit`` cost units or ``time_limit_ms`` ms of
    CPU (:mod:`runtime.policy.celmeter`)."""
    try:
        node = parse(source)
    except (ParseError, RecursionError):
        return None
    try:
        return _Translator(frozenset(variables), Limits(cost_limit, time_limit_ms)).node(node, frozenset())
    except (_NotSubset, RecursionError):
        return None


def run(closure: Closure, data: dict[str, Any], checked: set[str] | None = None) -> Any:
    """Evaluate ``closure`` with a fresh meter (raises CelError, Defer).
    ``checked`` names the variables of ``data`` already found plain (shared by the
    evaluations of one activation, so each variable is walked once per call)."""
    return closure(scope(data, checked))


def scope(data: dict[str, Any], checked: set[str] | None = None) -> dict[str, Any]:
    """What closures read for ``data``: made once per activation and reused by each of
    its evaluations through :func:`run_in` (closures write nothing into it but the
    meter; a comprehension's variable lives in a copy of its own)."""
    env = dict(data)
    env[METER] = None
    env[_CHECKED] = set() if checked is None else checked
    return env


def run_in(closure: Closure, env: dict[str, Any]) -> Any:
    """Evaluate ``closure`` in a :func:`scope`, with no meter yet (made at the first charge)."""
    env[METER] = None
    return closure(env)


# -- translation -----------------------------------------------------------------------

_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


def _string(text: str) -> str:
    """The value of a CEL string literal; escapes beyond the simple ones are left to the engine."""
    value = string_literal(text, _SIMPLE_ESCAPES)
    if value is None:
        raise _NotSubset
    return value


def _number(node: Node) -> int | float:
    text = node.value
    if node.kind == "double":
        try:
            return float(text)
        except ValueError:
            raise _NotSubset from None
    body = text.lstrip("-")
    if body.lower().startswith("0x"):
        value = int(body, 16)
    elif body.isdigit() and (body == "0" or not body.startswith("0")):
        value = int(body)
    else:
        raise _NotSubset
    value = -value if text.startswith("-") else value
    if not INT_MIN <= value <= INT_MAX:
        raise _NotSubset  # the engine reports the literal's overflow
    return value


class _Constant:
    """A literal's closure, which also says its value (for the specialised operators)."""

    __slots__ = ("constant",)

    def __init__(self, value: Any) -> None:
        self.constant = value

    def __call__(self, _env: dict[str, Any]) -> Any:
        return self.constant


_NONE = object()  # no constant


def _constant(value: Any) -> Closure:
    return _Constant(value)


def _read_variable(env: dict[str, Any], name: str) -> Any:
    """A declared variable's value, checked plain once per activation (else :class:`Defer`
    to the engine, which knows every value's type)."""
    try:
        value = env[name]
    except KeyError:
        raise CelError(f"undeclared reference to '{name}'") from None
    checked = env[_CHECKED]
    if name not in checked:
        if not plain(value):
            raise Defer
        checked.add(name)
    return value


def _variable_field(name: str, field: str) -> Closure:
    """``name.field`` for a declared variable: :func:`select` over what ``_ident`` reads, in one closure."""

    def read_field(env: dict[str, Any]) -> Any:
        value = _read_variable(env, name)
        if type(value) is dict:
            try:
                return value[field]
            except KeyError:
                raise CelError(f"no such key: {field}") from None
        category(value)
        raise CelError(f"type has no field {field}")

    return read_field


def _string_equality(left: Closure, constant: str, negated: bool) -> Closure:
    """``x == "text"`` (or ``!=``): :func:`equal`, with a string compared directly."""

    def same(env: dict[str, Any]) -> bool:
        value = left(env)
        if type(value) is str:
            return (value != constant) if negated else (value == constant)
        return (not equal(value, constant)) if negated else equal(value, constant)

    return same


_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _number_order(op: str, left: Closure, constant: float) -> Closure:
    """``x > 400`` and the like: :func:`order`, with a number compared directly."""
    compare = _ORDER[op]

    def ordered(env: dict[str, Any]) -> bool:
        value = left(env)
        kind = type(value)
        if kind is int or kind is float:
            return compare(value, constant)  # type: ignore[no-any-return]
        return order(op, value, constant)

    return ordered


_METHODS = {"contains", "startsWith", "endsWith", "matches", "size"}
_MACROS = {"all", "exists", "exists_one", "map", "filter"}


class _Translator:
    def __init__(self, variables: frozenset[str], limits: Limits) -> None:
        self.variables = variables
        self.limits = limits

    def node(self, node: Node, bound: frozenset[str]) -> Closure:  # noqa: C901 - one branch per node kind
        kind = node.kind
        if kind in ("int", "double"):
            return _constant(_number(node))
        if kind == "string":
            return _constant(_string(node.value))
        if kind == "bool":
            return _constant(node.value == "true")
        if kind == "null":
            return _constant(None)
        if kind == "ident":
            return self._ident(node.value, bound)
        if kind == "select":
            target, field = node.args[0], node.value
            if target.kind == "ident" and target.value not in bound and target.value in self.variables:
                return _variable_field(target.value, field)  # `args.path`: the commonest form, one closure
            operand = self.node(target, bound)
            return lambda env: select(operand(env), field)
        if kind == "has":
            return self._has(node.args[0], bound)
        if kind == "index":
            container, key = (self.node(arg, bound) for arg in node.args)
            return lambda env: index(container(env), key(env))
        if kind == "list":
            items = tuple(self.node(arg, bound) for arg in node.args)
            return lambda env: [item(env) for item in items]
        if kind == "map":
            return self._map(node, bound)
        if kind == "cond":
            return self._cond(*(self.node(arg, bound) for arg in node.args))
        if kind in ("not", "neg") and node.args[0].kind == kind:
            raise _NotSubset  # CEL's parser drops a pair of `!` or `-`: `!!x` is x, whatever x is
        if kind == "not":
            inner = self.node(node.args[0], bound)
            return lambda env: not truth(inner(env))
        if kind == "neg":
            return self._neg(self.node(node.args[0], bound))
        if kind == "and":
            return _logic(*(self.node(arg, bound) for arg in node.args), stop=False)
        if kind == "or":
            return _logic(*(self.node(arg, bound) for arg in node.args), stop=True)
        if kind == "op":
            left, right = (self.node(arg, bound) for arg in node.args)
            return self._op(node.value, left, right, self.limits)
        if kind == "call":
            return self._call(node, bound)
        if kind == "macro":
            return self._macro(node, bound)
        raise _NotSubset  # uint, bytes

    def _ident(self, name: str, bound: frozenset[str]) -> Closure:
        if name not in bound and name not in self.variables:
            raise _NotSubset  # a type name or an undeclared variable: the engine's to judge

        if name in bound:

            def element(env: dict[str, Any]) -> Any:
                return env[name]  # checked as the comprehension took it

            return element

        def read(env: dict[str, Any]) -> Any:
            return _read_variable(env, name)

        return read

    def _has(self, select: Node, bound: frozenset[str]) -> Closure:
        operand, field = self.node(select.args[0], bound), select.value

        def has(env: dict[str, Any]) -> bool:
            value = operand(env)
            if type(value) is dict:
                return field in value
            category(value)
            raise CelError("has() applied to a value that is not a map")

        return has

    def _map(self, node: Node, bound: frozenset[str]) -> Closure:
        pairs = tuple(
            (self.node(node.args[i], bound), self.node(node.args[i + 1], bound)) for i in range(0, len(node.args), 2)
        )

        def build(env: dict[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key_of, value_of in pairs:
                key = key_of(env)
                if type(key) is not str:
                    raise Defer  # keys of other kinds: the engine's rules
                if key in out:
                    raise CelError("repeated map key")
                out[key] = value_of(env)
            return out

        return build

    @staticmethod
    def _cond(condition: Closure, then: Closure, otherwise: Closure) -> Closure:
        return lambda env: then(env) if truth(condition(env)) else otherwise(env)

    @staticmethod
    def _neg(inner: Closure) -> Closure:
        def negate(env: dict[str, Any]) -> Any:
            value = inner(env)
            kind = type(value)
            if kind is int:
                return in_range(-value)
            if kind is float:
                return -value
            category(value)
            raise CelError("no matching overload for -_")

        return negate

    @staticmethod
    def _op(op: str, left: Closure, right: Closure, limits: Limits) -> Closure:  # noqa: C901 - one form per operator
        constant = getattr(right, "constant", _NONE)
        if op in ("==", "!=") and type(constant) is str:
            return _string_equality(left, constant, op == "!=")  # `args.mode == "full"`
        if op in ("<", "<=", ">", ">=") and (type(constant) is int or type(constant) is float):
            return _number_order(op, left, constant)  # type: ignore[arg-type]  # `args.limit > 400`
        # The forms below charge the work that grows with their values' sizes (celmeter).
        if op in ("==", "!="):
            negated = op == "!="

            def same(env: dict[str, Any]) -> bool:
                a, b = left(env), right(env)
                charge_compared(env, limits, a, b)
                return equal(a, b) is not negated

            return same
        if op == "in":

            def contained(env: dict[str, Any]) -> bool:
                item, container = left(env), right(env)
                if type(container) is list and container:
                    add(meter(env, limits), limits, len(container))
                return member(item, container)

            return contained
        if op in ("<", "<=", ">", ">="):

            def ordered(env: dict[str, Any]) -> bool:
                a, b = left(env), right(env)
                charge_compared(env, limits, a, b)
                return order(op, a, b)

            return ordered
        if op == "+":

            def plus(env: dict[str, Any]) -> Any:
                a, b = left(env), right(env)
                kind = type(a)
                if kind is int and type(b) is int:  # the common case: nothing to charge
                    return arith("+", a, b)
                if kind is list or (kind is str and type(b) is str and len(a) + len(b) >= BUILD_CHARS_PER_UNIT):
                    charge_built(env, limits, a, b)  # before the copy is made
                return arith("+", a, b)

            return plus
        if op in ("-", "*", "/", "%"):
            return lambda env: arith(op, left(env), right(env))
        raise _NotSubset

    def _call(self, node: Node, bound: frozenset[str]) -> Closure:
        name = node.value
        if name not in _METHODS:
            raise _NotSubset
        operands = ((node.target,) if node.target is not None else ()) + node.args
        if len(operands) != (1 if name == "size" else 2):
            raise _NotSubset
        if name == "size":
            inner = self.node(operands[0], bound)
            return lambda env: size_of(inner(env))
        subject = self.node(operands[0], bound)
        limits = self.limits
        if name == "matches":
            pattern = operands[1]
            if pattern.kind == "string":
                literal = _string(pattern.value)
                try:
                    tester = re2_tester(literal)
                except Exception:  # noqa: BLE001 - an invalid pattern: the engine reports it
                    raise _NotSubset from None

                def matched(env: dict[str, Any]) -> bool:
                    text = subject(env)
                    if type(text) is str and len(text) >= REGEX_CHARS_PER_UNIT:  # else nothing to charge
                        charge_scanned(env, limits, text, REGEX_CHARS_PER_UNIT)
                    return matches(text, literal, tester)

                return matched
            pattern_of = self.node(pattern, bound)

            def matched_by(env: dict[str, Any]) -> bool:
                text = subject(env)
                if type(text) is str and len(text) >= REGEX_CHARS_PER_UNIT:
                    charge_scanned(env, limits, text, REGEX_CHARS_PER_UNIT)
                return matches(text, pattern_of(env))

            return matched_by
        if node.target is None:
            raise _NotSubset  # contains("a", "b") is not a global function
        test = string_test(name)
        argument = self.node(operands[1], bound)

        def tested(env: dict[str, Any]) -> bool:
            text = subject(env)
            if type(text) is str and len(text) >= SCAN_CHARS_PER_UNIT:  # else nothing to charge
                charge_scanned(env, limits, text, SCAN_CHARS_PER_UNIT)
            return test(text, argument(env))

        return tested

    def _macro(self, node: Node, bound: frozenset[str]) -> Closure:
        if node.value not in _MACROS or len(node.names) != 1 or len(node.args) != 1 or node.target is None:
            raise _NotSubset
        name = node.names[0]
        if name in self.variables or name in (METER, _CHECKED):
            raise _NotSubset  # shadowing a variable: left to the engine
        source = self.node(node.target, bound)
        body = self.node(node.args[0], bound | {name})
        # Each item costs lint its body and one more (celcheck's `count * (ONE + body)`).
        return comprehension(node.value, name, source, body, 1 + weight(node.args[0]), self.limits)


def _logic(left: Closure, right: Closure, *, stop: bool) -> Closure:
    """``&&`` (stop on false) or ``||`` (stop on true), absorbing an error on either
    side when the other side settles the result, as CEL does."""

    def logic(env: dict[str, Any]) -> bool:
        try:
            first = left(env)
        except CelError as err:
            if isinstance(err, OverBudget):
                raise
            first = err
        if first is stop:
            return stop
        second = right(env)  # an error here is the result's, unless `first` settles it: it did not
        if second is stop:
            return stop
        if isinstance(first, CelError):
            raise first
        if first is not (not stop) or second is not (not stop):
            raise CelError("no matching overload: a logical operand is not a bool")
        return not stop

    return logic
