"""Quotas and circuit breakers: the limits a call must pass before it executes.

Quotas (from every Policy document's ``quotas``):

* per session: total calls, calls per tool, execution seconds, output bytes;
* per tool, across sessions: concurrent executions.

Circuit breakers (from every Policy document's ``circuit_breakers``) pause a tool
that keeps failing: after ``failures`` counting failures (timeouts, crashes,
transient errors) within ``window_s`` the tool is *open* for ``cooldown_s``; then it
is *half-open* and lets ``half_open_calls`` trial calls through. A trial that
succeeds closes the breaker (and clears its failures); one that fails re-opens it
for another cool-down. A breaker tracks every tool it matches separately.

How declarations combine:

* Several documents declaring the same quota: the smallest limit wins.
* Within one document's ``calls_per_tool`` / ``max_concurrent_per_tool``, an exact
  tool name beats globs (so ``{"*": 10, "run_tests": 50}`` gives run_tests 50);
  among several matching globs the smallest wins.
* A glob key sets a limit for *each* matching tool (``db_*: 2`` means two calls of
  every ``db_`` tool, not two of them together).
* Every breaker is kept on its own; a tool must pass all breakers that match it.
* Globs are shell-style and matched against the tool's name (all its versions
  share the state).

State lives in a :class:`LimitStore`. Every store method is atomic on its own; a
call that must pass several counters acquires them in a fixed order and, if one
refuses, releases the ones already taken, so a refused call never leaves anything
counted. (Between that acquire and its rollback another call may see the counter
one too high and be refused: the error is always on the side of refusing, never of
admitting too many.) Breaker transitions are compare-and-set on one immutable
:class:`BreakerState` value per (breaker, tool).

The pipeline holds one :class:`Limits` per config snapshot; when no Policy declares
quotas or breakers it is falsy, so the stage costs one truth test. Keep one store
for the runtime's lifetime and hand it to each snapshot's Limits: counts, in-flight
slots and breaker states then survive a config reload.
"""

from __future__ import annotations

import fnmatch
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from loguru import logger

from runtime.config.models import CircuitBreaker, PolicySpec, Quotas
from runtime.errors import LimitStoreError

BreakerPhase = Literal["closed", "open", "half_open"]

# Store keys. Session-scoped ones live under the session id, the rest are global.
_CALLS = "calls"
_SECONDS = "seconds"
_BYTES = "bytes"
_TOOL_CALLS = "calls:"  # + tool name
_RUNNING = "running:"  # + tool name

_MAX_PLANS = 10_000  # tool names whose resolved limits are cached; admit only sees known tools


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


# ---------------------------------------------------------------------------
# outcomes of admit


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call that must not execute: ``message`` is written for the model.

    ``kind`` is "quota", "breaker" or "store" (the shared limit store could not be
    used, and limits fail closed); ``quota`` names the quota field (e.g.
    ``calls_per_session``) or the circuit breaker; ``limit`` is the quota's limit or
    the breaker's failure threshold; ``retry_after_s`` is set when waiting helps and
    the wait is known (an open breaker).
    """

    kind: Literal["quota", "breaker", "store"]
    quota: str
    limit: float
    message: str
    tool: str
    retry_after_s: float | None = None


class Admission:
    """Permission for one call to execute; call :meth:`finish` once it has.

    Holds the call's in-flight slots and any half-open trial it was let through as;
    finishing gives them back and records what the call spent and how it ended.
    A second finish does nothing.
    """

    __slots__ = ("_limits", "_plan", "_trials", "_pending", "session_id")

    def __init__(
        self, limits: Limits | None, plan: _Plan | None, session_id: str, trials: tuple[str, ...] = ()
    ) -> None:
        self._limits = limits
        self._plan = plan
        self._trials = trials
        # list.pop is atomic, so two racing finishes cannot both settle.
        self._pending = [True]
        self.session_id = session_id

    @property
    def tool(self) -> str | None:
        """The tool admitted; None for the admission that tracks nothing."""
        return self._plan.tool if self._plan is not None else None

    def finish(
        self,
        *,
        seconds: float = 0.0,
        output_bytes: int = 0,
        failed: bool = False,
        counts_for_breaker: bool = False,
        now: float | None = None,
    ) -> None:
        """Settle the call: free its slots, add ``seconds`` and ``output_bytes`` to the session.

        ``failed`` with ``counts_for_breaker`` (a timeout, crash or transient error)
        counts toward the tool's circuit breakers. Any other outcome, including a
        failure that does not count (the tool answered, just with an error), is a
        success for them: it closes a half-open breaker.
        """
        limits, plan = self._limits, self._plan
        if limits is None or plan is None:
            return
        try:
            self._pending.pop()
        except IndexError:
            return  # finished already
        limits._settle(plan, self.session_id, self._trials, seconds, output_bytes, failed and counts_for_breaker, now)


_ADMIT_ALL = Admission(None, None, "")


# ---------------------------------------------------------------------------
# compiled configuration


def _is_glob(key: str) -> bool:
    return any(ch in key for ch in "*?[")


@dataclass(frozen=True, slots=True)
class _KeyedLimits:
    """One document's tool-keyed limits: exact names beat globs, smallest glob wins."""

    exact: Mapping[str, int]
    globs: tuple[tuple[str, re.Pattern[str], int], ...]

    @classmethod
    def of(cls, limits: Mapping[str, int]) -> _KeyedLimits:
        exact = {k: v for k, v in limits.items() if not _is_glob(k)}
        globs = tuple((k, re.compile(fnmatch.translate(k)), v) for k, v in limits.items() if _is_glob(k))
        return cls(exact, globs)

    def resolve(self, tool: str) -> tuple[int, str] | None:
        """(limit, the key that set it) for ``tool``, or None."""
        if tool in self.exact:
            return self.exact[tool], tool
        found: tuple[int, str] | None = None
        for key, pattern, limit in self.globs:
            if pattern.fullmatch(tool) and (found is None or limit < found[0]):
                found = (limit, key)
        return found


def _smallest_keyed(documents: Sequence[_KeyedLimits], tool: str) -> tuple[int, str] | None:
    found: tuple[int, str] | None = None
    for document in documents:
        resolved = document.resolve(tool)
        if resolved is not None and (found is None or resolved[0] < found[0]):
            found = resolved
    return found


def _smallest(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


@dataclass(frozen=True, slots=True)
class _Breaker:
    name: str
    matcher: re.Pattern[str]
    failures: int
    window_s: float
    cooldown_s: float
    half_open_calls: int

    @classmethod
    def of(cls, name: str, spec: CircuitBreaker) -> _Breaker:
        matcher = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in spec.tools))
        return cls(name, matcher, spec.failures, spec.window_s, spec.cooldown_s, spec.half_open_calls)


@dataclass(frozen=True, slots=True)
class _Counter:
    """A counted quota a call takes one unit of; the refusal is built once per tool."""

    key: str
    per_session: bool
    limit: float
    refusal: Refusal


@dataclass(frozen=True, slots=True)
class _Budget:
    """A per-session amount spent after calls; a call is refused once it is used up."""

    key: str
    quota: str
    limit: float


@dataclass(frozen=True, slots=True)
class _Plan:
    """Everything that applies to one tool, resolved once per tool name."""

    tool: str
    budgets: tuple[_Budget, ...]
    counters: tuple[_Counter, ...]
    slots: tuple[str, ...]  # keys of global counters to give back on finish
    breakers: tuple[tuple[_Breaker, str], ...]  # with this tool's state key
    tracks_spending: bool
    # The same, as a one-step store (admit_all) takes them.
    budget_args: tuple[tuple[str, float], ...] = ()
    counter_args: tuple[tuple[bool, str, float], ...] = ()
    breaker_keys: tuple[str, ...] = ()

    @property
    def free(self) -> bool:
        return not (self.budgets or self.counters or self.breakers or self.tracks_spending)


class NamedPolicy(Protocol):
    """A Policy document's name and spec (the snapshot's compiled policies fit)."""

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> PolicySpec: ...


# ---------------------------------------------------------------------------
# Limits


class Limits:
    """The quotas and circuit breakers of one config snapshot, checked around each call.

    ``admit`` before a call executes returns an :class:`Admission` (call its
    ``finish`` afterwards) or a :class:`Refusal`. ``clock`` gives ``now`` when a
    caller passes none; breaker windows use it, so a store shared by several
    processes needs a shared clock (``time.time``) rather than ``time.monotonic``.
    Breakers given as ``(name, spec)`` pairs are named in messages; bare ones are
    named ``circuit_breakers[i]``.
    """

    def __init__(
        self,
        quotas: Iterable[Quotas] = (),
        breakers: Iterable[CircuitBreaker | tuple[str, CircuitBreaker]] = (),
        *,
        store: LimitStore | None = None,
        clock: Callable[[], float] | None = None,
        on_store_error: Literal["deny", "allow"] = "deny",
    ) -> None:
        quota_list = list(quotas)
        self._calls_per_session = _smallest(q.calls_per_session for q in quota_list)
        self._seconds_limit = _smallest(q.execution_seconds_per_session for q in quota_list)
        self._bytes_limit = _smallest(q.output_bytes_per_session for q in quota_list)
        self._calls_per_tool = tuple(_KeyedLimits.of(q.calls_per_tool) for q in quota_list if q.calls_per_tool)
        self._concurrency = tuple(
            _KeyedLimits.of(q.max_concurrent_per_tool) for q in quota_list if q.max_concurrent_per_tool
        )
        self._breakers = tuple(
            _Breaker.of(*b) if isinstance(b, tuple) else _Breaker.of(f"circuit_breakers[{i}]", b)
            for i, b in enumerate(breakers)
        )
        self._active = bool(
            self._calls_per_session is not None
            or self._seconds_limit is not None
            or self._bytes_limit is not None
            or self._calls_per_tool
            or self._concurrency
            or self._breakers
        )
        self._store: LimitStore = store if store is not None else InMemoryLimitStore()
        # A shared store brings a shared clock (the server's); one process uses its own.
        self._clock: Callable[[], float] = clock if clock is not None else getattr(self._store, "clock", time.monotonic)
        self._on_store_error = on_store_error
        # A store that checks and counts a whole call in one round trip (Redis).
        self._admit_all: Callable[..., tuple[str, int, float]] | None = getattr(self._store, "admit_all", None)
        self._settle_all: Callable[..., None] | None = getattr(self._store, "settle_all", None)
        self._budgets = self._budget_list()
        self._plans: dict[str, _Plan] = {}

    @classmethod
    def from_policies(
        cls,
        policies: Iterable[NamedPolicy],
        *,
        store: LimitStore | None = None,
        clock: Callable[[], float] | None = None,
        on_store_error: Literal["deny", "allow"] = "deny",
    ) -> Limits:
        """Limits from Policy documents; breakers are named ``<policy>.circuit_breakers[i]``."""
        quotas: list[Quotas] = []
        breakers: list[tuple[str, CircuitBreaker]] = []
        for policy in policies:
            if policy.spec.quotas is not None:
                quotas.append(policy.spec.quotas)
            breakers.extend(
                (f"{policy.name}.circuit_breakers[{i}]", b) for i, b in enumerate(policy.spec.circuit_breakers)
            )
        return cls(quotas, breakers, store=store, clock=clock, on_store_error=on_store_error)

    @classmethod
    def empty(cls) -> Limits:
        """Limits that admit everything and track nothing (falsy)."""
        return _EMPTY_LIMITS

    def __bool__(self) -> bool:
        return self._active

    @property
    def store(self) -> LimitStore:
        """Where this snapshot's limit state lives."""
        return self._store

    # -- admit ----------------------------------------------------------------

    def admit(self, tool_name: str, session_id: str, now: float | None = None) -> Admission | Refusal:
        """Check and count one call of ``tool_name`` in ``session_id`` before it executes.

        Order: breakers (nothing counted yet), spent budgets (read only), then the
        counters (session calls, tool calls, in-flight slot) acquired in that order
        with rollback, then half-open trial slots. A refusal leaves nothing counted.
        A store that can do all of it in one step (``admit_all``) is asked to.

        When the store cannot be used (:class:`LimitStoreError`) the call is refused
        with kind "store", or admitted untracked under ``on_store_error="allow"``.
        """
        if not self._active:
            return _ADMIT_ALL
        plan = self._plans.get(tool_name)
        if plan is None:
            plan = self._plan_for(tool_name)
        if plan.free:
            return _ADMIT_ALL
        try:
            if self._admit_all is not None and now is None:
                kind, index, value = self._admit_all(session_id, plan.budget_args, plan.counter_args, plan.breaker_keys)
                if kind == "ok":
                    return Admission(self, plan, session_id)
                if kind == "budget":
                    return _budget_refusal(plan.budgets[index], tool_name, value)
                if kind == "counter":
                    return plan.counters[index].refusal
                # A breaker is open or recovering: the step by step path below decides.
            return self._admit(plan, tool_name, session_id, now)
        except LimitStoreError as err:
            if self._on_store_error == "allow":
                logger.warning("toolrt admits `{}` untracked: {} (limit_store_on_error: allow)", tool_name, err)
                return _ADMIT_ALL
            logger.warning("toolrt refused `{}`: {} (limit_store_on_error: deny)", tool_name, err)
            return _store_refusal(err, tool_name)

    def _admit(self, plan: _Plan, tool_name: str, session_id: str, now: float | None) -> Admission | Refusal:
        if now is None:
            now = self._clock()
        store = self._store
        recovering: list[tuple[_Breaker, str]] | None = None
        for breaker, key in plan.breakers:
            state = store.get_breaker(key)
            if state is not None and state.phase != "closed":
                if state.phase == "open" and now < state.since + breaker.cooldown_s:
                    return _open_refusal(breaker, tool_name, state, now)
                if recovering is None:
                    recovering = []
                recovering.append((breaker, key))
        for budget in plan.budgets:
            used = store.get(session_id, budget.key)
            if used >= budget.limit:
                return _budget_refusal(budget, tool_name, used)
        counters = plan.counters
        for taken, counter in enumerate(counters):
            admitted, _ = store.try_acquire(
                session_id if counter.per_session else None, counter.key, 1.0, counter.limit
            )
            if not admitted:
                self._give_back(session_id, counters[:taken])
                return counter.refusal
        trials: tuple[str, ...] = ()
        if recovering:
            outcome = self._take_trials(recovering, tool_name, now)
            if isinstance(outcome, Refusal):
                self._give_back(session_id, counters)
                return outcome
            trials = outcome
        return Admission(self, plan, session_id, trials)

    def _give_back(self, session_id: str, counters: Sequence[_Counter]) -> None:
        for counter in reversed(counters):
            self._store.release(session_id if counter.per_session else None, counter.key, 1.0)

    # -- settle ---------------------------------------------------------------

    def _settle(
        self,
        plan: _Plan,
        session_id: str,
        trials: tuple[str, ...],
        seconds: float,
        output_bytes: int,
        breaker_failure: bool,
        now: float | None,
    ) -> None:
        try:
            self._settle_in(plan, session_id, trials, seconds, output_bytes, breaker_failure, now)
        except LimitStoreError as err:
            # The call has run; what it spent (and its slot) cannot be recorded. A slot
            # held as a lease expires on its own; the rest is lost, and said so.
            logger.warning("toolrt could not record the end of a `{}` call: {}", plan.tool, err)

    def _settle_in(
        self,
        plan: _Plan,
        session_id: str,
        trials: tuple[str, ...],
        seconds: float,
        output_bytes: int,
        breaker_failure: bool,
        now: float | None,
    ) -> None:
        store = self._store
        # Spending is only tracked while a budget for it is declared.
        seconds = float(seconds) if self._seconds_limit is not None and seconds > 0 else 0.0
        spent_bytes = float(output_bytes) if self._bytes_limit is not None and output_bytes > 0 else 0.0
        if self._settle_all is not None:
            if plan.slots or seconds or spent_bytes:
                self._settle_all(session_id, plan.slots, seconds, spent_bytes)
        else:
            for key in plan.slots:
                store.release(None, key, 1.0)
            if seconds:
                store.add(session_id, _SECONDS, seconds)
            if spent_bytes:
                store.add(session_id, _BYTES, spent_bytes)
        if not plan.breakers or not (breaker_failure or trials):
            return  # a success outside a trial changes no breaker: failures age out of the window
        if now is None:
            now = self._clock()
        for breaker, key in plan.breakers:
            if key in trials:
                _end_trial(store, key, breaker_failure, now)
            elif breaker_failure:
                _record_failure(store, breaker, key, now)

    # -- sessions and introspection -------------------------------------------

    def forget_session(self, session_id: str) -> None:
        """Drop the session's counts (call when it ends; in-flight slots are unaffected)."""
        if self._active:
            self._store.forget(session_id)

    def usage(self, session_id: str, tool_name: str | None = None) -> dict[str, float]:
        """What is counted now, by quota name; only declared quotas are counted.

        ``calls_per_tool`` and ``max_concurrent_per_tool`` (in flight, all sessions)
        are reported when ``tool_name`` is given.
        """
        if not self._active:
            return {}
        store = self._store
        used = {
            "calls_per_session": store.get(session_id, _CALLS),
            "execution_seconds_per_session": store.get(session_id, _SECONDS),
            "output_bytes_per_session": store.get(session_id, _BYTES),
        }
        if tool_name is not None:
            used["calls_per_tool"] = store.get(session_id, _TOOL_CALLS + tool_name)
            used["max_concurrent_per_tool"] = store.get(None, _RUNNING + tool_name)
        return used

    def breaker_states(self, tool_name: str) -> dict[str, BreakerState]:
        """The state of every breaker matching ``tool_name``, by breaker name."""
        plan = self._plans.get(tool_name) or self._plan_for(tool_name)
        return {b.name: self._store.get_breaker(key) or BreakerState() for b, key in plan.breakers}

    # -- resolving limits for a tool ------------------------------------------

    def _budget_list(self) -> tuple[_Budget, ...]:
        budgets = []
        if self._seconds_limit is not None:
            budgets.append(_Budget(_SECONDS, "execution_seconds_per_session", self._seconds_limit))
        if self._bytes_limit is not None:
            budgets.append(_Budget(_BYTES, "output_bytes_per_session", self._bytes_limit))
        return tuple(budgets)

    def _plan_for(self, tool: str) -> _Plan:
        counters: list[_Counter] = []
        if self._calls_per_session is not None:
            counters.append(
                _Counter(_CALLS, True, self._calls_per_session, _calls_refusal(tool, int(self._calls_per_session)))
            )
        per_tool = _smallest_keyed(self._calls_per_tool, tool)
        if per_tool is not None:
            counters.append(_Counter(_TOOL_CALLS + tool, True, per_tool[0], _tool_calls_refusal(tool, *per_tool)))
        concurrent = _smallest_keyed(self._concurrency, tool)
        if concurrent is not None:
            counters.append(_Counter(_RUNNING + tool, False, concurrent[0], _concurrency_refusal(tool, *concurrent)))
        breakers = tuple((b, f"{b.name}:{tool}") for b in self._breakers if b.matcher.fullmatch(tool))
        plan = _Plan(
            tool=tool,
            budgets=self._budgets,
            counters=tuple(counters),
            slots=tuple(c.key for c in counters if not c.per_session),
            breakers=breakers,
            tracks_spending=bool(self._budgets),
            budget_args=tuple((b.key, b.limit) for b in self._budgets),
            counter_args=tuple((c.per_session, c.key, c.limit) for c in counters),
            breaker_keys=tuple(key for _, key in breakers),
        )
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        # Two threads may resolve the same tool at once; both build the same plan.
        self._plans[tool] = plan
        return plan

    # -- half-open trials -----------------------------------------------------

    def _take_trials(
        self, recovering: Sequence[tuple[_Breaker, str]], tool: str, now: float
    ) -> tuple[str, ...] | Refusal:
        taken: list[str] = []
        for breaker, key in recovering:
            outcome = _take_trial(self._store, breaker, key, tool, now)
            if isinstance(outcome, Refusal):
                for done in taken:
                    _return_trial(self._store, done)
                return outcome
            if outcome:
                taken.append(key)
        return tuple(taken)


_EMPTY_LIMITS = Limits()


# ---------------------------------------------------------------------------
# breaker transitions (each a compare-and-set loop on one state value)


def _take_trial(store: LimitStore, breaker: _Breaker, key: str, tool: str, now: float) -> bool | Refusal:
    """Let the call through as a trial (True), as a plain call (False: closed meanwhile), or refuse."""
    while True:
        state = store.get_breaker(key)
        if state is None or state.phase == "closed":
            return False
        if state.phase == "open":
            if now < state.since + breaker.cooldown_s:
                return _open_refusal(breaker, tool, state, now)
            new = BreakerState("half_open", since=now, trials=1, opened_by=state.opened_by)
        elif state.trials < breaker.half_open_calls:
            new = replace(state, trials=state.trials + 1)
        elif now < state.since + breaker.cooldown_s:
            return _trials_busy_refusal(breaker, tool, state, now)
        else:
            # This round's trials never reported back (their caller died?): start a new
            # round rather than leave the tool paused for good.
            new = replace(state, since=now, trials=1)
        if store.cas_breaker(key, state, new):
            return True


def _return_trial(store: LimitStore, key: str) -> None:
    """Give back a trial slot taken by a call that was then refused elsewhere."""
    while True:
        state = store.get_breaker(key)
        if state is None or state.phase != "half_open" or state.trials == 0:
            return
        if store.cas_breaker(key, state, replace(state, trials=state.trials - 1)):
            return


def _end_trial(store: LimitStore, key: str, failed: bool, now: float) -> None:
    """A trial's outcome decides a half-open breaker: success closes it, failure re-opens it."""
    while True:
        state = store.get_breaker(key)
        if state is None or state.phase != "half_open":
            return  # another trial decided already
        if store.cas_breaker(key, state, BreakerState("open", since=now) if failed else None):
            return


def _record_failure(store: LimitStore, breaker: _Breaker, key: str, now: float) -> None:
    """Count a failure in the window; open the breaker when there are enough."""
    horizon = now - breaker.window_s
    while True:
        state = store.get_breaker(key)
        if state is not None and state.phase != "closed":
            return  # paused already: this call began before it opened
        recent = (*(t for t in state.failures if t > horizon), now) if state is not None else (now,)
        if len(recent) >= breaker.failures:
            new = BreakerState("open", since=now, opened_by=len(recent))
        else:
            new = BreakerState("closed", failures=recent)
        if store.cas_breaker(key, state, new):
            return


# ---------------------------------------------------------------------------
# messages (written for the model: what was hit, its limit, what to do)


def _num(value: float) -> str:
    """12, 0.5, 1000000: no float noise or exponents in a message."""
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}".rstrip("0").rstrip(".")


def _wait(seconds: float) -> str:
    """A remaining wait, rounded up so the model never retries too early."""
    return str(math.ceil(seconds)) if seconds >= 10 else _num(math.ceil(seconds * 10) / 10)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _keyed(quota: str, tool: str, key: str) -> str:
    return quota if key == tool else f"{quota} `{key}`"


def _calls_refusal(tool: str, limit: int) -> Refusal:
    message = f"Quota reached: this session may make at most {limit} tool calls (calls_per_session); none are left. Finish with the results you already have."
    return Refusal("quota", "calls_per_session", limit, message, tool)


def _tool_calls_refusal(tool: str, limit: int, key: str) -> Refusal:
    message = f"Quota reached: this session may call `{tool}` at most {_plural(limit, 'time')} ({_keyed('calls_per_tool', tool, key)}); none are left. Use another tool or go on without it."
    return Refusal("quota", "calls_per_tool", limit, message, tool)


def _concurrency_refusal(tool: str, limit: int, key: str) -> Refusal:
    message = f"Quota reached: at most {limit} concurrent `{tool}` {'execution' if limit == 1 else 'executions'} ({_keyed('max_concurrent_per_tool', tool, key)}); wait for one to finish, then try again."
    return Refusal("quota", "max_concurrent_per_tool", limit, message, tool)


def _budget_refusal(budget: _Budget, tool: str, used: float) -> Refusal:
    if budget.key == _SECONDS:
        spent = f"this session's tool calls may run for at most {_num(budget.limit)} s in total ({budget.quota}); {used:.1f} s are used"
    else:
        spent = f"this session's tool calls may return at most {_num(budget.limit)} bytes of output in total ({budget.quota}); {_num(used)} bytes are used"
    message = (
        f"Quota reached: {spent}. No more tool calls can run in this session; finish with the results you already have."
    )
    return Refusal("quota", budget.quota, budget.limit, message, tool)


def _store_refusal(err: LimitStoreError, tool: str) -> Refusal:
    message = (
        f"The call was not run: its limits could not be checked because the shared limit store ({err.store}) cannot be used right now"
        " (limit_store_on_error: deny). Try again in a little while."
    )
    return Refusal("store", "limit_store", 0, message, tool)


def _open_refusal(breaker: _Breaker, tool: str, state: BreakerState, now: float) -> Refusal:
    remaining = max(0.0, state.since + breaker.cooldown_s - now)
    if state.opened_by:
        cause = f"`{tool}` is failing: {_plural(state.opened_by, 'failure')} in the last {_num(breaker.window_s)} s"
    else:
        cause = f"`{tool}` is still failing: a trial call after its pause failed too"
    message = f"{cause}; it is paused for another {_wait(remaining)} s (circuit breaker `{breaker.name}`). Try again later or use another tool."
    return Refusal("breaker", breaker.name, breaker.failures, message, tool, retry_after_s=remaining)


def _trials_busy_refusal(breaker: _Breaker, tool: str, state: BreakerState, now: float) -> Refusal:
    remaining = max(0.0, state.since + breaker.cooldown_s - now)
    message = (
        f"`{tool}` is recovering from failures: {_plural(state.trials, 'trial call')} {'is' if state.trials == 1 else 'are'} checking whether it works again "
        f"(circuit breaker `{breaker.name}`). Try again in a few seconds (at most {_wait(remaining)} s) or use another tool."
    )
    return Refusal("breaker", breaker.name, breaker.failures, message, tool, retry_after_s=remaining)
