"""The pieces :class:`~runtime.policy.limits.Limits` is compiled into: a refusal, the
resolved limits of one tool (:class:`Plan`), circuit breakers and their trial calls,
and the messages a refused call gets."""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from runtime.config.models import CircuitBreaker, PolicySpec
from runtime.errors import LimitStoreError
from runtime.policy.limitstore import BreakerState, LimitStore

# Store keys. Session-scoped ones live under the session id, the rest are global.
CALLS = "calls"
SECONDS = "seconds"
BYTES = "bytes"
TOOL_CALLS = "calls:"  # + tool name
RUNNING = "running:"  # + tool name

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


# ---------------------------------------------------------------------------
# compiled configuration


def _is_glob(key: str) -> bool:
    return any(ch in key for ch in "*?[")


@dataclass(frozen=True, slots=True)
class KeyedLimits:
    """One document's tool-keyed limits: exact names beat globs, smallest glob wins."""

    exact: Mapping[str, int]
    globs: tuple[tuple[str, re.Pattern[str], int], ...]

    @classmethod
    def of(cls, limits: Mapping[str, int]) -> KeyedLimits:
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


def smallest_keyed(documents: Sequence[KeyedLimits], tool: str) -> tuple[int, str] | None:
    found: tuple[int, str] | None = None
    for document in documents:
        resolved = document.resolve(tool)
        if resolved is not None and (found is None or resolved[0] < found[0]):
            found = resolved
    return found


def smallest(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


@dataclass(frozen=True, slots=True)
class Breaker:
    name: str
    matcher: re.Pattern[str]
    failures: int
    window_s: float
    cooldown_s: float
    half_open_calls: int

    @classmethod
    def of(cls, name: str, spec: CircuitBreaker) -> Breaker:
        matcher = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in spec.tools))
        return cls(name, matcher, spec.failures, spec.window_s, spec.cooldown_s, spec.half_open_calls)


@dataclass(frozen=True, slots=True)
class Counter:
    """A counted quota a call takes one unit of; the refusal is built once per tool."""

    key: str
    per_session: bool
    limit: float
    refusal: Refusal


@dataclass(frozen=True, slots=True)
class Budget:
    """A per-session amount spent after calls; a call is refused once it is used up."""

    key: str
    quota: str
    limit: float


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything that applies to one tool, resolved once per tool name."""

    tool: str
    budgets: tuple[Budget, ...]
    counters: tuple[Counter, ...]
    slots: tuple[str, ...]  # keys of global counters to give back on finish
    breakers: tuple[tuple[Breaker, str], ...]  # with this tool's state key
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


def take_trial(store: LimitStore, breaker: Breaker, key: str, tool: str, now: float) -> bool | Refusal:
    """Let the call through as a trial (True), as a plain call (False: closed meanwhile), or refuse."""
    while True:
        state = store.get_breaker(key)
        if state is None or state.phase == "closed":
            return False
        if state.phase == "open":
            if now < state.since + breaker.cooldown_s:
                return open_refusal(breaker, tool, state, now)
            new = BreakerState("half_open", since=now, trials=1, opened_by=state.opened_by)
        elif state.trials < breaker.half_open_calls:
            new = replace(state, trials=state.trials + 1)
        elif now < state.since + breaker.cooldown_s:
            return trials_busy_refusal(breaker, tool, state, now)
        else:
            # This round's trials never reported back (their caller died?): start a new
            # round rather than leave the tool paused for good.
            new = replace(state, since=now, trials=1)
        if store.cas_breaker(key, state, new):
            return True


def return_trial(store: LimitStore, key: str) -> None:
    """Give back a trial slot taken by a call that was then refused elsewhere."""
    while True:
        state = store.get_breaker(key)
        if state is None or state.phase != "half_open" or state.trials == 0:
            return
        if store.cas_breaker(key, state, replace(state, trials=state.trials - 1)):
            return


def end_trial(store: LimitStore, key: str, failed: bool, now: float) -> None:
    """A trial's outcome decides a half-open breaker: success closes it, failure re-opens it."""
    while True:
        state = store.get_breaker(key)
        if state is None or state.phase != "half_open":
            return  # another trial decided already
        if store.cas_breaker(key, state, BreakerState("open", since=now) if failed else None):
            return


def record_failure(store: LimitStore, breaker: Breaker, key: str, now: float) -> None:
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


def calls_refusal(tool: str, limit: int) -> Refusal:
    message = (
        f"Quota reached: this session may make at most {limit} tool calls (calls_per_session); none are left. "
        "Finish with the results you already have."
    )
    return Refusal("quota", "calls_per_session", limit, message, tool)


def tool_calls_refusal(tool: str, limit: int, key: str) -> Refusal:
    message = (
        f"Quota reached: this session may call `{tool}` at most {_plural(limit, 'time')} "
        f"({_keyed('calls_per_tool', tool, key)}); none are left. Use another tool or go on without it."
    )
    return Refusal("quota", "calls_per_tool", limit, message, tool)


def concurrency_refusal(tool: str, limit: int, key: str) -> Refusal:
    message = (
        f"Quota reached: at most {limit} concurrent `{tool}` {'execution' if limit == 1 else 'executions'} "
        f"({_keyed('max_concurrent_per_tool', tool, key)}); wait for one to finish, then try again."
    )
    return Refusal("quota", "max_concurrent_per_tool", limit, message, tool)


def budget_refusal(budget: Budget, tool: str, used: float) -> Refusal:
    if budget.key == SECONDS:
        spent = (
            f"this session's tool calls may run for at most {_num(budget.limit)} s in total ({budget.quota}); "
            f"{used:.1f} s are used"
        )
    else:
        spent = (
            f"this session's tool calls may return at most {_num(budget.limit)} bytes of output in total "
            f"({budget.quota}); {_num(used)} bytes are used"
        )
    message = (
        f"Quota reached: {spent}. No more tool calls can run in this session; finish with the results you already have."
    )
    return Refusal("quota", budget.quota, budget.limit, message, tool)


def store_refusal(err: LimitStoreError, tool: str) -> Refusal:
    message = (
        f"The call was not run: its limits could not be checked because the shared limit store ({err.store}) "
        "cannot be used right now"
        " (limit_store_on_error: deny). Try again in a little while."
    )
    return Refusal("store", "limit_store", 0, message, tool)


def open_refusal(breaker: Breaker, tool: str, state: BreakerState, now: float) -> Refusal:
    remaining = max(0.0, state.since + breaker.cooldown_s - now)
    if state.opened_by:
        cause = f"`{tool}` is failing: {_plural(state.opened_by, 'failure')} in the last {_num(breaker.window_s)} s"
    else:
        cause = f"`{tool}` is still failing: a trial call after its pause failed too"
    message = (
        f"{cause}; it is paused for another {_wait(remaining)} s (circuit breaker `{breaker.name}`). Try again "
        "later or use another tool."
    )
    return Refusal("breaker", breaker.name, breaker.failures, message, tool, retry_after_s=remaining)


def trials_busy_refusal(breaker: Breaker, tool: str, state: BreakerState, now: float) -> Refusal:
    remaining = max(0.0, state.since + breaker.cooldown_s - now)
    message = (
        f"`{tool}` is recovering from failures: {_plural(state.trials, 'trial call')} "
        f"{'is' if state.trials == 1 else 'are'} checking whether it works again "
        f"(circuit breaker `{breaker.name}`). Try again in a few seconds (at most {_wait(remaining)} s) or use "
        "another tool."
    )
    return Refusal("breaker", breaker.name, breaker.failures, message, tool, retry_after_s=remaining)
