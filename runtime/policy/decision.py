"""Permission decisions from the snapshot's Policy documents.

For one validated call: every rule whose tool globs match (an index built once per
snapshot, so rules for other tools cost nothing) and whose ``when`` holds counts.
Any matching deny wins, then ask, then allow; with none, the session's mode decides.
A ``when`` that cannot be evaluated counts as matching for deny and ask rules and as
not matching for allow rules (fail closed) unless the rule says ``on_error: ignore``.
Rules with ``enforce: warn`` or ``audit`` never change the decision; ``warn`` rules
that match are reported with it.

Tools that declare a ``command_line`` argument are judged command by command: the
line is split (:mod:`runtime.policy.shell`) into the simple commands it would run,
wrappers such as ``sudo`` or ``bash -c`` unwrapped. Rules see them as ``commands``
(a list of argv lists) and can name them with ``commands`` patterns: a deny or ask
rule matches if *any* command matches, and allow rules allow the line only if
*every* command is matched by some allow rule. A line that cannot be split with
certainty counts as matching every deny and ask command rule and is covered by no
allow command rule, so a compound line can never slip past.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from runtime.config.models import Effect, Enforcement, FailurePolicy, Risk
from runtime.policy.cel import Outcome, is_translated
from runtime.policy.celdata import call_activation
from runtime.policy.commands import split_cached
from runtime.policy.placed import NOWHERE, PlacedLine, Where, place
from runtime.policy.quickwalk import PLAN_DENIAL as _PLAN_DENIAL
from runtime.policy.quickwalk import critical_reason as _critical_reason
from runtime.policy.quickwalk import static_reason as _static_reason
from runtime.policy.quickwalk import walk
from runtime.records import Decision, Session, ValidatedCall
from runtime.snapshot import CompiledPolicyRule, CompiledTool, Snapshot, WhenPlan

_READ_ONLY = Decision("allow", reason="read-only tool")
_TRUE = Outcome(value=True)
_NOTHING_KNOWN: Mapping[int, Outcome] = MappingProxyType({})
_NOT_TRUE = Outcome(value=False)


@dataclass(slots=True)
class RuleTrace:
    """How one policy rule fared for a call (what ``toolrt explain`` shows)."""

    rule: str  # policy/rule
    effect: str
    enforce: str
    matched: bool
    note: str
    error: str | None = None


def rules_by_tool(
    snapshot_rules: Sequence[CompiledPolicyRule], tools: Mapping[str, Mapping[str, Any]]
) -> Mapping[str, tuple[CompiledPolicyRule, ...]]:
    """For every tool key (``name`` and ``name@version``), the rules whose globs match it."""
    index: dict[str, tuple[CompiledPolicyRule, ...]] = {}
    for name, versions in tools.items():
        for version in versions:
            key = f"{name}@{version}" if version else name
            index[key] = tuple(rule for rule in snapshot_rules if rule.matches_tool(name, version or None))
    return MappingProxyType(index)


class PolicyPermitter:
    """Decides from the snapshot's policies and the session's mode; command lines are
    placed in ``where`` (the workspace and toolrt's own paths, see :mod:`runtime.policy.placed`)."""

    def __init__(self, where: Where = NOWHERE) -> None:
        self.where = where

    def decide(self, call: ValidatedCall, session: Session, snapshot: Snapshot) -> Decision:
        """allow, ask or deny for ``call``, with the deciding rule and its reason."""
        return decide(call, session, snapshot, where=self.where)


def decide(
    call: ValidatedCall,
    session: Session,
    snapshot: Snapshot,
    trace: list[RuleTrace] | None = None,
    *,
    where: Where = NOWHERE,
) -> Decision:
    """The decision for ``call``; with ``trace``, every rule considered is appended to it."""
    if (
        session.mode in snapshot.forbidden_modes
    ):  # a set lookup per call; the policies are searched only to name the one
        forbidden = _forbidden_mode(snapshot, session.mode)
        if forbidden is not None:
            return forbidden
    rules = snapshot.rule_index.get(call.tool.key, ())
    if not rules and not call.tool.spec.command_line:
        return _mode_default(call.tool, session)
    if trace is None:
        plan = snapshot.when_plans.get(call.tool.key)
        if plan is not None and plan.walk is not None:
            # One walk over the steps laid out at build (runtime.policy.quickwalk); the
            # engine (one activation, the plan's batch evaluated once) is brought in only
            # for a rule the steps cannot settle.
            decided = walk(
                call,
                session,
                snapshot.cel_engine,
                plan.walk,
                lambda activation: _QuickJudge(call, session, snapshot, where, rules, plan, activation),
            )
            return decided if decided is not None else _mode_default(call.tool, session)
    return _Evaluation(call, session, snapshot, trace, where).run(rules)


class _QuickJudge:
    """A :data:`Judge` for the shortcut walk that always tells: a build-time constant
    or a direct check of the arguments when certain, else the CEL engine, started once."""

    __slots__ = ("call", "session", "snapshot", "where", "rules", "plan", "evaluation", "activation")

    def __init__(
        self,
        call: ValidatedCall,
        session: Session,
        snapshot: Snapshot,
        where: Where,
        rules: Sequence[CompiledPolicyRule],
        plan: WhenPlan,
        activation: Any = None,
    ) -> None:
        self.call, self.session, self.snapshot, self.where = call, session, snapshot, where
        self.rules, self.plan = rules, plan
        self.evaluation: _Evaluation | None = None
        self.activation: Any = activation  # the walk's, when it built one: never two

    def _activation(self) -> Any:
        """The call's activation: validate's (see policy.celdata), else one built here
        once (a tool without a command line: its conditions read nothing more)."""
        activation = self.activation
        if activation is None:
            call = self.call
            activation = call.activation
            if activation is None:
                activation = call_activation(self.snapshot.cel_engine, call.call, call.tool, call.args, self.session)
            self.activation = activation
        return activation

    def __call__(self, rule: CompiledPolicyRule) -> tuple[bool, str]:
        verdict = _judged_without_cel(self.plan.known, self.call.args, rule)
        if verdict is not None:
            return verdict
        when = rule.when
        if when is not None and rule.reason_program is None and is_translated(when):
            # Translated into closures: evaluated alone, on the activation validate
            # built, costs less than the plan's batch (which exists to spare the engine
            # evaluations) and stops at the first rule that applies. An error is left
            # to the full walk below, which words it and fails closed as usual.
            outcome = when.evaluate(self._activation())
            if outcome.error is None:
                return (True, _static_reason(rule)) if outcome.value is True else (False, "")
        evaluation = self.evaluation
        if evaluation is None:
            evaluation = self.evaluation = _Evaluation(self.call, self.session, self.snapshot, None, self.where)
            evaluation.activation = self.activation  # None, or the one built above: never two
            evaluation._apply_plan(self.rules, self.plan)
        return evaluation._judge(rule)


#: How a shortcut walk learns whether a rule applies: (applies, the reason to give if it does).
Judge = Callable[[CompiledPolicyRule], tuple[bool, str]]


def _shortcut(
    call: ValidatedCall, session: Session, quick: tuple[Sequence[CompiledPolicyRule], ...], judge: Judge
) -> Decision:
    """The decision of a tool without a command line or staged rules, untraced: the
    verdict of the full walk, reached by trying the rules that can match in the order
    that decides (``quick``: deny rules, then ask, then allow) and stopping at the
    first that applies. ``judge`` always tells."""
    tool = call.tool
    for effect, rules in zip(("deny", "ask", "allow"), quick, strict=True):
        if effect == "ask" and session.mode == "plan" and not tool.spec.read_only:
            # Before ask: in plan mode nothing that changes things runs, approved or not.
            return Decision("deny", reason=_PLAN_DENIAL)
        for rule in rules:
            applies, reason = judge(rule)
            if not applies:
                continue
            label = f"{rule.policy}/{rule.name}"
            if effect == "allow" and tool.spec.risk is Risk.critical and tool.name not in rule.named_tools:
                return Decision("ask", rule=label, reason=_critical_reason(tool))
            return Decision(effect, rule=label, reason=reason)
    return _mode_default(tool, session)


def _judged_without_cel(
    known: Mapping[int, Outcome], args: Mapping[str, Any], rule: CompiledPolicyRule
) -> tuple[bool, str] | None:
    """A :data:`Judge` that never calls the CEL engine: a rule settles by a build-time
    constant or a certain direct check of the arguments, or not at all (an evaluation
    error, an uncertain check, a reason written as an expression)."""
    holds = _holds(rule, known, args)
    if holds is None or (holds and rule.reason_program is not None):
        return None
    return (True, _static_reason(rule)) if holds else (False, "")


def _holds(rule: CompiledPolicyRule, known: Mapping[int, Outcome], args: Mapping[str, Any]) -> bool | None:
    """Whether ``rule`` matches a call of a tool without a command line, if that is
    certain without the CEL engine; else None."""
    if rule.command_patterns is not None:
        return False  # no command line to match
    if rule.when is None:
        return True
    outcome = known.get(id(rule))
    if outcome is not None:
        return None if outcome.error is not None else outcome.value is True
    direct = rule.when_direct
    return direct(args) if direct is not None else None


def command_line_of(call: ValidatedCall, where: Where = NOWHERE) -> PlacedLine | None:
    """The command line of a command-line tool's call, split and placed in ``where``
    (relative to its ``cwd`` argument, if any), else None."""
    name = call.tool.spec.command_line
    if not name:
        return None
    line = call.args.get(name)
    text = line if isinstance(line, str) else ""
    cwd = call.args.get("cwd")
    return place(split_cached(text), where, cwd if isinstance(cwd, str) and cwd else ".", text)


class _Evaluation:
    """One call's walk over its rules."""

    def __init__(
        self, call: ValidatedCall, session: Session, snapshot: Snapshot, trace: list[RuleTrace] | None, where: Where
    ) -> None:
        self.call = call
        self.session = session
        self.snapshot = snapshot
        self.trace = trace
        self.where = where
        self.line = command_line_of(call, where)
        self.activation: Any = None
        self.known: Mapping[int, Outcome] = _NOTHING_KNOWN  # id(rule) -> its `when` outcome, settled ahead of the walk

    def _activation(self) -> Any:
        if self.activation is None:
            call = self.call
            shared = call.activation if self.line is None else None  # built by validate, see policy.celdata
            self.activation = (
                shared
                if shared is not None
                else call_activation(self.snapshot.cel_engine, call.call, call.tool, call.args, self.session, self.line)
            )
        return self.activation

    def _note(self, rule: CompiledPolicyRule, matched: bool, note: str, error: str | None = None) -> None:
        if self.trace is not None:
            self.trace.append(
                RuleTrace(f"{rule.policy}/{rule.name}", rule.effect.value, rule.enforce.value, matched, note, error)
            )

    def run(self, rules: Sequence[CompiledPolicyRule]) -> Decision:
        line = self.line
        if line is not None and line.protected is not None:
            return Decision(
                "deny",
                reason=f"{line.protected}; toolrt's own files are off limits to the agent, whatever the mode or rules",
            )
        if line is not None and line.outside and self.where.outside == "deny":
            return Decision(
                "deny",
                reason=(
                    f"{_quote_words(line.outside)} names a path outside the workspace, and commands outside it are "
                    "denied (setting commands_outside_workspace)"
                ),
            )
        decision = self._decided(rules)
        if line is None or decision.effect != "allow" or decision.rule is not None:
            return decision
        # Allowed by the mode, not by a rule. A path outside the workspace still asks in
        # every mode; a word only known at run time asks in every mode but bypass.
        if line.outside and self.where.outside == "ask":
            return Decision(
                "ask",
                reason=f"{_quote_words(line.outside)} names a path outside the workspace, so a person approves it",
                warnings=decision.warnings,
                staged=decision.staged,
            )
        if line.linked:
            return Decision(
                "ask",
                reason=(
                    f"{_quote_words(line.linked)} may go through a link that an earlier command of the line unpacks "
                    "or checks out, so a person approves it"
                ),
                warnings=decision.warnings,
                staged=decision.staged,
            )
        if line.holding:
            return Decision(
                "ask",
                reason=(
                    f"{_quote_words(line.holding)} holds toolrt's own files and the line writes it, so a person "
                    "approves it"
                ),
                warnings=decision.warnings,
                staged=decision.staged,
            )
        unjudged = line.unjudged
        if unjudged is not None and self.session.mode != "bypass":
            return Decision(
                "ask",
                reason=f"{unjudged}, so a person approves the line",
                warnings=decision.warnings,
                staged=decision.staged,
            )
        return decision

    def _decided(self, rules: Sequence[CompiledPolicyRule]) -> Decision:
        tool = self.call.tool
        plan = self.snapshot.when_plans.get(tool.key)
        if plan is not None:
            self._apply_plan(rules, plan)
            if plan.quick is not None and self.trace is None:
                return _shortcut(self.call, self.session, plan.quick, self._judge)
        matched: dict[Effect, list[tuple[CompiledPolicyRule, str]]] = {
            Effect.deny: [],
            Effect.ask: [],
            Effect.allow: [],
        }
        covered: dict[int, CompiledPolicyRule] = {}  # command index -> the allow rule that covers it
        warnings: list[str] = []
        staged: list[tuple[str, str, str]] = []
        for rule in rules:
            if rule.enforce is not Enforcement.deny:
                self._staged(rule, warnings, staged)
                continue
            applies, why = self._applies(rule, covered)
            if not applies:
                continue
            self._note(rule, True, why)
            if rule.command_patterns is None or rule.effect is not Effect.allow:
                matched[rule.effect].append((rule, why))
        if matched[Effect.deny]:
            rule, why = matched[Effect.deny][0]
            return Decision(
                "deny",
                rule=f"{rule.policy}/{rule.name}",
                reason=self._explained(rule, why),
                warnings=tuple(warnings),
                staged=tuple(staged),
            )
        if self.session.mode == "plan" and not tool.spec.read_only:
            # Before ask: in plan mode nothing that changes things runs, approved or not.
            return Decision("deny", reason=_PLAN_DENIAL, warnings=tuple(warnings), staged=tuple(staged))
        if matched[Effect.ask]:
            rule, why = matched[Effect.ask][0]
            return Decision(
                "ask",
                rule=f"{rule.policy}/{rule.name}",
                reason=self._explained(rule, why),
                warnings=tuple(warnings),
                staged=tuple(staged),
            )
        allowed = self._allowed(matched[Effect.allow], covered)
        if allowed is not None:
            deciding, reason, deciders = allowed
            if tool.spec.risk is Risk.critical and not all(tool.name in r.named_tools for r in deciders):
                return Decision(
                    "ask",
                    rule=f"{deciding.policy}/{deciding.name}",
                    reason=_critical_reason(tool),
                    warnings=tuple(warnings),
                    staged=tuple(staged),
                )
            return Decision(
                "allow",
                rule=f"{deciding.policy}/{deciding.name}",
                reason=reason,
                warnings=tuple(warnings),
                staged=tuple(staged),
            )
        default = _mode_default(tool, self.session)
        reason = default.reason or ""
        if self.line is not None and default.effect != "allow":
            reason = f"{reason}; {self._uncovered(covered)}"
        return Decision(default.effect, default.rule, reason, tuple(warnings), staged=tuple(staged))

    def _judge(self, rule: CompiledPolicyRule) -> tuple[bool, str]:
        """A :data:`Judge` that evaluates what it must (it always can tell)."""
        applies, why = self._applies(rule, {})
        return (True, self._explained(rule, why)) if applies else (False, "")

    def _apply_plan(self, rules: Sequence[CompiledPolicyRule], plan: WhenPlan) -> None:
        """The conditions settled at build time, and the rest in one evaluation. If
        any of those errors, the list does too, and they are evaluated one by one as
        usual (so each error is told apart and fails closed on its own)."""
        if plan.batch is None:
            self.known = plan.known  # read only from here on: no copy
            return
        known = self.known = dict(plan.known)
        outcome = plan.batch.evaluate(self._activation())
        values = outcome.value
        if outcome.error is not None or not isinstance(values, list) or len(values) != len(plan.positions):
            return
        for position, value in zip(plan.positions, values, strict=True):
            known[id(rules[position])] = _TRUE if value is True else _NOT_TRUE

    def _direct(self, rule: CompiledPolicyRule) -> Outcome | None:
        """The outcome of a simple ``when`` read straight from the arguments, if certain."""
        direct = rule.when_direct
        if direct is None:
            return None
        verdict = direct(self.call.args)
        return None if verdict is None else (_TRUE if verdict else _NOT_TRUE)

    def _staged(self, rule: CompiledPolicyRule, warnings: list[str], staged: list[tuple[str, str, str]]) -> None:
        """A rule under staged rollout (``enforce: warn`` or ``audit``): evaluated and
        reported, never deciding. A match is recorded (the audit log and the metrics
        keep what the rule would have done); a warn rule also adds a warning."""
        applies, why = self._applies(rule, {})
        if not applies:
            return
        staged.append((f"{rule.policy}/{rule.name}", rule.effect.value, rule.enforce.value))
        if rule.enforce is Enforcement.warn:
            warnings.append(f"{rule.policy}/{rule.name} would {rule.effect.value}: {self._reason(rule)}")
            self._note(rule, True, f"{why}; warn only, the decision is unchanged")
        else:
            self._note(rule, True, f"{why}; audit only, the decision is unchanged")

    def _applies(self, rule: CompiledPolicyRule, covered: dict[int, CompiledPolicyRule]) -> tuple[bool, str]:
        """Whether ``rule`` holds for this call, and a few words on why."""
        why = "its tools match"
        if rule.command_patterns is not None and self.line is None:
            self._note(rule, False, "has `commands` patterns, but this tool runs no command line")
            return False, ""
        if rule.when is not None:
            outcome = self.known.get(id(rule)) or self._direct(rule) or rule.when.evaluate(self._activation())
            if outcome.error is not None:
                if rule.effect is Effect.allow or rule.on_error is FailurePolicy.ignore:
                    self._note(rule, False, "`when` could not be evaluated; counted as not matching", outcome.error)
                    return False, ""
                why = f"its condition could not be evaluated ({outcome.error}); counted as matching"
            elif not outcome.is_true:
                self._note(rule, False, "`when` is false")
                return False, ""
            else:
                why = "`when` is true"
        line = self.line
        if rule.command_patterns is None:
            if rule.effect is Effect.allow and line is not None and (blocked := line.unjudged) is not None:
                self._note(rule, False, f"{blocked}, so no allow rule covers the line")
                return False, ""
            return True, why
        assert line is not None  # noqa: S101 - checked above; narrows the type
        if rule.effect is Effect.allow:
            if not line.certain:
                self._note(
                    rule,
                    False,
                    f"the command line cannot be judged with certainty ({line.problem}), so allow rules cover none "
                    "of it",
                )
                return False, ""
            patterns = rule.command_patterns
            matches = patterns.matches
            hits = [i for i, argv in line.own_plain if matches(argv)]
            if line.own_guarded:
                hits += [i for i, command in line.own_guarded if patterns.covers(command)]
            for index in hits:
                covered.setdefault(index, rule)
            if not hits:
                self._note(rule, False, "no command of the line is covered by its patterns")
                return False, ""
            return True, f"it allows {_quote_commands(line.commands[i].argv for i in hits)}"
        matches = rule.command_patterns.matches
        hits = [i for i, command in enumerate(line.commands) if matches(command.argv)]
        if hits:
            return True, f"{_quote_commands(line.commands[i].argv for i in hits)} matches its command patterns"
        if not line.certain:
            return True, f"the command line cannot be judged with certainty ({line.problem}); counted as matching"
        self._note(rule, False, "no command of the line matches its patterns")
        return False, ""

    def _allowed(
        self, blanket: list[tuple[CompiledPolicyRule, str]], covered: dict[int, CompiledPolicyRule]
    ) -> tuple[CompiledPolicyRule, str, tuple[CompiledPolicyRule, ...]] | None:
        """The allow that lets the call run, if any: (the rule to name, the reason, every
        rule it rests on). A rule without command patterns allows it outright;
        command rules must cover every command together."""
        if blanket:
            rule = blanket[0][0]
            return rule, self._reason(rule), (rule,)
        line = self.line
        if (
            line is None
            or not line.certain
            or not line.commands
            or any(c.own and i not in covered for i, c in enumerate(line.commands))
        ):
            return None
        deciders = tuple(dict.fromkeys(covered.values()))
        names = ", ".join(f"{r.policy}/{r.name}" for r in deciders)
        return covered[min(covered)], f"every command of the line is allowed ({names})", deciders

    def _uncovered(self, covered: dict[int, CompiledPolicyRule]) -> str:
        line = self.line
        assert line is not None  # noqa: S101 - only called for command-line tools
        if not line.certain:
            return f"the command line cannot be judged command by command ({line.problem})"
        missing = [command for i, command in enumerate(line.commands) if command.own and i not in covered]
        if not missing:
            return "the command line is empty"
        notes = list(dict.fromkeys(note for command in missing for note in command.notes))
        why = f" ({'; '.join(notes[:3])}{' ...' if len(notes) > 3 else ''})" if notes else ""
        return f"no allow rule covers {_quote_commands(c.argv for c in missing)}{why}"

    def _explained(self, rule: CompiledPolicyRule, why: str) -> str:
        reason = self._reason(rule)
        if rule.command_patterns is not None or "could not be evaluated" in why:
            return f"{reason} ({why})"
        return reason

    def _reason(self, rule: CompiledPolicyRule) -> str:
        if rule.reason_program is not None:
            outcome = rule.reason_program.evaluate(self._activation())
            if outcome.error is None and isinstance(outcome.value, str):
                return outcome.value
        return _static_reason(rule)


def _mode_default(tool: CompiledTool, session: Session) -> Decision:
    mode = session.mode
    if mode == "plan" and not tool.spec.read_only:
        return Decision("deny", reason=_PLAN_DENIAL)
    if tool.spec.risk is Risk.critical:  # even in bypass mode: only an allow rule naming it skips the person
        return Decision(
            "ask",
            reason=f"`{tool.name}` is a critical-risk tool; a person approves each call unless an allow rule names it",
        )
    if tool.spec.read_only:
        return _READ_ONLY
    if mode == "bypass":
        return Decision("allow", reason="the session is in bypass mode")
    if mode == "accept_edits" and tool.spec.edits_workspace:
        return Decision("allow", reason="the session accepts workspace edits (accept_edits mode)")
    return Decision("ask", reason=f"`{tool.name}` can change things, so a person approves each call")


def _forbidden_mode(snapshot: Snapshot, mode: str) -> Decision | None:
    for policy in snapshot.policies:
        if any(m.value == mode for m in policy.spec.forbidden_modes):
            return Decision(
                "deny",
                rule=policy.name,
                reason=(
                    f"permission mode `{mode}` is not allowed by policy `{policy.name}`; start the session in "
                    "another mode"
                ),
            )
    return None


def _quote_commands(commands: Any) -> str:
    quoted = [f"`{' '.join(argv)[:120]}`" for argv in commands]
    return ", ".join(quoted[:5]) + (f" and {len(quoted) - 5} more" if len(quoted) > 5 else "")


def _quote_words(words: Sequence[str]) -> str:
    shown = [f"`{word[:80]}`" for word in words[:3]]
    return ", ".join(shown) + (f" and {len(words) - 3} more" if len(words) > 3 else "")
