"""The policy walk of a plain tool, laid out at snapshot build.

For a tool without a command line or staged rules, the decision is that of the first
enforced rule that applies, tried in the order that decides (deny rules, then ask,
then allow; each in declared order). Everything about a rule that depends only on the
snapshot is settled here, once per tool: rules that can never apply to it are left
out (a condition folded to false, ``commands`` patterns on a tool that runs no command
line), and the decision a rule gives when it applies with its written reason is built
ahead (with the critical-risk rule applied). Per call, a :class:`Step` is then a
direct check of the arguments, a condition translated into closures, or, for anything
else (a condition only the engine can evaluate, an error to word, a reason written as
an expression), the ``fallback`` judge, which evaluates it as the full walk would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.config.models import Effect, Risk
from runtime.policy.cel import Outcome, is_translated
from runtime.policy.celdata import call_activation
from runtime.records import Decision, Session, ValidatedCall
from runtime.snapshot import CompiledPolicyRule, CompiledTool

PLAN_DENIAL = (
    "the session is in plan mode: only read-only tools may run. Describe the change in your plan instead, or ask "
    "the user to leave plan mode"
)

#: How the fallback learns whether a rule applies: (applies, the reason to give if it does).
Judge = Callable[[CompiledPolicyRule], tuple[bool, str]]


def static_reason(rule: CompiledPolicyRule) -> str:
    """The reason a rule gives when it has no reason expression."""
    return rule.reason or f"rule `{rule.name}` of policy `{rule.policy}`"


def critical_reason(tool: CompiledTool) -> str:
    return f"`{tool.name}` is a critical-risk tool; only allow rules that name it can skip approval"


def applied(rule: CompiledPolicyRule, reason: str, tool: CompiledTool) -> Decision:
    """The decision of ``rule`` applying to a call of ``tool`` with ``reason``."""
    label = f"{rule.policy}/{rule.name}"
    if rule.effect is Effect.allow and tool.spec.risk is Risk.critical and tool.name not in rule.named_tools:
        return Decision("ask", rule=label, reason=critical_reason(tool))
    return Decision(rule.effect.value, rule=label, reason=reason)


def _always(_args: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Step:
    """One rule of the walk. ``direct``: a check of the arguments (True, False, or None
    when uncertain); ``program``: the condition as closures, evaluated when ``direct``
    is None or uncertain; with neither certain, the fallback judges ``rule``.
    ``decided``: the decision when the rule applies with its written reason."""

    direct: Callable[[Mapping[str, Any]], bool | None] | None
    program: Any
    decided: Decision
    rule: CompiledPolicyRule


@dataclass(frozen=True, slots=True)
class QuickWalk:
    """A tool's walk: the deny steps, then (after plan mode's gate) the ask and allow steps."""

    deny: tuple[Step, ...]
    rest: tuple[Step, ...]
    gated: bool  # the tool changes things: plan mode denies it before any ask or allow rule


def build_walk(
    tool: CompiledTool, by_effect: Sequence[Sequence[CompiledPolicyRule]], known: Mapping[int, Outcome]
) -> QuickWalk:
    """The walk of ``tool`` over its live rules ``by_effect`` (deny, ask, allow), with
    ``known`` (``id(rule)`` -> the outcome of a condition folded at build)."""
    deny, ask, allow = ([_step(rule, tool, known) for rule in rules] for rules in by_effect)
    return QuickWalk(
        tuple(s for s in deny if s is not None),
        tuple(s for s in (*ask, *allow) if s is not None),
        not tool.spec.read_only,
    )


def _step(rule: CompiledPolicyRule, tool: CompiledTool, known: Mapping[int, Outcome]) -> Step | None:
    if rule.command_patterns is not None:
        return None  # no command line to match: it never applies
    decided = applied(rule, static_reason(rule), tool)
    if rule.reason_program is not None:
        return Step(None, None, decided, rule)  # the reason is evaluated: the fallback words it
    when = rule.when
    if when is None:
        return Step(_always, None, decided, rule)
    folded = known.get(id(rule))
    if folded is not None:
        if folded.error is None and folded.value is True:
            return Step(_always, None, decided, rule)
        if folded.error is None:
            return None  # folded to false: never applies
        return Step(None, None, decided, rule)  # an error: the fallback words it and fails closed
    return Step(rule.when_direct, when if is_translated(when) else None, decided, rule)


def walk(
    call: ValidatedCall,
    session: Session,
    engine: str,
    plan: QuickWalk,
    fallback: Callable[[Any], Judge],
) -> Decision | None:
    """The decision of the first rule that applies, or None when none does (the
    session's mode decides). ``fallback(activation)`` makes the judge for a rule the
    steps cannot settle (``activation``: the one built so far, or None)."""
    args = call.args
    activation: Any = None
    judge: Judge | None = None
    steps = plan.deny
    for part in (0, 1):
        if part:
            if plan.gated and session.mode == "plan":
                # Before ask: in plan mode nothing that changes things runs, approved or not.
                return Decision("deny", reason=PLAN_DENIAL)
            steps = plan.rest
        for step in steps:
            direct = step.direct
            if direct is not None:
                verdict = direct(args)
                if verdict is not None:
                    if verdict:
                        return step.decided
                    continue
            program = step.program
            if program is not None:
                if activation is None:
                    activation = call.activation
                    if activation is None:
                        activation = call_activation(engine, call.call, call.tool, args, session)
                outcome = program.evaluate(activation)
                if outcome.error is None:
                    if outcome.value is True:
                        return step.decided
                    continue
            if judge is None:
                judge = fallback(activation)
            applies, reason = judge(step.rule)
            if applies:
                return applied(step.rule, reason, call.tool)
    return None
