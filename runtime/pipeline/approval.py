"""What the embedding app supplies to stage 04 (permit): a :class:`Permitter` that decides, an :class:`Approver` that
is asked, and the :class:`Approval` it answers with.

Their own module so that the turn's environment (:mod:`runtime.pipeline.env`, which carries them) and the stage
(:mod:`runtime.pipeline.permit`, which reads the environment and re-exports these names) do not import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from runtime.records import Decision, Session, ValidatedCall
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
