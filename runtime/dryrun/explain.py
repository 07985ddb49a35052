"""``toolrt explain``: a dry run through lookup, validation and permission.

Shows every schema error, every business rule with its value, the command line as
policy rules see it, every policy rule considered (and whether it matched), and the
final decision. Nothing executes; quotas and circuit breakers depend on live state
and are not evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from runtime.adapters.arguments import MAX_DEPTH
from runtime.config.models import FailurePolicy
from runtime.execution.proclimit import describe_limit
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import scan_arguments
from runtime.policy.cel import RULE_VARIABLES, get_engine
from runtime.policy.celdata import cel_data
from runtime.policy.decision import RuleTrace, command_line_of, decide
from runtime.policy.placed import NOWHERE, Where
from runtime.records import BoundCall, Call, Session, ToolResult, ValidatedCall
from runtime.snapshot import Snapshot


@dataclass(slots=True)
class RuleCheck:
    """One business rule of the tool, evaluated."""

    name: str
    expression: str
    value: Any
    passed: bool
    error: str | None = None


@dataclass(slots=True)
class Explanation:
    """Everything the dry run found, stage by stage."""

    tool: str
    found: bool
    lookup: str
    schema_errors: list[dict[str, str]] = field(default_factory=list)
    rules: list[RuleCheck] = field(default_factory=list)
    commands: list[list[str]] | None = None
    command_problem: str | None = None
    command_notes: list[str] = field(default_factory=list)  # the words and options no wildcard allow covers, and why
    policy: list[RuleTrace] = field(default_factory=list)
    other_rules: int = 0
    decision: str | None = None
    decision_rule: str | None = None
    reason: str | None = None
    stopped_at: str | None = None  # the stage that would end the call before execution
    limits: str | None = None  # a command's ceiling of processes, and what enforces it on this machine

    def to_dict(self) -> dict[str, Any]:
        """The explanation as JSON-ready data."""
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str)

    def to_text(self) -> str:
        """The explanation for a person at a terminal."""
        lines = [f"lookup    {self.lookup}"]
        if not self.found:
            return "\n".join([*lines, "result    stops at lookup: the call would get an error result"])
        if self.schema_errors:
            lines += [f"schema    {e['pointer'] or '/'}: {e['message']}" for e in self.schema_errors]
        else:
            lines.append("schema    ok")
        for rule in self.rules:
            state = "pass" if rule.passed else "FAIL"
            value = f"error: {rule.error}" if rule.error else json.dumps(rule.value, default=str)
            lines.append(f"rule      {state}  {rule.name}: {rule.expression}  => {value}")
        if self.commands is not None:
            shown = "; ".join(" ".join(argv) for argv in self.commands) or "(none)"
            lines.append(
                f"commands  {shown}" + (f"  [uncertain: {self.command_problem}]" if self.command_problem else "")
            )
            lines += [f"word      {note}" for note in self.command_notes]
        for trace in self.policy:
            mark = "match" if trace.matched else "skip "
            extra = f" (enforce: {trace.enforce})" if trace.enforce != "deny" else ""
            lines.append(
                f"policy    {mark}  {trace.effect:<5} {trace.rule}{extra}: {trace.note}"
                + (f" [error: {trace.error}]" if trace.error else "")
            )
        if self.other_rules:
            lines.append(f"policy    {self.other_rules} other rule(s) do not name this tool and cost nothing")
        if self.limits:
            lines.append(f"limits    {self.limits}")
        if self.stopped_at:
            lines.append(f"result    stops at {self.stopped_at}: the call would get an error result")
        else:
            by = f" by `{self.decision_rule}`" if self.decision_rule else " (mode default)"
            lines.append(f"decision  {str(self.decision).upper()}{by}: {self.reason}")
        return "\n".join(lines)


def explain(
    snapshot: Snapshot,
    name: str,
    args: Mapping[str, Any] | None,
    session: Session,
    where: Where = NOWHERE,
    *,
    max_processes: int | None = None,
) -> Explanation:
    """Dry-run ``name(args)`` for ``session`` against ``snapshot``; command lines are
    placed in ``where`` (its workspace expands globs and places paths). With
    ``max_processes`` (the ``command_max_processes`` setting), a tool that runs a
    process says its ceiling and what enforces it here."""
    call = Call(
        "explain",
        name,
        dict(args) if isinstance(args, Mapping) else None,
        parse_error=None if isinstance(args, Mapping) else "arguments must be a JSON object",
    )
    bound = lookup(call, snapshot)
    if isinstance(bound, ToolResult):
        return Explanation(tool=name, found=False, lookup=bound.content, stopped_at="lookup")
    tool = bound.tool
    handler = tool.handler
    runs_process = (
        handler.kind == "command"
        or (handler.kind == "builtin" and handler.target == "run_command")
        or (handler.kind == "python" and tool.spec.process_isolation)
    )
    found = Explanation(
        tool=tool.key,
        found=True,
        lookup=(
            f"`{tool.key}` ({tool.handler.kind} handler, read_only={str(tool.spec.read_only).lower()}, "
            f"risk={tool.spec.risk.value}) from {tool.source}"
        ),
        limits=describe_limit(max_processes) if runs_process and max_processes is not None else None,
    )
    if call.args is None:
        found.schema_errors.append({"pointer": "", "message": call.parse_error or "no arguments"})
        found.stopped_at = "validate"
        return found
    too_deep, huge = scan_arguments(call.args, MAX_DEPTH)
    if too_deep or huge:  # the same refusals the pipeline makes before any validator runs
        found.schema_errors.append(
            {
                "pointer": "",
                "message": f"nested deeper than {MAX_DEPTH} levels"
                if too_deep
                else "an integer beyond the 64-bit range (send large numbers as strings)",
            }
        )
        found.stopped_at = "validate"
        return found
    problems = tool.arguments.validate(call.args)
    found.schema_errors = [{"pointer": p.pointer, "message": p.message} for p in problems]
    filled = {**tool.defaults, **call.args}
    found.rules = _rule_checks(bound, filled, session, snapshot) if not problems else []
    if problems or any(not r.passed for r in found.rules):
        found.stopped_at = "validate"
        return found
    validated = ValidatedCall(call, tool, filled)
    line = command_line_of(validated, where)
    if line is not None:
        found.commands = [list(command.argv) for command in line.commands]
        found.command_problem = line.problem
        found.command_notes = list(dict.fromkeys(note for command in line.commands for note in command.notes))
        if line.protected:
            found.command_notes.append(line.protected)
    decision = decide(validated, session, snapshot, found.policy, where=where)
    considered = snapshot.rule_index.get(tool.key, ())
    found.other_rules = len(snapshot.policy_rules) - len(considered)
    found.decision, found.decision_rule, found.reason = decision.effect, decision.rule, decision.reason
    return found


def _rule_checks(bound: BoundCall, args: Mapping[str, Any], session: Session, snapshot: Snapshot) -> list[RuleCheck]:
    tool, call = bound.tool, bound.call
    data = cel_data(call, tool, args, session, RULE_VARIABLES)
    activation = get_engine(snapshot.cel_engine).activation(data, RULE_VARIABLES)
    checks = []
    for rule in tool.rules:
        outcome = rule.program.evaluate(activation)
        if outcome.error is not None:
            checks.append(RuleCheck(rule.name, rule.source, None, rule.on_error is FailurePolicy.ignore, outcome.error))
        else:
            checks.append(RuleCheck(rule.name, rule.source, _plain(outcome.value), outcome.is_true))
    return checks


def _plain(value: Any) -> Any:
    """A CEL value as plain JSON-able data."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)
