"""A batch of audit items as stored rows, with one redaction scan for the whole batch.

The writer thread turns what the calls handed over into rows (:data:`COLUMNS` order,
arguments redacted and encoded) here, a batch at a time. An item is either an
:class:`~runtime.audit.record.AuditRecord` (its :meth:`~runtime.audit.record.AuditRecord.to_row`)
or a call item (:func:`~runtime.audit.record.call_item`), which takes the batched path:

- the metadata is read into the row directly, with no record object in between;
- the arguments are encoded once, and the proof that nothing in them needs redacting
  is the one :func:`~runtime.audit.argsjson.clean_json` takes, but made for the whole
  batch at once: every string of every record (keys too), joined by newlines, is
  scanned in one pass per redactor. A pattern that finds a match in some string alone
  finds it in the joined text (the same reasoning as for one record's strings, see
  :func:`~runtime.audit.argsjson.redacted`), so no candidate there means none in any
  record. When there is one, the batch is halved until the records that hold it are
  found, and only those take the careful path (each string redacted on its own);
- whether a record's keys name a secret is remembered per redactor and set of keys,
  since a tool's calls come back with the same few keys.

A call item gives exactly the row its :class:`AuditRecord` would: anything unusual
(a value that will not encode, a redactor that raises) is handed to that record's
own ``to_row``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from runtime.audit.argsjson import STRING_MAX_CHARS, Encoded, encode_args, redacted
from runtime.audit.jsontext import compact
from runtime.audit.record import AuditRecord, finish_row, staged_text

# Sets of keys remembered per redactor (then the memory starts over: keys chosen by a
# tool or a model must not grow it for good), and redactors remembered.
_KEY_SETS_MAX = 1024
_REDACTORS_MAX = 16

_verdicts: dict[int, tuple[Any, dict[frozenset[Any], bool]]] = {}
_verdicts_lock = threading.Lock()

_PENDING = object()

_Entry = tuple[int, tuple[Any, ...], tuple[Any, ...], str, str]
_Group = tuple[Any, list[_Entry], dict[frozenset[Any], bool]]


def rows_of(items: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The stored rows for ``items`` (records or call items), in order. Never raises."""
    rows: list[Any] = [None] * len(items)
    # Per redactor: (redactor, [(index, item, resolved, text, strings joined)], its key-set verdicts).
    groups: dict[int, _Group] = {}
    for index, item in enumerate(items):
        if type(item) is not tuple:
            rows[index] = item.to_row()
            continue
        try:
            resolved = _resolved(item)
            args_json = _args_json(item, index, resolved, groups)
        except Exception:  # noqa: BLE001 - the record's own path knows what to keep
            rows[index] = AuditRecord.from_call(item).to_row()
            continue
        if args_json is not _PENDING:
            rows[index] = _row(item, resolved, args_json)
    for redactor, entries, _known in groups.values():
        _settle(redactor, entries, 0, len(entries), rows)
    return rows


def _resolved(item: tuple[Any, ...]) -> tuple[Any, ...]:
    """The fields read from a call item's metadata, as :meth:`AuditRecord.resolve` reads
    them: (tool_version, decision, rule, status, duration_ms, truncated, artifact, path,
    hash_before, hash_after, snapshot, staged)."""
    metadata, status = item[10], item[8]
    if metadata is None:
        return (None, None, None, status, None, 0, None, None, None, None, None, None)
    # One pass over the keys in C (metadata.get through map), not a dozen calls.
    (
        tool_version,
        decision,
        approved,
        rule,
        text,
        timings,
        truncated,
        artifact,
        artifact_ref,
        path,
        before,
        after,
        snapshot,
        staged,
    ) = map(metadata.get, _METADATA_KEYS)
    if approved and decision:  # an ask that a person (or an earlier grant) settled
        decision = f"{decision}:{approved}"
    if status is None or isinstance(status, Enum):  # the result's enum stands in for the text
        status = text if text is not None else status.value if status is not None else None
    return (
        tool_version,
        decision,
        rule,
        status,
        timings.get("total_ms") if type(timings) is dict or isinstance(timings, Mapping) else None,
        1 if truncated else 0,
        artifact if artifact is not None else artifact_ref,
        path,
        before,
        after,
        snapshot,
        staged_text(staged) if staged else None,
    )


_METADATA_KEYS = (
    "tool_version",
    "decision",
    "approved",
    "rule",
    "status",
    "timings_ms",
    "truncated",
    "artifact_id",
    "artifact",
    "path",
    "hash_before",
    "hash_after",
    "snapshot",
    "staged",
)


def _row(item: tuple[Any, ...], resolved: tuple[Any, ...], args_json: str | None) -> tuple[Any, ...]:
    tool_version, decision, rule, status, duration, truncated, artifact, path, before, after, snapshot, staged = (
        resolved
    )
    return finish_row(
        (
            item[0],
            item[1],
            item[2],
            item[3],
            item[4],
            item[5],
            item[6],
            tool_version,
            args_json,
            decision,
            rule,
            status,
            item[9],
            duration,
            truncated,
            artifact,
            path,
            before,
            after,
            snapshot,
            staged,
        )
    )


def _args_json(
    item: tuple[Any, ...],
    index: int,
    resolved: tuple[Any, ...],
    groups: dict[int, _Group],
) -> Any:
    """A call item's arguments as stored JSON text, or _PENDING when they wait for the
    batch's scan (then they are in ``groups``)."""
    args, redactor = item[7], item[11]
    if redactor is None or not args or type(args) is Encoded:
        return encode_args(args)
    if redactor.edge_anchored:
        return encode_args(redacted(args, redactor))
    try:
        text = compact(args)
    except (ValueError, TypeError, RecursionError):
        return encode_args(redacted(args, redactor))
    # Without a backslash the text has no escapes: its '"' are exactly the edges of its
    # strings, which read as they were given (see clean_json).
    if len(text) > STRING_MAX_CHARS or "\\" in text:
        return encode_args(redacted(args, redactor))
    parts = text.split('"')
    group = groups.get(id(redactor))
    if group is None:
        group = groups[id(redactor)] = (redactor, [], _key_verdicts(redactor))
    if _names_secret(args, text, parts, redactor, group[2]):
        return encode_args(redacted(args, redactor))
    group[1].append((index, item, resolved, text, "\n".join(parts[1::2])))
    return _PENDING


def _names_secret(args: Any, text: str, parts: list[str], redactor: Any, known: dict[frozenset[Any], bool]) -> bool:
    """Whether a key in the encoded arguments names a secret (``is_secret_key``);
    ``known``: the verdicts on sets of keys remembered for ``redactor``."""
    if type(args) is dict and text.find("{", 1) < 0:
        # One object, not nested: its keys are exactly the keys in the text.
        keys = frozenset(args)
        verdict = known.get(keys)
        if verdict is not None:
            return verdict
        if all(type(key) is str for key in keys):
            secret = redactor.is_secret_key
            verdict = any(secret(key) for key in keys)
            if len(known) >= _KEY_SETS_MAX:
                known.clear()
            known[keys] = verdict
            return verdict
    secret = redactor.is_secret_key
    # A key is the string a ":" follows (values are followed by ",", "]" or "}").
    return any(parts[at + 1][:1] == ":" and secret(parts[at]) for at in range(1, len(parts) - 1, 2))


def _key_verdicts(redactor: Any) -> dict[frozenset[Any], bool]:
    """The remembered key-set verdicts of ``redactor`` (held by reference, so that an
    id reused by a later redactor cannot pick up this one's verdicts)."""
    entry = _verdicts.get(id(redactor))
    if entry is not None and entry[0] is redactor:
        return entry[1]
    with _verdicts_lock:
        if len(_verdicts) >= _REDACTORS_MAX:
            _verdicts.clear()
        known: dict[frozenset[Any], bool] = {}
        _verdicts[id(redactor)] = (redactor, known)
        return known


def _settle(
    redactor: Any,
    entries: list[_Entry],
    start: int,
    end: int,
    rows: list[Any],
) -> None:
    """The rows of ``entries[start:end]``: one scan over all their strings; where it
    finds a candidate, each half again, down to the records that hold one."""
    try:
        candidate = redactor.has_candidate("\n".join([entry[4] for entry in entries[start:end]]))
    except Exception:  # noqa: BLE001 - each record on its own path below
        candidate = True
    if not candidate:
        for index, item, resolved, text, _strings in entries[start:end]:
            rows[index] = _row(item, resolved, text)
        return
    if end - start > 1:
        middle = (start + end) // 2
        _settle(redactor, entries, start, middle, rows)
        _settle(redactor, entries, middle, end, rows)
        return
    index, item, resolved, _text, _strings = entries[start]
    try:
        rows[index] = _row(item, resolved, encode_args(redacted(item[7], redactor)))
    except Exception:  # noqa: BLE001 - the record's own path stores no arguments it cannot redact
        rows[index] = AuditRecord.from_call(item).to_row()
