"""A small, thread-safe cache of decoded file contents for :class:`~runtime.workspace.read.FileReader`.

Entries are keyed by file identity, ``(st_dev, st_ino, st_size, st_mtime_ns)`` taken
from ``fstat`` of the open file, so any write that replaces the file (new inode) or
changes its size or modification time is a miss. Entries also expire after a TTL,
and the total size is bounded by a byte budget with least-recently-used eviction.

Racy timestamps: a file changed twice within one timestamp tick, keeping its size
and (after an atomic replace freed it) even getting its old inode number back, would
keep its identity. So, like git's "racily clean" rule, a file whose modification time
is less than ``racy_window_s`` old when it is read is not cached: any later change
will then carry a later timestamp. Freshly edited files are therefore re-read for a
moment (two seconds by default, covering one-second timestamp filesystems).

The cache only ever serves readers; the editor re-reads the file under its lock and
never trusts a cached copy for its hash check.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple


class FileIdentity(NamedTuple):
    """What must be unchanged for a cached copy of a file to be valid."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileIdentity:
        """The identity recorded in a stat result."""
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class CachedText:
    """A decoded file: its text, the SHA-256 of its bytes and the encoding used."""

    text: str
    sha256: str
    encoding: str
    size: int


@dataclass
class _Entry:
    path: str
    value: CachedText
    stored_at: float
    cost: int


class ReadCache:
    """LRU cache of decoded files, bounded by ``max_bytes`` and ``ttl_s``.

    ``clock`` (monotonic seconds) drives the TTL and ``wall_clock_ns`` the racy-timestamp
    rule; both can be replaced in tests. ``hits``, ``misses``, ``evictions``,
    ``expirations`` and ``racy_skips`` count what happened.
    """

    def __init__(
        self,
        max_bytes: int = 64 * 1024 * 1024,
        ttl_s: float = 300.0,
        *,
        racy_window_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.racy_window_ns = int(racy_window_s * 1e9)
        self._clock = clock
        self._wall_clock_ns = wall_clock_ns
        self._lock = threading.Lock()
        self._entries: OrderedDict[FileIdentity, _Entry] = OrderedDict()
        self._by_path: dict[str, FileIdentity] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.expirations = 0
        self.racy_skips = 0

    def get(self, path: str | os.PathLike[str], identity: FileIdentity) -> CachedText | None:
        """The cached copy of the file ``identity`` (read at resolved ``path``), or None."""
        with self._lock:
            entry = self._entries.get(identity)
            if entry is None:
                self.misses += 1
                return None
            if self._clock() - entry.stored_at >= self.ttl_s:
                self._drop(identity)
                self.expirations += 1
                self.misses += 1
                return None
            self._entries.move_to_end(identity)
            self.hits += 1
            return entry.value

    def put(self, path: str | os.PathLike[str], identity: FileIdentity, value: CachedText) -> bool:
        """Cache ``value`` for ``identity``; False when it is too big or too fresh to cache."""
        cost = _cost(value)
        if cost > self.max_bytes:
            return False
        if self._wall_clock_ns() - identity.mtime_ns < self.racy_window_ns:
            with self._lock:
                self.racy_skips += 1
            return False
        key = os.fspath(path)
        with self._lock:
            old = self._by_path.get(key)
            if old is not None:
                self._drop(old)  # an older version of the same file is dead weight
            if identity in self._entries:
                self._drop(identity)
            self._entries[identity] = _Entry(key, value, self._clock(), cost)
            self._by_path[key] = identity
            self._bytes += cost
            while self._bytes > self.max_bytes and self._entries:
                oldest = next(iter(self._entries))
                self._drop(oldest)
                self.evictions += 1
        return True

    def invalidate(self, path: str | os.PathLike[str]) -> bool:
        """Forget the copy cached for resolved ``path``; True when there was one."""
        with self._lock:
            identity = self._by_path.get(os.fspath(path))
            if identity is None:
                return False
            self._drop(identity)
            return True

    def clear(self) -> None:
        """Forget everything (the counters stay)."""
        with self._lock:
            self._entries.clear()
            self._by_path.clear()
            self._bytes = 0

    @property
    def bytes_used(self) -> int:
        """Estimated bytes held by the cached entries."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, int]:
        """The counters and current size, for metrics."""
        with self._lock:
            return {
                "entries": len(self._entries),
                "bytes": self._bytes,
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
                "expirations": self.expirations,
                "racy_skips": self.racy_skips,
            }

    def _drop(self, identity: FileIdentity) -> None:
        entry = self._entries.pop(identity, None)
        if entry is None:
            return
        self._bytes -= entry.cost
        if self._by_path.get(entry.path) == identity:
            del self._by_path[entry.path]


def _cost(value: CachedText) -> int:
    # The real memory of the str (1, 2 or 4 bytes a character) plus the small fields.
    return sys.getsizeof(value.text) + 256
