"""How policy conditions are planned (at snapshot build) and settled (per call).

A rule's ``when`` is settled in one of four ways, tried in this order:

1. **folded at build**: a condition that reads only ``tool`` (and ``commands`` for a
   tool without a command line) has one outcome per tool, evaluated once here;
2. **batched** (fast engine): the conditions of a tool that need the engine are
   compiled as one list program and evaluated together, once per call; an error in
   any of them settles none, and each is then evaluated alone;
3. **direct**: a simple condition read straight from the arguments
   (:mod:`runtime.policy.celdirect`), when it is certain;
4. **its program**: CEL translated into closures where it can be, else the engine
   (:mod:`runtime.policy.cel`).

:class:`ConditionPlanner` makes the plan; :func:`settle_batch`, :func:`outcome_of` and
:func:`holds_without_cel` are what the permit stage calls per call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from runtime.config.cache import CompileCache
from runtime.config.models import Effect, Enforcement
from runtime.errors import CelCompileError
from runtime.policy.cel import POLICY_VARIABLES, CelEngine, Outcome
from runtime.policy.quickwalk import build_walk
from runtime.snapshot import CompiledPolicyRule, CompiledTool, WhenPlan

_CHANGING = re.compile(r"(?<![A-Za-z0-9_])(args|session|call)(?![A-Za-z0-9_])")
_CHANGING_WITH_LINE = re.compile(r"(?<![A-Za-z0-9_])(args|session|call|commands)(?![A-Za-z0-9_])")


class ConditionPlanner:
    """Plans, at snapshot build, how each tool's policy conditions are settled per call."""

    def __init__(self, engine: CelEngine, cache: CompileCache, budget: tuple[int, int]) -> None:
        self.engine = engine
        self.cache = cache
        self.budget = budget  # cost units and CPU ms of each evaluation (cel_cost_limit, cel_time_limit_ms)

    def plans(
        self, rule_index: Mapping[str, tuple[CompiledPolicyRule, ...]], tools: Mapping[str, Mapping[str, CompiledTool]]
    ) -> Mapping[str, WhenPlan]:
        """Per tool key: conditions that depend on the tool alone, evaluated now, and
        the rest as one list program (fast engine; compiled once per distinct set)."""
        programs: dict[tuple[Any, ...], Any] = {}
        plans: dict[str, WhenPlan] = {}
        for name, versions in tools.items():
            for version, tool in versions.items():
                key = f"{name}@{version}" if version else name
                rules = rule_index.get(key, ())
                # The same tool and rules (kept from the previous build) have the same plan.
                kept = self.cache.reused(
                    ("when-plan", self.engine.name, self.budget, len(rules)),
                    (tool, *rules),
                    functools.partial(self._boxed_plan, rules, tool, programs),
                )
                plan = kept[0] if kept is not None else None
                if plan is not None:
                    plans[key] = plan
        return MappingProxyType(plans)

    def _boxed_plan(
        self, rules: Sequence[CompiledPolicyRule], tool: CompiledTool, programs: dict[tuple[Any, ...], Any]
    ) -> tuple[WhenPlan | None]:
        """The plan in a tuple: a tool without one is kept as well (the cache keeps no None)."""
        return (self._plan(rules, tool, programs),)

    def _plan(
        self, rules: Sequence[CompiledPolicyRule], tool: CompiledTool, programs: dict[tuple[Any, ...], Any]
    ) -> WhenPlan | None:
        static = {"tool"} if tool.spec.command_line else {"tool", "commands"}
        changing = _CHANGING_WITH_LINE if tool.spec.command_line else _CHANGING
        constants: dict[int, Outcome] = {}
        dynamic: list[int] = []
        activation = None
        for position, rule in enumerate(rules):
            if rule.when is None:
                continue
            # Static only if the references say so AND no per-call variable's name appears
            # anywhere in the source (a backstop against any form the reference scan misses,
            # such as root-scoped `.args`); a name inside a string just costs the folding.
            if rule.when_variables <= static and not changing.search(rule.when.source):
                if activation is None:
                    activation = self.engine.activation(
                        {"tool": dict(tool.attributes), "commands": [], "args": {}, "session": {}, "call": {}},
                        POLICY_VARIABLES,
                    )
                constants[position] = rule.when.evaluate(activation)
            elif rule.when_direct is None:  # a direct condition costs less alone than its place in a batch
                dynamic.append(position)
        batch = None
        if len(dynamic) >= 2 and self.engine.name == "fast":  # the portable engine pays per element, not per evaluation
            sources = [rules[p].when.source for p in dynamic]  # type: ignore[union-attr]
            source = "[" + ", ".join(f"({text}\n)" for text in sources) + "]"  # the newline ends a // comment
            # Whether the batch fits the budget is decided here, from lint's estimate over
            # the tool's schema (conditions that each fit may not fit together), not by
            # a call that would run it to the budget before evaluating each alone.
            identity = (*(id(rules[p]) for p in dynamic), self._types_key(tool))
            if identity not in programs:
                programs[identity] = self._batch(source, tool) if self._fits(source, tool) else None
            batch = programs[identity]
        quick = None
        if not tool.spec.command_line and all(rule.enforce is Enforcement.deny for rule in rules):
            live = [
                rule
                for position, rule in enumerate(rules)
                if position not in constants or constants[position].error is not None or constants[position].is_true
            ]
            quick = tuple(
                tuple(rule for rule in live if rule.effect is effect)
                for effect in (Effect.deny, Effect.ask, Effect.allow)
            )
        if not constants and batch is None and quick is None:
            return None
        known = MappingProxyType({id(rules[position]): outcome for position, outcome in constants.items()})
        return WhenPlan(
            MappingProxyType(constants),
            batch,
            tuple(dynamic) if batch is not None else (),
            known,
            quick,  # type: ignore[arg-type]
            build_walk(tool, quick, known) if quick is not None else None,
        )

    def _batch(self, source: str, tool: CompiledTool) -> Any:
        try:
            # Values too large for the fast engine's budget do not go to the portable
            # engine as a batch: the batch settles nothing, at once, and each condition is
            # evaluated alone (on the fast engine when it fits its own budget).
            return self.cache.compiled(
                ("when-batch", self.engine.name, source, self.budget),
                lambda: self.engine.compile(source, POLICY_VARIABLES, *self.budget, oversize=_OVERSIZE),  # type: ignore[call-arg]
            )
        except CelCompileError:
            return None  # each condition compiled alone: evaluate them one by one

    def _types_key(self, tool: CompiledTool) -> str:
        return self._types(tool)[2]

    def _types(self, tool: CompiledTool) -> Any:
        from runtime.config.exprtypes import variable_types

        return variable_types(tool.spec.input_schema, tool.spec.command_line, with_commands=True)

    def _fits(self, source: str, tool: CompiledTool) -> bool:
        """Whether lint's worst case of the batch over ``tool``'s schema is within the
        fast engine's budget (the smaller of the cost limit and the time limit's units)."""
        from runtime.policy.celast import ParseError, parse
        from runtime.policy.celbudget import fast_cost_limit
        from runtime.policy.celcheck import check

        variables, bounds, _key = self._types(tool)
        try:
            tree = parse(source)
        except (ParseError, RecursionError):
            return False
        limits = {name: float(bound.limit) for name, bound in bounds.items()}
        worst = check(tree, variables, own_schema=False).cost.evaluate(limits)
        return bool(worst <= fast_cost_limit(*self.budget))


_TRUE = Outcome(value=True)
_NOT_TRUE = Outcome(value=False)
_OVERSIZE = Outcome(error="the values are too large for the batch's budget on the fast engine: evaluated one by one")
NOTHING_KNOWN: Mapping[int, Outcome] = MappingProxyType({})


def settle_batch(plan: WhenPlan, rules: Sequence[CompiledPolicyRule], activation: Any) -> Mapping[int, Outcome]:
    """``id(rule)`` -> outcome for the conditions ``plan`` settles for this call: the
    ones folded at build, and the batch evaluated once. If the batch errors, none of
    its conditions is settled here (each is then evaluated alone, so each error is
    told apart and fails closed on its own). ``activation`` is called only for a batch."""
    if plan.batch is None:
        return plan.known  # read only: no copy
    known = dict(plan.known)
    outcome = plan.batch.evaluate(activation())
    values = outcome.value
    if outcome.error is not None or not isinstance(values, list) or len(values) != len(plan.positions):
        return plan.known
    for position, value in zip(plan.positions, values, strict=True):
        known[id(rules[position])] = _TRUE if value is True else _NOT_TRUE
    return known


def direct_outcome(rule: CompiledPolicyRule, args: Mapping[str, Any]) -> Outcome | None:
    """The outcome of a simple ``when`` read straight from the arguments, if certain."""
    direct = rule.when_direct
    if direct is None:
        return None
    verdict = direct(args)
    return None if verdict is None else (_TRUE if verdict else _NOT_TRUE)


def outcome_of(
    rule: CompiledPolicyRule, known: Mapping[int, Outcome], args: Mapping[str, Any], activation: Any
) -> Outcome:
    """The outcome of ``rule``'s ``when`` (which it must have) for this call: settled
    ahead (``known``), read directly, or evaluated (``activation()`` builds the
    activation, called only then)."""
    outcome = known.get(id(rule)) or direct_outcome(rule, args)
    if outcome is not None:
        return outcome
    assert rule.when is not None  # noqa: S101 - callers ask only for rules with a condition
    return rule.when.evaluate(activation())


def holds_without_cel(rule: CompiledPolicyRule, known: Mapping[int, Outcome], args: Mapping[str, Any]) -> bool | None:
    """Whether ``rule`` matches a call of a tool without a command line, if that is
    certain without evaluating CEL; else None."""
    if rule.command_patterns is not None:
        return False  # no command line to match
    if rule.when is None:
        return True
    outcome = known.get(id(rule))
    if outcome is not None:
        return None if outcome.error is not None else outcome.value is True
    direct = rule.when_direct
    return direct(args) if direct is not None else None
