"""What the key-piece pass costs a command's output stream (runtime.shaping.key_material).

Side by side in one run, on the same 8 MB of clean command-like output fed in 64 KiB
chunks: the shipped `secrets` stream redactor alone; with the key pass while no key is
known; with the key pass and an index of seven keys. Prints MB/s and the ratios."""

from __future__ import annotations

import base64
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime.config.compile import build_snapshot  # noqa: E402
from runtime.settings import Settings  # noqa: E402
from runtime.shaping.key_material import KeyIndex, KeyStream  # noqa: E402

CHUNK = 65536
LINES = [
    "src/runtime/shaping/redact.py:120:        counts: dict[str, int] = {}",
    "test_redact.py::test_a_piece_of_a_key PASSED                       [ 42%]",
    "commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "    return b64encode(data).decode('ascii')  # dGhpcyBpcyBub3QgYSBrZXk=",
    "drwxr-xr-x  5 root root 4096 Dec  3 07:20 runtime",
    "id: 12345",
    "ok",
]


def _text(size: int) -> str:
    out, total, i = [], 0, 0
    while total < size:
        line = LINES[i % len(LINES)] + f" {i}\n"
        out.append(line)
        total += len(line)
        i += 1
    return "".join(out)


def _index(folder: Path, keys: int) -> KeyIndex:
    for n in range(keys):
        body = base64.b64encode(os.urandom(1200)).decode()
        lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        (folder / f"k{n}").write_text(f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----\n")
    index = KeyIndex(folder)
    index.refresh(force=True)
    return index


def main() -> None:
    config = Path(tempfile.mkdtemp())
    (config / "p.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: p}\nspec: {packs: [redaction-default]}\n"
    )
    snapshot = build_snapshot([config], Settings()).snapshot
    assert snapshot is not None
    redactor = snapshot.redactor  # every profile of the snapshot: the shipped ones here
    text = _text(8_000_000)
    chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
    empty = KeyIndex(Path(tempfile.mkdtemp()))
    empty.refresh(force=True)
    full = _index(Path(tempfile.mkdtemp()), 7)
    makers = {
        "secrets stream alone": lambda: redactor.stream(),
        "+ key pass, no key known": lambda: KeyStream(empty, redactor.stream()),
        "+ key pass, 7 keys known": lambda: KeyStream(full, redactor.stream()),
    }
    best = dict.fromkeys(makers, float("inf"))
    for _ in range(5):  # interleaved rounds, best of each
        for name, make in makers.items():
            stream = make()
            started = time.perf_counter()
            for chunk in chunks:
                stream.feed(chunk)
            stream.finish()
            best[name] = min(best[name], time.perf_counter() - started)
    base = best["secrets stream alone"]
    print(f"\n== key pieces: {len(text) / 1e6:.0f} MB of clean command output in 64 KiB chunks (best of 5)")
    for name, elapsed in best.items():
        print(f"{name:28s} {len(text) / 1e6 / elapsed:8.0f} MB/s  {elapsed / base:5.2f}x")


if __name__ == "__main__":
    main()
