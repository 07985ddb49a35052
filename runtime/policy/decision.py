"""Permission decisions from the snapshot's Policy documents.

For one validated call: every rule whose tool globs match (an index built once per
snapshot, so rules for other tools cost nothing) and whose ``when`` holds counts.
Any matching deny wins, then ask, then allow; with none, the session's mode decides.
A ``when`` that cannot be evaluated counts as matching for deny and ask rules and as
not matching for allow rules (fail closed) unless the rule says ``on_error: ignore``.
Rules with ``enforce: warn`` or ``audit`` never change the decision; ``warn`` rules
that match are reported with it.

This covers the decision itself; command-line splitting for ``commands``, quotas,
breakers and session-scoped approvals belong to the policy engine proper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from runtime.config.models import Effect, Enforcement, FailurePolicy, Risk
from runtime.policy.cel import POLICY_VARIABLES, get_engine
from runtime.records import Decision, Session, ValidatedCall
from runtime.snapshot import CompiledPolicyRule, Snapshot

_READ_ONLY = Decision("allow", reason="read-only tool")


def rules_by_tool(snapshot_rules: Sequence[CompiledPolicyRule], tools: Mapping[str, Mapping[str, Any]]) -> Mapping[str, tuple[CompiledPolicyRule, ...]]:
    """For every tool key (``name`` and ``name@version``), the rules whose globs match it."""
    index: dict[str, tuple[CompiledPolicyRule, ...]] = {}
    for name, versions in tools.items():
        for version in versions:
            key = f"{name}@{version}" if version else name
            index[key] = tuple(rule for rule in snapshot_rules if rule.matches_tool(name, version or None))
    return MappingProxyType(index)


class PolicyPermitter:
    """Decides from the snapshot's policies and the session's mode."""

    def decide(self, call: ValidatedCall, session: Session, snapshot: Snapshot) -> Decision:
        if snapshot.forbidden_modes:
            forbidden = _forbidden_mode(snapshot, session.mode)
            if forbidden is not None:
                return forbidden
        rules = snapshot.rule_index.get(call.tool.key, ())
        if not rules:
            return _mode_default(call, session)
        return _decide(call, session, rules, snapshot)


def _decide(call: ValidatedCall, session: Session, rules: Sequence[CompiledPolicyRule], snapshot: Snapshot) -> Decision:
    tool = call.tool
    engine = get_engine(snapshot.cel_engine)
    activation = None
    matched: dict[Effect, list[tuple[CompiledPolicyRule, str | None]]] = {Effect.deny: [], Effect.ask: [], Effect.allow: []}
    warnings: list[str] = []
    for rule in rules:
        error = None
        if rule.when is not None:
            if activation is None:
                activation = engine.activation(_data(call, session), POLICY_VARIABLES)
            outcome = rule.when.evaluate(activation)
            if outcome.error is not None:
                error = outcome.error
                applies = rule.effect is not Effect.allow and rule.on_error is FailurePolicy.fail
            else:
                applies = outcome.is_true
            if not applies:
                continue
        if rule.enforce is Enforcement.warn and rule.effect is not Effect.allow:
            warnings.append(f"{rule.policy}/{rule.name}: {_reason(rule, activation)}")
            continue
        if rule.enforce is Enforcement.audit:
            continue
        matched[rule.effect].append((rule, error))
    for effect in (Effect.deny, Effect.ask):
        if matched[effect]:
            rule, error = matched[effect][0]
            reason = _reason(rule, activation)
            if error is not None:
                reason += f" (its condition could not be evaluated: {error}; counted as matching)"
            return Decision(effect.value, rule=f"{rule.policy}/{rule.name}", reason=reason, warnings=tuple(warnings))
    if matched[Effect.allow]:
        rule, _ = matched[Effect.allow][0]
        if tool.spec.risk is Risk.critical and not rule.names_tools:
            return Decision("ask", rule=f"{rule.policy}/{rule.name}", reason=f"`{tool.name}` is a critical-risk tool; only an allow rule naming it can skip approval", warnings=tuple(warnings))
        if session.mode == "plan" and not tool.spec.read_only:
            return Decision("deny", reason="the session is in plan mode: only read-only tools may run", warnings=tuple(warnings))
        return Decision("allow", rule=f"{rule.policy}/{rule.name}", reason=_reason(rule, activation), warnings=tuple(warnings))
    default = _mode_default(call, session)
    return Decision(default.effect, default.rule, default.reason, tuple(warnings)) if warnings else default


def _mode_default(call: ValidatedCall, session: Session) -> Decision:
    tool = call.tool
    if tool.spec.risk is Risk.critical and session.mode != "bypass":
        return Decision("ask", reason=f"`{tool.name}` is a critical-risk tool")
    if tool.spec.read_only:
        return _READ_ONLY
    if session.mode == "bypass":
        return Decision("allow", reason="the session is in bypass mode")
    if session.mode == "plan":
        return Decision("deny", reason="the session is in plan mode: only read-only tools may run")
    return Decision("ask", reason=f"`{tool.name}` can change things, so a person approves each call")


def _forbidden_mode(snapshot: Snapshot, mode: str) -> Decision | None:
    for policy in snapshot.policies:
        if any(m.value == mode for m in policy.spec.forbidden_modes):
            return Decision("deny", rule=policy.name, reason=f"permission mode `{mode}` is not allowed by policy `{policy.name}`; start the session in another mode")
    return None


def _reason(rule: CompiledPolicyRule, activation: Any) -> str:
    if rule.reason_program is not None and activation is not None:
        outcome = rule.reason_program.evaluate(activation)
        if outcome.error is None and isinstance(outcome.value, str):
            return outcome.value
    return rule.reason or f"rule `{rule.name}` of policy `{rule.policy}`"


def _data(call: ValidatedCall, session: Session) -> dict[str, Any]:
    from runtime.pipeline.validate import session_view

    return {"args": dict(call.args), "tool": dict(call.tool.attributes), "session": session_view(session), "call": {"id": call.call.id, "index": call.call.index}, "commands": []}
