"""The audit process: ``python -m runtime.audit.child sqlite|jsonl PATH``.

Reads frames from stdin (see :mod:`runtime.audit.remote`), redacts and stores each
batch with the real sink, and answers one ``ack`` line per batch and per sync on
stdout. Exits when stdin closes, after storing everything read.
"""

from __future__ import annotations

import pickle
import signal
import struct
import sys
from typing import Any, BinaryIO

from runtime.audit.jsonl import JsonlSink
from runtime.audit.record import AuditRecord
from runtime.audit.sinks import SqliteSink
from runtime.config.models import Validator
from runtime.regex import compile_re2
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledPattern, CompiledRedaction

_HEADER = struct.Struct(">I")


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


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


class _RefuseArgs:
    """Stands in for a redactor this process was never told about: arguments that
    cannot be redacted are not stored."""

    def redact_value(self, value: Any) -> Any:
        raise ValueError("unknown redactor")

    def has_candidate(self, text: str) -> bool:
        raise ValueError("unknown redactor")


_REFUSE = _RefuseArgs()


def main(argv: list[str]) -> int:
    """Serve one parent until its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # our own process: the parent decides when we stop
    kind, path = argv[0], argv[1]
    sink = SqliteSink(path) if kind == "sqlite" else JsonlSink(path)
    stdin = sys.stdin.buffer
    stdout: Any = sys.stdout.buffer
    redactors: dict[int, Redactor] = {}
    try:
        while True:
            header = _read_exactly(stdin, _HEADER.size)
            if header is None:
                return 0
            payload = _read_exactly(stdin, _HEADER.unpack(header)[0])
            if payload is None:
                return 0
            message = pickle.loads(payload)  # noqa: S301 - frames come only from the parent that started us, over our own pipe
            tag = message[0]
            if tag == "redactor":
                redactors[message[1]] = _redactor(message[2])
                continue
            seq, stored, error = message[1], 0, ""
            if tag == "batch":
                try:
                    sink.write_batch(_records(message[2], redactors))
                    stored = len(message[2])
                except Exception as err:  # noqa: BLE001 - report it and go on with the next batch
                    error = f"{type(err).__name__}: {err}".replace("\n", " ")[:500]
            if stdout is not None:
                try:
                    stdout.write(f"ack {seq} {stored} {error}\n".encode())
                    stdout.flush()
                except OSError:
                    # The parent is gone (crashed, killed): nobody reads acks any more,
                    # but every batch it sent is still stored, to the end of the pipe.
                    stdout = None
    finally:
        sink.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
