"""Background jobs belong to the session that started them: ids are random, and
job_status from any other session answers exactly as for an id that never existed,
whether the job is running or finished; its spilled output is that session's too."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runtime import Runtime, Session
from runtime.execution.jobs import JobRegistry, new_job_id
from runtime.execution.output import OutputCollector
from runtime.records import ToolResult

OWNER = Session(id="alice")
MALLORY = Session(id="mallory")
MISSING = "job_abcdef123456789012345678901234567890"
DEADLINE_S = 60.0

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [builtin-tools]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: quick_build}
spec:
  description: Goes to the background, then ends soon after.
  handler: {command: {argv: [sh, -c, "echo secret-build-output; sleep 0.6; echo finished-build"]}}
  read_only: true
  timeout: {total_s: 0.2, on_timeout: background}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: endless}
spec:
  description: Runs until the runtime closes.
  handler: {command: {argv: [sh, -c, "echo secret-endless-output; sleep 60"]}}
  read_only: true
  timeout: {total_s: 0.2, grace_s: 0.2, on_timeout: background}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: chatty}
spec:
  description: Too much output to keep in memory, in the background.
  handler: {command: {argv: [sh, -c, "i=0; while [ $i -lt 300 ]; do echo chatty-line-$i; i=$((i+1)); done; sleep 0.4"]}}
  read_only: true
  output: {max_chars: 200, preview_chars: 100}
  timeout: {total_s: 0.2, on_timeout: background}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: loose_job_status}
spec:
  description: job_status without the pack's id pattern, so that any id reaches the built-in.
  handler: builtin:job_status
  read_only: true
  input_schema: {type: object, properties: {id: {}, tail_chars: {type: integer}}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: allow-all}
spec:
  rules: [{name: everything, effect: allow, tools: ["*"]}]
"""


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG, encoding="utf-8")
    rt = Runtime([config], workspace_root=tmp_path, watch=False)
    yield rt
    await rt.close()


async def started(runtime: Runtime, tool: str, session: Session) -> str:
    result = await runtime.call(tool, {}, session)
    assert result.status.value == "background", result.content
    return str(result.metadata["job_id"])


async def finished(runtime: Runtime, job_id: str) -> None:
    """Wait until the job has ended (a deadline, not a fixed sleep)."""
    deadline = time.monotonic() + DEADLINE_S
    job = runtime.jobs.get(job_id)
    assert job is not None
    while job.running or job.output is None:
        assert time.monotonic() < deadline, "the job never finished"
        await asyncio.sleep(0.02)


def same_answer(theirs: ToolResult, missing: ToolResult, job_id: str) -> None:
    assert theirs.is_error and missing.is_error
    assert (theirs.status, theirs.code) == (missing.status, missing.code)
    assert theirs.content == missing.content.replace(MISSING, job_id)
    assert "secret" not in theirs.content and "running" not in theirs.content


def neighbours(job_id: str) -> list[str]:
    """Ids a counter would have handed out around ``job_id``, and ids sharing its parts."""
    match = re.fullmatch(r"job_([0-9a-f]{6})([0-9]+)", job_id)
    assert match is not None
    prefix, number = match.group(1), int(match.group(2))
    width = len(match.group(2))
    return [
        *(f"job_{prefix}{number + step:0{width}d}" for step in (-2, -1, 1, 2) if number + step >= 0),
        f"job_{prefix}1",
        f"job_{prefix}2",
        f"job_{int(prefix, 16) ^ 1:06x}{number:0{width}d}",
        f"job_{prefix}{number:0{width}d}0",
    ]


# -- the registry -----------------------------------------------------------------------


def collector() -> OutputCollector:
    return OutputCollector(limit_chars=100, tail_chars=100, redactor=None, open_writer=None)


async def test_job_ids_are_random_with_no_counter_in_them() -> None:
    ids = [new_job_id() for _ in range(500)]
    assert len(set(ids)) == 500
    for job_id in ids:
        assert re.fullmatch(r"job_[0-9a-f]{6}[0-9]{30}", job_id)  # the shape the builtin-tools pack accepts
    numbers = sorted(int(i[10:]) for i in ids)
    assert min(b - a for a, b in zip(numbers, numbers[1:], strict=False)) > 1000  # nothing sequential


@pytest.mark.parametrize(
    "reader",
    ["bob", "default", "Alice", "alice ", "alice\x00", "", "alic"],
    ids=["another-session", "default-session", "case-differs", "trailing-space", "trailing-nul", "empty", "prefix"],
)
async def test_lookup_finds_a_job_only_for_the_session_that_started_it(reader: str) -> None:
    registry = JobRegistry()
    task: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    job = registry.adopt("tool", task, collector(), session="alice")
    assert registry.lookup(job.id, session="alice") is job
    assert registry.lookup(job.id, session=reader) is None
    task.cancel()
    while job.output is None:  # the done callback runs on a later turn of the loop
        await asyncio.sleep(0)
    assert registry.lookup(job.id, session="alice") is job  # a finished job stays its session's
    assert registry.lookup(job.id, session=reader) is None


@pytest.mark.parametrize(
    "job_id",
    [None, 7, 7.0, True, ["job_x"], {"id": "job_x"}, b"job_abc", "", "job_", "job_../../etc", "JOB_ABCDEF1"],
    ids=["null", "int", "float", "bool", "list", "object", "bytes", "empty", "bare-prefix", "path", "upper-case"],
)
async def test_lookup_of_a_malformed_id_is_none_not_an_exception(job_id: object) -> None:
    registry = JobRegistry()
    task: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    registry.adopt("tool", task, collector(), session="alice")
    assert registry.lookup(job_id, session="alice") is None
    task.cancel()


# -- job_status through the pipeline --------------------------------------------------


async def test_job_status_of_another_sessions_running_job_is_the_unknown_id_answer(runtime: Runtime) -> None:
    job_id = await started(runtime, "endless", OWNER)
    own = await runtime.call("job_status", {"id": job_id}, OWNER)
    assert not own.is_error and "is running" in own.content
    theirs = await runtime.call("job_status", {"id": job_id}, MALLORY)
    missing = await runtime.call("job_status", {"id": MISSING}, MALLORY)
    same_answer(theirs, missing, job_id)


async def test_job_status_of_another_sessions_finished_job_is_the_unknown_id_answer(runtime: Runtime) -> None:
    job_id = await started(runtime, "quick_build", OWNER)
    await finished(runtime, job_id)
    own = await runtime.call("job_status", {"id": job_id}, OWNER)
    assert "exited with code 0" in own.content and "finished-build" in own.content
    theirs = await runtime.call("job_status", {"id": job_id}, MALLORY)
    missing = await runtime.call("job_status", {"id": MISSING}, MALLORY)
    same_answer(theirs, missing, job_id)


@pytest.mark.parametrize(
    ("owner", "reader"),
    [(OWNER, MALLORY), (Session(), OWNER), (OWNER, Session()), (OWNER, Session(id="Alice"))],
    ids=["named-sessions", "default-cannot-be-read-by-named", "named-cannot-be-read-by-default", "case-differs"],
)
async def test_the_same_job_id_from_a_different_session_is_unknown(
    runtime: Runtime, owner: Session, reader: Session
) -> None:
    job_id = await started(runtime, "quick_build", owner)
    result = await runtime.call("job_status", {"id": job_id}, reader)
    assert result.is_error and "no background job" in result.content
    assert "secret-build-output" not in result.content


async def test_neighbouring_ids_of_my_own_job_do_not_reach_anothers(runtime: Runtime) -> None:
    theirs = await started(runtime, "endless", OWNER)
    mine = await started(runtime, "endless", MALLORY)
    guesses = [*neighbours(mine), *neighbours(theirs), theirs]
    for guess in guesses:
        result = await runtime.call("job_status", {"id": guess}, MALLORY)
        assert result.is_error and "no background job" in result.content, guess
        assert "secret-endless-output" not in result.content


async def test_a_session_polls_its_own_job_while_another_sessions_job_runs(runtime: Runtime) -> None:
    theirs = await started(runtime, "endless", OWNER)
    mine = await started(runtime, "quick_build", MALLORY)
    await finished(runtime, mine)
    own = await runtime.call("job_status", {"id": mine}, MALLORY)
    assert "finished-build" in own.content and theirs not in own.content


@pytest.mark.parametrize(
    "job_id",
    [
        None,
        1,
        2.5,
        True,
        [],
        ["job_abcdef1"],
        {"id": "job_abcdef1"},
        "",
        "job_",
        "job_abcdef",
        "../job_abcdef1",
        "job_abcdef1\x00",
        "x" * 100_000,
    ],
    ids=[
        "null",
        "int",
        "float",
        "bool",
        "empty-list",
        "list",
        "object",
        "empty",
        "bare-prefix",
        "no-number",
        "path",
        "nul",
        "huge",
    ],
)
async def test_malformed_job_ids_are_an_unknown_id_answer_of_bounded_size(runtime: Runtime, job_id: object) -> None:
    await started(runtime, "endless", OWNER)
    result = await runtime.call("loose_job_status", {"id": job_id}, MALLORY)
    assert result.is_error and "no background job" in result.content
    assert "secret-endless-output" not in result.content
    assert len(result.content) < 500


async def test_the_shipped_job_status_refuses_ids_of_the_wrong_shape_before_looking(runtime: Runtime) -> None:
    result = await runtime.call("job_status", {"id": "job_../../x"}, MALLORY)
    assert result.status.value == "invalid"


async def test_a_jobs_spilled_output_is_an_artifact_of_its_session_only(runtime: Runtime) -> None:
    job_id = await started(runtime, "chatty", OWNER)
    await finished(runtime, job_id)
    own = await runtime.call("job_status", {"id": job_id}, OWNER)
    found = re.search(r"artifact `(art_[0-9a-f]{24})`", own.content)
    assert found is not None, own.content
    artifact_id = found.group(1)
    mine = await runtime.call("artifact_read", {"id": artifact_id, "limit": 100}, OWNER)
    assert "chatty-line-0" in mine.content
    theirs = await runtime.call("artifact_read", {"id": artifact_id}, MALLORY)
    assert theirs.is_error and "does not exist or has expired" in theirs.content
    assert "chatty-line" not in theirs.content
