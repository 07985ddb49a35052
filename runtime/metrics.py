"""Metrics: an in-process registry of what the runtime did, cheap enough for every call.

One :class:`Metrics` counts calls by tool and status, policy decisions by effect,
timeouts, retries, truncations, redactions by kind, quota and circuit-breaker trips,
snapshot reloads and MCP listings that drift from the lock file, and keeps per-stage
latencies. Counters kept elsewhere (the
read cache's hits and misses, the file editor's lock waits and conflicts) are not
copied on every call: their owners register a *gauge source*, a function read only
when a snapshot is taken.

:meth:`Metrics.snapshot` returns plain JSON-able data; :meth:`Metrics.prometheus`
renders the same numbers in the Prometheus text exposition format 0.0.4. Each
:class:`~runtime.runtime.Runtime` keeps its own registry (``runtime.metrics``); there is
no process-wide one.

Cost and exactness. :meth:`Metrics.record_call` runs on the per-call hot path of a
pipeline that costs tens of microseconds. It appends the call's facts to a deque (no
lock) and, once :data:`FOLD_AT` calls are queued, counts them in one go under the
registry lock if no reader holds it (otherwise a later call does). Counting in
batches keeps the counting code and its data warm: counted one at a time, between
the pipeline's stages, a call cost about twice as much. Every reading
(:meth:`Metrics.snapshot`, :meth:`Metrics.prometheus`) counts the queued calls first,
so counts are exact, on free-threaded builds too. Quantiles are computed only when
read, from the newest ``reservoir_size`` samples of each stage; counts and sums cover
every observation.

OpenTelemetry. :meth:`Metrics.bind_opentelemetry` reports the same numbers through the app's MeterProvider
as observable instruments, read only when the app collects; see
:mod:`runtime.telemetry.meters` for the instrument names.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter, methodcaller
from typing import TYPE_CHECKING, Any

from runtime.metricnames import MCP_DRIFT, MCP_DRIFTED, SCALARS, STAGED, WORKFLOW_COUNTERS

if TYPE_CHECKING:
    from runtime.telemetry.meters import Binding

__all__ = ["Metrics"]

DEFAULT_RESERVOIR_SIZE = 4096
#: Recorded calls are counted once this many are queued (and at every reading).
FOLD_AT = 64
QUANTILES: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
#: Histogram bucket bounds in seconds for call and stage durations: tool calls run from
#: a millisecond (an in-process handler) to minutes (a build), so the buckets span that.
BUCKETS_S: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)
_BOUNDS_MS: tuple[float, ...] = tuple(bound * 1000 for bound in BUCKETS_S)
#: The ``tool`` label of calls naming no tool of the snapshot: a model can make up any
#: number of names, and each must not become a series of its own.
UNKNOWN_TOOL = "(unknown)"

# Counter keys are tuples whose first element names the family; prebuilt where the
# key has no variable part so the hot path does not build a tuple for them.
_TIMEOUTS = ("timeouts",)
_RETRIES = ("retries",)
_TRUNCATIONS = ("truncations",)
_QUOTA_TRIPS = ("quota_trips",)
_BREAKER_TRIPS = ("breaker_trips",)
_RELOAD_OK = ("reloads", "ok")
_RELOAD_FAILED = ("reloads", "failed")

# (snapshot key, counter key, metric name, help) of the unlabelled counters, in exposition order.
_SCALARS: tuple[tuple[str, tuple[str], str, str], ...] = tuple(
    (key, (key,), metric, help_text) for key, metric, help_text in SCALARS
)

Source = Callable[[], Mapping[str, float]]
_WORKFLOW_FAMILIES = frozenset(f"workflow_{key}" for key, *_ in WORKFLOW_COUNTERS)


class _Stage:
    """One pipeline stage's latencies: the newest samples, and the count and sum of all."""

    __slots__ = ("buckets", "count", "name", "samples", "total")

    def __init__(self, name: str, reservoir_size: int) -> None:
        self.name = name
        self.samples: deque[float] = deque(maxlen=reservoir_size)
        # Attribute += on a __slots__ object is, like the dict increments, not
        # interrupted between read and write under the GIL.
        self.count = 0
        self.total = 0.0
        self.buckets = [0] * (len(_BOUNDS_MS) + 1)  # per bucket (not cumulative); the last is +Inf


_LABELS = itemgetter(slice(0, 8))  # a queued call's labels (see Metrics.record_call)
_REDACTIONS = itemgetter(9)


_KEYS = methodcaller("keys")


def _observe(buckets: list[int], values: Sequence[float]) -> float:
    """Count ``values`` into per-bucket ``buckets`` (each where ``bisect_left`` over the
    bounds places it) and return their sum."""
    added = sum(values)
    if len(values) < 8 or added != added:  # few, or a NaN among them (no order to count by)
        for value in values:
            buckets[bisect.bisect_left(_BOUNDS_MS, value)] += 1
        return added
    ordered = sorted(values)
    below = 0
    for position, bound in enumerate(_BOUNDS_MS):
        upto = bisect.bisect_right(
            ordered, bound
        )  # values <= bound: bisect_left over the bounds puts them here or lower
        buckets[position] += upto - below
        below = upto
    buckets[-1] += len(ordered) - below
    return added


def _histogram(buckets: list[int], total_ms: float, count: int) -> dict[str, Any]:
    """A histogram in seconds as plain data: the upper bounds ``le`` (without +Inf, whose
    count is ``count``), the cumulative count at each, the sum and the count."""
    cumulative: list[int] = []
    running = 0
    for n in buckets[:-1]:
        running += n
        cumulative.append(running)
    return {"le": list(BUCKETS_S), "cumulative": cumulative, "sum": total_ms / 1000, "count": count}


class Metrics:
    """A registry of runtime counters and stage latencies.

    Recording never takes a lock and never raises on well-typed input; reading
    (:meth:`snapshot`, :meth:`prometheus`) and :meth:`reset` take one lock so that a
    reset cannot interleave with a copy.
    """

    def __init__(self, reservoir_size: int = DEFAULT_RESERVOIR_SIZE) -> None:
        if reservoir_size < 1:
            raise ValueError("reservoir_size must be at least 1")
        self._reservoir_size = reservoir_size
        self._lock = threading.Lock()
        self._sources: dict[str, Source] = {}
        # Facts about this process as labels (the snapshot version served): name -> labels.
        self._info: dict[str, dict[str, str]] = {}
        self._drifted: dict[str, int] = {}  # MCP server -> tools its latest listing differs from the lock in
        # Called with each call's timings (an OpenTelemetry histogram); a tuple, replaced
        # whole, so that the hot path iterates it without a lock. Usually empty.
        self._observers: tuple[Callable[[Mapping[str, float]], None], ...] = ()
        self._fresh()

    def _fresh(self) -> None:
        # Replaced wholesale (not cleared) on reset: a recorder that already holds the
        # old containers finishes its writes into them instead of racing a clear().
        self._counts: defaultdict[tuple[str, ...], int] = defaultdict(int)
        # Calls recorded but not counted yet (see record_call); a deque, so that
        # appending from any thread needs no lock.
        self._pending: deque[tuple[Any, ...]] = deque()
        self._workflow_pending: deque[tuple[Any, ...]] = deque()  # runs and resumes (record_workflow)
        # Timing key ("validate_ms") -> its stage, or None for a key that is not a
        # stage timing, so the hot path does one dict lookup per timing.
        self._stages: dict[str, _Stage | None] = {}
        # Per tool: [buckets, sum in ms, count] of whole-call durations (the total_ms timing).
        self._tools: dict[str, list[Any]] = {}

    # -- recording (hot path) -------------------------------------------------

    def record_call(
        self,
        tool: str,
        status: str,
        timings_ms: Mapping[str, float],
        decision: str | None,
        code: str | None,
        truncated: bool,
        redactions: Mapping[str, int] | None,
        retries: int = 0,
        version: str | None = None,
        staged: tuple[tuple[str, str, str], ...] | None = None,
    ) -> None:
        """Count one finished call.

        ``status`` is the result status (``"timeout"`` also counts as a timeout);
        ``decision`` the policy effect, if one was reached; ``code`` the error code
        (``"quota_exceeded"`` and ``"circuit_open"`` count as quota and breaker
        trips). ``staged``: the staged rules that matched, ``(policy/rule, would-be
        effect, enforce)`` each. Each ``<stage>_ms`` entry of ``timings_ms`` is one latency sample of
        that stage; other keys and None values are ignored.

        The call is queued and counted in batches (see :data:`FOLD_AT`): counting
        one call at a time between the pipeline's stages cost about twice as much,
        its code and data being cold each time. Every reading counts what is queued
        first, so readers never see a call missing.
        """
        pending = self._pending
        # The labels first (one slice of them is what _fold counts), then what is summed.
        pending.append((tool, status, decision, code, truncated, retries, version, staged, timings_ms, redactions))
        if len(pending) >= FOLD_AT and self._lock.acquire(
            blocking=False
        ):  # a reader folding right now: the next call will
            try:
                self._fold()
            finally:
                self._lock.release()
        for observer in self._observers:
            observer(timings_ms)

    def _fold(self) -> None:
        """Count every queued call (and workflow run). Called with the lock held.

        Counted by column, not call by call: calls with the same labels (almost all
        of them) are grouped and counted once per group, each stage's latencies are
        taken as one list, so most of the work runs in C whatever the batch size."""
        if self._workflow_pending:
            self._fold_workflows()
        pending = self._pending
        if not pending:
            return
        popleft = pending.popleft
        batch = [popleft() for _ in range(len(pending))]  # others may append meanwhile: they wait for the next fold
        try:
            grouped = Counter(map(_LABELS, batch))
        except TypeError:  # a label that cannot be grouped (not hashable): call by call
            grouped = Counter()
            for entry in batch:
                self._count_labels(entry[:8], 1)
        for labels, n in grouped.items():
            self._count_labels(labels, n)
        redactions: dict[str, int] = {}
        for found in filter(None, map(_REDACTIONS, batch)):
            for kind, times in found.items():
                redactions[kind] = redactions.get(kind, 0) + times
        counts = self._counts
        for kind, times in redactions.items():
            counts[("redactions", kind)] += times
        timings = [entry[8] for entry in batch if entry[8]]
        if timings:
            self._fold_timings(batch, timings)

    def _count_labels(self, labels: tuple[Any, ...], n: int) -> None:
        """Count ``n`` calls with the same ``labels`` (see record_call)."""
        tool, status, decision, code, truncated, retries, version, staged = labels
        counts = self._counts
        counts[("calls", tool, status)] += n
        if version:  # the version that served it (a pin, a canary or the default)
            counts[("versions", tool, version, status)] += n
        # A write that timed out ends with status "unknown" (its effect is unknown) and
        # code "timeout": it is a timeout all the same.
        if status == "timeout" or code == "timeout":
            counts[_TIMEOUTS] += n
        if decision is not None:
            counts[("decisions", decision)] += n
        if code is not None:
            if code == "quota_exceeded":
                counts[_QUOTA_TRIPS] += n
            elif code == "circuit_open":
                counts[_BREAKER_TRIPS] += n
        if staged:
            for rule, effect, enforce in staged:
                counts[("staged", rule, effect, enforce)] += n
        if truncated:
            counts[_TRUNCATIONS] += n
        if retries:
            counts[_RETRIES] += retries * n

    def _fold_timings(self, batch: list[tuple[Any, ...]], timings: list[Mapping[str, float]]) -> None:
        """Each ``<stage>_ms`` timing of the batch as a stage sample, and each call's
        ``total_ms`` in its tool's histogram."""
        keys = tuple(timings[0])
        if len(keys) > 1 and all(map(timings[0].keys().__eq__, map(_KEYS, timings))):
            # The usual batch: every call timed the same stages. One column per key, in C.
            columns = dict(zip(keys, zip(*map(itemgetter(*keys), timings), strict=True), strict=True))
        else:
            columns = {key: tuple(map(methodcaller("get", key), timings)) for key in set().union(*timings)}
        stages = self._stages
        for key, column in columns.items():
            stage = stages.get(key)
            if stage is None and key in stages:
                continue  # not a stage timing
            values = [value for value in column if value is not None] if None in column else column
            if not values:
                continue
            if stage is None:
                stage = self._new_stage(key)  # at its first sample
                if stage is None:
                    continue
            stage.samples.extend(values)
            stage.total += _observe(stage.buckets, values)
            stage.count += len(values)
        names = {entry[0] for entry in batch if entry[8]}
        totals_of = columns.get("total_ms")
        if totals_of is None:
            return
        for name in names:
            if len(names) == 1:
                totals = [total for total in totals_of if total is not None] if None in totals_of else totals_of
            else:
                totals = [entry[8].get("total_ms") for entry in batch if entry[0] == name and entry[8]]
                totals = [total for total in totals if total is not None]
            if not totals:
                continue
            per_tool = self._tools.get(name)
            if per_tool is None:
                per_tool = self._tools[name] = [[0] * (len(_BOUNDS_MS) + 1), 0.0, 0]
            per_tool[1] += _observe(per_tool[0], totals)
            per_tool[2] += len(totals)

    def _new_stage(self, key: str) -> _Stage | None:
        """The stage timed by ``key`` (None if it is not a ``<stage>_ms`` key), made once."""
        stage = _Stage(key[:-3], self._reservoir_size) if key.endswith("_ms") and len(key) > 3 else None
        # setdefault is atomic: threads meeting a new stage at once all get the same one.
        return self._stages.setdefault(key, stage)

    def record_workflow(
        self, workflow: str, status: str, steps: Sequence[str], compensations: Sequence[str] = ()
    ) -> None:
        """Count one finished workflow run: its status, each step's status and the
        status of each compensation it ran. Queued like calls: counted at the next
        reading (or once :data:`FOLD_AT` are queued)."""
        pending = self._workflow_pending
        pending.append((workflow, status, steps, compensations))
        if len(pending) >= FOLD_AT:
            self._queue_workflow(None)

    def record_resume(self, workflow: str, outcome: str) -> None:
        """Count one resume of a journaled run: ``outcome`` is the resumed run's status,
        ``finished`` (it had ended already) or ``refused`` (it could not be resumed)."""
        self._queue_workflow((workflow, outcome))

    def _queue_workflow(self, entry: tuple[Any, ...] | None) -> None:
        """Queue ``entry`` (None: it is queued already); fold the queue once it is long."""
        pending = self._workflow_pending
        if entry is not None:
            pending.append(entry)
        if len(pending) >= FOLD_AT and self._lock.acquire(blocking=False):
            try:
                self._fold()
            finally:
                self._lock.release()

    def _fold_workflows(self) -> None:
        """Count every queued workflow run and resume. Called with the lock held."""
        pending = self._workflow_pending
        popleft = pending.popleft
        batch = [popleft() for _ in range(len(pending))]  # others may append meanwhile: they wait for the next fold
        counts = self._counts
        # Grouped first: runs of one workflow that ended alike (almost all) are counted once per group.
        try:
            grouped = Counter(batch)
        except TypeError:  # a list of statuses (not hashable): run by run
            grouped = Counter()
            for entry in batch:
                grouped[tuple(tuple(part) if isinstance(part, list) else part for part in entry)] += 1
        for entry, n in grouped.items():
            if len(entry) == 2:
                counts[("workflow_resumes", entry[0], entry[1])] += n
                continue
            workflow, status, steps, compensations = entry
            counts[("workflow_runs", workflow, status)] += n
            for step_status in steps:
                counts[("workflow_steps", workflow, step_status)] += n
            for comp_status in compensations:
                counts[("workflow_compensations", workflow, comp_status)] += n

    def record_reload(self, ok: bool) -> None:
        """Count one snapshot reload attempt, successful or not."""
        self._counts[_RELOAD_OK if ok else _RELOAD_FAILED] += 1

    def record_mcp_drift(self, server: str, tools: int) -> None:
        """A listing of MCP server ``server`` compared with the lock file: it differs in
        ``tools`` tools (0: it matches). A listing that differs is counted; the gauge of
        the server's drifted tools is set either way (a state: :meth:`reset` keeps it)."""
        if tools:
            self._counts[("mcp_drift", server)] += 1
        self._drifted = {**self._drifted, server: tools}

    def set_info(self, name: str, labels: Mapping[str, str]) -> None:
        """State a fact about this process as labels, e.g. ``set_info("snapshot",
        {"version": "3f2a..."})``: the snapshot's ``info`` key, and the gauge
        ``toolrt_<name>_info{labels} 1`` (so a fleet's versions can be counted)."""
        self._info = {**self._info, name: {str(k): str(v) for k, v in labels.items()}}

    def gauge_source(self, name: str, read: Callable[[], Mapping[str, float]]) -> None:
        """Register ``read``, called at each snapshot, for counters kept elsewhere.

        It returns ``{key: number}`` (e.g. a read cache's ``{"hits": .., "misses": ..}``).
        A source that raises or returns non-numbers is reported under the snapshot's
        ``"errors"`` key instead of failing the snapshot. Registering a name again
        replaces the earlier source.
        """
        with self._lock:
            self._sources[name] = read

    def remove_source(self, name: str) -> None:
        """Forget the gauge source ``name`` (no error if there is none)."""
        with self._lock:
            self._sources.pop(name, None)

    def add_observer(self, observer: Callable[[Mapping[str, float]], None]) -> None:
        """Call ``observer(timings_ms)`` for every recorded call (it runs on the hot path)."""
        with self._lock:
            self._observers = (*self._observers, observer)

    def remove_observer(self, observer: Callable[[Mapping[str, float]], None]) -> None:
        """Stop calling ``observer`` (no error if it was not added)."""
        with self._lock:
            self._observers = tuple(o for o in self._observers if o is not observer)

    def bind_opentelemetry(self, meter_provider: Any = None, *, histograms: bool = False) -> Binding:
        """Report these metrics through OpenTelemetry: observable counters and gauges on
        the meter ``toolrt`` of ``meter_provider`` (default: the app's global
        MeterProvider; toolrt never installs one), read when the app collects.

        ``histograms=True`` also records each stage latency in the histogram
        ``toolrt.stage.duration`` as calls end (about 10 us per stage with the SDK).
        Returns the binding; its ``close()`` stops the reporting. Needs the ``otel``
        extra (ImportError without it)."""
        from runtime.telemetry.meters import bind

        return bind(self, meter_provider, histograms=histograms)

    def reset(self) -> None:
        """Zero every counter and drop every latency sample; gauge sources stay."""
        with self._lock:
            self._fresh()

    # -- reading --------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The metrics as plain JSON-able data.

        Keys: ``calls`` ({tool: {status: n}}), ``versions`` ({tool: {version: {status: n}}}, by the
        version that served), ``workflows`` ({name: {"runs"|"steps"|"compensations": {status: n},
        "resumes": {outcome: n}}}), ``decisions`` ({effect: n}),
        ``timeouts``, ``retries``, ``truncations``, ``redactions`` ({kind: n}), ``staged``
        ({policy/rule: {would-be effect: {enforce: n}}}, matches of rules under staged rollout),
        ``quota_trips``, ``breaker_trips``, ``reloads`` ({"ok": n, "failed": n}),
        ``mcp_lock_drift`` ({server: listings that differed from the lock file}),
        ``mcp_lock_drifted_tools`` ({server: tools its latest listing differs in}),
        ``latency_ms`` ({stage: {count, sum, p50, p90, p99, max}}; quantiles and max
        over the newest retained samples, count and sum over all), ``durations_s``
        ({"tools": {tool: histogram}, "stages": {stage: histogram}}, each histogram
        ``{"le": [upper bounds in s], "cumulative": [count at or below each], "sum": s,
        "count": n}`` over every observation; see :data:`BUCKETS_S`), ``sources``
        ({name: {key: value}}), ``errors`` ({source: message}), and
        ``cache_hit_rate`` when a ``read_cache`` source reports hits and misses
        (None before the first lookup).
        """
        with self._lock:
            self._fold()
            # dict()/list() copies run in C without releasing the GIL, so each copy is
            # consistent even while other threads keep recording.
            counts = dict(self._counts)
            stages = [stage for stage in list(self._stages.values()) if stage is not None]
            # count and total are read a moment after the samples; a concurrent call can
            # make them one observation apart, which no reader can tell from timing.
            latencies = {stage.name: (sorted(stage.samples), stage.count, stage.total) for stage in stages}
            stage_hist = {stage.name: _histogram(list(stage.buckets), stage.total, stage.count) for stage in stages}
            tool_hist = {tool: _histogram(list(entry[0]), entry[1], entry[2]) for tool, entry in self._tools.items()}
            sources = dict(self._sources)

        calls: dict[str, dict[str, int]] = {}
        decisions: dict[str, int] = {}
        redactions: dict[str, int] = {}
        versions: dict[str, dict[str, dict[str, int]]] = {}
        workflows: dict[str, dict[str, dict[str, int]]] = {}
        staged: dict[str, dict[str, dict[str, int]]] = {}
        drift: dict[str, int] = {}
        for key, n in counts.items():
            family = key[0]
            if family == "calls":
                calls.setdefault(key[1], {})[key[2]] = n
            elif family == "versions":
                versions.setdefault(key[1], {}).setdefault(key[2], {})[key[3]] = n
            elif family in _WORKFLOW_FAMILIES:  # runs, their steps and compensations, resumes
                by_kind = workflows.get(key[1])
                if by_kind is None:
                    by_kind = workflows[key[1]] = {name: {} for name, *_ in WORKFLOW_COUNTERS}
                by_kind[family[9:]][key[2]] = n
            elif family == "decisions":
                decisions[key[1]] = n
            elif family == "redactions":
                redactions[key[1]] = n
            elif family == "staged":
                staged.setdefault(key[1], {}).setdefault(key[2], {})[key[3]] = n
            elif family == "mcp_drift":
                drift[key[1]] = n

        latency: dict[str, dict[str, float | int | None]] = {}
        for stage_name in sorted(latencies):
            ordered, count, total = latencies[stage_name]
            entry: dict[str, float | int | None] = {"count": count, "sum": total}
            for label, q in QUANTILES:
                entry[label] = _nearest_rank(ordered, q)
            entry["max"] = ordered[-1] if ordered else None
            latency[stage_name] = entry

        snap: dict[str, Any] = {
            "calls": {tool: dict(sorted(by_status.items())) for tool, by_status in sorted(calls.items())},
            "versions": {tool: dict(sorted(by.items())) for tool, by in sorted(versions.items())},
            "workflows": {
                name: {key: dict(sorted(by.items())) for key, by in entry.items()}
                for name, entry in sorted(workflows.items())
            },
            "decisions": dict(sorted(decisions.items())),
            "redactions": dict(sorted(redactions.items())),
            STAGED[0]: dict(sorted(staged.items())),
            MCP_DRIFT[0]: dict(sorted(drift.items())),
            MCP_DRIFTED[0]: dict(sorted(self._drifted.items())),
            "reloads": {"ok": counts.get(_RELOAD_OK, 0), "failed": counts.get(_RELOAD_FAILED, 0)},
            "latency_ms": latency,
            "durations_s": {"tools": dict(sorted(tool_hist.items())), "stages": dict(sorted(stage_hist.items()))},
        }
        for name, key, _metric, _help in _SCALARS:
            snap[name] = counts.get(key, 0)

        read_sources, errors = _read_sources(sources)
        snap["sources"] = read_sources
        snap["errors"] = errors
        snap["info"] = {name: dict(labels) for name, labels in self._info.items()}
        cache = read_sources.get("read_cache")
        if cache is not None and "hits" in cache and "misses" in cache:
            lookups = cache["hits"] + cache["misses"]
            snap["cache_hit_rate"] = cache["hits"] / lookups if lookups > 0 else None
        return snap

    def prometheus(self) -> str:
        """The metrics in the Prometheus text exposition format, version 0.0.4.

        Counters ``toolrt_*_total``; durations in seconds as the histograms
        ``toolrt_tool_call_duration_seconds{tool}`` (whole calls) and
        ``toolrt_stage_duration_seconds{stage}`` (buckets :data:`BUCKETS_S`); each gauge
        source key as the gauge ``toolrt_<source>_<key>``,
        ``toolrt_source_up{source=...}`` (0 when a source failed) and
        ``toolrt_cache_hit_rate``. Serve it with content type
        ``text/plain; version=0.0.4; charset=utf-8``.
        """
        from runtime.metricstext import render

        return render(self.snapshot())


def _nearest_rank(ordered: list[float], q: float) -> float | None:
    """The nearest-rank quantile: the smallest sample with at least ``q`` of all samples
    at or below it (1..100 gives p50 = 50, p99 = 99); an observed value, never interpolated."""
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _read_sources(sources: Mapping[str, Source]) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Call every gauge source, outside the registry lock (a source may take its own)."""
    values: dict[str, dict[str, float]] = {}
    errors: dict[str, str] = {}
    for name in sorted(sources):
        try:
            raw = sources[name]()
            read: dict[str, float] = {}
            for key, value in raw.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise TypeError(f"{key!r} is {type(value).__name__}, not a number")
                read[str(key)] = value
        except Exception as err:  # noqa: BLE001 - a broken source is reported in the snapshot, never raised into the caller
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        values[name] = read
    return values, errors
