"""A batch of call items a sink encoded on the thread that made them (see
:meth:`runtime.audit.writer.AuditWriter.submit`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Prepared:
    """``records`` call items as the sink's ``prepare`` encoded them: ``payload`` is what it
    sends for them, ``keys`` the redaction profiles the payload names (sent ahead of it in
    each hand-off file that holds it)."""

    payload: bytes
    keys: tuple[int, ...]
    records: int
