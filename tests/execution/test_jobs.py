"""on_timeout: background keeps a command running as a job the model can poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime import Call, Runtime, Session

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
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: forever}
spec:
  description: Never ends.
  handler: {command: {argv: [sh, -c, "sleep 300 & echo started; sleep 300"]}}
  read_only: true
  timeout: {total_s: 0.2, grace_s: 0.2, on_timeout: background}
"""


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG)
    return Runtime([config], workspace_root=tmp_path)


async def test_a_command_past_its_limit_goes_on_as_a_job_and_reports_when_done(
    runtime: Runtime, tmp_path: Path
) -> None:
    (first,) = await runtime.run_turn([Call("1", "build", {})])
    assert first.status.value == "background"
    assert not first.is_error
    job_id = first.metadata["job_id"]
    assert f'job_status(id="{job_id}")' in first.content
    # The build waits for `release`, so it is running until the test says otherwise.
    running = await _job_status_until(runtime, job_id, lambda text: "compiling" in text)
    assert "is running" in running
    (tmp_path / "release").touch()
    finished = await _job_status_until(runtime, job_id, lambda text: "exited" in text)
    assert "exited with code 3" in finished
    assert "done" in finished


async def _job_status_until(runtime: Runtime, job_id: str, done: Callable[[str], bool], within_s: float = 60.0) -> str:
    """job_status's answer once ``done`` holds for it (polled; a busy machine may be slow)."""
    deadline = time.monotonic() + within_s
    while True:
        (status,) = await runtime.run_turn([Call("poll", "job_status", {"id": job_id})])
        if done(status.content) or time.monotonic() > deadline:
            return status.content
        await asyncio.sleep(0.05)


async def test_closing_the_runtime_stops_background_jobs_and_their_trees(runtime: Runtime) -> None:
    (result,) = await runtime.run_turn([Call("1", "forever", {})], Session())
    job = runtime.jobs.get(result.metadata["job_id"])
    assert job is not None and job.running
    started = time.monotonic()
    await runtime.close()
    assert not job.running
    assert time.monotonic() - started < 60  # stopped, not left to run out its 300 s
    assert "stopped" in (job.error or "")


async def test_unknown_job_ids_are_an_error_result(runtime: Runtime) -> None:
    (result,) = await runtime.run_turn([Call("1", "job_status", {"id": "job_abcdef99"})])
    assert result.is_error
    assert "no background job" in result.content
