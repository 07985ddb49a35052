"""One Redis connection pool per store URL, its errors as :class:`LimitStoreError`, and its clock.

Timeouts are short on purpose: a limit check sits on the path of every call, so a
server that does not answer within ``timeout_s`` fails the call's check (closed, by
default) instead of holding the agent. A dropped connection (the server restarted)
is retried once on a fresh connection; nothing else is retried, so a script is
never run twice because an answer was slow.

Time comes from the server (``TIME``), never from the worker's wall clock: breaker
windows and lease expiry are compared across workers, whose clocks may disagree.
:class:`ServerClock` reads the server's time once, then follows the local monotonic
clock from it, and reads it again now and then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from runtime.errors import LimitStoreError

T = TypeVar("T")

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import NoScriptError, RedisError
    from redis.retry import Retry
except ImportError:  # pragma: no cover - exercised only without the extra
    redis = None  # type: ignore[assignment]

    class NoScriptError(Exception):  # type: ignore[no-redef]
        """Stands in for the client's error when the client is not installed."""


_MISSING = "the redis client is not installed: pip install 'toolrt[redis]' (or pass another store)"


def shown_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def connect(url: str, *, timeout_s: float = 0.5, client_name: str = "toolrt") -> Any:
    """A Redis client for ``url`` (``redis://``, ``rediss://`` or ``unix://``), not yet connected.

    Raises :class:`LimitStoreError` when the client is not installed or the URL is not one.
    """
    if redis is None:
        raise LimitStoreError(shown_url(url), _MISSING)
    if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
        raise LimitStoreError(
            shown_url(url), "not a Redis URL: expected redis://host:port/db, rediss://... or unix:///path/to/socket"
        )
    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            client_name=client_name,
            decode_responses=False,
        )
    except (ValueError, RedisError) as err:
        raise LimitStoreError(shown_url(url), f"cannot use this URL: {err}") from err


def guarded(store: str, action: Callable[[], T]) -> T:
    """``action()``, with any Redis error raised as :class:`LimitStoreError` naming ``store``."""
    try:
        return action()
    except RedisError as err:
        raise LimitStoreError(store, _reason(err)) from err
    except OSError as err:  # a socket error the client did not wrap
        raise LimitStoreError(store, f"unreachable ({err})") from err


def _reason(err: Exception) -> str:
    name = type(err).__name__
    text = str(err) or name
    if "Timeout" in name:
        return f"no answer in time ({text})"
    if "Connection" in name:
        return f"unreachable ({text})"
    if "OutOfMemory" in name or text.startswith("OOM") or "maxmemory" in text:
        return f"out of memory, writes refused ({text})"
    return f"{name}: {text}"


class ServerClock:
    """The Redis server's time in seconds, read once and followed on the monotonic clock.

    Calling it costs a monotonic read and an addition; every ``refresh_s`` it asks the
    server again (one ``TIME``; its error is raised to the caller like any other).
    The offset is taken at the midpoint of the round trip, so two workers' clocks
    agree to within half a round trip whatever their wall clocks say.
    """

    def __init__(self, client: Any, store: str, refresh_s: float = 30.0) -> None:
        self._client = client
        self._store = store
        self._refresh_s = refresh_s
        self._offset: float | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        local = time.monotonic()
        offset = self._offset
        if offset is None or local - self._read_at > self._refresh_s:
            offset = self._sync()
            local = time.monotonic()
        return local + offset

    def _sync(self) -> float:
        with self._lock:
            before = time.monotonic()
            seconds, micros = guarded(self._store, self._client.time)
            after = time.monotonic()
            self._offset = seconds + micros / 1e6 - (before + after) / 2
            self._read_at = after
            return self._offset
