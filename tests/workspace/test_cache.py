"""ReadCache: identity keys, TTL with an injected clock, byte budget with LRU eviction, threads."""

from __future__ import annotations

import sys
import threading

from runtime.workspace import CachedText, FileIdentity, ReadCache

OLD_MTIME = 1_000_000_000 * 10**9  # 2001: far outside any racy window


def _ident(ino: int, size: int = 10, mtime_ns: int = OLD_MTIME) -> FileIdentity:
    return FileIdentity(1, ino, size, mtime_ns)


def _text(body: str) -> CachedText:
    return CachedText(body, "0" * 64, "utf-8", len(body))


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_is_found_by_identity_and_any_change_of_identity_misses() -> None:
    cache = ReadCache()
    cache.put("/ws/a", _ident(1), _text("a"))
    assert cache.get("/ws/a", _ident(1)) == _text("a")
    assert cache.get("/ws/a", _ident(1, size=11)) is None
    assert cache.get("/ws/a", _ident(1, mtime_ns=OLD_MTIME + 1)) is None
    assert cache.get("/ws/a", _ident(2)) is None
    assert (cache.hits, cache.misses) == (1, 3)


def test_entries_expire_after_the_ttl() -> None:
    clock = FakeClock()
    cache = ReadCache(ttl_s=30, clock=clock)
    cache.put("/ws/a", _ident(1), _text("a"))
    clock.now += 29.9
    assert cache.get("/ws/a", _ident(1)) is not None
    clock.now += 0.2
    assert cache.get("/ws/a", _ident(1)) is None
    assert cache.expirations == 1 and len(cache) == 0 and cache.bytes_used == 0


def test_the_byte_budget_evicts_the_least_recently_used_entry() -> None:
    body = "x" * 1000
    cost = sys.getsizeof(body) + 256
    cache = ReadCache(max_bytes=2 * cost + 10)
    cache.put("/ws/a", _ident(1), _text(body))
    cache.put("/ws/b", _ident(2), _text(body))
    assert cache.get("/ws/a", _ident(1)) is not None  # a is now more recent than b
    cache.put("/ws/c", _ident(3), _text(body))
    assert cache.get("/ws/b", _ident(2)) is None
    assert cache.get("/ws/a", _ident(1)) is not None
    assert cache.get("/ws/c", _ident(3)) is not None
    assert cache.evictions == 1 and cache.bytes_used <= cache.max_bytes


def test_an_entry_bigger_than_the_whole_budget_is_not_cached() -> None:
    cache = ReadCache(max_bytes=1000)
    assert not cache.put("/ws/big", _ident(1), _text("x" * 5000))
    assert len(cache) == 0


def test_invalidate_forgets_the_path_and_a_new_version_replaces_the_old() -> None:
    cache = ReadCache()
    cache.put("/ws/a", _ident(1), _text("v1"))
    cache.put("/ws/a", _ident(2), _text("v2"))  # same path, new file: v1 is dropped
    assert len(cache) == 1
    assert cache.invalidate("/ws/a") is True
    assert cache.get("/ws/a", _ident(2)) is None
    assert cache.invalidate("/ws/a") is False


def test_files_modified_within_the_racy_window_are_not_cached() -> None:
    now_ns = OLD_MTIME + 10 * 10**9
    cache = ReadCache(racy_window_s=2.0, wall_clock_ns=lambda: now_ns)
    assert not cache.put("/ws/a", _ident(1, mtime_ns=now_ns - 10**9), _text("fresh"))
    assert cache.put("/ws/b", _ident(2, mtime_ns=now_ns - 3 * 10**9), _text("settled"))
    assert cache.racy_skips == 1 and len(cache) == 1


def test_concurrent_threads_keep_the_cache_consistent() -> None:
    body = "y" * 200
    cache = ReadCache(max_bytes=20 * (sys.getsizeof(body) + 256))
    gets = 0
    count_lock = threading.Lock()

    def worker(seed: int) -> None:
        nonlocal gets
        done = 0
        for i in range(2000):
            ino = (seed * 7 + i) % 50
            if cache.get(f"/ws/{ino}", _ident(ino)) is None:
                cache.put(f"/ws/{ino}", _ident(ino), _text(body))
            if i % 97 == 0:
                cache.invalidate(f"/ws/{ino}")
            done += 1
        with count_lock:
            gets += done

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = cache.stats()
    assert stats["hits"] + stats["misses"] == gets
    assert stats["entries"] <= 20 and stats["bytes"] == stats["entries"] * (sys.getsizeof(body) + 256)
