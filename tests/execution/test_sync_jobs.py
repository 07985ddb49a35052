"""Background jobs started through run_turn_sync (the README's Anthropic and OpenAI loops)
outlive the turn that started them, as the model is told; close_sync stops them, their
process trees and the runtime's own loop."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from pathlib import Path

import pytest

from runtime import Call, Runtime, Session
from runtime.loopthread import LoopThread
from runtime.settings import Settings

BUILD = "echo compiling; while [ ! -e release-{name} ]; do sleep 0.02; done; echo built > built-{name}; echo done"
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
  description: A long build that writes its result when released.
  handler: {command: {argv: [sh, -c, "BUILD"]}}
  input_schema: {type: object, properties: {name: {type: string, pattern: "^[a-z0-9]+$"}}, required: [name]}
  read_only: true
  timeout: {total_s: 0.3, on_timeout: background}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: forever}
spec:
  description: Never ends; its grandchild writes its pid.
  handler: {command: {argv: [sh, -c, "sleep 300 & echo $! > grandchild.pid; echo started; sleep 300"]}}
  read_only: true
  timeout: {total_s: 0.2, grace_s: 0.2, on_timeout: background}
"""

CONFIG = CONFIG.replace("BUILD", BUILD)
WAIT_S = 60.0


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG)
    # The commands write their pids for the test to watch: pids as this process sees them,
    # so outside the command sandbox's PID namespace.
    return Runtime([config], workspace_root=tmp_path, settings=Settings(command_sandbox="off"))


def _until(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} not within {WAIT_S} s"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("jobs", [1, 3])
def test_a_job_started_from_sync_code_goes_on_after_the_turn_returns(
    runtime: Runtime, tmp_path: Path, jobs: int
) -> None:
    try:
        ids = []
        for n in range(jobs):
            (result,) = runtime.run_turn_sync([Call(f"b{n}", "build", {"name": f"j{n}"})])
            assert result.status.value == "background", result.content
            ids.append(result.metadata["job_id"])
        for n in range(jobs):
            (tmp_path / f"release-j{n}").touch()
        for n, job_id in enumerate(ids):
            _until(lambda n=n: (tmp_path / f"built-j{n}").exists(), f"job {n} finishing after its turn")
            job = runtime.jobs.get(job_id)
            assert job is not None
            _until(lambda job=job: job.output is not None, "the job recorded as finished")  # set by its done callback
            assert job.exit_code == 0 and job.error is None
            (status,) = runtime.run_turn_sync([Call("poll", "job_status", {"id": job_id})])
            assert "exited with code 0" in status.content and "done" in status.content
    finally:
        runtime.close_sync()


def test_close_sync_stops_a_sync_callers_jobs_their_trees_and_the_loop(runtime: Runtime, tmp_path: Path) -> None:
    (result,) = runtime.run_turn_sync([Call("f", "forever", {})], Session())
    assert result.status.value == "background"
    job = runtime.jobs.get(result.metadata["job_id"])
    assert job is not None and job.running
    _until(
        lambda: (tmp_path / "grandchild.pid").exists() and (tmp_path / "grandchild.pid").read_text().strip(),
        "the grandchild started",
    )
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert _alive(grandchild)
    loop = runtime._loop
    assert loop is not None and loop.running
    runtime.close_sync()
    assert not job.running and "stopped" in (job.error or "")
    _until(lambda: not _alive(grandchild), "the grandchild stopped")
    assert not loop.running


def test_sync_turns_from_inside_a_running_loop_keep_their_jobs_too(runtime: Runtime, tmp_path: Path) -> None:
    async def app() -> str:
        (result,) = runtime.run_turn_sync([Call("b", "build", {"name": "inloop"})])  # sync code called from async code
        return str(result.metadata["job_id"])

    try:
        job_id = asyncio.run(app())  # the app's loop ends here; the job must not
        (tmp_path / "release-inloop").touch()
        _until(lambda: (tmp_path / "built-inloop").exists(), "the job finishing after the app's loop ended")
        job = runtime.jobs.get(job_id)
        assert job is not None
        _until(lambda: job.output is not None, "the job recorded")
        assert job.exit_code == 0
    finally:
        runtime.close_sync()


def test_sync_turns_from_many_threads_all_run(runtime: Runtime) -> None:
    results: list[str] = []

    def caller(n: int) -> None:
        for i in range(5):
            (result,) = runtime.run_turn_sync([Call(f"{n}-{i}", "job_status", {"id": "job_abcdef99"})])
            results.append(result.content)

    try:
        threads = [threading.Thread(target=caller, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert len(results) == 30 and all("no background job" in r for r in results)
    finally:
        runtime.close_sync()


def test_async_close_stops_jobs_that_sync_turns_started(runtime: Runtime) -> None:
    (result,) = runtime.run_turn_sync([Call("f", "forever", {})])
    job = runtime.jobs.get(result.metadata["job_id"])
    assert job is not None and job.running
    asyncio.run(runtime.close())
    assert not job.running


def test_the_loop_runs_coroutines_in_the_callers_context() -> None:
    variable: contextvars.ContextVar[str] = contextvars.ContextVar("variable", default="unset")

    async def read() -> str:
        return variable.get()

    loop = LoopThread()
    try:
        variable.set("the caller's")
        assert loop.run(read()) == "the caller's"
        assert loop.submit(read()).result(WAIT_S) == "the caller's"
    finally:
        loop.stop()
    assert not loop.running


def test_an_error_inside_the_loop_reaches_the_caller() -> None:
    async def fail() -> None:
        raise ValueError("from the loop")

    loop = LoopThread()
    try:
        with pytest.raises(ValueError, match="from the loop"):
            loop.run(fail())
    finally:
        loop.stop()
