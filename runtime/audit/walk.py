"""One pass over a store's chain entries, stopping at the first problem.

Each record must hold its hash (its fields give it), the next position, and a link to
the record before it. When one does not, what it looks like is worked out from that
record, the one before it, the next one and the head (see the table of kinds in
:mod:`runtime.audit.verify`). Memory stays constant however long the log is; only a
broken link costs a second look into the store (:attr:`StoreState.locate`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from runtime.audit.chain import GENESIS
from runtime.audit.readback import Entry, StoreState


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first problem found: its ``kind`` (see :mod:`runtime.audit.verify`), the
    record (row id or line number; None at the end of the log), the chain position
    it holds or claims, and what it looks like, in words."""

    kind: str
    index: int | None
    position: int | None
    message: str


def _found(kind: str, at: Entry | None, position: int | None = None, *, says: str) -> ChainBreak:
    return ChainBreak(kind, None if at is None else at.index, position, says)


def _positions(first: int, last: int) -> str:
    return f"position {first} is" if first == last else f"positions {first}-{last} are"


class Walk:
    """Walks ``state``'s entries; :meth:`run` returns the first problem or None.

    ``anchors`` maps positions to the hashes the records there must have.
    Afterwards ``chained`` counts the records that passed and ``before`` those from
    before the chain started.
    """

    def __init__(self, state: StoreState, anchors: dict[int, str]) -> None:
        self.state = state
        self.anchors = anchors
        self.entries = _Peekable(state.entries)
        self.expected = 1  # the position the next record must hold
        self.prev = GENESIS  # the hash it must link to
        self.last: Entry | None = None  # the last record that passed
        self.chained = 0
        self.before = 0

    def run(self) -> ChainBreak | None:
        """The first problem of the store, or None when its chain is intact."""
        for entry in self.entries:
            problem = self._step(entry)
            if problem is not None:
                return problem
        return self._finish()

    def _where(self, entry: Entry) -> str:
        return f"{self.state.unit} {entry.index}"

    def _step(self, entry: Entry) -> ChainBreak | None:
        link = entry.link
        if link is None:
            if self.last is None:
                self.before += 1  # before the chain started: not protected, only counted
                return None
            if not entry.record:
                return _found(
                    "garbage",
                    entry,
                    says="not an audit record: written into the log, or cut short by a crash",
                )
            return _found("inserted", entry, says="a record without a chain link after the chain started")
        if self.last is None:
            problem = self._check_before(entry)
            if problem is not None:
                return problem
        if not entry.holds:
            return _found(
                "altered",
                entry,
                link.seq or None,
                says="its fields do not give its hash: changed after it was written",
            )
        head = self.state.head
        if head is not None and link.seq > head.seq:
            return _found(
                "inserted",
                entry,
                link.seq,
                says=f"past the head of the chain (position {head.seq}): "
                "appended by something else, or the head moved back",
            )
        if link.seq != self.expected or link.prev_hash != self.prev:
            return self._misplaced(entry)
        anchored = self.anchors.get(link.seq)
        if anchored is not None and anchored != link.hash:
            return _found(
                "rewritten",
                entry,
                link.seq,
                says=f"the anchor names hash {anchored[:16]}... here, not {link.hash[:16]}...: rewritten up to here",
            )
        self.last, self.expected, self.prev = entry, link.seq + 1, link.hash
        self.chained += 1
        return None

    def _check_before(self, first: Entry) -> ChainBreak | None:
        """At the first linked record: the records before it are the ones the head counted."""
        head = self.state.head
        if head is None or head.before is None or head.before == self.before:
            return None  # a missing or rebuilt head is reported at the end
        change = "added" if self.before > head.before else "removed"
        return _found(
            "head",
            first,
            says=f"{self.before} records come before the chain, {head.before} did: records were {change}",
        )

    def _misplaced(self, entry: Entry) -> ChainBreak:
        """A record that holds its hash but not the place it is stored in."""
        link, last = entry.link, self.last
        if link is None:  # pragma: no cover - _step() only passes linked entries
            raise ValueError("_misplaced() needs a linked entry")
        seq = link.seq
        if seq == self.expected:  # the right position, linked to another record
            if last is None:
                return _found(
                    "altered",
                    entry,
                    seq,
                    says="does not start from the chain's initial value: rewritten, hash recomputed",
                )
            return _found(
                "altered",
                last,
                self.expected - 1,
                says=f"the next record ({self._where(entry)}) links to another one here: "
                "changed and its hash recomputed, or replaced",
            )
        if seq > self.expected:
            if link.prev_hash == self.prev:
                return _found(
                    "inserted",
                    entry,
                    seq,
                    says=f"claims position {seq} but links to position {self.expected - 1}: forged",
                )
            later = self.state.locate(self.expected, entry.index)
            if later is not None:
                return _found(
                    "reordered",
                    entry,
                    seq,
                    says=f"stored where position {self.expected} belongs, "
                    f"which is stored later ({self.state.unit} {later})",
                )
            return _found(
                "deleted",
                entry,
                seq,
                says=f"{_positions(self.expected, seq - 1)} missing before this record",
            )
        if last is not None and last.link is not None and (seq, link.prev_hash) == (last.link.seq, last.link.prev_hash):
            return self._fork(last, entry)
        return _found("inserted", entry, seq, says=f"repeats position {seq}, which came before: a copy inserted here")

    def _fork(self, first: Entry, second: Entry) -> ChainBreak:
        """Two records claim one position after the same record: the one the chain does
        not go on from (by the next record's link, or else the head) was inserted."""
        if first.link is None or second.link is None:  # pragma: no cover - both are linked
            raise ValueError("_fork() needs linked entries")
        seq = second.link.seq
        if second.link.hash == first.link.hash:
            return _found("inserted", second, seq, says=f"a copy of the record before it ({self._where(first)})")
        following = self.entries.peek()
        if following is not None and following.link is not None:
            goes_on_from = following.link.prev_hash
        else:
            head = self.state.head
            goes_on_from = head.hash if head is not None and head.seq == seq else ""
        for inserted, kept in ((first, second), (second, first)):
            if kept.link is not None and goes_on_from == kept.link.hash:
                return _found(
                    "inserted",
                    inserted,
                    seq,
                    says=f"claims position {seq}, as {self._where(kept)} does, but the chain goes on from that one",
                )
        return _found(
            "inserted",
            first,
            seq,
            says=f"{self._where(first)} and {self._where(second)} both claim position {seq}: one of them was inserted",
        )

    def _finish(self) -> ChainBreak | None:
        """After the last entry: the head, what came before the chain, the anchors."""
        head, last = self.state.head, self.last
        last_seq = last.link.seq if last is not None and last.link is not None else 0
        last_hash = last.link.hash if last is not None and last.link is not None else GENESIS
        if head is None:
            if last is not None:
                return _found(
                    "head",
                    None,
                    says="the chain's head is missing: records cut off the end cannot be ruled out",
                )
        elif head.before is None:
            return _found(
                "head",
                None,
                says=f"the chain's head was removed, and a writer rebuilt it at position {head.seq}: "
                "records cut off the end before that cannot be ruled out",
            )
        elif head.seq > last_seq:
            return _found(
                "truncated",
                None,
                says=f"{_positions(last_seq + 1, head.seq)} missing at the end (the head names position {head.seq})",
            )
        elif head.hash != last_hash:
            return _found(
                "altered",
                last,
                last_seq,
                says="not the last record the head names: replaced, hash recomputed",
            )
        elif last is None and head.before != self.before:
            change = "added" if self.before > head.before else "removed"
            return _found(
                "head",
                None,
                says=f"{self.before} records are in the log, {head.before} were: records were {change}",
            )
        beyond = sorted(seq for seq in self.anchors if seq > last_seq)
        if beyond:
            return _found(
                "truncated",
                None,
                says=f"an anchor names position {beyond[0]}, the chain ends at {last_seq}: "
                "the log was cut off or replaced",
            )
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
