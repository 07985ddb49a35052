"""What CEL expressions see for one call, and the engine activation built from it.

Business rules (stage 03, validate) and policy conditions (stage 04, permit) read the
same variables, so one activation serves both: validate builds it when a rule needs
the engine and hands it on in the :class:`~runtime.records.ValidatedCall`; permit uses
it instead of building another (converting the arguments to CEL values is most of an
evaluation's cost). Only a command-line tool's conditions see more (``commands``, the
line as placed in the workspace), so permit builds its own activation for those.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from runtime.policy.cel import POLICY_VARIABLES, get_engine, known_plain

if TYPE_CHECKING:
    from runtime.policy.placed import PlacedLine
    from runtime.records import Call, Session
    from runtime.snapshot import CompiledTool


def cel_data(
    call: Call, tool: CompiledTool, args: Mapping[str, Any], session: Session, variables: Collection[str]
) -> dict[str, Any]:
    """What CEL expressions see as ``args``, ``tool``, ``session`` and ``call``; only
    the ``variables`` asked for are built."""
    data: dict[str, Any] = {}
    if "args" in variables:
        data["args"] = dict(args)
    if "tool" in variables:
        data["tool"] = _copy(tool.attributes)
    if "session" in variables:
        data["session"] = session_view(session)
    if "call" in variables:
        data["call"] = {"id": call.id, "index": call.index}
    return data


def session_view(session: Session) -> dict[str, Any]:
    """What CEL expressions see as ``session``."""
    return {"id": session.id, "user": session.user or "", "mode": session.mode, "labels": dict(session.labels)}


def call_activation(
    engine_name: str,
    call: Call,
    tool: CompiledTool,
    args: Mapping[str, Any],
    session: Session,
    line: PlacedLine | None = None,
    *,
    args_plain: bool = False,
) -> Any:
    """The activation every CEL expression of this call is evaluated against: all the
    variables a policy condition may read (``commands`` from ``line``; empty without one),
    which covers those of the business rules too. ``args_plain``: the caller has already
    found ``args`` made of plain JSON values only (the closures need not walk it again)."""
    # Every variable, built inline: what cel_data builds for POLICY_VARIABLES, without its
    # membership tests (this runs once for every call whose rules need CEL).
    data = {
        "args": dict(args),
        "tool": _copy(tool.attributes),
        "session": session_view(session),
        "call": {"id": call.id, "index": call.index},
        "commands": [list(command.argv) for command in line.commands] if line is not None else [],
    }
    activation = get_engine(engine_name).activation(data, POLICY_VARIABLES)
    if args_plain:
        known_plain(activation, "args")
    return activation


def _copy(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict of ``mapping``; a read-only view copies its dict in one step (dict()
    of it goes key by key, several times slower)."""
    if type(mapping) is MappingProxyType:
        return mapping.copy()  # type: ignore[return-value]  # the snapshot's views are over dicts
    return dict(mapping)
