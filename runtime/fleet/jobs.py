"""The background-job registry of a fleet: which worker runs which job, and how it ended.

A background job is a process tree on one worker; it cannot move. What is shared is
its entry: ``<prefix>j:<job id>`` holds its session, tool, worker (host and pid), when
it started and, once it ended, its exit code or error and the last part of its
(already redacted) output. A ``job_status`` call that lands on another worker then
answers from it: where the job runs, or how it ended, for the session that started
it only (any other session is told, as for an id that never existed, that there is
no such job). Entries expire ``ttl_s`` after the job's last change.

Failures of Redis never fail the job: a start or end that cannot be written is
logged, and the job's own worker still answers from memory.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from loguru import logger

from runtime.errors import LimitStoreError
from runtime.fleet.connection import connect, guarded, shown_url

TAIL_CHARS = 4000


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
            )
        except (KeyError, ValueError):
            return None

    def close(self) -> None:
        """Close the connections."""
        self._client.close()


def describe(job: RemoteJob, tail_chars: int) -> str:
    """``job_status``'s answer for a job of another worker."""
    elapsed = max(0.0, time.time() - job.started)
    where = f"worker {job.host} (pid {job.pid})"
    if job.running:
        return (
            f"job `{job.id}` ({job.tool}) is running on {where} ({elapsed:.0f} s so far); "
            "its output so far is only on that worker: ask again later, or in a turn served there."
        )
    state = job.error if job.error else f"exited with code {job.exit_code}"
    lines = [f"job `{job.id}` ({job.tool}) {state} on {where}."]
    if job.artifact:
        lines.append(
            f"Its full output ({job.total_chars:,} characters) is artifact `{job.artifact}` on that worker (readable here only if artifacts are on a shared volume)."
        )
    lines.append(f"Last output:\n{job.tail[-tail_chars:] if tail_chars > 0 else ''}")
    return "\n".join(lines)
