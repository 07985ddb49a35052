"""The run-time bound of a portable CEL evaluation: a step count and a deadline.

One budget, in lint's cost units (setting ``cel_cost_limit``, about one CEL
operation each): lint rejects an expression whose worst case over the schema's
bounds exceeds it (:mod:`runtime.policy.celcheck`), and at run time each evaluation
is bounded by the same number on both engines, never tighter than what lint
admitted. The fast engine cannot be interrupted and is checked before it starts
(:mod:`runtime.policy.celsize`); an expression the portable engine evaluates itself
is bounded here, so that no evaluation holds the engine's lock (and the event loop
that called it) longer than its budget, whatever lint assumed: cel-python's
evaluator visits the syntax tree node by node, and each visit is a step; work done
natively (copying lists and strings for ``+``, scanning a list for ``in``, comparing
lists) counts a step per item. A cost unit takes 3.7-5.5 steps and 20-45 us of CPU
on this engine (measured over lint-admitted worst cases), so a budget of ``n`` units
allows :data:`STEPS_PER_UNIT` ``* n`` steps and, as a backstop for native work,
:data:`SECONDS_PER_UNIT` ``* n`` seconds of the evaluating thread's CPU time (checked
every :data:`_CLOCK_EVERY` steps; never under :data:`MIN_TIME_S`). Past either, the
evaluation stops with :class:`Exhausted`, which the engine reports as an evaluation
error: a deny or ask rule then matches (fail closed).

A worker thread would not bound the CPU (it keeps the interpreter lock), so the
counter runs inside the evaluation itself. Portable evaluations run one at a time
under the engine's lock, so one module-level budget serves them all.
"""

from __future__ import annotations

import time
from typing import Any

#: The default budget of one evaluation in cost units (setting ``cel_cost_limit``).
DEFAULT_COST_LIMIT = 100_000
#: Steps (tree nodes visited, plus items copied or scanned natively) allowed per cost
#: unit: about twice the most a lint-admitted worst case takes. A rule over a few
#: fields takes tens of steps.
STEPS_PER_UNIT = 10
#: CPU seconds allowed per cost unit: over three times the most measured on an idle
#: machine (a loaded one runs a step slower, even in CPU time).
SECONDS_PER_UNIT = 150e-6
MIN_TIME_S = 0.5
#: Steps and CPU seconds of the default budget.
MAX_STEPS = DEFAULT_COST_LIMIT * STEPS_PER_UNIT
TIME_BUDGET_S = DEFAULT_COST_LIMIT * SECONDS_PER_UNIT
_CLOCK_EVERY = 256


class Exhausted(BaseException):
    """The evaluation ran over its budget. A BaseException, so that no handler inside
    cel-python (some catch Exception and log) turns it into a value or a log line."""


# steps left, deadline, steps left at the next clock check, the step budget, the time budget, the cost units
_state: list[float] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
# The evaluating thread's CPU time: what the evaluation spends holding the interpreter
# (and the event loop), not time lost to other processes on a loaded machine, so that a
# rule's verdict does not depend on the machine's load.
_clock = time.thread_time


def budget(cost_limit: int) -> tuple[int, float]:
    """The steps and CPU seconds of a budget of ``cost_limit`` cost units."""
    if cost_limit == DEFAULT_COST_LIMIT:
        return MAX_STEPS, TIME_BUDGET_S  # read here, so that the module's values apply
    return cost_limit * STEPS_PER_UNIT, max(MIN_TIME_S, cost_limit * SECONDS_PER_UNIT)


def start(cost_limit: int = DEFAULT_COST_LIMIT) -> None:
    """Give the evaluation about to run its budget (called under the engine's lock)."""
    steps, seconds = budget(cost_limit)
    _state[:] = [float(steps), _clock() + seconds, float(steps - _CLOCK_EVERY), float(steps), seconds, cost_limit]


def charge(steps: int) -> None:
    """Count ``steps`` steps; raise :class:`Exhausted` past the budget."""
    state = _state
    left = state[0] - steps
    state[0] = left
    if left < state[2]:
        _check(left)


def _check(left: float) -> None:
    if left < 0:
        raise Exhausted(
            f"the expression ran over its evaluation budget of {int(_state[5]):,} cost units "
            f"({int(_state[3]):,} steps) and was stopped (setting cel_cost_limit; a lint-clean rule stays within it "
            "on inputs its schema accepts: bound the inputs it iterates with maxItems/maxLength)"
        )
    if _clock() > _state[1]:
        raise Exhausted(
            f"the expression ran over its evaluation budget of {int(_state[5]):,} cost units ({_state[4]:g} s of "
            "CPU) and was stopped (setting cel_cost_limit; bound the inputs it iterates with maxItems/maxLength, "
            "or simplify it)"
        )
    _state[2] = left - _CLOCK_EVERY


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
