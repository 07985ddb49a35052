"""The cost meter of an evaluation by the closures (:mod:`runtime.policy.celclosure`).

The closures count lint's cost units as they go (:mod:`runtime.policy.celbudget`):

- a comprehension charges, before it starts, its items times its body's weight (one
  unit per operation of the body, the larger branch of a ``? :``, as lint counts
  them; a comprehension nested in the body charges its own items when it runs);
- an operation whose work grows with a value's size charges that size: ``+`` the
  characters it builds (:data:`~runtime.policy.celbudget.BUILD_CHARS_PER_UNIT`) or the
  items it copies, ``in`` the items it scans, ``==`` the items it compares,
  ``contains``/``startsWith``/``endsWith`` and string comparisons the characters they
  scan, ``matches`` the characters RE2 reads. Each charge is at most lint's estimate of
  the same operation, so the count never exceeds the estimate lint admitted.

Past the cost budget, or once the evaluation has held the thread's CPU for longer
than its time limit (the clock is read every
:data:`~runtime.policy.celbudget.CLOCK_EVERY_UNITS` units, and every so many items of a
long comprehension), it stops with :class:`OverBudget`.

An evaluation that never charges (most: no comprehension, small values) never makes a
meter: its scope holds None until the first charge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from runtime.policy.celbudget import (
    BUILD_CHARS_PER_UNIT,
    CLOCK_EVERY_UNITS,
    SCAN_CHARS_PER_UNIT,
    clock,
    cost_message,
    time_message,
)
from runtime.policy.celops import CelError, OverBudget, category

if TYPE_CHECKING:
    from runtime.policy.celast import Node

Closure = Callable[[dict[str, Any]], Any]

METER = "\x00meter"  # a key no CEL identifier can spell: the evaluation's meter, shared by its scopes


class Limits:
    """The budget of one compiled expression: cost units and CPU milliseconds."""

    __slots__ = ("cost", "time_ms", "seconds")

    def __init__(self, cost: int, time_ms: int) -> None:
        self.cost = cost
        self.time_ms = time_ms
        self.seconds = time_ms / 1000


# A meter is a list, [units used, units at the next check, when the clock started]:
# shared by the comprehension scopes of one evaluation (copies of its scope), and
# cheap to make (a list, not an object: this is on the per-call path of every
# expression with a comprehension).
Meter = list[Any]
_USED, _CHECK_AT, _STARTED = 0, 1, 2


def meter(env: dict[str, Any], limits: Limits) -> Meter:
    """The evaluation's meter, made at its first charge. Its clock starts at its first
    check, so that an evaluation that stays small never reads it (the units before it
    take well under a millisecond)."""
    found: Meter | None = env[METER]
    if found is None:
        found = env[METER] = [0, min(limits.cost, CLOCK_EVERY_UNITS), None]
    return found


def add(found: Meter, limits: Limits, units: int) -> None:
    """Count ``units``; raise :class:`OverBudget` past the cost or the time budget."""
    used = found[0] + units
    found[0] = used
    if used > found[1]:
        _check(found, limits, used)


def _check(found: Meter, limits: Limits, used: int) -> None:
    if used > limits.cost:
        raise OverBudget(cost_message(limits.cost))
    tick(found, limits)
    found[_CHECK_AT] = min(limits.cost, used + CLOCK_EVERY_UNITS)


def tick(found: Meter, limits: Limits) -> None:
    """Read the clock; raise :class:`OverBudget` past the time limit."""
    now = clock()
    started = found[_STARTED]
    if started is None:
        found[_STARTED] = now
    elif now - started > limits.seconds:
        raise OverBudget(time_message(limits.time_ms))


def spent(found: Meter | None) -> float:
    """CPU seconds since the clock of ``found`` started (0 if it never did)."""
    return 0.0 if found is None or found[_STARTED] is None else clock() - found[_STARTED]


def charge(env: dict[str, Any], limits: Limits, units: int) -> None:
    """Count ``units`` against the evaluation of ``env``."""
    found: Meter | None = env[METER]
    if found is None:
        found = env[METER] = [0, min(limits.cost, CLOCK_EVERY_UNITS), None]
    used = found[0] + units
    found[0] = used
    if used > found[1]:
        _check(found, limits, used)


def charge_built(env: dict[str, Any], limits: Limits, a: Any, b: Any) -> None:
    """``a + b``: the characters or items it is about to copy, before it copies them."""
    kind = type(a)
    if kind is str and type(b) is str:
        units = (len(a) + len(b)) // BUILD_CHARS_PER_UNIT
    elif kind is list and type(b) is list:
        units = len(a) + len(b)
    else:
        return  # numbers, or no overload (an error)
    if units:
        charge(env, limits, units)


def charge_compared(env: dict[str, Any], limits: Limits, a: Any, b: Any) -> None:
    """``a == b`` and orderings: the items of a list or map, the characters of a string."""
    kind = type(a)
    if kind is str:
        if type(b) is str:
            units = min(len(a), len(b)) // SCAN_CHARS_PER_UNIT
            if units:
                charge(env, limits, units)
    elif (kind is list or kind is dict) and type(b) is kind:
        if len(a):
            charge(env, limits, len(a))


def charge_scanned(env: dict[str, Any], limits: Limits, text: Any, chars_per_unit: int) -> None:
    """A string function over ``text``: its characters."""
    if type(text) is str:
        units = len(text) // chars_per_unit
        if units:
            charge(env, limits, units)


def paced(elements: list[Any], found: Meter, limits: Limits, every: int) -> Iterator[Any]:
    """``elements``, with the clock read every ``every`` items (a long comprehension,
    whose units were charged before it started)."""
    countdown = every
    for element in elements:
        countdown -= 1
        if not countdown:
            tick(found, limits)
            countdown = every
        yield element


def weight(node: Node) -> int:
    """The units lint charges at least for one evaluation of ``node``, leaving out the
    items of the comprehensions inside it (each charges its own as it runs): one per
    operation, the larger branch of a ``? :`` (celcheck's estimate is never less)."""
    kind = node.kind
    if kind == "macro":
        return 1 + (weight(node.target) if node.target is not None else 0)
    if kind == "has":
        return 1 + weight(node.args[0].args[0])  # the selection is tested, not read
    if kind == "cond":
        condition, then, otherwise = node.args
        return 1 + weight(condition) + max(weight(then), weight(otherwise))
    total = 1 + (weight(node.target) if node.target is not None else 0)
    for child in node.args:
        total += weight(child)
    return total


def comprehension(macro: str, name: str, source: Closure, body: Closure, per_item: int, limits: Limits) -> Closure:
    """``all``, ``exists``, ``exists_one``, ``map`` or ``filter`` over what ``source``
    gives, ``body`` evaluated per item in a copy of the scope holding ``name``; the items
    times ``per_item`` units are charged before the first runs."""
    # Past this many items the clock is read as the items run, not only at the charge.
    paced_every = max(1, CLOCK_EVERY_UNITS // per_item)
    first_check = min(limits.cost, CLOCK_EVERY_UNITS)

    def items(env: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        value = source(env)
        kind = type(value)
        if kind is list:
            elements = value
        elif kind is dict:
            elements = list(value)
        else:
            category(value)
            raise CelError(f"{macro}() over a value that is neither a list nor a map")
        count = len(elements)
        found = env[METER]  # meter() and add(), inline: this is on the per-call path
        if found is None:
            found = env[METER] = [0, first_check, None]
        used = found[0] + count * per_item  # all of it before the first item: a runaway never starts
        found[0] = used
        if used > found[1]:
            _check(found, limits, used)
        if count > paced_every:
            return dict(env), paced(elements, found, limits, paced_every)
        return dict(env), elements

    def each(env: dict[str, Any]) -> Any:
        scope, elements = items(env)
        if macro in ("all", "exists"):
            settle = macro == "exists"  # the element value that settles the result
            error: CelError | None = None
            for element in elements:
                scope[name] = element
                try:
                    value = body(scope)
                except CelError as err:
                    if isinstance(err, OverBudget):
                        raise
                    error = err
                    continue
                if value is settle:
                    return settle
                if value is not (not settle):
                    error = CelError(f"no matching overload: {macro}() body is not a bool")
            if error is not None:
                raise error
            return not settle
        out: list[Any] = []
        count = 0
        for element in elements:
            scope[name] = element
            value = body(scope)
            if macro == "map":
                out.append(value)
            elif value is True:
                count += 1
                out.append(element)
            elif value is not False:
                raise CelError(f"no matching overload: {macro}() body is not a bool")
        if macro == "exists_one":
            return count == 1
        return out

    return each
