"""The hash chain that makes the audit log tamper-evident.

Every record written since the chain started carries its position ``seq`` (1, 2,
3, ... in the order written, across every process sharing the store), the hash of
the record before it (``prev_hash``; :data:`GENESIS` for the first) and its own
``hash``::

    hash = SHA-256( prev_hash "\\n" seq "\\n" body )

``body`` is the record's stored fields, UTF-8, exactly as they can be read back: in
a JSON-lines log, the record's JSON object as written (:func:`runtime.audit.record.row_json`,
the line without the three chain keys); in SQLite, the row's columns in
:data:`~runtime.audit.record.COLUMNS` order as one compact JSON array
(:func:`row_body`; cheaper to make than the object, and the row read back gives the
same array). So changing any stored field, or the position or link of a record,
changes what its hash should be; deleting, reordering or inserting records breaks the
links between them. The store also keeps a *head* outside the records (the last
position and hash, and how many records came before the chain started) so that
cutting records off the end shows too: a ``chain_head`` table written in the same
transaction, or a ``.head`` file beside a JSON-lines log.

There is no secret: whoever can write the store and knows this scheme can rewrite
every record from some point on, recompute the hashes and the head, and the result
verifies. Keep a head you read earlier somewhere the agent cannot write and pass it
to the verifier as an anchor (``toolrt audit verify --anchor POSITION:HASH``) to
catch that. :mod:`runtime.audit.verify` walks the chain.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.audit.jsontext import EXACT_LEAVES, ORJSON_DUMPS, compact_utf8
from runtime.audit.record import COLUMNS

# A stored row's length once ``staged`` (its last column) exists.
_STAGED_ROW = len(COLUMNS)
# Where a row's two number columns are; every other column holds text, None or (truncated) an int.
_TS, _DURATION = COLUMNS.index("ts"), COLUMNS.index("duration_ms")

#: The ``prev_hash`` of the first record of a chain.
GENESIS = "0" * 64

# A chained JSON line is the record's body with these three keys added at its end,
# so that the body is the line minus this suffix (plus the closing brace).
_SUFFIX = re.compile(rb',"seq":([1-9][0-9]{0,18}),"prev_hash":"([0-9a-f]{64})","hash":"([0-9a-f]{64})"\}\Z')
_SUFFIX_MAX = 200  # longest possible suffix, with room to spare


def row_body(row: Sequence[Any]) -> bytes:
    """The body an SQLite row is hashed over: its stored values as a compact JSON array.

    Raises ValueError or TypeError for values no writer stores (NaN, bytes), and
    UnicodeEncodeError for a lone surrogate (which SQLite cannot store either).

    A row whose last column (``staged``, added later) is empty is hashed without it, as
    rows were before the column existed: logs written earlier still verify.
    """
    size = len(row)
    if size == _STAGED_ROW and row[-1] is None:
        row = row[:-1]
        size -= 1
    if ORJSON_DUMPS is not None and size >= _DURATION + 1:
        # compact_utf8's proof that orjson writes the standard text, for the usual row and
        # in a third fewer instructions: the two floats by position (no exponent, so both
        # write the same digits; the comparisons also fail for NaN and the infinities), the
        # other columns' types in C.
        ts, duration = row[_TS], row[_DURATION]
        if (
            type(ts) is float
            and 1e-4 <= ts < 1e16
            and (duration is None or (type(duration) is float and 1e-4 <= duration < 1e16))
            and EXACT_LEAVES.issuperset(map(type, row[_TS + 1 : _DURATION]))
            and EXACT_LEAVES.issuperset(map(type, row[_DURATION + 1 :]))
        ):
            try:
                return ORJSON_DUMPS(row)
            except TypeError:  # an int beyond 64 bits, a lone surrogate: the standard way decides
                pass
    return compact_utf8(row)  # tuples and lists both become arrays


def link_hash(prev_hash: str, seq: int, body: bytes) -> str:
    """The hash of the record at position ``seq`` whose body is ``body`` (UTF-8 JSON),
    following the record whose hash is ``prev_hash``."""
    return hashlib.sha256(b"%s\n%d\n%s" % (prev_hash.encode("ascii"), seq, body)).hexdigest()


def chained_line(body: bytes, seq: int, prev_hash: str, digest: str) -> bytes:
    """The JSON line (with its newline) for ``body`` at position ``seq``."""
    return b'%s,"seq":%d,"prev_hash":"%s","hash":"%s"}\n' % (
        body[:-1],
        seq,
        prev_hash.encode("ascii"),
        digest.encode("ascii"),
    )


@dataclass(frozen=True, slots=True)
class Link:
    """The chain fields of one stored record, and the body they were computed over."""

    seq: int
    prev_hash: str
    hash: str
    body: bytes

    def holds(self) -> bool:
        """Whether ``hash`` is what the position, link and body give."""
        return link_hash(self.prev_hash, self.seq, self.body) == self.hash


def parse_line(line: bytes) -> Link | None:
    """The chain fields of a JSON line (without its newline), or None when it has none."""
    tail_at = max(0, len(line) - _SUFFIX_MAX)
    match = _SUFFIX.search(line, tail_at)
    if match is None:
        return None
    return Link(int(match[1]), match[2].decode("ascii"), match[3].decode("ascii"), line[: match.start()] + b"}")


@dataclass(frozen=True, slots=True)
class Head:
    """What the store keeps about its chain outside the records.

    ``seq`` and ``hash`` are the last record's (0 and :data:`GENESIS` before the
    first); ``before`` is how many records the store held when the chain started,
    or None when a writer found the head gone and had to rebuild it from the records.
    """

    seq: int
    hash: str
    before: int | None


# The .head file of a JSON-lines log: one fixed-width line, rewritten in place.
_HEAD_LINE = re.compile(rb"\A([0-9]{20}) ([0-9a-f]{64}) ([+-][0-9]{19})\n\Z")


def head_path(log: Path) -> Path:
    """The head file beside the JSON-lines log ``log``."""
    return log.with_name(log.name + ".head")


def head_line(head: Head) -> bytes:
    """``head`` as the head file's single line (always the same length)."""
    before = -1 if head.before is None else head.before
    return b"%020d %s %+020d\n" % (head.seq, head.hash.encode("ascii"), before)


def parse_head(data: bytes) -> Head | None:
    """The head in a head file's bytes, or None when they are not one."""
    match = _HEAD_LINE.match(data)
    if match is None:
        return None
    before = int(match[3])
    return Head(int(match[1]), match[2].decode("ascii"), None if before < 0 else before)
