"""Which workers are up, and which config snapshot each serves: ``toolrt status``.

Every runtime that shares a Redis limit store writes a small hash
``<prefix>w:<worker>`` (host, pid, snapshot version, when it started, when it was last
seen) every ``interval_s`` and at once after each reload, expiring after three
intervals, so a dead worker drops out on its own. :func:`fleet_status` reads them
all: after a ConfigMap change an operator sees when every worker serves the new
snapshot.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loguru import logger

from runtime.fleet.connection import connect, guarded, shown_url


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    """One worker as it last reported itself."""

    worker: str
    host: str
    pid: int
    snapshot: str
    started: float
    seen: float


class Presence:
    """Reports this worker and the snapshot version it serves to the shared Redis."""

    def __init__(
        self,
        url: str,
        version: Callable[[], str],
        *,
        prefix: str = "toolrt:",
        interval_s: float = 10.0,
        timeout_s: float = 0.5,
        client: Any = None,
    ) -> None:
        self.url = shown_url(url)
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._key = f"{prefix}w:{self.worker}"
        self._version = version
        self._interval = interval_s
        self._client = client if client is not None else connect(url, timeout_s=timeout_s)
        self._started = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="toolrt-presence", daemon=True)
        self._thread.start()

    def beat(self) -> None:
        """Report now (after a reload); errors are logged, never raised."""
        fields = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "snapshot": self._version(),
            "started": self._started,
            "seen": time.time(),
        }

        def write() -> None:
            pipe = self._client.pipeline(transaction=False)
            pipe.hset(self._key, mapping=fields)
            pipe.expire(self._key, max(1, int(self._interval * 3)))
            pipe.execute()

        try:
            guarded(self.url, write)
        except Exception as err:  # noqa: BLE001 - presence is a report; the worker goes on without it
            logger.warning("toolrt could not report this worker to {}: {}", self.url, err)

    def _loop(self) -> None:
        self.beat()
        while not self._stop.wait(self._interval):
            self.beat()

    def close(self) -> None:
        """Stop reporting and drop this worker from the list."""
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            guarded(self.url, lambda: self._client.delete(self._key))
        except Exception:  # noqa: BLE001 - it expires on its own
            pass
        self._client.close()


def fleet_status(url: str, *, prefix: str = "toolrt:") -> list[WorkerStatus]:
    """Every worker that reported itself to the Redis at ``url`` recently, by host and pid.
    Raises :class:`~runtime.errors.LimitStoreError` when Redis cannot be read."""
    client = connect(url, timeout_s=2.0)
    try:
        keys = sorted(guarded(shown_url(url), lambda: list(client.scan_iter(match=f"{prefix}w:*", count=500))))
        found = []
        for key in keys:
            raw: dict[bytes, bytes] = guarded(shown_url(url), functools.partial(client.hgetall, key))
            if not raw:
                continue  # expired meanwhile
            fields = {k.decode(): v.decode() for k, v in raw.items()}
            try:
                found.append(
                    WorkerStatus(
                        key.decode()[len(prefix) + 2 :],
                        fields["host"],
                        int(fields["pid"]),
                        fields["snapshot"],
                        float(fields["started"]),
                        float(fields["seen"]),
                    )
                )
            except (KeyError, ValueError):
                continue  # not one of ours
        return sorted(found, key=lambda w: (w.host, w.pid))
    finally:
        client.close()


def status_text(workers: list[WorkerStatus], url: str, now: float | None = None) -> str:
    """``toolrt status``: one line per worker, then whether the fleet has converged."""
    now = time.time() if now is None else now
    if not workers:
        return f"no workers have reported to {shown_url(url)} in the last 30 s"
    lines = [
        f"worker {w.host} pid {w.pid} serves snapshot {w.snapshot} (up {now - w.started:.0f} s, seen "
        f"{max(0.0, now - w.seen):.0f} s ago)"
        for w in workers
    ]
    versions = sorted({w.snapshot for w in workers})
    if len(versions) == 1:
        lines.append(f"converged: all {len(workers)} worker(s) serve snapshot {versions[0]}")
    else:
        counts = ", ".join(f"{v} on {sum(1 for w in workers if w.snapshot == v)}" for v in versions)
        lines.append(f"not converged: {len(versions)} snapshots are served ({counts})")
    return "\n".join(lines)
