"""The run-time cost bound of an evaluation the fast engine runs.

cel-expr-python cannot be interrupted (cel-cpp's iteration budget is not exposed by
its Python binding), so its evaluations are bounded before they start: at compile
time, lint's cost estimator (:mod:`runtime.policy.celcheck`) bounds the expression's
cost as a function of one size, ``U``, the largest size (items of a list or map,
characters of a string) of any value the expression reads, and :func:`largest_size`
turns the budget into the largest ``U`` that keeps that bound within it. At run time
the call's values are measured (:func:`measure`, which stops as soon as one is over)
and compared with it: one integer comparison per evaluation.

The bound is sound over any values: every value is typed ``dyn``, whose
comprehensions iterate ``U`` times and whose string functions scan ``U`` characters
(the estimator's own rules), and :func:`_native_cost` adds what it counts as one
step on ``dyn`` values: ``in``, ``==``, ``!=`` and ``+`` over a list, which scan or copy
up to ``U`` items. It is coarser than lint's schema-typed estimate (one size for
all values), so an evaluation over it is not failed: it is handed to the portable
engine, which counts its steps as it goes and stops at the same budget (see
:mod:`runtime.policy.celbudget`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.policy.celast import Node
    from runtime.policy.celtypes import Cost

_U = "(untyped values)"  # the estimator's size variable for values of no declared type
_LIST_OPS = frozenset({"in", "==", "!=", "+"})
_MAX_U = 1 << 40
#: How deep :func:`measure` looks (argument decoding allows less).
_MAX_DEPTH = 200


def largest_size(source: str, variables: Iterable[str], limit: int) -> int:
    """The largest ``U`` for which ``source``'s worst case stays within ``limit`` cost
    units (-1: none, or the expression has syntax the estimator does not read).
    Kept per content: tools often share their rules, and every tool's program asks."""
    return _largest_size(source, tuple(variables), limit)


def worst_case(source: str, variables: Iterable[str]) -> Callable[[int], float] | None:
    """``source``'s worst-case cost when every value it reads has size ``U``: the
    function :func:`largest_size` solves (None: syntax the estimator does not read)."""
    cost = _cost(source, tuple(variables))
    return None if cost is None else lambda size: cost.evaluate({_U: float(size)})


def _cost(source: str, variables: tuple[str, ...]) -> Cost | None:
    from runtime.policy.celast import ParseError, parse
    from runtime.policy.celcheck import check
    from runtime.policy.celtypes import DYN, ONE

    try:
        tree = parse(source)
    except ParseError:
        return None
    return check(tree, {name: DYN for name in variables}).cost + _native_cost(tree, ONE)


@functools.lru_cache(maxsize=4096)
def _largest_size(source: str, variables: tuple[str, ...], limit: int) -> int:
    cost = _cost(source, variables)
    if cost is None:
        return -1

    def within(size: int) -> bool:
        return cost.evaluate({_U: float(size)}) <= limit

    if not within(0):
        return -1
    if within(_MAX_U):
        return _MAX_U
    # The cost only grows with U: the answer is the last U within the limit. The cost as
    # polynomials in U gives a guess (float rounding may put it off by a few); the search
    # from it evaluates the cost itself, so the answer is what a bisection of [0, 2**40]
    # finds, in a few evaluations instead of forty.
    guess = _guess(cost, limit)
    if guess is None:
        low, high = 0, _MAX_U  # within(low), not within(high)
    elif within(guess):
        low, high, step = guess, _MAX_U, 1
        while low + step < _MAX_U:
            if not within(low + step):
                high = low + step
                break
            low, step = low + step, step * 2
    else:
        low, high, step = 0, guess, 1
        while high - step > 0:
            if within(high - step):
                low = high - step
                break
            high, step = high - step, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if within(middle):
            low = middle
        else:
            high = middle
    return low


# A cost as the largest of polynomials in U, each its coefficients from degree 0 up.
_Pieces = list[tuple[float, ...]]
_MAX_PIECES = 16


def _guess(cost: Cost, limit: int) -> int | None:
    """Where the cost crosses ``limit``, from its polynomials (None: too many of them,
    or a negative term, which the polynomials' monotony does not cover)."""
    pieces = _pieces(cost)
    if pieces is None:
        return None
    crossing = min(_crossing(piece, limit) for piece in pieces)
    if not math.isfinite(crossing):
        return None
    return max(0, int(min(crossing, float(_MAX_U))))


def _pieces(cost: Cost) -> _Pieces | None:
    op = cost.op
    if op == "c":
        return [(cost.value,)] if cost.value >= 0 else None
    if op == "v":
        return [(0.0, 1.0)] if cost.name == _U else [(0.0,)]  # other sizes are 0 in largest_size
    parts: list[_Pieces] = []
    for part in cost.parts:
        found = _pieces(part)
        if found is None:
            return None
        parts.append(found)
    if op == "max":
        result = [piece for found in parts for piece in found]
    elif op in ("+", "*"):
        combine = _poly_sum if op == "+" else _poly_product
        result = parts[0]
        for found in parts[1:]:
            result = [combine(a, b) for a in result for b in found]
    else:
        return None
    return result if len(result) <= _MAX_PIECES else None


def _poly_sum(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, ...]:
    if len(a) < len(b):
        a, b = b, a
    return tuple(x + (b[i] if i < len(b) else 0.0) for i, x in enumerate(a))


def _poly_product(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, ...]:
    result = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            result[i + j] += x * y
    return tuple(result)


def _crossing(piece: tuple[float, ...], limit: int) -> float:
    """The largest U at which the polynomial (nonnegative coefficients) stays within
    ``limit``, approximately (its value at 0 is within it: largest_size checked)."""
    degree = len(piece) - 1
    while degree > 0 and piece[degree] == 0:
        degree -= 1
    if degree == 0:
        return float(_MAX_U)
    if degree == 1:
        return (limit - piece[0]) / piece[1]
    low, high = 0.0, float(_MAX_U)
    for _ in range(60):
        middle = (low + high) / 2
        value = 0.0
        for coefficient in reversed(piece[: degree + 1]):
            value = value * middle + coefficient
        if value <= limit:
            low = middle
        else:
            high = middle
    return low


def _native_cost(node: Node, times: Cost) -> Cost:
    """Items scanned or copied by list operators, which the estimator counts as one
    step on ``dyn`` values: ``U`` per evaluation of each, ``times`` evaluations."""
    from runtime.policy.celtypes import ZERO, size_var

    cost = ZERO
    if node.kind == "op" and node.value in _LIST_OPS and not any(_scalar(arg) for arg in node.args[-2:]):
        cost = cost + times * size_var(_U)
    if node.kind == "macro":
        if node.target is not None:
            cost = cost + _native_cost(node.target, times)
        inner = times * size_var(_U)
        for body in node.args:
            cost = cost + _native_cost(body, inner)
        return cost
    if node.target is not None:
        cost = cost + _native_cost(node.target, times)
    for child in node.args:
        cost = cost + _native_cost(child, times)
    return cost


Read = tuple[str, tuple[str, ...]]  # a variable, and the fields read under it


def reads(source: str, variables: Iterable[str]) -> tuple[Read, ...]:
    """What ``source`` reads: each variable it names, and under ``args`` the chains of
    fields it selects when every use of ``args`` selects one (else the whole of it), so
    that a large argument the expression never reads does not count."""
    from runtime.policy.celrefs import LexError, analyse

    names = tuple(variables)
    try:
        facts = analyse(source)
    except LexError:
        return tuple((name, ()) for name in names)
    roots = {ref.name for ref in facts.roots if ref.name in names}
    uses = sum(1 for ref in facts.roots if ref.name == "args")
    found: list[Read] = [(name, ()) for name in sorted(roots) if name != "args"]
    if "args" in roots:
        if uses == len(facts.args_paths) and all(path.fields for path in facts.args_paths):
            found.extend(sorted({("args", path.fields) for path in facts.args_paths}))
        else:
            found.append(("args", ()))
    return tuple(found)


def _scalar(node: Node) -> bool:
    """Whether ``node`` is certainly no list (so that an operator beside it scans none)."""
    if node.kind in _SCALAR_NODES:
        return True
    if node.kind == "ident":
        return node.value in _TYPE_NAMES
    return node.kind == "call" and node.value in _SCALAR_FUNCTIONS


_SCALAR_NODES = frozenset({"int", "uint", "double", "string", "bytes", "bool", "null", "not", "neg", "and", "or"})
_TYPE_NAMES = frozenset({"int", "uint", "double", "string", "bytes", "bool", "list", "map", "null_type", "type"})
_SCALAR_FUNCTIONS = frozenset(
    {"size", "int", "uint", "double", "string", "bool", "bytes", "type", "contains", "startsWith", "endsWith"}
    | {"matches", "has"}
)


def measure(data: Mapping[str, Any], read: tuple[Read, ...], cap: int) -> int:
    """The largest size of the values ``read`` selects in ``data`` (items of a list or
    map, characters of a string), or more than ``cap`` as soon as one is over ``cap``.
    A chain of fields is followed as far as it goes: where a field is missing, or the
    value is not a map (``args.items.size``), the value reached is measured whole."""
    largest = 0
    for name, fields in read:
        value = data.get(name)
        for field in fields:
            if type(value) is not dict or field not in value:
                break
            value = value[field]
        if value is not None:
            largest = max(largest, _largest(value, cap, 0))
            if largest > cap:
                return largest
    return largest


def _largest(value: Any, cap: int, depth: int) -> int:
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value)
    if depth > _MAX_DEPTH:
        return cap + 1  # deeper than argument decoding allows: not trusted
    if kind is list or kind is tuple:
        items: Iterable[Any] = value
    elif kind is dict or isinstance(value, Mapping):
        items = (part for pair in value.items() for part in pair)
    else:
        return 0
    largest = len(value)
    if largest > cap:
        return largest
    for item in items:
        kind = type(item)
        if kind is str:  # most items: no call
            size = len(item)
        elif kind in _SCALARS:
            continue
        else:
            size = _largest(item, cap, depth + 1)
        if size > largest:
            largest = size
            if largest > cap:
                return largest
    return largest


_SCALARS = frozenset({int, float, bool, type(None)})
