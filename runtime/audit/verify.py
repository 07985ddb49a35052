"""Walking the audit chain: ``toolrt audit verify``.

:func:`verify` reads a store (SQLite or JSON lines, see :mod:`runtime.audit.readback`)
in storage order and checks every record against :mod:`runtime.audit.chain`: its
hash is what its fields give, it holds the next position, and it links to the
record before it; then the head. It stops at the first problem and says where it is
and what it looks like:

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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.audit.chain import GENESIS, Head
from runtime.audit.readback import Entry, StoreState, opened


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first problem found: its ``kind`` (see the module docstring), the record
    (row id or line number, None at the end of the log) and its chain position."""

    kind: str
    index: int | None
    position: int | None
    message: str


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
        problem = self.problem
        return {
            "ok": self.ok,
            "store": self.store,
            "format": self.kind,
            "chained": self.chained,
            "before_chain": self.before,
            "head": None if self.head is None else {"position": self.head.seq, "hash": self.head.hash, "anchor": f"{self.head.seq}:{self.head.hash}"},
            "problem": None if problem is None else {"kind": problem.kind, self.unit: problem.index, "position": problem.position, "where": self.where(), "message": problem.message},
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
            lines.append(f"  head {self.head.seq}:{self.head.hash} (to catch a later rewrite of the log, keep it elsewhere and pass it as --anchor)")
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
        walk = _Walk(state, dict(anchors or {}))
        problem = walk.run()
        return ChainReport(str(store), state.kind, state.unit, walk.chained, walk.before, state.head, problem)


class _Walk:
    """One pass over a store's entries; ``run`` returns the first problem or None."""

    def __init__(self, state: StoreState, anchors: dict[int, str]) -> None:
        self.state = state
        self.anchors = anchors
        self.entries = _Peekable(state.entries)
        self.expected = 1  # the position the next record must hold
        self.prev = GENESIS  # the hash it must link to
        self.last: Entry | None = None  # the last record that passed
        self.chained = 0
        self.before = 0

    def where(self, entry: Entry) -> str:
        return f"{self.state.unit} {entry.index}"

    def run(self) -> ChainBreak | None:
        for entry in self.entries:
            problem = self.step(entry)
            if problem is not None:
                return problem
        return self.finish()

    def step(self, entry: Entry) -> ChainBreak | None:
        link = entry.link
        if link is None:
            if self.last is None:
                self.before += 1  # before the chain started: not protected, only counted
                return None
            if not entry.record:
                return ChainBreak("garbage", entry.index, None, "not an audit record: something was written into the log, or a line was cut short by a crash")
            return ChainBreak("inserted", entry.index, None, "a record without a chain link after the chain started: inserted (or written by a toolrt from before the chain)")
        if self.last is None:
            problem = self.check_before(entry)
            if problem is not None:
                return problem
        if not entry.holds:
            return ChainBreak("altered", entry.index, link.seq or None, "its stored fields do not give its hash: it was changed after it was written")
        head = self.state.head
        if head is not None and link.seq > head.seq:
            return ChainBreak("inserted", entry.index, link.seq, f"it is past the head of the chain (position {head.seq}): appended by something other than toolrt's writer, or the head was moved back")
        if link.seq == self.expected and link.prev_hash == self.prev:
            anchored = self.anchors.get(link.seq)
            if anchored is not None and anchored != link.hash:
                return ChainBreak("rewritten", entry.index, link.seq, f"the anchor names hash {anchored[:16]}... here, the record has {link.hash[:16]}...: the log was rewritten up to this point")
            self.last, self.expected, self.prev = entry, link.seq + 1, link.hash
            self.chained += 1
            return None
        return self.misplaced(entry)

    def check_before(self, first: Entry) -> ChainBreak | None:
        """At the first linked record: the records before it are the ones the head counted."""
        head = self.state.head
        if head is None or head.before is None or head.before == self.before:
            return None  # a missing or rebuilt head is reported at the end
        change = "added" if self.before > head.before else "removed"
        return ChainBreak("head", first.index, None, f"{self.before} records come before the chain, {head.before} did when it started: records were {change} there")

    def misplaced(self, entry: Entry) -> ChainBreak:
        """A record that holds its hash but not the place it is stored in."""
        link = entry.link
        if link is None:  # pragma: no cover - step() only passes linked entries
            raise ValueError("misplaced() needs a linked entry")
        seq, last = link.seq, self.last
        if seq == self.expected:  # the right position, linked to another record
            if last is None:
                return ChainBreak("altered", entry.index, seq, "the first record does not start from the chain's initial value: it was rewritten with a recomputed hash")
            return ChainBreak(
                "altered", last.index, self.expected - 1,
                f"the next record ({self.where(entry)}) links to another record at this position: this one was changed and its hash recomputed, or put in place of the original",
            )
        if seq > self.expected:
            if link.prev_hash == self.prev:
                return ChainBreak("inserted", entry.index, seq, f"it claims position {seq} but links to position {self.expected - 1}: a forged record")
            later = self.state.locate(self.expected, entry.index)
            if later is not None:
                return ChainBreak("reordered", entry.index, seq, f"it is stored where position {self.expected} belongs; position {self.expected} is stored later ({self.state.unit} {later})")
            missing = f"position {self.expected} is" if seq == self.expected + 1 else f"positions {self.expected}-{seq - 1} are"
            return ChainBreak("deleted", entry.index, seq, f"{missing} missing before this record: deleted")
        if last is not None and last.link is not None and seq == last.link.seq and link.prev_hash == last.link.prev_hash:
            return self.fork(last, entry)
        return ChainBreak("inserted", entry.index, seq, f"it repeats position {seq}, which came before: a copy inserted here")

    def fork(self, first: Entry, second: Entry) -> ChainBreak:
        """Two records claim one position after the same record: the one the chain does
        not go on from (by the next record, or else the head) was inserted."""
        if first.link is None or second.link is None:  # pragma: no cover - both are linked
            raise ValueError("fork() needs linked entries")
        seq = second.link.seq
        if second.link.hash == first.link.hash:
            return ChainBreak("inserted", second.index, seq, f"it is a copy of the record before it ({self.where(first)}): inserted")
        following = self.entries.peek()
        if following is not None and following.link is not None:
            goes_on_from = following.link.prev_hash
        else:
            head = self.state.head
            goes_on_from = head.hash if head is not None and head.seq == seq else ""
        if goes_on_from == second.link.hash:
            return ChainBreak("inserted", first.index, seq, f"it claims position {seq}, as {self.where(second)} does, but the chain goes on from that one: inserted")
        if goes_on_from == first.link.hash:
            return ChainBreak("inserted", second.index, seq, f"it claims position {seq}, as {self.where(first)} does, but the chain goes on from that one: inserted")
        return ChainBreak("inserted", first.index, seq, f"{self.where(first)} and {self.where(second)} both claim position {seq} after the same record: one of them was inserted")

    def finish(self) -> ChainBreak | None:
        """After the last entry: the head, what came before the chain, the anchors."""
        head, last = self.state.head, self.last
        last_seq = last.link.seq if last is not None and last.link is not None else 0
        last_hash = last.link.hash if last is not None and last.link is not None else GENESIS
        if head is None:
            if last is not None:
                return ChainBreak("head", None, None, "the chain's head is missing, so records cut off the end cannot be ruled out")
        elif head.before is None:
            return ChainBreak("head", None, None, f"the chain's head was removed and a writer rebuilt it from the last record it found (position {head.seq}): records cut off the end before that cannot be ruled out")
        elif head.seq > last_seq:
            missing = f"position {head.seq} is" if head.seq == last_seq + 1 else f"positions {last_seq + 1}-{head.seq} are"
            return ChainBreak("truncated", None, None, f"{missing} missing at the end (the head names position {head.seq}): records were cut off")
        elif head.hash != last_hash:
            index = last.index if last is not None else None
            return ChainBreak("altered", index, last_seq, "it is not the last record the head names: it was replaced with a recomputed hash")
        elif last is None and head.before != self.before:
            change = "added" if self.before > head.before else "removed"
            return ChainBreak("head", None, None, f"{self.before} records are in the log, {head.before} were when the chain started: records were {change}")
        beyond = sorted(seq for seq in self.anchors if seq > last_seq)
        if beyond:
            return ChainBreak("truncated", None, None, f"the anchor names position {beyond[0]}, but the chain ends at position {last_seq}: the log was cut off or replaced")
        return None


class _Peekable:
    """An iterator that can show its next item without taking it."""

    def __init__(self, items: Iterator[Entry]) -> None:
        self._items = items
        self._next: list[Entry] = []

    def __iter__(self) -> Iterator[Entry]:
        return self

    def __next__(self) -> Entry:
        if self._next:
            return self._next.pop()
        return next(self._items)

    def peek(self) -> Entry | None:
        if not self._next:
            try:
                self._next.append(next(self._items))
            except StopIteration:
                return None
        return self._next[0]


def parse_anchor(text: str) -> tuple[int, str]:
    """``POSITION:HASH`` (as a report prints the head) as a pair; ValueError otherwise."""
    position, _, digest = text.strip().partition(":")
    digest = digest.lower()
    if not position.isdigit() or int(position) < 1 or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"cannot read the anchor {text!r}: expected POSITION:HASH as verify prints the head, e.g. 120:{'0' * 8}...{'0' * 8} (64 hex digits)")
    return int(position), digest


def report_json(report: ChainReport) -> str:
    """The report as indented JSON."""
    return json.dumps(report.to_dict(), indent=2)
