"""The background-job registry of a fleet: which worker runs which job, and how it ended.

A background job is a process tree on one worker; it cannot move. What is shared is
its entry: ``<prefix>j:<job id>`` holds its session, tool, worker (host and pid), when
it started, while it runs the last part of its (already redacted) output so far
(refreshed by its worker at most every ``LIVE_EVERY_S`` while the output grows), and
once it ended its exit code or error and the end of its output. A ``job_status``
call that lands on another worker then answers from it: where the job runs and its
latest output, or how it ended, for the session that started it only (any other
session is told, as for an id that never existed, that there is no such job).
Entries expire ``ttl_s`` after the job's last change. What one entry holds is
bounded: at most ``TAIL_CHARS`` characters of output, whatever the job prints.

Failures of Redis never fail the job: a start or end that cannot be written is
logged, and the job's own worker still answers from memory.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loguru import logger

from runtime.errors import LimitStoreError
from runtime.fleet.connection import connect, guarded, shown_url

#: Characters of output an entry keeps (the end of it), running or ended.
TAIL_CHARS = 4000
#: How often the worker running a job refreshes its output in the entry (when it grew).
LIVE_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class RemoteJob:
    """A job as another worker recorded it."""

    id: str
    tool: str
    session: str
    host: str
    pid: int
    started: float
    running: bool
    exit_code: int | None
    error: str | None
    tail: str
    artifact: str | None
    total_chars: int
    updated: float | None = None  # when a running job's output was last shared (wall clock)


class RedisJobIndex:
    """Job entries in Redis, written by the worker that runs each job."""

    def __init__(
        self, url: str, *, prefix: str = "toolrt:", timeout_s: float = 0.5, ttl_s: int = 86_400, client: Any = None
    ) -> None:
        self.url = shown_url(url)
        self.prefix = prefix
        self.ttl_s = int(ttl_s)
        self._client = client if client is not None else connect(url, timeout_s=timeout_s)
        self._host = socket.gethostname()

    def _key(self, job_id: str) -> str:
        return f"{self.prefix}j:{job_id}"

    def _write(self, job_id: str, fields: dict[str, Any]) -> None:
        def write() -> None:
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(self._key(job_id), mapping=fields)
            pipe.expire(self._key(job_id), self.ttl_s)
            pipe.execute()

        try:
            guarded(self.url, write)
        except LimitStoreError as err:
            logger.warning("toolrt could not share background job {} with the fleet: {}", job_id, err)

    def started(self, job: Any) -> None:
        """Record that ``job`` (a :class:`~runtime.execution.jobs.Job`) runs here."""
        self._write(
            job.id,
            {
                "tool": job.tool,
                "session": job.session,
                "host": self._host,
                "pid": os.getpid(),
                "started": time.time(),
                "running": 1,
            },
        )

    def progress(self, job_id: str, tail: str, total_chars: int) -> None:
        """Share a running job's output so far: its last ``TAIL_CHARS`` characters (redacted)."""
        fields = {"tail": tail[-TAIL_CHARS:], "total_chars": total_chars, "updated": time.time()}
        self._write(job_id, fields)

    async def share_live(self, job: Any, every_s: float = LIVE_EVERY_S) -> None:
        """While ``job`` runs, share its output every ``every_s`` when it grew (run it as a task
        on the job's event loop: the output is read there, the write is sent from a thread)."""
        shared = -1
        while not job.task.done():
            await asyncio.wait([job.task], timeout=every_s)
            if job.task.done():
                return  # finished() writes the end
            tail, total = job.collector.peek(TAIL_CHARS)
            if total != shared:
                shared = total
                await asyncio.to_thread(self.progress, job.id, tail, total)

    def finished(self, job: Any) -> None:
        """Record how ``job`` ended, with the end of its output."""
        output = job.output
        fields: dict[str, Any] = {
            "running": 0,
            "exit_code": "" if job.exit_code is None else job.exit_code,
            "error": job.error or "",
        }
        if output is not None:
            text = output.text if output.text is not None else output.tail
            fields["tail"] = (text or "")[-TAIL_CHARS:]
            fields["total_chars"] = output.total_chars
            fields["artifact"] = output.artifact.id if output.artifact is not None else ""
        self._write(job.id, fields)

    def lookup(self, job_id: str, session: str) -> RemoteJob | None:
        """The job ``job_id`` if ``session`` started it; None otherwise, and when Redis
        cannot be read (logged)."""
        try:
            raw = guarded(self.url, lambda: self._client.hgetall(self._key(job_id)))
        except LimitStoreError as err:
            logger.warning("toolrt cannot read the fleet's background jobs: {}", err)
            return None
        if not raw:
            return None
        fields = {k.decode(): v.decode("utf-8", "replace") for k, v in raw.items()}
        if fields.get("session") != session:
            return None
        try:
            return RemoteJob(
                id=job_id,
                tool=fields["tool"],
                session=session,
                host=fields["host"],
                pid=int(fields["pid"]),
                started=float(fields["started"]),
                running=fields.get("running") == "1",
                exit_code=int(fields["exit_code"]) if fields.get("exit_code") else None,
                error=fields.get("error") or None,
                tail=fields.get("tail", ""),
                artifact=fields.get("artifact") or None,
                total_chars=int(fields.get("total_chars", "0") or 0),
                updated=float(fields["updated"]) if fields.get("updated") else None,
            )
        except (KeyError, ValueError):
            return None

    def close(self) -> None:
        """Close the connections."""
        self._client.close()


def describe(job: RemoteJob, tail_chars: int, mark: Callable[[str], str] = str) -> str:
    """``job_status``'s answer for a job of another worker (``mark`` wraps output text,
    e.g. as untrusted data)."""
    now = time.time()
    elapsed = max(0.0, now - job.started)
    where = f"worker {job.host} (pid {job.pid})"
    shown = job.tail[-tail_chars:] if tail_chars > 0 else ""
    if job.running:
        head = f"job `{job.id}` ({job.tool}) is running on {where} ({elapsed:.0f} s so far"
        if job.updated is None:
            return f"{head}, no output shared yet); ask again in a moment."
        age = max(0.0, now - job.updated)
        return (
            f"{head}, {job.total_chars:,} characters of output as of {age:.0f} s ago)."
            f" Last output (the last {TAIL_CHARS:,} characters at most are shared):\n{mark(shown)}"
        )
    state = job.error if job.error else f"exited with code {job.exit_code}"
    lines = [f"job `{job.id}` ({job.tool}) {state} on {where}."]
    if job.artifact:
        lines.append(
            f"Its full output ({job.total_chars:,} characters) is artifact `{job.artifact}` on that worker"
            " (readable here only if artifacts are on a shared volume)."
        )
    lines.append(f"Last output:\n{mark(shown)}")
    return "\n".join(lines)
