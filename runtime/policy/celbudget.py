"""The run-time bound of a CEL evaluation: cost units and a time limit.

One budget in lint's cost units (setting ``cel_cost_limit``, about one CEL operation
each) and one time limit (setting ``cel_time_limit_ms``) bound every evaluation, on
every path an expression can take:

- lint rejects an expression whose worst case over the schema's bounds exceeds the
  cost budget (:mod:`runtime.policy.celcheck`);
- the Python closures (:mod:`runtime.policy.celmeter`) count lint's units as they go:
  each comprehension item costs its body's size, and each string, list or map
  operation costs by the size it scans or builds (:data:`SCAN_CHARS_PER_UNIT`,
  :data:`BUILD_CHARS_PER_UNIT`, as lint charges them), never more than lint's
  estimate, so a lint-clean expression never runs out of units on the inputs its
  schema accepts;
- the portable engine counts :data:`STEPS_PER_UNIT` steps per unit (each syntax-tree
  node visited, each item copied or scanned natively; a unit takes 3.7-5.5 steps);
- the fast engine cannot be interrupted: the sizes of the values an expression reads
  are checked before it starts (:mod:`runtime.policy.celsize`) against the largest its
  budget allows, the budget being the smaller of the cost limit and the time limit at
  :data:`FAST_SECONDS_PER_UNIT`; larger values are evaluated by the portable engine.

The closures and the portable engine also read the evaluating thread's CPU clock every
:data:`CLOCK_EVERY_UNITS` units (:data:`CLOCK_EVERY_STEPS` steps) and stop once the
evaluation has held it longer than the time limit: whatever lint assumed, no
evaluation holds the event loop that called it much longer than that. CPU time, not
wall time, so that a rule's verdict does not depend on the machine's load. Past either
bound the evaluation stops with an error that names the budget and the setting that
raises it (:func:`cost_message`, :func:`time_message`): a deny or ask rule then
matches, a business rule rejects the call (fail closed).

A worker thread would not bound the CPU (it keeps the interpreter lock), so the
counters run inside the evaluation itself. Portable evaluations run one at a time
under the engine's lock, so one module-level budget serves them all.
"""

from __future__ import annotations

import time
from typing import Any

#: The default budget of one evaluation in cost units (setting ``cel_cost_limit``).
DEFAULT_COST_LIMIT = 100_000
#: The default time limit of one evaluation in milliseconds (setting ``cel_time_limit_ms``).
DEFAULT_TIME_LIMIT_MS = 100
#: Characters per cost unit of a scan (``contains``, ``startsWith``, ``==`` on strings),
#: a regular expression match (RE2, linear) and a string that is built (``+``): lint
#: charges the same (:mod:`runtime.policy.celfacts`). A build costs more than a scan
#: because what it makes is held until the evaluation ends: a budget of ``n`` units
#: builds at most ``100 n`` characters (10 MB by default).
SCAN_CHARS_PER_UNIT = 1000
REGEX_CHARS_PER_UNIT = 250
BUILD_CHARS_PER_UNIT = 100
#: Steps (tree nodes visited, plus items copied or scanned natively) the portable
#: engine allows per cost unit: about twice the most a lint-admitted worst case takes.
STEPS_PER_UNIT = 10
#: Seconds one cost unit may take on the fast engine, for turning its time limit into
#: units: over twice the most measured (0.1-0.4 us).
FAST_SECONDS_PER_UNIT = 1e-6
#: Seconds one cost unit may take on the portable engine itself (cel-python, for the
#: expressions the closures do not translate), and in the closures: what lint turns a
#: worst-case cost into time with, to warn when an expression would run past the time
#: limit (``cel-time``). Measured on a 2-core x86-64 machine (Python 3.11) by
#: ``tests/benchmarks/bench_cel_time.py``: lint's worst case of comprehensions over
#: strings, ints and objects with scans, regexes, conversions and arithmetic, evaluated
#: at the schema's bounds (2,000 items), in CPU time: on the engine 31-49 us a unit on
#: an idle machine, 34-82 us at a load of 12 (CPU time per operation grows when the
#: cores are shared); in the closures 0.2-0.7 us. Each constant is near or above the
#: most measured.
PORTABLE_SECONDS_PER_UNIT = 80e-6
CLOSURE_SECONDS_PER_UNIT = 1e-6
#: How often the clock is read: every this many units (closures) or steps (portable).
CLOCK_EVERY_UNITS = 1000
CLOCK_EVERY_STEPS = 256

# The evaluating thread's CPU time: what the evaluation spends holding the interpreter
# (and the event loop), not time lost to other processes on a loaded machine.
clock = time.thread_time


def cost_message(cost_limit: int) -> str:
    """The error of an evaluation stopped for its cost (the same on every path)."""
    return (
        f"the expression ran over its evaluation budget of {cost_limit:,} cost units and was stopped (setting "
        "cel_cost_limit raises it; a lint-clean rule stays within it on inputs its schema accepts: bound the "
        "inputs it iterates or builds with maxItems/maxLength)"
    )


def time_message(time_limit_ms: int) -> str:
    """The error of an evaluation stopped for its time (the same on every path)."""
    return (
        f"the expression ran over its evaluation time budget of {time_limit_ms:,} ms of CPU and was stopped "
        "(setting cel_time_limit_ms raises it; or bound the inputs it iterates with maxItems/maxLength, "
        "simplify it, or install toolrt[fast])"
    )


def fast_cost_limit(cost_limit: int, time_limit_ms: int) -> int:
    """The units an evaluation on the fast engine may cost: its cost budget, or fewer
    when its time limit allows fewer."""
    return max(1, min(cost_limit, int(time_limit_ms / 1000 / FAST_SECONDS_PER_UNIT)))


class Exhausted(BaseException):
    """The evaluation ran over its budget. A BaseException, so that no handler inside
    cel-python (some catch Exception and log) turns it into a value or a log line."""


# steps left, deadline, steps left at the next clock check, cost units, time limit in ms
_state: list[float] = [0.0, 0.0, 0.0, 0.0, 0.0]


def budget(cost_limit: int) -> int:
    """The portable engine's steps for a budget of ``cost_limit`` cost units."""
    return cost_limit * STEPS_PER_UNIT


def start(cost_limit: int = DEFAULT_COST_LIMIT, time_limit_ms: int = DEFAULT_TIME_LIMIT_MS, spent: float = 0.0) -> None:
    """Give the portable evaluation about to run its budget (called under the engine's
    lock); ``spent``: CPU seconds the same evaluation already took elsewhere (in the
    closures, before they handed it over)."""
    steps = budget(cost_limit)
    deadline = clock() + time_limit_ms / 1000 - spent
    _state[:] = [float(steps), deadline, float(steps - CLOCK_EVERY_STEPS), float(cost_limit), float(time_limit_ms)]


def charge(steps: int) -> None:
    """Count ``steps`` steps; raise :class:`Exhausted` past the budget."""
    state = _state
    left = state[0] - steps
    state[0] = left
    if left < state[2]:
        _check(left)


def _check(left: float) -> None:
    if left < 0:
        raise Exhausted(cost_message(int(_state[3])))
    if clock() > _state[1]:
        raise Exhausted(time_message(int(_state[4])))
    _state[2] = left - CLOCK_EVERY_STEPS


def bounded_runner() -> Any:
    """cel-python's interpreted runner whose evaluator counts a step per node visited."""
    import celpy
    from celpy.evaluation import Evaluator

    class BoundedEvaluator(Evaluator):
        def _visit_tree(self, tree: Any) -> Any:
            state = _state
            left = state[0] - 1
            state[0] = left
            if left < state[2]:
                _check(left)
            return super()._visit_tree(tree)

        def sub_evaluator(self, ast: Any) -> Evaluator:
            # A comprehension's body runs in an evaluator of its own: it counts too.
            return BoundedEvaluator(ast, activation=self.activation)

    class BoundedRunner(celpy.InterpretedRunner):  # type: ignore[misc]
        def evaluate(self, context: Any) -> Any:
            return BoundedEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)

    return BoundedRunner
