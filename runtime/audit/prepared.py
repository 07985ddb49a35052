"""A batch of call items a sink encoded on the thread that made them (see
:meth:`runtime.audit.writer.AuditWriter.submit`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Prepared:
    """``records`` call items as the sink's ``prepare`` encoded them: ``payload`` is what it
    sends for them; ``profiles`` the redactors the payload names, as (key, redactor, the
    profiles sent for it: ahead of the payload in each hand-off file that holds it)."""

    payload: bytes
    profiles: tuple[tuple[int, Any, Any], ...]
    records: int
