"""Real processes: concurrent editors lose no update, and a writer killed mid-write never leaves a partial file.

Children start from a "forkserver" (one clean, single-threaded server process with the
runtime preloaded, forked per child): as safe as "spawn" and fast enough to start
dozens of writers.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ws_helpers
from ws_helpers import Tree

from runtime.workspace import TEMP_PREFIX, FileBusy, sweep_stale_temp_files

CTX = multiprocessing.get_context("forkserver")
CTX.set_forkserver_preload(["runtime.workspace", "ws_helpers"])

WORKERS = 8
EDITS_EACH = 200


def test_eight_processes_with_expected_hash_lose_no_update(plain: Tree) -> None:
    name = "shared.txt"
    (plain.root / name).write_text("".join(f"count[p{w}]=0\n" for w in range(WORKERS)))
    reports = [plain.base / f"report-{w}.json" for w in range(WORKERS)]
    procs = [
        CTX.Process(
            target=ws_helpers.count_and_log,
            args=(str(plain.root), str(plain.locks), name, w, EDITS_EACH, str(reports[w])),
        )
        for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0] * WORKERS, "a worker failed"

    lines = (plain.root / name).read_text().splitlines()
    counters = {
        int(m.group(1)): int(m.group(2)) for line in lines if (m := re.fullmatch(r"count\[p(\d+)\]=(\d+)", line))
    }
    logs = [line for line in lines if line.startswith("log ")]
    assert counters == {w: EDITS_EACH // 2 for w in range(WORKERS)}, "an increment was lost"
    expected_logs = {f"log p{w} #{k}" for w in range(WORKERS) for k in range(1, EDITS_EACH, 2)}
    assert len(logs) == len(expected_logs) and set(logs) == expected_logs, "an append was lost or doubled"
    assert len(lines) == WORKERS + len(expected_logs)  # all 1,600 edits, nothing else

    stats = [json.loads(report.read_text()) for report in reports]
    assert sum(s["editor"]["edits"] for s in stats) == WORKERS * EDITS_EACH
    assert sum(s["conflicts"] for s in stats) == sum(s["editor"]["conflicts"] for s in stats) > 0, (
        "the workers never raced"
    )
    assert not [p for p in plain.root.iterdir() if p.name != name], "stray files in the workspace"


@pytest.mark.parametrize("named", [True, False], ids=["named-temp-file", "unnamed-temp-file"])
def test_a_writer_killed_at_random_moments_leaves_the_old_or_the_new_file_never_a_mix(plain: Tree, named: bool) -> None:
    rng = random.Random(20240601)
    name = "big.txt"
    sizes = (5 * 2**20, 9 * 2**20)
    target = plain.root / name
    progress = plain.base / "progress.log"
    target.write_text(ws_helpers.version_text(0, sizes[0]))
    version = 0
    interrupted = 0
    temp_names: set[str] = set()
    # 45 kills: one in three after a finished write, the rest as 30 kills at random moments.
    for rep in range(45):
        writer = CTX.Process(
            target=ws_helpers.rewrite_forever,
            args=(str(plain.root), str(plain.locks), name, str(progress), sizes, version + 1, named),
        )
        writer.start()
        if rep % 3 == 0:
            # A write finishes before this kill (however loaded the machine), so the file
            # moves on; the kill lands at any moment of the writes after it.
            _wait_for_finished_write(progress, version + 1)
            time.sleep(rng.uniform(0, 0.2))
        elif (rep - rep // 3) % 2 or not named:
            time.sleep(rng.uniform(0.05, 0.4))  # any moment: reading, computing, writing, renaming
        else:
            _wait_for_new_temp_file(plain.root, temp_names)  # a moment when a write is under way
            time.sleep(rng.uniform(0, 0.01))
        writer.kill()  # SIGKILL: no cleanup of any kind runs
        writer.join(timeout=30)
        assert writer.exitcode == -9

        data = target.read_text()
        found = int(data[: data.index("\n")].removeprefix("version "))
        assert data == ws_helpers.version_text(found, sizes[found % len(sizes)]), (
            f"partial or mixed content (version {found})"
        )
        logged = [int(v) for v in progress.read_text().split()] if progress.exists() else []
        last_logged = max([version, *logged])
        # The newest finished write, or one more (killed between the rename and the log line).
        assert found in (last_logged, last_logged + 1)
        version = found
        leftovers = {n for n in os.listdir(plain.root) if n.startswith(TEMP_PREFIX)}
        interrupted += bool(leftovers - temp_names)
        temp_names |= leftovers

    assert version >= 15, "a write the test waited for is missing"
    if named:
        assert interrupted >= 5, f"only {interrupted} kills landed in the middle of a write"
    else:  # unnamed until complete: only a kill between naming and renaming leaves one
        assert interrupted <= 2, f"{interrupted} kills left a temporary file behind"
    root_fd = plain.ws.open_root()
    try:
        removed = sweep_stale_temp_files(root_fd, older_than_s=0)
    finally:
        os.close(root_fd)
    assert removed <= len(temp_names)  # each new writer swept the dead ones' files on its first write
    assert sorted(os.listdir(plain.root)) == [name], "temp or lock files left in the workspace"
    assert any(p.suffix == ".lock" for p in plain.locks.iterdir())  # the locks live outside


def _wait_for_finished_write(progress: Path, version: int, timeout: float = 120.0) -> None:
    """Until the writer has logged ``version`` as written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if progress.exists() and str(version) in progress.read_text().split():
            return
        time.sleep(0.005)
    raise AssertionError(f"the writer never finished version {version}")


def _wait_for_new_temp_file(directory: Path, known: set[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(n.startswith(TEMP_PREFIX) and n not in known for n in os.listdir(directory)):
            return
    raise AssertionError("the writer never started a write")


def test_a_lock_held_by_another_process_makes_the_edit_fail_as_busy(plain: Tree) -> None:
    (plain.root / "f.txt").write_text("one\n")
    resolved = plain.ws.resolve("f.txt")
    acquired, release = CTX.Event(), CTX.Event()
    holder = CTX.Process(target=ws_helpers.hold_lock, args=(str(plain.editor.lock_path(resolved)), acquired, release))
    holder.start()
    try:
        assert acquired.wait(30)
        plain.editor.lock_timeout_s = 0.3
        started = time.monotonic()
        with pytest.raises(
            FileBusy, match=r"f\.txt is busy: another edit has held it for over 0\.3 s; try again shortly"
        ):
            plain.editor.edit("f.txt", "append", content="two\n")
        assert 0.25 < time.monotonic() - started < 30  # gave up at its limit, not when the holder let go
        assert plain.editor.lock_timeouts == 1
        assert plain.editor.lock_wait_seconds >= 0.25
        assert (plain.root / "f.txt").read_text() == "one\n"
    finally:
        release.set()
        holder.join(timeout=30)
    plain.editor.edit("f.txt", "append", content="two\n")  # free again
    assert (plain.root / "f.txt").read_text() == "one\ntwo\n"


def test_lock_files_are_never_created_in_the_workspace(plain: Tree) -> None:
    plain.editor.edit("a/b.txt", "replace", content="x\n")
    lock = plain.editor.lock_path(plain.ws.resolve("a/b.txt"))
    assert lock.exists() and lock.parent == plain.locks
    assert sorted(str(p.relative_to(plain.root)) for p in plain.root.rglob("*")) == ["a", "a/b.txt"]
    with pytest.raises(ValueError, match="outside the workspace"):
        type(plain.editor)(plain.ws, plain.root / ".locks")


@pytest.fixture(autouse=True)
def _no_leftover_children() -> Iterator[None]:
    yield
    for child in multiprocessing.active_children():
        child.kill()
        child.join(5)
