"""Background jobs in a fleet: the job runs on the worker that started it, and
``job_status`` on any other worker sharing the Redis says where it runs or how it
ended, to the session that started it only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from fleet_servers import RedisServer

from runtime import Call, Runtime, Session
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [builtin-tools]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: build}
spec:
  description: A long build.
  handler: {command: {argv: [sh, -c, "echo compiling; while [ ! -e release ]; do sleep 0.02; done; echo done; exit 3"]}}
  read_only: true
  timeout: {total_s: 0.3, on_timeout: background}
"""


def _runtime(tmp_path: Path, url: str, name: str) -> Runtime:
    config = tmp_path / f"config-{name}"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG)
    return Runtime([config], workspace_root=tmp_path, settings=Settings(limit_store=url, audit_sink="off"))


async def _status_until(runtime: Runtime, job_id: str, session: str, done: Callable[[str], bool]) -> str:
    for _ in range(1000):
        (result,) = await runtime.run_turn([Call("s", "job_status", {"id": job_id})], Session(id=session))
        if done(result.content):
            return result.content
        await asyncio.sleep(0.02)
    raise AssertionError(f"job_status never satisfied the condition; last answer: {result.content}")


async def test_another_worker_says_where_a_job_runs_and_how_it_ended(tmp_path: Path, redis_url: str) -> None:
    here, there = _runtime(tmp_path, redis_url, "a"), _runtime(tmp_path, redis_url, "b")
    try:
        (first,) = await here.run_turn([Call("1", "build", {})], Session(id="owner"))
        job_id = first.metadata["job_id"]
        running = await _status_until(there, job_id, "owner", lambda text: "is running on worker" in text)
        assert job_id in running and "build" in running
        (tmp_path / "release").touch()
        finished = await _status_until(there, job_id, "owner", lambda text: "exited" in text)
        assert "exited with code 3" in finished and "done" in finished
        # The worker that runs it still answers from memory, with the same outcome.
        local = await _status_until(here, job_id, "owner", lambda text: "exited" in text)
        assert "exited with code 3" in local
    finally:
        await here.close()
        await there.close()


async def test_a_job_of_another_session_is_unknown_on_every_worker(tmp_path: Path, redis_url: str) -> None:
    here, there = _runtime(tmp_path, redis_url, "a"), _runtime(tmp_path, redis_url, "b")
    try:
        (first,) = await here.run_turn([Call("1", "build", {})], Session(id="owner"))
        job_id = first.metadata["job_id"]
        for runtime in (here, there):
            (other,) = await runtime.run_turn([Call("s", "job_status", {"id": job_id})], Session(id="intruder"))
            (never,) = await runtime.run_turn(
                [Call("s", "job_status", {"id": "job_abcdef" + "1" * 30})], Session(id="intruder")
            )
            assert other.is_error and other.content.replace(job_id, "X") == never.content.replace(
                "job_abcdef" + "1" * 30, "X"
            )
        (tmp_path / "release").touch()
    finally:
        await here.close()
        await there.close()


async def test_jobs_keep_running_and_answer_locally_when_redis_is_down(
    tmp_path: Path, fresh_redis: RedisServer
) -> None:
    here = _runtime(tmp_path, fresh_redis.url, "a")
    try:
        fresh_redis.kill()
        (first,) = await here.run_turn([Call("1", "build", {})], Session(id="owner"))
        assert first.status.value == "background"
        (tmp_path / "release").touch()
        finished = await _status_until(here, first.metadata["job_id"], "owner", lambda text: "exited" in text)
        assert "exited with code 3" in finished
    finally:
        await here.close()


@pytest.mark.parametrize(
    "raw", [{}, {"session": "owner"}, {"session": "owner", "tool": "t", "host": "h", "pid": "x", "started": "1"}]
)
def test_a_job_entry_that_is_not_one_is_no_job(redis_url: str, raw: dict[str, str]) -> None:
    from runtime.fleet.jobs import RedisJobIndex

    index = RedisJobIndex(redis_url)
    try:
        if raw:
            index._client.hset("toolrt:j:job_x", mapping=raw)
        assert index.lookup("job_x", "owner") is None
    finally:
        index.close()
