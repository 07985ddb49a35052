"""Stage 04, permit: may this validated call run?

The pipeline asks the turn's :class:`Permitter` (by default
:class:`runtime.policy.decision.PolicyPermitter`, which decides from the snapshot's
Policy documents and the session's mode); a plain allow goes straight on, anything
else goes to :func:`settle`: deny becomes an error result, ask goes to the
:class:`Approver` (with no approver, or none in time, asking means no).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from runtime.records import Decision, Session, Stage, Status, ToolResult, ValidatedCall, error_result
from runtime.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Approval:
    """An approver's answer."""

    approved: bool
    reason: str | None = None


class Approver(Protocol):
    """Asked about calls whose decision is ``ask``; supplied by the embedding app."""

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval: ...


class Permitter(Protocol):
    """Decides allow / ask / deny for one validated call."""

    def decide(self, call: ValidatedCall, session: Session, snapshot: Snapshot) -> Decision: ...


async def settle(call: ValidatedCall, session: Session, decision: Decision, approver: Approver | None, approval_timeout_s: float) -> Decision | ToolResult:
    """A decision that is not a plain allow: denied, or put to the approver."""
    if decision.effect == "deny":
        return _denied(call, decision, decision.reason or "denied by policy")
    if approver is None:
        return _denied(call, decision, f"{decision.reason or 'this call needs approval'}; no approver is available in this session, so it was not run")
    try:
        async with asyncio.timeout(approval_timeout_s):
            answer = await approver(call, session, decision)
    except TimeoutError:
        return _denied(call, decision, f"approval did not arrive within {approval_timeout_s:g} s, so the call was not run")
    except Exception as err:  # noqa: BLE001 - a broken approver must not crash the turn; it counts as no
        return _denied(call, decision, f"the approver failed ({type(err).__name__}), so the call was not run")
    if not isinstance(answer, Approval):
        return _denied(call, decision, f"the approver gave no clear answer ({type(answer).__name__}), so the call was not run")
    if not answer.approved:
        return _denied(call, decision, f"a person declined this call{': ' + answer.reason if answer.reason else ''}")
    return Decision("allow", rule=decision.rule, reason=answer.reason or "approved")


def _denied(call: ValidatedCall, decision: Decision, why: str) -> ToolResult:
    rule = f" (rule `{decision.rule}`)" if decision.rule else ""
    return error_result(call.call, Status.denied, "denied", Stage.permit, f"Permission denied for `{call.tool.name}`{rule}: {why}.", decision=decision.effect, rule=decision.rule)
