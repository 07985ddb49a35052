"""The audit process: ``python -m runtime.audit.child sqlite|jsonl STORE HANDOFF``.

Reads frames from the hand-off file HANDOFF (see :mod:`runtime.audit.handoff` and
:mod:`runtime.audit.remote`), redacts and stores each batch with the real sink, and
answers one ``ack`` line per batch and per sync on stdout. A byte on stdin says more
was appended. Exits when stdin closes, after storing everything in the file and
removing it. Before that, it finishes any hand-off file of the store that a child
which died left behind.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from pathlib import Path
from typing import Any

from runtime.audit import handoff
from runtime.audit.jsonl import JsonlSink
from runtime.audit.record import AuditRecord
from runtime.audit.sinks import SqliteSink
from runtime.regex import compile_re2
from runtime.shaping.compiled import CompiledPattern, CompiledRedaction, Validator
from runtime.shaping.redact import Redactor


def _redactor(specs: Any) -> Redactor:
    profiles = []
    for name, patterns, secret_keys in specs:
        compiled = tuple(
            CompiledPattern(
                p_name,
                compile_re2(regex, case_insensitive=ci),
                replacement,
                Validator(validator) if validator else None,
                keep,
                frozenset(shields),
                value_only,
            )
            for p_name, regex, replacement, validator, ci, keep, shields, value_only in patterns
        )
        profiles.append(CompiledRedaction(name, compiled, None, secret_keys))
    return Redactor(tuple(profiles))


def _records(rows: list[tuple[Any, ...]], redactors: dict[int, Redactor]) -> list[AuditRecord]:
    records = []
    for row in rows:
        *fields, metadata, key = row
        record = AuditRecord(*fields)
        record.metadata = metadata
        if key is not None:
            record.redactor = redactors.get(key) or _REFUSE
        records.append(record)
    return records


def _columns(columns: list[list[Any]], redactors: dict[int, Redactor]) -> list[tuple[Any, ...]]:
    """The call items of a ``columns`` frame: the items' first ten values, their metadata
    and their redactors' keys, column by column (columns of unequal length raise)."""
    if len(columns) != 12:
        raise ValueError(f"a columns frame has 12 columns, not {len(columns)}")
    *values, keys = columns
    of_key = {key: None if key is None else redactors.get(key) or _REFUSE for key in set(keys)}
    return list(zip(*values, map(of_key.__getitem__, keys), strict=True))


def _encoded(payload: bytes, redactors: dict[int, Redactor]) -> list[tuple[Any, ...]]:
    """The call items of an ``encoded`` frame: a ``columns`` frame's columns, pickled on
    the app's calling thread (``ProcessSink.prepare``)."""
    return _columns(pickle.loads(payload), redactors)  # noqa: S301 - written by our app, owner-only file


def _items(rows: list[tuple[Any, ...]], redactors: dict[int, Redactor]) -> list[tuple[Any, ...]]:
    """The call items (:func:`~runtime.audit.record.call_item`) of an ``items`` frame:
    each row is an item's first ten values, its metadata and its redactor's key."""
    items = []
    for row in rows:
        key = row[11]
        redactor = None if key is None else redactors.get(key) or _REFUSE
        items.append((*row[:11], redactor))
    return items


class _RefuseArgs:
    """Stands in for a redactor this process was never told about: arguments that
    cannot be redacted are not stored."""

    edge_anchored = True  # (read by the batched rows: send every record to the careful path)

    def redact_value(self, value: Any) -> Any:
        raise ValueError("unknown redactor")

    def has_candidate(self, text: str) -> bool:
        raise ValueError("unknown redactor")


_REFUSE = _RefuseArgs()

# How each kind of batch frame becomes what the sink stores.
_BATCHES: dict[str, Any] = {"columns": _columns, "encoded": _encoded, "items": _items, "batch": _records}


def main(argv: list[str]) -> int:
    """Serve one parent until its pipe closes, then store the rest of the hand-off file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # our own process: the parent decides when we stop
    kind, path, given = argv[0], Path(argv[1]), Path(argv[2])
    sink = SqliteSink(path) if kind == "sqlite" else JsonlSink(path)
    server = Server(sink, sys.stdout.buffer)
    try:
        # What apps and children that died left unstored, first (no acks: not our batches).
        for orphan in handoff.orphans(path):
            server.finish(orphan, ack=False)
        server.serve(handoff.Reader(given), sys.stdin.buffer.fileno())
    finally:
        sink.close()
    return 0


def _profiles(reader: handoff.Reader) -> dict[int, Redactor]:
    """The redaction profiles sent in ``reader``'s file before where it goes on."""
    return {message[1]: _redactor(message[2]) for message in reader.profiles() if message[0] == "redactor"}


class Server:
    """Stores the frames of hand-off files with ``sink``, answering acks on ``out``."""

    def __init__(self, sink: Any, out: Any) -> None:
        self.sink = sink
        self.out: Any = out

    def serve(self, reader: handoff.Reader, wake_fd: int) -> None:
        """Store frames as they come, woken by a byte on ``wake_fd``; at its end of input
        (the app closed it or died), store the rest of the file and remove it."""
        redactors = _profiles(reader)
        current: handoff.Reader | None = reader
        while current is not None:
            current = self._store(current, redactors, ack=True)
            if not os.read(wake_fd, 65536):
                break
        if current is not None:
            self.finish(current, ack=True, redactors=redactors)

    def finish(self, reader: handoff.Reader, *, ack: bool, redactors: dict[int, Redactor] | None = None) -> None:
        """Store what is left in ``reader``'s file (and the files it leads to), then remove it."""
        current = self._store(reader, _profiles(reader) if redactors is None else redactors, ack=ack)
        if current is not None:
            current.remove()  # a frame cut short by the app's death is all that can be left

    def _store(self, reader: handoff.Reader, redactors: dict[int, Redactor], *, ack: bool) -> handoff.Reader | None:
        """Store every whole frame from the reader's position; the reader of the file
        reached (a ``next`` frame moves on to the file it names; None when another
        child holds that one)."""
        while True:
            moved = False
            for offset, message in reader.frames():
                tag = message[0]
                if tag == "redactor":
                    redactors[message[1]] = _redactor(message[2])
                elif tag in _BATCHES:
                    seq, stored, error = message[1], 0, ""
                    try:
                        batch = _BATCHES[tag](message[2], redactors)
                        self.sink.write_batch(batch)
                        stored = len(batch)
                    except Exception as err:  # noqa: BLE001 - report it and go on with the next batch
                        error = f"{type(err).__name__}: {err}".replace("\n", " ")[:500]
                    reader.done(offset)
                    if ack:
                        self._ack(seq, stored, error)
                elif tag == "damaged":
                    reader.done(offset)
                    if ack:  # its seq is unknown: report it, so that the app counts an error
                        self._ack(0, 0, "a frame of the hand-off file could not be read; its records are lost")
                elif tag == "sync" and ack:
                    self._ack(message[1], 0, "")
                elif tag == "next":
                    reader.done(offset)
                    following = reader.follow(str(message[1]))
                    reader.remove()
                    if following is None:
                        return None
                    reader, moved = following, True
                    redactors.clear()  # each file sends the profiles its batches need
                    redactors.update(_profiles(following))
                    break
            if not moved:
                return reader

    def _ack(self, seq: int, stored: int, error: str) -> None:
        if self.out is None:
            return
        try:
            self.out.write(f"ack {seq} {stored} {error}\n".encode())
            self.out.flush()
        except OSError:
            # The parent is gone (crashed, killed): nobody reads acks any more, but
            # every batch it appended is still stored, to the end of the file.
            self.out = None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
