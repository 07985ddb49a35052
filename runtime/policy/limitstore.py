"""Where quota counters and circuit-breaker states live (:class:`LimitStore`), and the
store of one process (:class:`InMemoryLimitStore`). :mod:`runtime.policy.limits` checks
calls against them; a fleet shares a Redis store (runtime.fleet.limits)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal, Protocol

BreakerPhase = Literal["closed", "open", "half_open"]

# ---------------------------------------------------------------------------
# the store


@dataclass(frozen=True, slots=True)
class BreakerState:
    """One breaker's state for one tool: an immutable value a store swaps by compare-and-set.

    ``failures`` holds the times of counting failures still inside the window (closed
    only); ``since`` is when it opened (open) or when this round of trials began
    (half-open); ``trials`` counts trial calls admitted in this round; ``opened_by``
    is how many failures opened it, 0 when a failed trial re-opened it.
    """

    phase: BreakerPhase = "closed"
    failures: tuple[float, ...] = ()
    since: float = 0.0
    trials: int = 0
    opened_by: int = 0


class LimitStore(Protocol):
    """Where limit state lives: the small interface a shared store (Redis, SQL) can implement.

    Counters are floats addressed by ``(scope, key)``; ``scope`` is a session id, or
    None for state shared by all sessions (in-flight slots). Every method is atomic
    on its own. A store may forget a session scope on its own (LRU, TTL): that
    session then starts from zero, which is the only way state is ever lost.
    """

    def get(self, scope: str | None, key: str) -> float:
        """The counter's value; 0 when it was never counted."""
        ...

    def try_acquire(self, scope: str | None, key: str, amount: float, limit: float) -> tuple[bool, float]:
        """If ``value + amount <= limit``: add it, return (True, new value); else (False, value)."""
        ...

    def add(self, scope: str | None, key: str, amount: float) -> float:
        """Add unconditionally (what is only known after the call: seconds, bytes); the new value."""
        ...

    def release(self, scope: str | None, key: str, amount: float) -> float:
        """Subtract, never below zero (a slot or a rolled-back acquire); the new value."""
        ...

    def get_breaker(self, key: str) -> BreakerState | None:
        """The breaker state stored under ``key``; None means closed with no failures."""
        ...

    def cas_breaker(self, key: str, expected: BreakerState | None, new: BreakerState | None) -> bool:
        """Store ``new`` (None deletes) if the state is still ``expected``; whether it was."""
        ...

    def forget(self, scope: str) -> None:
        """Drop every counter of one session scope."""
        ...


class InMemoryLimitStore:
    """A :class:`LimitStore` in this process, safe across threads and event loops.

    One lock guards everything: each operation is a few dict operations, so
    contention stays short. At most ``max_sessions`` session scopes are kept; past
    that the least recently counted one is dropped (its quotas start over), so a
    long-running process cannot grow without bound. Breaker states are compared by
    identity (the values are immutable and every transition builds a new one).
    """

    def __init__(self, max_sessions: int = 100_000) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self._lock = threading.Lock()
        self._max_sessions = max_sessions
        self._shared: dict[str, float] = {}
        self._sessions: OrderedDict[str, dict[str, float]] = OrderedDict()
        self._breakers: dict[str, BreakerState] = {}

    @property
    def tracked_sessions(self) -> int:
        """How many session scopes hold counters."""
        return len(self._sessions)

    def _counters(self, scope: str | None) -> dict[str, float]:
        """The counters of ``scope``, created if needed (caller holds the lock)."""
        if scope is None:
            return self._shared
        sessions = self._sessions
        counters = sessions.get(scope)
        if counters is not None:
            sessions.move_to_end(scope)
            return counters
        counters = sessions[scope] = {}
        if len(sessions) > self._max_sessions:
            sessions.popitem(last=False)
        return counters

    # Reads take no lock: one dict lookup is atomic and every stored value is
    # immutable, so a read sees a value some write stored. A read does not refresh
    # the session's LRU position either: only counting does.

    def get(self, scope: str | None, key: str) -> float:
        counters = self._shared if scope is None else self._sessions.get(scope)
        return counters.get(key, 0.0) if counters is not None else 0.0

    def try_acquire(self, scope: str | None, key: str, amount: float, limit: float) -> tuple[bool, float]:
        with self._lock:
            counters = self._counters(scope)
            value = counters.get(key, 0.0)
            if value + amount > limit:
                return False, value
            value = counters[key] = value + amount
            return True, value

    def add(self, scope: str | None, key: str, amount: float) -> float:
        with self._lock:
            counters = self._counters(scope)
            value = counters[key] = counters.get(key, 0.0) + amount
            return value

    def release(self, scope: str | None, key: str, amount: float) -> float:
        with self._lock:
            counters = self._shared if scope is None else self._sessions.get(scope)
            if counters is None:  # the session was forgotten meanwhile: nothing left to give back
                return 0.0
            value = counters.get(key, 0.0) - amount
            value = counters[key] = value if value > 0.0 else 0.0
            return value

    def get_breaker(self, key: str) -> BreakerState | None:
        return self._breakers.get(key)

    def cas_breaker(self, key: str, expected: BreakerState | None, new: BreakerState | None) -> bool:
        with self._lock:
            if self._breakers.get(key) is not expected:
                return False
            if new is None:
                self._breakers.pop(key, None)
            else:
                self._breakers[key] = new
            return True

    def forget(self, scope: str) -> None:
        with self._lock:
            self._sessions.pop(scope, None)
