"""Walking the audit chain: ``toolrt audit verify``.

:func:`verify` reads a store (SQLite or JSON lines, see :mod:`runtime.audit.readback`)
in storage order and walks its chain (:mod:`runtime.audit.walk`, :mod:`runtime.audit.chain`):
every record's hash is what its fields give, it holds the next position, and it links
to the record before it; then the head. It stops at the first problem and says where
it is and what it looks like:

==========  ==================================================================
altered     a record's fields no longer give its hash; or, when its hash was
            recomputed, the next record links to something else
deleted     positions missing between two records
truncated   positions missing at the end (the head names a later one)
reordered   a record stored before positions that come ahead of it
inserted    a record that is not in the chain: no link after the chain started,
            a forged link, a second record for one position, or past the head
garbage     a line that is no audit record (JSON lines)
head        the head is missing or was rebuilt by a writer, or the number of
            records from before the chain changed
rewritten   the record at an anchor's position is not the one the anchor names
==========  ==================================================================

What no check can see (there is no secret) is said in :mod:`runtime.audit.chain`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.audit.chain import Head
from runtime.audit.readback import opened
from runtime.audit.walk import ChainBreak, Walk

__all__ = ["ChainBreak", "ChainReport", "parse_anchor", "report_json", "verify"]


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What :func:`verify` found: ``chained`` records checked before the first problem
    (all of them when there is none), ``before`` records from before the chain
    started (not protected), the store's head, and the first problem or None."""

    store: str
    kind: str
    unit: str
    chained: int
    before: int
    head: Head | None
    problem: ChainBreak | None

    @property
    def ok(self) -> bool:
        """True when the chain is intact."""
        return self.problem is None

    def where(self) -> str:
        """Where the problem is, in words (``id 17``, ``line 4``, ``the end``)."""
        problem = self.problem
        if problem is None:
            return ""
        place = "the end of the log" if problem.index is None else f"{self.unit} {problem.index}"
        return place if problem.position is None else f"{place} (position {problem.position})"

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (``toolrt audit verify --format json``)."""
        head, problem = self.head, self.problem
        return {
            "ok": self.ok,
            "store": self.store,
            "format": self.kind,
            "chained": self.chained,
            "before_chain": self.before,
            "head": None if head is None else {"position": head.seq, "hash": head.hash, "anchor": anchor_of(head)},
            "problem": None
            if problem is None
            else {
                "kind": problem.kind,
                self.unit: problem.index,  # "id" or "line"
                "position": problem.position,
                "where": self.where(),
                "message": problem.message,
            },
        }

    def to_text(self) -> str:
        """The report for a terminal: one line saying intact or broken, then details."""
        lines = []
        if self.problem is None:
            lines.append(f"intact: {self.chained} records chained in {self.store} ({self.kind})")
        else:
            lines.append(f"BROKEN at {self.where()}: {self.problem.kind}: {self.problem.message}")
            lines.append(f"  store {self.store} ({self.kind}); {self.chained} records chained correctly before it")
        if self.before:
            lines.append(f"  {self.before} records from before the chain started (not protected by it)")
        if self.head is not None and self.head.seq:
            lines.append(f"  head {anchor_of(self.head)} (keep it elsewhere; --anchor with it shows a later rewrite)")
        return "\n".join(lines)


def verify(path: str | os.PathLike[str], *, anchors: Mapping[int, str] | None = None) -> ChainReport:
    """Walk the chain of the audit store at ``path`` and report the first problem.

    ``anchors`` maps chain positions to hashes read from an earlier report (kept
    outside the agent's reach): the record at each position must still have that
    hash, and the log must still reach it. Read-only. Raises UsageError when there
    is no store at ``path`` or it is not an audit store.
    """
    store = Path(path)
    with opened(store) as state:
        walk = Walk(state, dict(anchors or {}))
        problem = walk.run()
        return ChainReport(str(store), state.kind, state.unit, walk.chained, walk.before, state.head, problem)


def anchor_of(head: Head) -> str:
    """``POSITION:HASH`` of a head, as ``--anchor`` takes it."""
    return f"{head.seq}:{head.hash}"


def parse_anchor(text: str) -> tuple[int, str]:
    """``POSITION:HASH`` (as a report prints the head) as a pair; ValueError otherwise."""
    position, _, digest = text.strip().partition(":")
    digest = digest.lower()
    if (
        not position.isdigit()
        or int(position) < 1
        or len(digest) != 64
        or any(c not in "0123456789abcdef" for c in digest)
    ):
        raise ValueError(
            f"cannot read the anchor {text!r}: expected POSITION:HASH (64 hex digits) as verify prints the head"
        )
    return int(position), digest


def report_json(report: ChainReport) -> str:
    """The report as indented JSON."""
    return json.dumps(report.to_dict(), indent=2)
