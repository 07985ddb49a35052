"""Tool versions: which version serves a call, and the canary's automatic rollback.

Order of precedence for a call to ``name`` (without ``@version``): the session's pin
(``Session(pins={"name": "2"})``), else the tool's ``rollout``, else the default
version (the unversioned one, else the highest). A rollout assigns each session a
version by a stable hash of the tool name and the session id into 10,000 buckets, so
a session always gets the same version while the config stays the same, and the
shares match the declared percentages over many sessions.

Rollback: with ``rollback`` declared, every call's outcome is counted per version
over a sliding window; when the canary has at least ``min_calls`` calls in the window
and its error rate exceeds the stable version's by more than the margin, the canary
is halted: new assignments go to the stable version until the config changes (a new
rollout is a new key). The halt is logged once, counted in metrics and shown by
``toolrt versions``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from runtime.config.models import Rollback, Rollout

BUCKETS = 10_000


@dataclass(frozen=True, slots=True)
class RolloutTable:
    """A tool's rollout, compiled: cumulative bucket bounds -> version."""

    tool: str
    bounds: tuple[tuple[int, str], ...]
    stable: str | None = None
    canary: str | None = None
    rollback: Rollback | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        """Identifies this rollout: a changed config is a new key (and a fresh start)."""
        return (self.tool, self.bounds, self.stable, self.canary)

    def bucket(self, session_id: str) -> int:
        digest = hashlib.sha256(f"{self.tool}\x00{session_id}".encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % BUCKETS

    def assign(self, session_id: str, halted: bool = False) -> str:
        """The version serving ``session_id`` (the stable one once the canary is halted)."""
        if halted and self.stable is not None:
            return self.stable
        at = self.bucket(session_id)
        for bound, version in self.bounds:
            if at < bound:
                return version
        return self.bounds[-1][1]

    def split(self) -> dict[str, float]:
        """Version -> declared percent."""
        shares: dict[str, float] = {}
        previous = 0
        for bound, version in self.bounds:
            shares[version] = shares.get(version, 0.0) + (bound - previous) / BUCKETS * 100
            previous = bound
        return shares


def compile_rollout(tool: str, rollout: Rollout, versions: Sequence[str]) -> tuple[RolloutTable | None, list[str]]:
    """The table for ``rollout`` of ``tool`` declared in ``versions``, or the problems."""
    problems: list[str] = []
    known = ", ".join(sorted(versions)) or "none"

    def check(version: str, where: str) -> None:
        if version not in versions:
            problems.append(
                f"{where} names version `{version}` of `{tool}`, which is not declared (versions: {known})."
            )

    if rollout.weights is not None:
        if rollout.stable is not None or rollout.canary is not None:
            problems.append("a rollout is either `stable` (with `canary`) or `weights`, not both.")
        if rollout.rollback is not None:
            problems.append(
                "`rollback` needs the `stable` + `canary` form: with `weights` there is no stable version to fall "
                "back to."
            )
        if not rollout.weights:
            problems.append("`weights` is empty; give each version its percent of sessions.")
        for version in rollout.weights:
            check(version, "`weights`")
        total = sum(rollout.weights.values())
        if abs(total - 100.0) > 1e-6:
            problems.append(
                f"the rollout weights sum to {total:g}, not 100; adjust them so every session gets a version."
            )
        if problems:
            return None, problems
        pairs = sorted(rollout.weights.items(), key=lambda item: item[0])
        return RolloutTable(tool, _bounds(pairs)), []
    if rollout.stable is None:
        problems.append("a rollout needs `stable` (the version most sessions get) or `weights`.")
        return None, problems
    check(rollout.stable, "`stable`")
    if rollout.canary is not None:
        check(rollout.canary.version, "`canary`")
        if rollout.canary.version == rollout.stable:
            problems.append(f"the canary is the stable version `{rollout.stable}`; name another version as the canary.")
    elif rollout.rollback is not None:
        problems.append("`rollback` needs a `canary` to roll back.")
    if problems:
        return None, problems
    canary = rollout.canary
    if canary is None:
        return RolloutTable(tool, ((BUCKETS, rollout.stable),), rollout.stable), []
    table = _bounds([(canary.version, canary.percent), (rollout.stable, 100.0 - canary.percent)])
    return RolloutTable(tool, table, rollout.stable, canary.version, rollout.rollback), []


def _bounds(pairs: Sequence[tuple[str, float]]) -> tuple[tuple[int, str], ...]:
    """Cumulative bucket bounds; a version with no share gets no bucket."""
    bounds: list[tuple[int, str]] = []
    running = 0.0
    previous = 0
    for version, percent in pairs:
        running += percent
        bound = min(round(running * BUCKETS / 100), BUCKETS)
        if bound > previous:
            bounds.append((bound, version))
            previous = bound
    if bounds and bounds[-1][0] < BUCKETS:
        bounds[-1] = (BUCKETS, bounds[-1][1])
    return tuple(bounds)


@dataclass
class _Window:
    calls: deque[tuple[float, bool]] = field(default_factory=deque)  # (time, failed)

    def add(self, now: float, failed: bool, horizon: float) -> None:
        self.calls.append((now, failed))
        while self.calls and self.calls[0][0] < horizon:
            self.calls.popleft()

    def rate(self, horizon: float) -> tuple[int, float]:
        while self.calls and self.calls[0][0] < horizon:
            self.calls.popleft()
        count = len(self.calls)
        return count, (sum(1 for _, failed in self.calls if failed) / count if count else 0.0)


class CanaryMonitor:
    """Counts outcomes per tool version and halts canaries that fail too often.
    Shared by every snapshot of a runtime; thread-safe. ``on_halt`` hears of each halt."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, on_halt: Callable[[RolloutTable, str], None] | None = None
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[tuple[Any, str], _Window] = {}
        self._halted: dict[tuple[Any, ...], str] = {}
        self._on_halt = on_halt

    def halted(self, table: RolloutTable) -> bool:
        return table.key in self._halted

    def halts(self) -> Mapping[tuple[Any, ...], str]:
        """Rollout key -> why its canary was halted."""
        with self._lock:
            return dict(self._halted)

    def record(self, table: RolloutTable, version: str, failed: bool) -> None:
        """Count one call served by ``version`` under ``table``; may halt the canary."""
        rollback = table.rollback
        if rollback is None or table.canary is None or table.stable is None:
            return
        now = self._clock()
        horizon = now - rollback.window_s
        with self._lock:
            if table.key in self._halted:
                return
            window = self._windows.setdefault((table.key, version), _Window())
            window.add(now, failed, horizon)
            canary_calls, canary_rate = self._windows.get((table.key, table.canary), _Window()).rate(horizon)
            _, stable_rate = self._windows.get((table.key, table.stable), _Window()).rate(horizon)
            if canary_calls < rollback.min_calls or canary_rate - stable_rate <= rollback.max_error_rate_margin:
                return
            why = (
                f"canary `{table.tool}@{table.canary}` failed {canary_rate:.0%} of {canary_calls} calls in "
                f"{rollback.window_s:g} s, stable `{table.stable}` {stable_rate:.0%}: over the margin of "
                f"{rollback.max_error_rate_margin:.0%}"
            )
            self._halted[table.key] = why
        logger.warning(
            "toolrt rolled back a canary: {}; new sessions get the stable version until the config changes", why
        )
        if self._on_halt is not None:
            self._on_halt(table, why)
