"""Commands kept running past their time limit (``on_timeout: background``).

Instead of being stopped, the command goes on in a background task that keeps
collecting (redacted, spilled) output; the call returns at once with a job id, and
the model polls it with the ``job_status`` built-in. Jobs are stopped (process tree
and all) when they exceed ``max_lifetime_s`` or when the runtime closes.

A job belongs to the session that started it. Its id carries about 124 random bits
(no counter: one job's id says nothing about another's), and :meth:`JobRegistry.lookup`,
the only lookup that takes an id from a model, answers None for a job of another
session exactly as for an id that never existed.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from runtime.execution.output import CollectedOutput, OutputCollector

_PREFIX = "job_"


@dataclass
class Job:
    id: str
    tool: str
    task: asyncio.Future[Any]
    collector: OutputCollector
    session: str = "default"  # the id of the session whose call started it
    started: float = field(default_factory=time.monotonic)
    exit_code: int | None = None
    output: CollectedOutput | None = None
    error: str | None = None
    sharer: asyncio.Future[Any] | None = None  # shares its output with the fleet while it runs

    @property
    def running(self) -> bool:
        return not self.task.done()


def new_job_id() -> str:
    """``job_``, 6 hex digits and 30 decimal digits, all from :mod:`secrets` (about 124 bits).

    The shape (hex, then decimal) is the one the ``builtin-tools`` pack's input schema
    for ``job_status`` accepts (``^job_[0-9a-f]{6}[0-9]+$``)."""
    return f"{_PREFIX}{secrets.token_hex(3)}{secrets.randbelow(10**30):030d}"


class JobRegistry:
    """The background jobs of one runtime."""

    def __init__(self, max_jobs: int = 100, index: Any = None) -> None:
        self._jobs: dict[str, Job] = {}
        self.max_jobs = max_jobs
        # A fleet's shared entries (runtime.fleet.jobs.RedisJobIndex): where each job runs, how it ended.
        self.index = index

    def adopt(self, tool: str, task: asyncio.Future[Any], collector: OutputCollector, *, session: str) -> Job:
        """Track a command of ``session`` that goes on running; ``task`` resolves to its ProcessResult."""
        self._forget_finished()
        job = Job(new_job_id(), tool, task, collector, session=session)
        task.add_done_callback(functools.partial(_record, job, self.index))
        self._jobs[job.id] = job
        if self.index is not None:
            self.index.started(job)
            # Its output so far, for job_status on the fleet's other workers; the task
            # ends with the job (held here so that it is not collected meanwhile).
            job.sharer = asyncio.ensure_future(self.index.share_live(job), loop=task.get_loop())
        return job

    def lookup(self, job_id: object, *, session: str) -> Job | None:
        """The job ``job_id`` if ``session`` started it; None for an id that is unknown,
        malformed or another session's (the caller cannot tell which)."""
        job = self._jobs.get(job_id) if isinstance(job_id, str) else None
        if job is None or job.session != session:
            return None
        return job

    def remote(self, job_id: object, *, session: str) -> Any:
        """A job of ``session`` that another worker of the fleet runs (its shared entry), or None."""
        if self.index is None or not isinstance(job_id, str) or not job_id.startswith(_PREFIX) or len(job_id) > 64:
            return None
        return self.index.lookup(job_id, session)

    def get(self, job_id: str) -> Job | None:
        """The job ``job_id`` whatever its session: for the runtime's own bookkeeping,
        never for an id a model sent (use :meth:`lookup`)."""
        return self._jobs.get(job_id)

    def _forget_finished(self) -> None:
        if len(self._jobs) < self.max_jobs:
            return
        for job_id in [j.id for j in self._jobs.values() if not j.running][: len(self._jobs) - self.max_jobs + 1]:
            del self._jobs[job_id]

    async def close(self) -> None:
        """Stop every job still running (their process trees are stopped), on whichever
        event loop it runs: the caller's, or another thread's (a sync caller's turns run
        on the runtime's own loop)."""
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[Any]]] = {}
        for job in self._jobs.values():
            if job.running:
                by_loop.setdefault(job.task.get_loop(), []).append(job.task)
        here = asyncio.get_running_loop()
        waits: list[Any] = []
        for loop, tasks in by_loop.items():
            if loop is here:
                waits.append(_stop(tasks))
            elif loop.is_running():
                waits.append(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_stop(tasks), loop)))
        await asyncio.gather(*waits, return_exceptions=True)


async def _stop(tasks: list[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _record(job: Job, index: Any, done: asyncio.Future[Any]) -> None:
    if done.cancelled():
        job.error = "stopped: the runtime closed or the job outlived its limit"
    elif done.exception() is not None:
        job.error = f"failed: {type(done.exception()).__name__}: {done.exception()}"
    else:
        job.exit_code = done.result().exit_code
        if done.result().process_limit is not None:
            job.error = (
                f"stopped: it started more than {done.result().process_limit} processes and threads at once"
                " (the runtime's command_max_processes limit)"
            )
        elif done.result().timed_out:
            job.error = f"stopped after running {done.result().timed_out} too long"
    job.output = job.collector.finish()
    if index is not None:
        index.finished(job)
