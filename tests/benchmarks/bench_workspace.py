"""Workspace action layer benchmarks: file_read and file_edit, side by side in one process.

Everything runs on a temporary workspace holding a 1 MB, 20,000-line file of
source-like text (ASCII Python) and a 30-line file; the contenders of each section
are timed in interleaved rounds, so a slow patch of the machine hits all of them
alike. Read the ratios: absolute times on shared machines are noisy.

1. ``file_read`` of the 1 MB file, through :class:`FileReader` with a
   :class:`ReadCache`, per call:

   - whole file (``offset=1, limit=20,000`` and a ``max_bytes`` above its size) and
     the default window (the first 2,000 lines, cut at 256 KiB of output);
   - ``cold``: the read cache cleared before every call (the OS page cache stays
     warm: this is the cost of reading, hashing, decoding and numbering, not disk I/O);
   - ``cached``: the same call again, served from the read cache;
   - baseline: ``open().read()`` plus ``hashlib.sha256`` of the same bytes.

2. ``file_edit`` ``str_replace`` of one unique line of the 1 MB file, alternating
   between two values so every call writes: lock, re-read, hash, decode, replace,
   encode, identity check, atomic write (temp file, ``fsync``, rename, ``fsync`` of
   the directory), diff; with and without ``expected_hash``. Baseline: the same
   bytes written to a temporary file, ``fsync``, ``os.replace`` (the floor for an
   atomic write), and the same plus the ``fsync`` of the directory that makes the
   rename durable (as ``atomic_write`` does).

3. A 1-line ``file_read`` of the 30-line file, cold and cached, against
   ``open().read()`` + SHA-256 of it: the fixed per-call cost (path resolution,
   descriptor walk, stat, cache lookup, result). A plain path is opened in one
   ``openat2`` call that refuses links; the last row reads the same file through a
   symbolic link to its directory, which takes the long way (component by component).
   The goal (issue 17) is at most 3x the baseline for the plain path.

Each row prints the median and p90 per call and the median's ratio to the baseline
of its section.

Run: ``python tests/benchmarks/bench_workspace.py`` (about 10 s on two cores).
"""

from __future__ import annotations

import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from runtime.workspace import FileEditor, FileReader, ReadCache, ReadResult, Workspace

BIG_LINES = 20_000
SMALL_LINES = 30
MARKER = 'BENCH_MARKER = "{}"  # the line the edit benchmark toggles'
VALUES = ("alpha", "omega")

WORDS = (
    "request session config payload buffer handler record cursor token index offset "
    "window result status policy schema engine stream chunk parser item value limit "
    "client server worker queue event label cache entry digest"
).split()


def source_text(lines: int, seed: int = 7) -> str:
    """``lines`` lines of Python-like source (classes, methods, comments); every def is unique."""
    rng = random.Random(seed)
    out: list[str] = [
        '"""Generated module for the workspace benchmark."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    n = 0
    while len(out) < lines:
        a, b, c, d = rng.sample(WORDS, 4)
        num = rng.randint(2, 999)
        out += [
            f"class {a.title()}{b.title()}{n}(Base):",
            f'    """Keeps the {a} of a {b} until the {c} is flushed to the {d} queue."""',
            "",
            f"    def {a}_{c}_{n}(self, {b}: int, {c}: str | None = None) -> dict[str, int]:",
            f"        # Look the {a} up first: a missing {c} means the default of {num} (see {d}).",
            f"        {a} = self.{b}s.get({c}, {num})",
            f"        if {a} > {num} and {c} is not None:",
            f'            return {{"{a}": {a} + {b}, "{c}": len({c})}}',
            f"        for item in self.{c}_items[{num % 17}:]:  # skip the {d} header",
            f"            {a} += len(item.{b}) * {num % 7 + 1}",
            f'        return {{"{a}": {a}}}',
            "",
        ]
        n += 1
    del out[lines:]
    out[lines // 2] = MARKER.format(VALUES[0])  # unique: the generator never writes BENCH_MARKER
    return "\n".join(out) + "\n"


def write_old(path: Path, data: bytes) -> None:
    """Write ``data`` and date it a minute back.

    ReadCache does not cache a file modified within its racy window (2 s by
    default: a later change in the same timestamp tick could go unnoticed), so a
    freshly written file would never be a cache hit; an old mtime makes it cacheable.
    """
    path.write_bytes(data)
    old = time.time() - 60
    os.utime(path, (old, old))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Contender = tuple[Callable[[], object] | None, Callable[[], object]]  # (untimed setup, timed call)


def interleaved(
    contenders: dict[str, Contender], calls: int, rounds: int = 10, warmup: int = 3
) -> dict[str, list[float]]:
    """Per-call seconds of each contender: ``rounds`` rounds of ``calls / rounds`` calls each, in turns."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for setup, call in contenders.values():
        for _ in range(warmup):
            if setup is not None:
                setup()
            call()
    for _ in range(rounds):
        for name, (setup, call) in contenders.items():
            for _ in range(max(calls // rounds, 1)):
                if setup is not None:
                    setup()
                started = time.perf_counter()
                call()
                samples[name].append(time.perf_counter() - started)
    return samples


def show(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:8.1f} us"


def report(title: str, results: dict[str, list[float]], baseline: str) -> None:
    base = statistics.median(results[baseline])
    print(f"\n== {title}")
    print(f"  {'':48} {'median':>11} {'p90':>11}   vs baseline")
    for name, samples in results.items():
        p50, p90 = statistics.median(samples), percentile(samples, 0.9)
        print(f"  {name:48} {show(p50)} {show(p90)}   {p50 / base:7.2f}x")


def checked(call: Callable[[], ReadResult], hit: bool) -> Callable[[], ReadResult]:
    """``call`` that fails loudly if the read was (or was not) served from the cache."""

    def run() -> ReadResult:
        result = call()
        if result.cache_hit != hit:
            raise SystemExit(f"benchmark broken: expected cache_hit={hit}")
        return result

    return run


def bench_reads(reader: FileReader, cache: ReadCache, big: Path, text: str) -> None:
    def plain() -> str:
        with open(big, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    def whole() -> ReadResult:
        return reader.read("src/big.py", offset=1, limit=BIG_LINES, max_bytes=16 << 20)

    def window() -> ReadResult:
        return reader.read("src/big.py")

    first = whole()
    if first.end_line != BIG_LINES or first.sha256 != plain():
        raise SystemExit("benchmark broken: the whole-file read did not return the whole file")
    results = interleaved(
        {
            "baseline: open().read() + sha256": (None, plain),
            "file_read whole file, cold": (cache.clear, checked(whole, False)),
            "file_read whole file, cached": (None, checked(whole, True)),
            "file_read default window (2,000 lines), cold": (cache.clear, checked(window, False)),
            "file_read default window (2,000 lines), cached": (None, checked(window, True)),
        },
        calls=100,
        rounds=20,
    )
    report(
        f"file_read of a {len(text.encode()) / 1e6:.2f} MB, {BIG_LINES:,}-line file, 100 calls each in 20 rounds",
        results,
        "baseline: open().read() + sha256",
    )


def bench_edits(editor: FileEditor, plain_dir: Path, texts: tuple[bytes, bytes]) -> None:
    """``texts[i]``: the file's bytes while its marker line holds ``VALUES[i]``."""
    hashes = tuple(hashlib.sha256(raw).hexdigest() for raw in texts)
    state = {"current": 0, "plain": 0}

    def edit(with_hash: bool) -> Callable[[], object]:
        def run() -> object:
            now = state["current"]
            result = editor.edit(
                "src/big.py",
                "str_replace",
                old_string=MARKER.format(VALUES[now]),
                new_string=MARKER.format(VALUES[1 - now]),
                expected_hash=hashes[now] if with_hash else None,
            )
            if not result.changed:
                raise SystemExit("benchmark broken: an edit wrote nothing")
            state["current"] = 1 - now
            return result

        return run

    target = plain_dir / "big.py"

    def plain_write(sync_dir: bool) -> Callable[[], None]:
        def run() -> None:
            state["plain"] = 1 - state["plain"]
            temp = plain_dir / f".tmp-{os.getpid()}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(texts[state["plain"]])
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, target)
            if sync_dir:
                dir_fd = os.open(plain_dir, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)

        return run

    results = interleaved(
        {
            "baseline: write + fsync + os.replace": (None, plain_write(False)),
            "  the same + fsync of the directory": (None, plain_write(True)),
            "file_edit str_replace": (None, edit(False)),
            "file_edit str_replace + expected_hash": (None, edit(True)),
        },
        calls=100,
        rounds=20,
    )
    if editor.conflicts:
        raise SystemExit(f"benchmark broken: {editor.conflicts} edit conflicts")
    report(
        "file_edit of one line of the same file (each call writes the whole file), 100 calls each in 20 rounds",
        results,
        "baseline: write + fsync + os.replace",
    )


def bench_small(reader: FileReader, cache: ReadCache, small: Path) -> None:
    def plain() -> str:
        with open(small, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    def one_line() -> ReadResult:
        return reader.read("src/small.py", offset=1, limit=1)

    def via_link() -> ReadResult:
        return reader.read("via/small.py", offset=1, limit=1)

    results = interleaved(
        {
            "baseline: open().read() + sha256": (None, plain),
            "file_read 1 line, cold": (cache.clear, checked(one_line, False)),
            "file_read 1 line, cached": (None, checked(one_line, True)),
            "file_read 1 line, cold, through a link (long way)": (cache.clear, checked(via_link, False)),
        },
        calls=4000,
        rounds=20,
        warmup=50,
    )
    size = small.stat().st_size
    report(
        f"file_read of line 1 of a {SMALL_LINES}-line ({size:,} bytes) file: fixed per-call cost, 4,000 calls each "
        "in 20 rounds",
        results,
        "baseline: open().read() + sha256",
    )


def main() -> int:
    text = source_text(BIG_LINES)
    toggled = text.replace(MARKER.format(VALUES[0]), MARKER.format(VALUES[1]))
    with tempfile.TemporaryDirectory(prefix="toolrt-bench-ws-") as tmp:
        base = Path(tmp)
        root, locks, plain_dir = base / "ws", base / "locks", base / "plain"
        (root / "src").mkdir(parents=True)
        plain_dir.mkdir()
        write_old(root / "src" / "big.py", text.encode())
        write_old(root / "src" / "small.py", source_text(SMALL_LINES, seed=3).encode())
        (root / "via").symlink_to("src")  # a link inside the workspace: reads through it take the long way
        workspace = Workspace(root)
        cache = ReadCache()
        reader = FileReader(workspace, cache)
        editor = FileEditor(workspace, locks, cache)  # lock files live outside the workspace

        started = time.perf_counter()
        bench_reads(reader, cache, root / "src" / "big.py", text)
        bench_small(reader, cache, root / "src" / "small.py")
        # Edits last: they leave the file freshly modified, so not cacheable for 2 s.
        bench_edits(editor, plain_dir, (text.encode(), toggled.encode()))
        print(f"\n(read cache: {cache.stats()}; total {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
