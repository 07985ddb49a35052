"""Redaction throughput: the shipped ``secrets`` + ``pii`` profiles on 10 MB of log text.

Run with ``python tests/benchmarks/bench_redaction.py [--mb 10] [--repeat 3]``.
Everything is measured side by side in this one process and reported as ratios,
because absolute times on shared machines are noisy:

- RE2, one combined alternation (:class:`runtime.shaping.redact.Redactor`)
- the same patterns in Python ``re``: one combined alternation, and the naive way
  (one ``re.sub`` pass per pattern); both with the same validators
- the streaming redactor (64 KiB and 4 KiB chunks), which scans held-back text twice
- one 4 KB tool output, the common case, in microseconds

The log text mixes timestamps, UUIDs, git hashes, URLs, JSON payloads, stack traces
and long numbers (look-alikes), with a few dozen real-looking secrets sprinkled in.
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runtime import load_snapshot  # noqa: E402 - after the path set-up, so the script runs from anywhere
from runtime.shaping.redact import Redactor  # noqa: E402
from runtime.shaping.validators import VALIDATORS  # noqa: E402
from runtime.snapshot import CompiledRedaction  # noqa: E402

SECRETS = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "password=hunter2xyz",
    "postgres://admin:s3cr3t@db.internal:5432/app",
    "alice.smith@example.com",
    "4111 1111 1111 1111",
    "GB82 WEST 1234 5698 7654 32",
    "+44 20 7946 0958",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
]


def make_log(size: int, seed: int = 42, *, order_ids: bool = True) -> str:
    """``size`` characters of log lines, with a secret about every 200 KB.

    With ``order_ids``, a fifth of the lines carry a 16-digit number: card-shaped, so
    each is a candidate the Luhn validator must look at (about 1 in 10 passes it and
    is redacted, as a real card number would be). Without, only the scan is measured.
    """
    rng = random.Random(seed)
    paths = ["/api/v1/orders", "/api/v1/users/me", "/healthz", "/static/app.js", "/api/v2/search?q=shoes&page=2"]
    levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
    lines: list[str] = []
    total = 0
    next_secret = 100_000
    while total < size:
        ts = (
            f"2024-05-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
            f":{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
        )
        kind = rng.random()
        if kind < 0.55:
            line = (
                f"{ts} {rng.choice(levels)} http request_id={uuid.UUID(int=rng.getrandbits(128))} method=GET "
                f"path={rng.choice(paths)} status={rng.choice([200, 200, 201, 304, 404, 500])} "
                f"duration_ms={rng.random() * 300:.2f} bytes={rng.randint(100, 99999)}"
            )
        elif kind < 0.75:
            order = rng.randint(10**15, 10**16 - 1) if order_ids else rng.randint(1, 10**9)
            line = (
                f'{ts} DEBUG db {{"query": "SELECT * FROM orders WHERE id = $1", "args": [{order}], "rows": '
                f'{rng.randint(0, 50)}, "took": "{rng.random():.4f}s"}}'
            )
        elif kind < 0.85:
            line = (
                f"{ts} INFO deploy commit={rng.getrandbits(160):040x} "
                f"version=v{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)} by "
                f"ci-runner-{rng.randint(1, 40)}"
            )
        elif kind < 0.93:
            line = (
                f"{ts} ERROR worker Traceback (most recent call last):\n"
                f'  File "/srv/app/worker.py", line {rng.randint(10, 900)}, in handle\n'
                f"    result = process(job_{rng.randint(1000, 9999)})\n"
                f"ValueError: invalid order {rng.randint(10**11, 10**12)} for user {rng.randint(1, 10**6)}"
            )
        else:
            line = (
                f"{ts} INFO agent user_agent=Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
                f"trace={rng.getrandbits(128):032x} 用户会话 {rng.randint(1, 99)}"
            )
        if total >= next_secret:
            line += " " + rng.choice(SECRETS)
            next_secret += rng.randint(100_000, 300_000)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def python_sources(profiles: tuple[CompiledRedaction, ...]) -> list[tuple[str, str, Any]]:
    """(name, Python regex, validator) of every pattern. The shipped patterns are valid
    Python syntax too, except that a leading (?i) or (?m) must become a scoped (?i:...)."""
    out = []
    for profile in profiles:
        for pattern in profile.patterns:
            source: str = pattern.regex.pattern
            if source.startswith(("(?i)", "(?m)")):
                source = f"(?{source[2]}:{source[4:]})"
            elif not pattern.regex.options.case_sensitive:
                source = f"(?i:{source})"
            out.append((pattern.name, source, VALIDATORS.get(pattern.validator) if pattern.validator else None))
    return out


def python_combined(profiles: tuple[CompiledRedaction, ...]) -> Callable[[str], tuple[str, dict[str, int]]]:
    """One Python ``re`` alternation, with the same validators (the fair comparison)."""
    specs = python_sources(profiles)
    regex = re.compile("|".join(f"(?P<g{i}>{source})" for i, (_, source, _) in enumerate(specs)))

    def redact(text: str) -> tuple[str, dict[str, int]]:
        counts: dict[str, int] = {}

        def replace(match: re.Match[str]) -> str:
            index = int(match.lastgroup[1:]) if match.lastgroup else 0
            name, _, validator = specs[index]
            if validator is not None and not validator(match.group()):
                return match.group()
            counts[name] = counts.get(name, 0) + 1
            return f"[REDACTED:{name}]"

        return regex.sub(replace, text), counts

    return redact


def python_per_pattern(profiles: tuple[CompiledRedaction, ...]) -> Callable[[str], tuple[str, dict[str, int]]]:
    """The naive way: one ``re.sub`` pass per pattern."""
    specs = [(name, re.compile(source), validator) for name, source, validator in python_sources(profiles)]

    def redact(text: str) -> tuple[str, dict[str, int]]:
        counts: dict[str, int] = {}
        for name, regex, validator in specs:

            def replace(match: re.Match[str], name: str = name, validator: Any = validator) -> str:
                if validator is not None and not validator(match.group()):
                    return match.group()
                counts[name] = counts.get(name, 0) + 1
                return f"[REDACTED:{name}]"

            text = regex.sub(replace, text)
        return text, counts

    return redact


def stream_redact(redactor: Redactor, text: str, chunk: int) -> tuple[str, dict[str, int]]:
    stream = redactor.stream()
    parts = [stream.feed(text[i : i + chunk]) for i in range(0, len(text), chunk)]
    parts.append(stream.finish())
    return "".join(parts), stream.counts


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``repeat`` runs, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def bench(
    label: str, text: str, profiles: tuple[CompiledRedaction, ...], redactor: Redactor, repeat: int, python_repeat: int
) -> None:
    megabytes = len(text.encode("utf-8")) / 1_000_000
    print(f"== {label}: {megabytes:.1f} MB, {text.count(chr(10)) + 1:,} lines")
    redactor.redact(text[:100_000])  # warm the DFA cache once, as a long-running process has
    rows: list[tuple[str, float, dict[str, int]]] = []
    t, (reference, counts) = timed(lambda: redactor.redact(text), repeat)
    rows.append(("RE2, one combined alternation (Redactor.redact)", t, counts))
    for chunk in (65_536, 4_096):
        t, (out, counts) = timed(functools.partial(stream_redact, redactor, text, chunk), repeat)
        if out != reference:
            print(f"!! stream output with {chunk}-char chunks differs from redact()")
        rows.append((f"RE2, StreamRedactor, {chunk:,}-char chunks", t, counts))
    t, (python_out, counts) = timed(lambda: python_combined(profiles)(text), python_repeat)
    rows.append(("Python re, one combined alternation", t, counts))
    t, (_, counts) = timed(lambda: python_per_pattern(profiles)(text), python_repeat)
    rows.append(("Python re, one pass per pattern", t, counts))

    width = max(len(name) for name, _, _ in rows)
    print(f"{'engine':{width}}  {'time':>9}  {'MB/s':>8}  {'vs RE2':>7}  redactions")
    print("-" * (width + 50))
    base = rows[0][1]
    for name, seconds, counts in rows:
        print(
            f"{name:{width}}  {seconds * 1000:>7.0f}ms  {megabytes / seconds:>8.1f}  {seconds / base:>6.1f}x  "
            f"{sum(counts.values()):,}"
        )
    same = python_out == reference
    print(
        f"Python re output identical to RE2: {same}"
        + (
            ""
            if same
            else (
                " (Python's re.sub resumes after a rejected candidate; the Redactor retries from the next character, "
                "so it also finds a card number glued to a preceding number)"
            )
        )
    )
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=10.0, help="megabytes of log text (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per RE2 measurement (median)")
    parser.add_argument("--python-repeat", type=int, default=1, help="runs per Python re measurement (slow)")
    args = parser.parse_args()

    snapshot = load_snapshot([ROOT / "policies"])
    profiles = (snapshot.redaction_profiles["secrets"], snapshot.redaction_profiles["pii"])
    patterns = sum(len(p.patterns) for p in profiles)
    print(f"profiles secrets + pii ({patterns} patterns)\n")
    started = time.perf_counter()
    redactor = Redactor(profiles)
    print(
        "Redactor build (once per snapshot, shared by tools with the same profiles): "
        f"{(time.perf_counter() - started) * 1000:.1f} ms\n"
    )

    size = int(args.mb * 1_000_000)
    with_ids = make_log(size, order_ids=True)
    bench(
        "logs with 16-digit order ids (Luhn candidates)", with_ids, profiles, redactor, args.repeat, args.python_repeat
    )
    bench(
        "logs without card-shaped numbers",
        make_log(size, order_ids=False),
        profiles,
        redactor,
        args.repeat,
        args.python_repeat,
    )

    small = with_ids[:4096]
    t_re2, _ = timed(lambda: [redactor.redact(small) for _ in range(100)], 5)
    combined = python_combined(profiles)
    t_py, _ = timed(lambda: [combined(small) for _ in range(10)], 3)
    print(
        f"one 4 KB output: RE2 {t_re2 / 100 * 1e6:.0f} us, Python re (combined) {t_py / 10 * 1e6:.0f} us "
        f"({t_py / 10 / (t_re2 / 100):.0f}x)"
    )
    print()
    default_on_cost(with_ids, args.repeat)
    return 0


DEFAULT_ON_CONFIG = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: plain}
spec:
  description: Returns text, redaction turned off.
  handler: python:bench_tools:text
  read_only: true
  redaction: []
  output: {max_chars: 2000000}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: default}
spec:
  description: Returns text, with the default redaction (secrets).
  handler: python:bench_tools:text
  read_only: true
  output: {max_chars: 2000000}
"""


def default_on_cost(log: str, repeat: int) -> None:
    """Per-call cost of a whole call (all stages) with the default `secrets` redaction
    against the same tool with `redaction: []`, for a 1 KB and a 1 MB output."""
    import asyncio
    import tempfile

    from runtime import Call, Runtime

    print("== default-on redaction, whole call through the pipeline (same tool, `redaction: []` vs unset)")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        handler = (
            "import functools, pathlib\n\n@functools.lru_cache(None)\ndef _load(size):\n    return "
            "(pathlib.Path(__file__).parent / f'out-{size}.txt').read_text()\n\ndef text(args):\n    return "
            "_load(args['size'])\n"
        )
        (root / "bench_tools.py").write_text(handler, encoding="utf-8")
        (root / "tools.yaml").write_text(DEFAULT_ON_CONFIG, encoding="utf-8")
        sizes = {"1 KB": 1_000, "1 MB": 1_000_000}
        for size in sizes.values():
            (root / f"out-{size}.txt").write_text(log[:size], encoding="utf-8")
        runtime = Runtime([root], workspace_root=root, watch=False)

        async def calls(tool: str, size: int, n: int) -> None:
            for i in range(n):
                (result,) = await runtime.run_turn([Call(f"c{i}", tool, {"size": size})])
                if result.is_error:
                    raise RuntimeError(result.content)

        print(f"{'output':8}  {'redaction: []':>14}  {'default':>10}  {'ratio':>6}")
        for label in sizes:
            n = 200 if label == "1 KB" else 5
            size = sizes[label]
            asyncio.run(calls("plain", size, 2))  # warm: module imported, file cached
            asyncio.run(calls("default", size, 2))
            off, _ = timed(lambda size=size, n=n: asyncio.run(calls("plain", size, n)), repeat)
            on, _ = timed(lambda size=size, n=n: asyncio.run(calls("default", size, n)), repeat)
            print(f"{label:8}  {off / n * 1e6:>11.0f} us  {on / n * 1e6:>7.0f} us  {on / off:>5.2f}x")
        asyncio.run(runtime.close())


if __name__ == "__main__":
    sys.exit(main())
