"""The typed records that carry one call through the pipeline.

Progress is carried by types, so that execution cannot be reached with unvalidated
arguments::

    Call -> BoundCall -> ValidatedCall -> (Decision) -> HandlerOutcome -> ToolResult

Every stage returns either the next record or a :class:`ToolResult` (an error result);
a ToolResult is the only way out of the pipeline.

The records handed to the app (Call, Session, ToolResult) are frozen. The ones that
live only inside one call (BoundCall, ValidatedCall, Decision, HandlerOutcome) are never
changed after they are made but are not frozen: a frozen dataclass costs about a
microsecond more to build, and four of them are built for every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.snapshot import CompiledTool

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Stage(str, Enum):
    """The seven stages, in order."""

    parse = "parse"
    lookup = "lookup"
    validate = "validate"
    permit = "permit"
    execute = "execute"
    shape = "shape"
    respond = "respond"


class Status(str, Enum):
    """How a call ended. Everything but ``ok`` is an error result (``is_error``)."""

    ok = "ok"
    error = "error"  # the tool ran and failed
    invalid = "invalid"  # bad JSON, unknown tool, schema or rule violation
    denied = "denied"  # permission stage said no
    timeout = "timeout"
    unknown = "unknown"  # a write whose effect is unknown (timed out, crashed, still running)
    not_executed = "not_executed"  # skipped: duplicate id, interrupted, stop_on_error, turn deadline
    background = "background"  # kept running in the background; poll the handle
    internal = "internal"  # a bug in toolrt, contained


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as the model made it. ``args`` is None when they could not be parsed."""

    id: str
    name: str
    args: Mapping[str, Any] | None
    index: int = 0  # position in the turn
    raw_arguments: str | None = None  # the provider's argument string, when it sent one
    parse_error: str | None = None


# Call's own __init__, for the reason ToolResult has one (below): a parser builds one for
# every call. ``tests/test_records_fast_init.py`` holds it beside the generated one.
_GENERATED_CALL_INIT = Call.__init__
_set_id, _set_call_name, _set_args, _set_index, _set_raw, _set_parse_error = (
    getattr(Call, name).__set__ for name in ("id", "name", "args", "index", "raw_arguments", "parse_error")
)


def _call_init(
    self: Call,
    id: str,  # noqa: A002 - the field's name
    name: str,
    args: Mapping[str, Any] | None,
    index: int = 0,
    raw_arguments: str | None = None,
    parse_error: str | None = None,
) -> None:
    _set_id(self, id)
    _set_call_name(self, name)
    _set_args(self, args)
    _set_index(self, index)
    _set_raw(self, raw_arguments)
    _set_parse_error(self, parse_error)


_call_init.__qualname__ = "Call.__init__"
_call_init.__doc__ = _GENERATED_CALL_INIT.__doc__
Call.__init__ = _call_init  # type: ignore[method-assign]


class _CallSlots:
    """Call's slots without its frozen ``__setattr__``: what :func:`new_call` fills."""

    __slots__ = Call.__slots__  # the same names in the same order: required for the class change
    id: str
    name: str
    args: Mapping[str, Any] | None
    index: int
    raw_arguments: str | None
    parse_error: str | None


_new_object = object.__new__


def new_call(
    id: str,  # noqa: A002 - the field's name
    name: str,
    args: Mapping[str, Any] | None,
    index: int,
    raw_arguments: str | None,
    parse_error: str | None,
) -> Call:
    """``Call(id, name, args, index, raw_arguments, parse_error)``, built in about a
    sixth of the instructions, for the provider parsers (one per call of every turn).

    Even the slot initializer above stores through a descriptor call per field (a
    wrapper call with an argument tuple each). Here the fields are stored as plain
    attributes of a :class:`_CallSlots` (a store the interpreter specializes for
    slots), and the object then becomes a Call: ``__class__`` assignment between two
    classes with the same slots is allowed and changes nothing else. From then on it is
    a Call like any other, frozen; ``tests/test_records_fast_init.py`` holds it to
    ``Call(...)``."""
    call = _new_object(_CallSlots)
    call.id = id
    call.name = name
    call.args = args
    call.index = index
    call.raw_arguments = raw_arguments
    call.parse_error = parse_error
    call.__class__ = Call  # type: ignore[assignment]
    return call  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Session:
    """Who the calls are made for. ``mode`` is a permission mode name."""

    id: str = "default"
    user: str | None = None
    mode: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    pins: Mapping[str, str] = field(default_factory=dict)  # tool name -> the version this session must use


@dataclass(slots=True)
class BoundCall:
    call: Call
    tool: CompiledTool


@dataclass(slots=True)
class ValidatedCall:
    """A call whose arguments passed the schema and every business rule."""

    call: Call
    tool: CompiledTool
    args: Mapping[str, Any]
    # The CEL activation the business rules were evaluated against, when it also holds
    # what the policy conditions read (runtime.policy.celdata): permit reuses it.
    activation: Any = None


@dataclass(slots=True)
class Decision:
    """The permission stage's verdict and why."""

    effect: str  # allow | ask | deny
    rule: str | None = None
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    edited_args: Mapping[str, Any] | None = None  # an approver's replacement arguments, not yet validated
    grant: Mapping[str, str] | None = (
        None  # the approver allowed this for the session (the argument pattern; empty: any)
    )
    approved: str | None = None  # how an ask was settled: "approver" or "session-grant"
    #: Rules under staged rollout (``enforce: warn`` or ``audit``) that matched: what each
    #: would have done, as ``(policy/rule, effect, enforce)``. They never change the decision.
    staged: tuple[tuple[str, str, str], ...] = ()


@dataclass(slots=True)
class HandlerOutcome:
    """What a handler produced: a value (success) or an error text, before shaping."""

    value: Any = None
    error: str | None = None
    status: Status = Status.ok
    code: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def is_error(self) -> bool:
        return self.status is not Status.ok and self.status is not Status.background


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Exactly one per call: the text the model reads, and where it came from.

    ``metadata`` carries provenance: snapshot version, decision, per-stage timings,
    redactions by kind (never values), truncation and artifact details.
    """

    call_id: str
    name: str
    content: str
    status: Status = Status.ok
    code: str | None = None
    stage: Stage | None = None
    structured: Any = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def is_error(self) -> bool:
        return self.status is not Status.ok and self.status is not Status.background


# ToolResult's own __init__, in place of the frozen dataclass's: one is built for every
# call, and the generated one sets each of the eight fields through
# ``object.__setattr__`` (a global lookup, an attribute lookup and a by-name search of
# the class per field: about half the cost of the whole construction). The slots' own
# descriptors, bound once here, store straight into the slots. Same signature,
# defaults and resulting object (fields, equality, hash, repr, ``replace``, frozen
# afterwards); ``tests/test_records_fast_init.py`` holds the two side by side.
_GENERATED_INIT = ToolResult.__init__
(
    _set_call_id,
    _set_name,
    _set_content,
    _set_status,
    _set_code,
    _set_stage,
    _set_structured,
    _set_metadata,
) = (
    getattr(ToolResult, name).__set__
    for name in ("call_id", "name", "content", "status", "code", "stage", "structured", "metadata")
)
#: Replaces the metadata of a ToolResult no one else holds yet (see runtime.pipeline._finish).
set_metadata = _set_metadata


def _init(
    self: ToolResult,
    call_id: str,
    name: str,
    content: str,
    status: Status = Status.ok,
    code: str | None = None,
    stage: Stage | None = None,
    structured: Any = None,
    metadata: Mapping[str, Any] = _EMPTY,
) -> None:
    _set_call_id(self, call_id)
    _set_name(self, name)
    _set_content(self, content)
    _set_status(self, status)
    _set_code(self, code)
    _set_stage(self, stage)
    _set_structured(self, structured)
    _set_metadata(self, metadata)


_init.__qualname__ = "ToolResult.__init__"
_init.__doc__ = _GENERATED_INIT.__doc__
ToolResult.__init__ = _init  # type: ignore[method-assign]


def error_result(call: Call, status: Status, code: str, stage: Stage, message: str, **metadata: Any) -> ToolResult:
    """An error result for ``call``, said in words the model can act on."""
    return ToolResult(
        call_id=call.id,
        name=call.name,
        content=message,
        status=status,
        code=code,
        stage=stage,
        metadata=MappingProxyType(metadata),
    )
