"""Running ``PolicyTest`` cases: lookup, validation and the permission decision, nothing executed."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.config.problems import Location
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.decision import PolicyPermitter
from runtime.records import Call, Session, ToolResult
from runtime.snapshot import PolicyTestEntry, Snapshot


@dataclass(frozen=True, slots=True)
class CaseResult:
    suite: str
    name: str
    passed: bool
    detail: str  # what happened, in words
    location: Location


def run_policy_tests(snapshot: Snapshot) -> list[CaseResult]:
    """Every PolicyTest case of ``snapshot``, in order."""
    permitter = PolicyPermitter()
    return [_run(entry, snapshot, permitter) for entry in snapshot.policy_tests]


def _run(entry: PolicyTestEntry, snapshot: Snapshot, permitter: PolicyPermitter) -> CaseResult:
    case = entry.case
    session = Session(
        id=case.session.id, user=case.session.user, mode=case.session.mode.value, labels=dict(case.session.labels)
    )
    expect = case.expect

    def result(passed: bool, detail: str) -> CaseResult:
        return CaseResult(entry.suite, case.name, passed, detail, entry.source)

    bound = lookup(Call("policy-test", case.tool, case.args), snapshot)
    if isinstance(bound, ToolResult):
        return result(False, bound.content)
    validated = validate(bound, session, snapshot)
    if isinstance(validated, ToolResult):
        if expect.validation_error:
            return result(True, "validation error, as expected")
        return result(False, f"expected a decision, got a validation error: {validated.content}")
    if expect.validation_error:
        return result(False, "expected a validation error, but the arguments are valid")
    decision = permitter.decide(validated, session, snapshot)
    got = f"{decision.effect}" + (
        f" by rule `{decision.rule}`" if decision.rule else f" (the default of the `{session.mode}` mode)"
    )
    if expect.decision is not None and decision.effect != expect.decision.value:
        return result(False, f"expected {expect.decision.value}, got {got}: {decision.reason}")
    if expect.rule is not None and (decision.rule is None or decision.rule.rsplit("/", 1)[-1] != expect.rule):
        return result(False, f"expected rule `{expect.rule}`, got {got}")
    return result(True, got)
