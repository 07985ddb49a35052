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

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from loguru import logger

from runtime.config.models import CircuitBreaker, Quotas
from runtime.errors import LimitStoreError
from runtime.policy.limitparts import (
    BYTES,
    CALLS,
    RUNNING,
    SECONDS,
    TOOL_CALLS,
    Breaker,
    Budget,
    Counter,
    KeyedLimits,
    NamedPolicy,
    Plan,
    Refusal,
    budget_refusal,
    calls_refusal,
    concurrency_refusal,
    end_trial,
    open_refusal,
    record_failure,
    return_trial,
    smallest,
    smallest_keyed,
    store_refusal,
    take_trial,
    tool_calls_refusal,
)
from runtime.policy.limitstore import BreakerPhase, BreakerState, InMemoryLimitStore, LimitStore

__all__ = ["Admission", "BreakerPhase", "BreakerState", "InMemoryLimitStore", "LimitStore", "Limits", "Refusal"]

_MAX_PLANS = 10_000  # tool names whose resolved limits are cached; admit only sees known tools


class Admission:
    """Permission for one call to execute; call :meth:`finish` once it has.

    Holds the call's in-flight slots and any half-open trial it was let through as;
    finishing gives them back and records what the call spent and how it ended.
    A second finish does nothing.
    """

    __slots__ = ("_limits", "_plan", "_trials", "_pending", "session_id")

    def __init__(self, limits: Limits | None, plan: Plan | None, session_id: str, trials: tuple[str, ...] = ()) -> None:
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
        self._calls_per_session = smallest(q.calls_per_session for q in quota_list)
        self._seconds_limit = smallest(q.execution_seconds_per_session for q in quota_list)
        self._bytes_limit = smallest(q.output_bytes_per_session for q in quota_list)
        self._calls_per_tool = tuple(KeyedLimits.of(q.calls_per_tool) for q in quota_list if q.calls_per_tool)
        self._concurrency = tuple(
            KeyedLimits.of(q.max_concurrent_per_tool) for q in quota_list if q.max_concurrent_per_tool
        )
        self._breakers = tuple(
            Breaker.of(*b) if isinstance(b, tuple) else Breaker.of(f"circuit_breakers[{i}]", b)
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
        self._plans: dict[str, Plan] = {}

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
                    return budget_refusal(plan.budgets[index], tool_name, value)
                if kind == "counter":
                    return plan.counters[index].refusal
                # A breaker is open or recovering: the step by step path below decides.
            return self._admit(plan, tool_name, session_id, now)
        except LimitStoreError as err:
            if self._on_store_error == "allow":
                logger.warning("toolrt admits `{}` untracked: {} (limit_store_on_error: allow)", tool_name, err)
                return _ADMIT_ALL
            logger.warning("toolrt refused `{}`: {} (limit_store_on_error: deny)", tool_name, err)
            return store_refusal(err, tool_name)

    def _admit(self, plan: Plan, tool_name: str, session_id: str, now: float | None) -> Admission | Refusal:
        if now is None:
            now = self._clock()
        store = self._store
        recovering: list[tuple[Breaker, str]] | None = None
        for breaker, key in plan.breakers:
            state = store.get_breaker(key)
            if state is not None and state.phase != "closed":
                if state.phase == "open" and now < state.since + breaker.cooldown_s:
                    return open_refusal(breaker, tool_name, state, now)
                if recovering is None:
                    recovering = []
                recovering.append((breaker, key))
        for budget in plan.budgets:
            used = store.get(session_id, budget.key)
            if used >= budget.limit:
                return budget_refusal(budget, tool_name, used)
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

    def _give_back(self, session_id: str, counters: Sequence[Counter]) -> None:
        for counter in reversed(counters):
            self._store.release(session_id if counter.per_session else None, counter.key, 1.0)

    # -- settle ---------------------------------------------------------------

    def _settle(
        self,
        plan: Plan,
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
        plan: Plan,
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
                store.add(session_id, SECONDS, seconds)
            if spent_bytes:
                store.add(session_id, BYTES, spent_bytes)
        if not plan.breakers or not (breaker_failure or trials):
            return  # a success outside a trial changes no breaker: failures age out of the window
        if now is None:
            now = self._clock()
        for breaker, key in plan.breakers:
            if key in trials:
                end_trial(store, key, breaker_failure, now)
            elif breaker_failure:
                record_failure(store, breaker, key, now)

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
            "calls_per_session": store.get(session_id, CALLS),
            "execution_seconds_per_session": store.get(session_id, SECONDS),
            "output_bytes_per_session": store.get(session_id, BYTES),
        }
        if tool_name is not None:
            used["calls_per_tool"] = store.get(session_id, TOOL_CALLS + tool_name)
            used["max_concurrent_per_tool"] = store.get(None, RUNNING + tool_name)
        return used

    def breaker_states(self, tool_name: str) -> dict[str, BreakerState]:
        """The state of every breaker matching ``tool_name``, by breaker name."""
        plan = self._plans.get(tool_name) or self._plan_for(tool_name)
        return {b.name: self._store.get_breaker(key) or BreakerState() for b, key in plan.breakers}

    # -- resolving limits for a tool ------------------------------------------

    def _budget_list(self) -> tuple[Budget, ...]:
        budgets = []
        if self._seconds_limit is not None:
            budgets.append(Budget(SECONDS, "execution_seconds_per_session", self._seconds_limit))
        if self._bytes_limit is not None:
            budgets.append(Budget(BYTES, "output_bytes_per_session", self._bytes_limit))
        return tuple(budgets)

    def _plan_for(self, tool: str) -> Plan:
        counters: list[Counter] = []
        if self._calls_per_session is not None:
            counters.append(
                Counter(CALLS, True, self._calls_per_session, calls_refusal(tool, int(self._calls_per_session)))
            )
        per_tool = smallest_keyed(self._calls_per_tool, tool)
        if per_tool is not None:
            counters.append(Counter(TOOL_CALLS + tool, True, per_tool[0], tool_calls_refusal(tool, *per_tool)))
        concurrent = smallest_keyed(self._concurrency, tool)
        if concurrent is not None:
            counters.append(Counter(RUNNING + tool, False, concurrent[0], concurrency_refusal(tool, *concurrent)))
        breakers = tuple((b, f"{b.name}:{tool}") for b in self._breakers if b.matcher.fullmatch(tool))
        plan = Plan(
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
        self, recovering: Sequence[tuple[Breaker, str]], tool: str, now: float
    ) -> tuple[str, ...] | Refusal:
        taken: list[str] = []
        for breaker, key in recovering:
            outcome = take_trial(self._store, breaker, key, tool, now)
            if isinstance(outcome, Refusal):
                for done in taken:
                    return_trial(self._store, done)
                return outcome
            if outcome:
                taken.append(key)
        return tuple(taken)


_EMPTY_LIMITS = Limits()
