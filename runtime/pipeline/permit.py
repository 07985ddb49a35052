"""Stage 04, permit: may this validated call run?

The pipeline asks the turn's :class:`Permitter` (by default
:class:`runtime.policy.decision.PolicyPermitter`, which decides from the snapshot's
Policy documents and the session's mode); a plain allow goes straight on, anything
else goes to :func:`settle`: deny becomes an error result, ask is first checked
against the session's grants ("allow for this session" answers given earlier) and
then goes to the :class:`Approver` (with no approver, or none in time, asking means
no). An approver may edit the arguments; the pipeline validates and judges the
edited call again before it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, Protocol

from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.grants import SessionGrants, describe
from runtime.records import Call, Decision, Session, Stage, Status, ToolResult, ValidatedCall, error_result
from runtime.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Approval:
    """An approver's answer.

    ``args``: run with these arguments instead (they are validated and judged again).
    ``scope="session"``: allow this tool for the rest of the session without asking,
    for calls whose arguments match ``pattern`` (argument name -> glob) when given.
    ``asked=False``: no one could be asked (e.g. the client cannot show a question);
    the call is denied with ``reason`` alone, not reported as declined by a person.
    """

    approved: bool
    reason: str | None = None
    args: Mapping[str, Any] | None = None
    scope: Literal["once", "session"] = "once"
    pattern: Mapping[str, str] | None = None
    asked: bool = True


class Approver(Protocol):
    """Asked about calls whose decision is ``ask``; supplied by the embedding app."""

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval: ...


class Permitter(Protocol):
    """Decides allow / ask / deny for one validated call."""

    def decide(self, call: ValidatedCall, session: Session, snapshot: Snapshot) -> Decision: ...


async def settle(
    call: ValidatedCall,
    session: Session,
    decision: Decision,
    approver: Approver | None,
    approval_timeout_s: float,
    grants: SessionGrants | None = None,
) -> Decision | ToolResult:
    """A decision that is not a plain allow: denied, covered by a session grant, or put
    to the approver. An approval with edited arguments comes back as a Decision whose
    ``edited_args`` the caller must validate and judge again."""
    if decision.effect == "deny":
        return _denied(call, decision, decision.reason or "denied by policy")
    if grants:
        earlier = grants.covering(session.id, call, decision.rule)
        if earlier is not None:
            return Decision(
                "allow",
                rule=decision.rule,
                reason=f"allowed earlier for this session ({describe(earlier.pattern)})",
                warnings=decision.warnings,
                approved="session-grant",
            )
    if approver is None:
        return _denied(
            call,
            decision,
            f"{decision.reason or 'this call needs approval'}; no approver is available in this session, so it was not run",
        )
    try:
        async with asyncio.timeout(approval_timeout_s):
            answer = await approver(call, session, decision)
    except TimeoutError:
        return _denied(
            call, decision, f"approval did not arrive within {approval_timeout_s:g} s, so the call was not run"
        )
    except Exception as err:  # noqa: BLE001 - a broken approver must not crash the turn; it counts as no
        return _denied(call, decision, f"the approver failed ({type(err).__name__}), so the call was not run")
    if not isinstance(answer, Approval):
        return _denied(
            call, decision, f"the approver gave no clear answer ({type(answer).__name__}), so the call was not run"
        )
    if not answer.approved and not answer.asked:
        return _denied(call, decision, answer.reason or "no one could be asked, so it was not run")
    if not answer.approved:
        return _denied(call, decision, f"a person declined this call{': ' + answer.reason if answer.reason else ''}")
    if answer.args is not None and not isinstance(answer.args, Mapping):
        return _denied(call, decision, "the approver's edited arguments are not an object, so the call was not run")
    if answer.pattern is not None and not (
        isinstance(answer.pattern, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in answer.pattern.items())
    ):
        return _denied(
            call,
            decision,
            "the approver's session pattern is not a mapping of argument names to globs, so the call was not run",
        )
    # The grant itself is recorded by the pipeline once the call (edited or not) is accepted.
    grant = MappingProxyType(dict(answer.pattern or {})) if answer.scope == "session" else None
    return Decision(
        "allow",
        rule=decision.rule,
        reason=answer.reason or "approved",
        warnings=decision.warnings,
        edited_args=answer.args,
        grant=grant,
        approved="approver",
    )


def would_ask(
    call: Call, session: Session, snapshot: Snapshot, permitter: Permitter, grants: SessionGrants | None = None
) -> bool:
    """Whether ``call`` would reach the approver: found, valid, judged ``ask``, and not
    covered by a session grant. Runs lookup, validate and the permitter only (nothing
    executes, no quota is counted); any failure on the way means no question is asked."""
    if call.parse_error is not None:
        return False
    bound = lookup(call, snapshot)
    if isinstance(bound, ToolResult):
        return False
    validated = validate(bound, session, snapshot)
    if isinstance(validated, ToolResult):
        return False
    decision = permitter.decide(validated, session, snapshot)
    if decision.effect != "ask":
        return False
    return not (grants and grants.covering(session.id, validated, decision.rule) is not None)


def _denied(call: ValidatedCall, decision: Decision, why: str) -> ToolResult:
    rule = f" (rule `{decision.rule}`)" if decision.rule else ""
    return error_result(
        call.call,
        Status.denied,
        "denied",
        Stage.permit,
        f"Permission denied for `{call.tool.name}`{rule}: {why.rstrip('.')}.",
        decision=decision.effect,
        rule=decision.rule,
    )
