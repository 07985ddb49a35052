"""/proc helpers for the process-tree tests: find a test's processes by a marker in
their environment, and watch a run to prove the tree existed before it was stopped."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


def state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3].decode()


def is_alive(pid: int) -> bool:
    return state(pid) not in (None, "Z", "X")


def live_pids_with(marker: str) -> set[int]:
    """Live (not zombie) processes whose environment contains ``marker``."""
    needle = marker.encode()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read():
                    continue
        except OSError:
            continue
        if is_alive(int(entry)):
            found.add(int(entry))
    return found


class Watcher:
    """Polls /proc while a command runs and remembers every pid carrying ``marker``
    (so that a test can show the tree really existed, and check each pid after the stop
    even once its environment can no longer be read)."""

    def __init__(self, marker: str, interval_s: float = 0.02) -> None:
        self.marker = marker
        self.interval_s = interval_s
        self.seen: set[int] = set()
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.seen |= live_pids_with(self.marker)
            await asyncio.sleep(self.interval_s)

    async def __aenter__(self) -> Watcher:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def survivors(self) -> set[int]:
        """Seen pids still alive now, plus any new process carrying the marker."""
        return {pid for pid in self.seen if is_alive(pid)} | live_pids_with(self.marker)


async def settle(watcher: Watcher, within_s: float) -> tuple[set[int], float]:
    """Wait up to ``within_s`` for every process of the tree to be gone; returns what is
    left and how long it took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        left = watcher.survivors()
        if not left or loop.time() - started >= within_s:
            return left, loop.time() - started
        await asyncio.sleep(0.002)


def kill_all(pids: set[int]) -> None:
    """Clean up after a failed assertion (only processes this test started)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
