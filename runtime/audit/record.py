"""One audit record per tool call, and how its arguments become JSON.

The Runtime hands the writer a call item (:func:`call_item`: a plain tuple of values
the call already holds), the cheapest thing to make on the caller's thread; the
writer makes a batch of them into rows at once (:mod:`runtime.audit.rows`). An
:class:`AuditRecord` is what an application builds to record a call of its own: a
plain slots dataclass holding references only, so nothing is copied, encoded or
checked when it is made, and :meth:`AuditRecord.from_result` does not even read the
result's metadata. Everything that costs (reading the metadata, JSON encoding of the
arguments, coercing odd values to text) happens later in the writer thread, through
:meth:`AuditRecord.to_row` / :meth:`AuditRecord.to_json`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import TYPE_CHECKING, Any

from runtime.audit.argsjson import (
    ARGS_MAX_BYTES,
    MAX_DEPTH,
    MAX_ITEMS,
    STRING_MAX_CHARS,
    Encoded,
    clean_json,
    encode_args,
    plain,
    redacted,
    repr_of,
)
from runtime.audit.jsontext import compact

if TYPE_CHECKING:
    from runtime.records import Session, ToolResult

#: The columns of an audit row, in order (also the keys of :meth:`AuditRecord.to_json`).
COLUMNS: tuple[str, ...] = (
    "ts",
    "session_id",
    "user",
    "request_id",
    "trace_id",
    "call_id",
    "tool",
    "tool_version",
    "args",
    "decision",
    "rule",
    "status",
    "code",
    "duration_ms",
    "truncated",
    "artifact",
    "path",
    "hash_before",
    "hash_after",
    "snapshot",
    "staged",
)


@dataclass(slots=True)
class AuditRecord:
    """What the audit log keeps about one call.

    ``args`` must already be redacted (the caller redacts; the audit log stores what
    it is given). It is held by reference until the writer thread encodes it, so
    pass a mapping that is not changed afterwards.

    ``ts`` is a unix time in seconds (when the record was made, normally as the
    call finished). ``path``, ``hash_before`` and ``hash_after`` are set for writes:
    the resolved path and the content hashes before and after the change. ``staged``
    names the rules under staged rollout (``enforce: warn`` or ``audit``) that matched
    the call and what each would have done (:func:`staged_text`).

    ``metadata``, when set, is a result's metadata that the fields still unset are
    read from by :meth:`resolve` (see :meth:`from_result`); it is not stored itself.

    Not frozen: a frozen dataclass costs about a microsecond more to build, and one
    is built for every call.
    """

    ts: float
    session_id: str | None = None
    user: str | None = None
    request_id: str | None = None
    trace_id: str | None = None
    call_id: str | None = None
    tool: str | None = None
    tool_version: str | None = None
    args: Mapping[str, Any] | Encoded | None = None
    decision: str | None = None
    rule: str | None = None
    status: str | None = None
    code: str | None = None
    duration_ms: float | None = None
    truncated: bool = False
    artifact: str | None = None
    path: str | None = None
    hash_before: str | None = None
    hash_after: str | None = None
    snapshot: str | None = None
    # Rules under staged rollout that matched: ``policy/rule:effect:enforce`` items
    # (what each would have done), separated by spaces; see :func:`staged_text`.
    staged: str | None = None
    metadata: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    # The tool's Redactor, applied to ``args`` by resolve() on the writer thread, so
    # that redacting arguments costs the call nothing; not stored itself.
    redactor: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_result(
        cls,
        result: ToolResult,
        *,
        session: Session | str | None,
        request_id: str | None,
        trace_id: str | None,
        args: Mapping[str, Any] | None,
        extra: Mapping[str, Any] | None = None,
    ) -> AuditRecord:
        """The record for ``result``.

        Built on the caller's thread for every call, so it only stores references:
        the fields that come from ``result.metadata`` (tool version, decision, rule,
        status, duration, truncation, artifact, write path and hashes, snapshot)
        are read by :meth:`resolve`, which the writer thread calls before storing
        the record. (Reading a dozen keys of the metadata here would triple the
        cost of this call.) Call :meth:`resolve` to read them on the spot.

        Every metadata key is optional (an error result from an early stage has no
        decision, timings or tool version). ``session`` is a :class:`Session` (its
        ``id`` and ``user`` are kept) or a session id. ``extra`` sets fields by
        name, e.g. ``{"path": ..., "hash_before": ..., "hash_after": ...}`` for a
        write; those win over the metadata. An unknown name raises TypeError,
        since it would be lost silently.
        """
        session_id, user = _session_parts(session)
        # The metadata, not the result: a queued record must not keep the output alive.
        # The status enum stands in until resolve() reads the metadata's status text.
        record = cls(
            time.time(),
            session_id,
            user,
            request_id,
            trace_id,
            result.call_id,
            result.name,
            None,
            args,
            None,
            None,
            result.status,
            result.code,
            None,
            False,
            None,
            None,
            None,
            None,
            None,
            None,
            result.metadata,
        )
        if extra:
            unknown = [key for key in extra if key not in _FIELD_NAMES]
            if unknown:
                raise TypeError(
                    f"AuditRecord.from_result: unknown field(s) in extra: {', '.join(sorted(map(str, unknown)))}"
                )
            for key, value in extra.items():
                setattr(record, key, value)
        return record

    @classmethod
    def from_call(cls, item: tuple[Any, ...]) -> AuditRecord:
        """The record for a call item (:func:`call_item`), unresolved, as
        :meth:`from_result` with a redactor would have made it."""
        ts, session_id, user, request_id, trace_id, call_id, tool, args, status, code, metadata, redactor = item
        record = cls(ts, session_id, user, request_id, trace_id, call_id, tool, None, args, None, None, status, code)
        record.metadata = metadata
        record.redactor = redactor
        return record

    def resolve(self) -> AuditRecord:
        """Fill the fields still unset (None, or False for ``truncated``) from
        ``metadata``, then drop the reference to it. Returns self; does nothing
        when there is no ``metadata``."""
        redactor = self.redactor
        if redactor is not None:
            args = self.args
            if args and type(args) is not Encoded:  # (Encoded arguments are redacted already)
                # One encoding, kept when it shows nothing to redact; else string by string.
                # If this raises, to_row stores no arguments.
                text = clean_json(args, redactor)
                self.args = Encoded(text) if text is not None else redacted(args, redactor)
            self.redactor = None
        metadata = self.metadata
        if metadata is None:
            return self
        self.metadata = None
        get = metadata.get
        if self.tool_version is None:
            self.tool_version = get("tool_version")
        if self.decision is None:
            decision, approved = get("decision"), get("approved")
            # An ask that a person (or an earlier session grant) settled is not a policy allow.
            self.decision = f"{decision}:{approved}" if approved and decision else decision
        if self.rule is None:
            self.rule = get("rule")
        status = self.status
        if status is None or isinstance(status, Enum):  # unset, or from_result's stand-in
            text = get("status")
            self.status = text if text is not None else status.value if status is not None else None
        if self.duration_ms is None:
            timings = get("timings_ms")
            self.duration_ms = timings.get("total_ms") if isinstance(timings, Mapping) else None
        if not self.truncated:
            self.truncated = bool(get("truncated", False))
        if self.artifact is None:
            artifact = get("artifact_id")
            self.artifact = artifact if artifact is not None else get("artifact")
        if self.path is None:
            self.path = get("path")
        if self.hash_before is None:
            self.hash_before = get("hash_before")
        if self.hash_after is None:
            self.hash_after = get("hash_after")
        if self.snapshot is None:
            self.snapshot = get("snapshot")
        if self.staged is None:
            staged = get("staged")
            if staged:
                self.staged = staged_text(staged)
        return self

    def to_row(self) -> tuple[Any, ...]:
        """The values in :data:`COLUMNS` order, ready for SQL: text columns as text,
        ``args`` as capped JSON text, ``truncated`` as 0/1. Resolves first. Never raises."""
        if self.metadata is not None or self.redactor is not None:
            try:
                self.resolve()
            except Exception:  # noqa: BLE001 - odd metadata must not cost the batch; keep what was set
                self.metadata = None
                if self.redactor is not None:  # arguments that could not be redacted are not stored
                    self.redactor, self.args = None, {"$unredactable": True}
        return finish_row(
            (
                self.ts,
                self.session_id,
                self.user,
                self.request_id,
                self.trace_id,
                self.call_id,
                self.tool,
                self.tool_version,
                encode_args(self.args),
                self.decision,
                self.rule,
                self.status,
                self.code,
                self.duration_ms,
                1 if self.truncated else 0,
                self.artifact,
                self.path,
                self.hash_before,
                self.hash_after,
                self.snapshot,
                self.staged,
            )
        )

    def to_json(self) -> str:
        """One JSON object (no newline) with every column; ``args`` as a nested value.
        Never raises."""
        return row_json(self.to_row())


def _session_parts(session: Session | str | None) -> tuple[str | None, str | None]:
    """The session id and user a record stores, from a Session or a bare session id."""
    if session is None or isinstance(session, str):
        return session, None
    return session.id, session.user


def call_item(
    result: ToolResult,
    session: Session | str | None,
    request_id: str | None,
    trace_id: str | None,
    args: Mapping[str, Any] | None,
    redactor: Any,
) -> tuple[Any, ...]:
    """What the caller's thread hands the audit writer for one call: a plain tuple of
    values it already holds (:data:`CALL_ITEM` order), about a tenth of what building an
    :class:`AuditRecord` costs. The writer reads the metadata, redacts and encodes the
    arguments later, exactly as :meth:`AuditRecord.from_result` with ``redactor`` would
    (:meth:`AuditRecord.from_call`). ``args`` are held by reference: pass a mapping that
    is not changed afterwards."""
    session_id, user = _session_parts(session)
    # The metadata, not the result: a queued item must not keep the output alive.
    return (
        time.time(),
        session_id,
        user,
        request_id,
        trace_id,
        result.call_id,
        result.name,
        args,
        result.status,
        result.code,
        result.metadata,
        redactor,
    )


#: The fields of a call item (:func:`call_item`), in order.
CALL_ITEM: tuple[str, ...] = (
    "ts",
    "session_id",
    "user",
    "request_id",
    "trace_id",
    "call_id",
    "tool",
    "args",
    "status",
    "code",
    "metadata",
    "redactor",
)


def finish_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row of field values (:data:`COLUMNS` order; ``args`` already JSON text,
    ``truncated`` already 0/1) as it is stored. Never raises.

    The writer thread shares the GIL with the calls, so the usual row (text or None in
    the text columns, non-zero finite floats in the two number columns) is passed
    through with a few type checks, not 20 coercions. Anything else takes the careful
    path, so that a row holds exactly what SQLite gives back (the chain hashes it, see
    runtime.audit.chain): an int in a text column would come back as text, an int ts as
    a float, -0.0 as 0.0; x - x == 0 fails for NaN and the infinities, which JSON
    cannot carry."""
    ts, duration = row[0], row[13]
    if (
        type(ts) is float
        and ts - ts == 0
        and ts != 0
        and (duration is None or (type(duration) is float and duration - duration == 0 and duration != 0))
        and _TEXT_TYPES.issuperset(map(type, row[1:13]))
        and _TEXT_TYPES.issuperset(map(type, row[15:]))
    ):
        return row
    return (
        _number(ts) or 0.0,
        _text(row[1]),
        _text(row[2]),
        _text(row[3]),
        _text(row[4]),
        _text(row[5]),
        _text(row[6]),
        _text(row[7]),
        row[8],
        _text(row[9]),
        _text(row[10]),
        _text(row[11]),
        _text(row[12]),
        _number(duration),
        row[14],
        _artifact_id(row[15]),
        _text(row[16]),
        _hash(row[17]),
        _hash(row[18]),
        _text(row[19]),
        _text(row[20]),
    )


def row_json(row: Sequence[Any]) -> str:
    """A stored row (:data:`COLUMNS` order) as one JSON object, ``args`` nested: a line
    of the JSON-lines log, and the body its hash chain covers. Raises ValueError for
    values JSON cannot carry (a row from :meth:`AuditRecord.to_row` has none)."""
    head = dict(zip(COLUMNS, row, strict=True))
    if head["staged"] is None:
        del head["staged"]  # a later column: a record without it is the line it always was
    args_json = head.pop("args")
    head["truncated"] = bool(head["truncated"])
    text = compact(head)
    # Splice the already-encoded (and capped) args in rather than decoding them again.
    return f'{text[:-1]},"args":{args_json}}}' if args_json is not None else f'{text[:-1]},"args":null}}'


def staged_text(staged: Any) -> str | None:
    """The ``staged`` column for a decision's staged matches (``(policy/rule, effect,
    enforce)`` each): ``policy/rule:effect:enforce`` items separated by spaces. Rule and
    policy names hold no spaces or colons (letters, digits, ``_ . -``), so the text reads
    back unambiguously (:func:`parse_staged`)."""
    items = [":".join(str(part) for part in match) for match in staged if isinstance(match, tuple | list)]
    return " ".join(items) or None


def parse_staged(text: Any) -> list[dict[str, str]]:
    """The ``staged`` column read back: ``[{"rule", "effect", "enforce"}, ...]``."""
    if not isinstance(text, str):
        return []
    out = []
    for item in text.split():
        rule, _, rest = item.partition(":")
        effect, _, enforce = rest.partition(":")
        out.append({"rule": rule, "effect": effect, "enforce": enforce})
    return out


def scrub_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """``row`` with what SQLite refuses to bind made bindable: lone surrogates in text
    replaced, integers beyond 64 bits and any other odd value turned into text."""
    return tuple(_scrub(value) for value in row)


def _scrub(value: Any) -> Any:
    if value is None or type(value) is float:
        return value
    if type(value) is int:
        return value if -(2**63) <= value < 2**63 else str(value)
    text = _text(value) or ""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


_FIELD_NAMES = frozenset(f.name for f in fields(AuditRecord)) - {"metadata", "redactor"}
_TEXT_TYPES = frozenset({str, type(None)})
# Kept importable from here, where they were first defined.
__all__ = [
    "ARGS_MAX_BYTES",
    "COLUMNS",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "STRING_MAX_CHARS",
    "AuditRecord",
    "Encoded",
    "encode_args",
    "plain",
    "row_json",
    "scrub_row",
]


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return str(value)
    except Exception:  # noqa: BLE001
        return repr_of(value)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number + 0.0 if math.isfinite(number) else None  # + 0.0: -0.0 is stored as 0.0


def _hash(value: Any) -> str | None:
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()  # a raw digest
    return _text(value)


def _artifact_id(value: Any) -> str | None:
    """An artifact id from an id, an artifact reference (``.id``) or a mapping with ``id``."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, Mapping):
        return _text(value.get("id") or value.get("artifact_id"))
    ident = getattr(value, "id", None)
    return _text(ident if ident is not None else value)
