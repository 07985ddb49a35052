"""Stage 04, permit: may this validated call run, and may it run now?

:func:`permit` is the whole stage, in this order:

1. **decide**: the turn's :class:`Permitter` (by default
   :class:`runtime.policy.decision.PolicyPermitter`, from the snapshot's Policy
   documents and the session's mode) says allow, ask or deny. A plain allow (the
   common case) goes straight to 5.
2. **ask** (:func:`settle`): deny becomes an error result; ask is first checked against
   the session's grants ("allow for this session" answers given earlier), then put to
   the :class:`Approver` (with no approver, or none in time, asking means no).
3. **re-judge**: arguments an approver edited are validated and judged again; a deny
   still wins.
4. **grant**: an approval "for this session" is recorded once the call is accepted.
5. **admit**: quotas and circuit breakers (:class:`runtime.policy.limits.Limits`).

The stage returns one :class:`Permit` (or an error result). The permit holds the
admission, and is told how the call ended (:meth:`Permit.settle`) or that it was cut
short (:meth:`Permit.abandon`), which gives back its slots and counts what it spent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from runtime.codes import ResultCode

# re-exported: the app-facing contracts live below this stage and the turn environment that carries them
from runtime.pipeline.approval import Approval as Approval
from runtime.pipeline.approval import Approver as Approver
from runtime.pipeline.approval import Permitter as Permitter
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.grants import SessionGrants, describe
from runtime.policy.limits import Admission, Refusal
from runtime.records import (
    BoundCall,
    Call,
    Decision,
    HandlerOutcome,
    Session,
    Stage,
    Status,
    ToolResult,
    ValidatedCall,
    error_result,
)
from runtime.snapshot import Snapshot

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv


@dataclass(slots=True)
class Permit:
    """Stage 04's record: the decision, the call that runs (the model's, or the one an
    approver edited and the stage judged again), and its admission under the limits."""

    decision: Decision
    call: ValidatedCall
    admission: Admission | None = None

    @property
    def edited(self) -> bool:
        """Whether an approver replaced the model's arguments."""
        return self.decision.edited_args is not None

    def metadata(self) -> dict[str, Any]:
        """What the result's metadata says about the decision."""
        decision = self.decision
        metadata: dict[str, Any] = {"decision": decision.effect}
        if decision.rule:
            metadata["rule"] = decision.rule
        if decision.approved:
            metadata["approved"] = decision.approved  # an ask, settled by a person or an earlier session grant
        if decision.warnings:
            metadata["warnings"] = decision.warnings
        if decision.staged:
            metadata["staged"] = decision.staged  # staged rules that matched: the audit log and metrics keep them
        if decision.edited_args is not None:
            metadata["arguments_edited_by_approver"] = True
        return metadata

    def abandon(self, seconds: float) -> None:
        """The call was cut short (cancelled, or shaping failed): give back its admission."""
        if self.admission is not None:
            self.admission.finish(seconds=seconds, failed=True)

    def settle(self, outcome: HandlerOutcome, result: ToolResult, env: TurnEnv, started: float, ended: float) -> None:
        """The call ran (``started`` to ``ended``, perf_counter seconds) and was shaped into
        ``result``: count what it spent. A command left running in the background is
        counted when it ends."""
        admission = self.admission
        if admission is None:
            return
        job = (
            env.jobs.get(outcome.metadata.get("job_id", ""))
            if outcome.status is Status.background and env.jobs is not None
            else None
        )
        if job is not None:
            # Still running in the background: its slot and seconds are counted when it ends.
            job.task.add_done_callback(lambda _task: admission.finish(seconds=time.perf_counter() - started))
            return
        admission.finish(
            seconds=ended - started,
            output_bytes=len(result.content.encode("utf-8", "surrogatepass")),
            failed=outcome.is_error,
            counts_for_breaker=_counts_for_breaker(outcome),
        )


async def permit(validated: ValidatedCall, env: TurnEnv) -> Permit | ToolResult:
    """Stage 04 (see the module docstring): the :class:`Permit` to run, or the error
    result that ends the call (unredacted: the pipeline redacts every error alike)."""
    verdict = env.permitter.decide(validated, env.session, env.snapshot)
    decision = verdict
    if verdict.effect != "allow":  # allow (the common case) needs no await
        settled = await settle(validated, env.session, verdict, env.approver, env.approval_timeout_s, env.grants)
        if isinstance(settled, ToolResult):
            return settled
        decision = settled
        if decision.edited_args is not None:
            edited = _judge_edited(validated, decision, env)
            if isinstance(edited, ToolResult):
                return edited
            validated = edited
        if decision.grant is not None and env.grants is not None:
            env.grants.add(env.session.id, validated, decision.grant or None, rule=verdict.rule)
    if not env.limits:  # quotas and circuit breakers: only when some Policy declares them
        return Permit(decision, validated)
    admission = env.limits.admit(validated.tool.name, env.session.id)
    if isinstance(admission, Refusal):
        return error_result(
            validated.call,
            Status.denied,
            _REFUSAL_CODES[admission.kind],
            Stage.permit,
            admission.message,
            limit=admission.quota,
        )
    return Permit(decision, validated, admission)


_REFUSAL_CODES = {
    "breaker": ResultCode.circuit_open,
    "quota": ResultCode.quota_exceeded,
    "store": ResultCode.limit_store_unavailable,
}
_BREAKER_CODES = frozenset(
    {ResultCode.timeout, ResultCode.handler_crashed, ResultCode.handler_error, ResultCode.spawn_failed}
)


def _counts_for_breaker(outcome: HandlerOutcome) -> bool:
    """Timeouts, crashes and transient errors count toward a circuit breaker; a tool
    that answers with an error on purpose ("ticket not found") is working fine."""
    if not outcome.is_error:
        return False
    return outcome.code in _BREAKER_CODES or outcome.status is Status.unknown or bool(outcome.metadata.get("transient"))


def _judge_edited(validated: ValidatedCall, approval: Decision, env: TurnEnv) -> ValidatedCall | ToolResult:
    """Arguments an approver edited: validated and judged like the model's own. A person
    approved them, so an ask stands approved; a deny still wins."""
    call = validated.call
    edited = Call(call.id, call.name, dict(approval.edited_args or {}), call.index)
    revalidated = validate(BoundCall(edited, validated.tool), env.session, env.snapshot)
    if isinstance(revalidated, ToolResult):
        return error_result(
            call,
            revalidated.status,
            revalidated.code or ResultCode.invalid_arguments,
            Stage.permit,
            f"The approver's edited arguments were not accepted, so the call was not run. {revalidated.content}",
        )
    verdict = env.permitter.decide(revalidated, env.session, env.snapshot)
    if verdict.effect == "deny":
        rule = f" (rule `{verdict.rule}`)" if verdict.rule else ""
        return error_result(
            call,
            Status.denied,
            ResultCode.denied,
            Stage.permit,
            f"Permission denied for `{call.name}` with the approver's edited arguments{rule}: {verdict.reason}.",
            decision="deny",
            rule=verdict.rule,
        )
    return revalidated


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
                staged=decision.staged,
            )
    if approver is None:
        return _denied(
            call,
            decision,
            (
                f"{decision.reason or 'this call needs approval'}; no approver is available in this session, so it "
                "was not run"
            ),
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
        staged=decision.staged,
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
    message = f"Permission denied for `{call.tool.name}`{rule}: {why.rstrip('.')}."
    if decision.staged:
        return error_result(
            call.call,
            Status.denied,
            ResultCode.denied,
            Stage.permit,
            message,
            decision=decision.effect,
            rule=decision.rule,
            staged=decision.staged,
        )
    return error_result(
        call.call, Status.denied, ResultCode.denied, Stage.permit, message, decision=decision.effect, rule=decision.rule
    )
