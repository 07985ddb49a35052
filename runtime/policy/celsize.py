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

from collections.abc import Iterable, Mapping
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
    units (-1: none, or the expression has syntax the estimator does not read)."""
    from runtime.policy.celast import ParseError, parse
    from runtime.policy.celcheck import check
    from runtime.policy.celtypes import DYN, ONE

    try:
        tree = parse(source)
    except ParseError:
        return -1
    cost = check(tree, {name: DYN for name in variables}).cost + _native_cost(tree, ONE)
    if cost.evaluate({_U: 0.0}) > limit:
        return -1
    low, high = 0, _MAX_U
    if cost.evaluate({_U: float(high)}) <= limit:
        return high
    while low < high:  # the cost only grows with U: the largest U within the limit
        middle = (low + high + 1) // 2
        if cost.evaluate({_U: float(middle)}) <= limit:
            low = middle
        else:
            high = middle - 1
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
