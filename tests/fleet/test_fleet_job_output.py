"""A running background job's output is readable from every worker of the fleet: the
worker that runs it shares the last part of its output so far (redacted, bounded)
in the job's Redis entry, and ``job_status`` on another worker shows it, to the
session that started the job only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from runtime import Call, Runtime, Session
from runtime.fleet.jobs import TAIL_CHARS
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [builtin-tools, redaction-default]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: ticker}
spec:
  description: Counts until released.
  handler:
    command:
      argv: [sh, -c, "n=0; while [ ! -e release ]; do n=$((n+1)); echo tick $n; sleep 0.05; done; echo finished"]
  read_only: true
  redaction: [secrets]
  timeout: {total_s: 0.3, on_timeout: background}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: flood}
spec:
  description: Prints a lot, then a key, then waits.
  handler:
    command:
      argv: [sh, -c, "head -c 300000 /dev/zero | tr '\\\\0' x; echo; echo key AKIAIOSFODNN7EXAMPLE last line;
        while [ ! -e release ]; do sleep 0.02; done"]
  read_only: true
  redaction: [secrets]
  output: {max_chars: 20000}
  timeout: {total_s: 0.3, on_timeout: background}
"""


def _runtime(tmp_path: Path, url: str, name: str) -> Runtime:
    config = tmp_path / f"config-{name}"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG)
    return Runtime([config], workspace_root=tmp_path, settings=Settings(limit_store=url, audit_sink="off"))


async def _status_until(runtime: Runtime, job_id: str, session: str, done: Callable[[str], bool]) -> str:
    content = ""
    for _ in range(1500):
        (result,) = await runtime.run_turn([Call("s", "job_status", {"id": job_id})], Session(id=session))
        content = result.content
        if done(content):
            return content
        await asyncio.sleep(0.02)
    raise AssertionError(f"job_status never satisfied the condition; last answer: {content}")


def _ticks(text: str) -> int:
    return max((int(line.split()[1]) for line in text.splitlines() if line.startswith("tick ")), default=0)


async def test_another_worker_reads_a_running_job_s_output_as_it_grows(tmp_path: Path, redis_url: str) -> None:
    here, there = _runtime(tmp_path, redis_url, "a"), _runtime(tmp_path, redis_url, "b")
    try:
        (first,) = await here.run_turn([Call("1", "ticker", {})], Session(id="owner"))
        job_id = first.metadata["job_id"]
        early = await _status_until(there, job_id, "owner", lambda text: _ticks(text) >= 3)
        assert "is running on worker" in early and "characters of output as of" in early
        # Later answers show later output: the entry follows the job while it runs.
        later = await _status_until(there, job_id, "owner", lambda text: _ticks(text) >= _ticks(early) + 20)
        assert "is running on worker" in later
        (tmp_path / "release").touch()
        ended = await _status_until(there, job_id, "owner", lambda text: "exited" in text)
        assert "exited with code 0" in ended and "finished" in ended
    finally:
        await here.close()
        await there.close()


async def test_the_shared_output_is_redacted_bounded_and_only_for_the_owning_session(
    tmp_path: Path, redis_url: str, redis_server: object
) -> None:
    here, there = _runtime(tmp_path, redis_url, "a"), _runtime(tmp_path, redis_url, "b")
    try:
        (first,) = await here.run_turn([Call("1", "flood", {})], Session(id="owner"))
        job_id = first.metadata["job_id"]
        live = await _status_until(there, job_id, "owner", lambda text: "last line" in text)
        assert "is running on worker" in live
        assert "AKIAIOSFODNN7EXAMPLE" not in live and "key " in live  # redacted before it was shared
        assert "300,0" in live  # the total is told, though only the end is shared
        entry = redis_server.client().hget(f"toolrt:j:{job_id}", "tail")  # type: ignore[attr-defined]
        assert entry is not None and len(entry.decode()) <= TAIL_CHARS
        assert b"AKIAIOSFODNN7EXAMPLE" not in entry
        (other,) = await there.run_turn([Call("s", "job_status", {"id": job_id})], Session(id="intruder"))
        assert other.is_error and "last line" not in other.content and "no background job" in other.content
        (tmp_path / "release").touch()
    finally:
        await here.close()
        await there.close()
