"""The run-time bound of a portable CEL evaluation: a step count and a deadline.

Lint bounds every expression's worst case from the schema (see
:mod:`runtime.policy.celcheck`), and the closures count their comprehension steps
(:data:`runtime.policy.celclosure.MAX_STEPS`). An expression the portable engine
evaluates itself is bounded here as well, so that no evaluation holds the engine's
lock (and the event loop that called it) longer than its budget, whatever lint
assumed: cel-python's evaluator visits the syntax tree node by node, and each visit
is a step; work done natively (copying lists and strings for ``+``, scanning a list
for ``in``, comparing lists) counts a step per item. Past :data:`MAX_STEPS` steps,
or :data:`TIME_BUDGET_S` seconds of the evaluating thread's CPU time (checked every
:data:`_CLOCK_EVERY` steps), the evaluation stops with :class:`Exhausted`, which the engine reports as an
evaluation error: a deny or ask rule then matches (fail closed).

A worker thread would not bound the CPU (it keeps the interpreter lock), so the
counter runs inside the evaluation itself. Portable evaluations run one at a time
under the engine's lock, so one module-level budget serves them all.
"""

from __future__ import annotations

import time
from typing import Any

#: Steps one portable evaluation may take (tree nodes visited, plus items copied or
#: scanned natively). A rule over a few fields takes tens.
MAX_STEPS = 1_000_000
#: CPU seconds one portable evaluation may run.
TIME_BUDGET_S = 0.5
_CLOCK_EVERY = 256


class Exhausted(BaseException):
    """The evaluation ran over its budget. A BaseException, so that no handler inside
    cel-python (some catch Exception and log) turns it into a value or a log line."""


# steps left, deadline, steps left at the next clock check, the step budget, the time budget
_state: list[float] = [0.0, 0.0, 0.0, 0.0, 0.0]
# The evaluating thread's CPU time: what the evaluation spends holding the interpreter
# (and the event loop), not time lost to other processes on a loaded machine, so that a
# rule's verdict does not depend on the machine's load.
_clock = time.thread_time


def start() -> None:
    """Give the evaluation about to run its budget (called under the engine's lock)."""
    steps, seconds = MAX_STEPS, TIME_BUDGET_S  # read here, so that the module's values apply
    _state[:] = [float(steps), _clock() + seconds, float(steps - _CLOCK_EVERY), float(steps), seconds]


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
            f"the expression ran over its evaluation budget of {int(_state[3]):,} steps and was stopped "
            "(a lint-clean rule stays far below it; bound the inputs it iterates with maxItems/maxLength)"
        )
    if _clock() > _state[1]:
        raise Exhausted(
            f"the expression ran over its evaluation time budget of {_state[4]:g} s of CPU and was stopped "
            "(bound the inputs it iterates with maxItems/maxLength, or simplify it)"
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
