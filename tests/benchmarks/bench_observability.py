"""What observability costs per call, side by side in one process (read the ratios).

The same no-op call as the pipeline benchmark (its config: 5-property schema, one CEL
rule, the default redaction and permission packs, 20 policy rules), audit log off so
that only observability differs, through:

1. the bare pipeline: no metrics registry, no logs, no tracing;
2. the metrics registry (the default);
3. metrics + a JSON log record per call at INFO to a file (``runtime.logs.configure``);
4. 3 + the registry bound to an OpenTelemetry MeterProvider (observable instruments);
5. 4 + the opt-in stage latency histograms;
6. metrics + tracing with an SDK TracerProvider and a BatchSpanProcessor to an exporter
   that drops spans (a turn span, a call span and five stage spans per call);
7. 6 with a sampler that keeps no trace (what tracing costs when sampled out);
8. everything: 5 + 6.

Rounds are interleaved (every contender runs a slice of its calls in turn, each round)
so that a slow patch of the machine hits all of them alike. Goal from the issue: logs
at INFO to a file + metrics within +25% of the bare pipeline.

Run: ``make bench`` (or ``python tests/benchmarks/bench_observability.py [calls]``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_pipeline import ARGS, make_config  # the pipeline benchmark's realistic config
from loguru import logger

from runtime import logs
from runtime.records import Call, Session
from runtime.runtime import Runtime
from runtime.settings import Settings

BASE = "bare pipeline"
LOGS = "logs (INFO, JSON, file) + metrics"


@dataclass
class Contender:
    """One way of running the call; ``enter``/``leave`` switch its global state (the
    log handler) on and off around each of its slices."""

    run: Callable[[], Awaitable[None]]
    enter: Callable[[], None] = lambda: None
    leave: Callable[[], None] = lambda: None
    samples: list[float] = field(default_factory=list)


def runner(runtime: Runtime) -> Callable[[], Awaitable[None]]:
    call = Call("c1", "noop", ARGS)
    session = Session()

    async def one() -> None:
        (result,) = await runtime.run_turn([call], session)
        if result.is_error:
            raise SystemExit(f"benchmark call failed: {result.content}")

    return one


def tracer_provider(sampled: bool) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider(sampler=ALWAYS_ON if sampled else ALWAYS_OFF)
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    return provider


def meter_provider() -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    return MeterProvider(metric_readers=[InMemoryMetricReader()])


def contenders(config: Path, workspace: Path, log_file: Path) -> dict[str, Contender]:
    settings = Settings(
        cel_engine="fast", schema_engine="fast", audit_sink="off", tracing="off", log_format="json", log_level="INFO"
    )
    traced = settings.model_copy(update={"tracing": "on"})

    def runtime(settings: Settings = settings, provider: Any = None, metrics: bool = True) -> Runtime:
        made = Runtime([config], workspace_root=workspace, settings=settings, tracer_provider=provider)
        if not metrics:
            made.metrics = None  # type: ignore[assignment] # the bare pipeline: no registry at all
        return made

    def logs_on() -> None:
        handler[0] = logs.configure(settings, sink=str(log_file))

    def logs_off() -> None:
        if handler[0] is not None:
            logger.remove(handler[0])
        logs.configure(settings, sink=None, calls=False)
        logger.disable("runtime")

    handler: list[int | None] = [None]
    found = {
        BASE: Contender(runner(runtime(metrics=False))),
        "metrics registry": Contender(runner(runtime())),
        LOGS: Contender(runner(runtime()), logs_on, logs_off),
    }
    try:
        bound = runtime()
        bound.metrics.bind_opentelemetry(meter_provider())
        found["logs + metrics + OTel metrics (observable)"] = Contender(runner(bound), logs_on, logs_off)
        histograms = runtime()
        histograms.metrics.bind_opentelemetry(meter_provider(), histograms=True)
        found["logs + metrics + OTel metrics + stage histograms"] = Contender(runner(histograms), logs_on, logs_off)
        found["tracing on (SDK, batch processor) + metrics"] = Contender(
            runner(runtime(traced, tracer_provider(sampled=True)))
        )
        found["tracing on, sampled out + metrics"] = Contender(runner(runtime(traced, tracer_provider(sampled=False))))
        everything = runtime(traced, tracer_provider(sampled=True))
        everything.metrics.bind_opentelemetry(meter_provider(), histograms=True)
        found["everything: logs, metrics, OTel metrics, tracing"] = Contender(runner(everything), logs_on, logs_off)
    except ImportError as err:
        print(f"(OpenTelemetry rows not measured: {err}; install the otel extra)")
    return found


async def measure(found: dict[str, Contender], n: int, rounds: int) -> None:
    for contender in found.values():
        contender.enter()
        for _ in range(200):
            await contender.run()
        contender.leave()
    per_round = max(n // rounds, 20)
    clock = time.perf_counter
    for _ in range(rounds):
        for contender in found.values():
            contender.enter()
            run = contender.run
            for _ in range(per_round):
                started = clock()
                await run()
                contender.samples.append(clock() - started)
            contender.leave()


async def throughput(found: dict[str, Contender], names: tuple[str, ...], n: int, rounds: int = 5) -> dict[str, float]:
    """Seconds per call over ``n`` calls in a row, including the time to switch the log
    handler off (which writes what the log's writer thread still holds): what a call
    costs the process in all, not only the caller's wait."""
    totals: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            contender = found[name]
            started = time.perf_counter()
            contender.enter()
            for _ in range(n):
                await contender.run()
            contender.leave()
            totals[name].append((time.perf_counter() - started) / n)
    return {name: statistics.median(values) for name, values in totals.items()}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    logger.remove()  # like an app that sends its logs to a file: no default stderr handler
    rounds = 20
    config = make_config()
    sys.path.insert(0, str(config))
    workspace = Path(tempfile.mkdtemp(prefix="toolrt-obs-ws-"))
    log_file = workspace / "toolrt.log"
    found = contenders(config, workspace, log_file)
    asyncio.run(measure(found, n, rounds))
    base = statistics.median(found[BASE].samples)
    print(
        f"== per-call cost of observability, {n} calls each in {rounds} interleaved rounds (p50 / p90 / p99; p50 "
        "against the bare pipeline)"
    )
    for name, contender in found.items():
        p50, p90, p99 = (percentile(contender.samples, q) * 1e6 for q in (0.5, 0.9, 0.99))
        print(
            f"{name:52} {p50:8.1f} us {p90:8.1f} us {p99:8.1f} us   {p50 / (base * 1e6):5.2f}x  "
            f"{(p50 - base * 1e6):+7.1f} us"
        )
    with_logs = statistics.median(found[LOGS].samples)
    metrics = statistics.median(found["metrics registry"].samples)
    print(
        f"logs at INFO to a file + metrics: {with_logs / base - 1:+.0%} per call over the bare pipeline (goal <= "
        f"+25%), {with_logs / metrics - 1:+.0%} over the default (metrics on); log file "
        f"{log_file.stat().st_size / 1e6:.1f} MB"
    )
    names = (BASE, "metrics registry", LOGS)
    totals = asyncio.run(throughput(found, names, n))
    print(f"\n== the same three, {n} calls in a row, per call including the log writer thread's work (5 rounds)")
    for name in names:
        print(f"{name:52} {totals[name] * 1e6:8.1f} us   {totals[name] / totals[BASE]:5.2f}x")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
