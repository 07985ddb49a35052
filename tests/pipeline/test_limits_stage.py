"""Quotas and circuit breakers in the pipeline: a call over a quota or to a tool whose
breaker is open gets an error result naming the limit, and never runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pipeline_support import ConfigDir, call

from runtime import Runtime
from runtime.records import Session, Stage, Status

HANDLERS = """
import asyncio, time
from pathlib import Path

RUNNING = {"now": 0, "peak": 0}

def ping(args):
    return "pong"

def boom(args):
    raise RuntimeError("backend exploded")

async def slow(args):
    RUNNING["now"] += 1
    RUNNING["peak"] = max(RUNNING["peak"], RUNNING["now"])
    await asyncio.sleep(0.05)
    RUNNING["now"] -= 1
    return "done"

def shout(args):
    return "x" * 100
"""


def runtime_with(config: ConfigDir, workspace: Path, policy: dict) -> Runtime:
    config.handlers(HANDLERS)
    for name in ("ping", "boom", "slow", "shout"):
        config.tool(name, config.py(name), read_only=True)
    config.document("Policy", "limits", policy)
    config.write()
    return Runtime([config.path], workspace_root=workspace)


async def test_calls_over_the_session_quota_are_refused_naming_the_quota(config: ConfigDir, workspace: Path) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"calls_per_session": 2}})
    session = Session(id="s1")
    results = [await runtime.call("ping", {}, session) for _ in range(3)]
    assert [r.status for r in results] == [Status.ok, Status.ok, Status.denied]
    refused = results[2]
    assert (refused.code, refused.stage) == ("quota_exceeded", Stage.permit)
    assert "calls_per_session" in refused.content and "2" in refused.content
    other = await runtime.call("ping", {}, Session(id="s2"))
    assert other.status is Status.ok


async def test_ending_a_session_resets_its_quota(config: ConfigDir, workspace: Path) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"calls_per_session": 1}})
    session = Session(id="s1")
    assert (await runtime.call("ping", {}, session)).status is Status.ok
    assert (await runtime.call("ping", {}, session)).status is Status.denied
    runtime.end_session("s1")
    assert (await runtime.call("ping", {}, session)).status is Status.ok


async def test_per_tool_quota_counts_only_that_tool(config: ConfigDir, workspace: Path) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"calls_per_tool": {"ping": 1}}})
    assert (await runtime.call("ping", {})).status is Status.ok
    assert (await runtime.call("ping", {})).code == "quota_exceeded"
    assert (await runtime.call("shout", {})).status is Status.ok


async def test_output_bytes_budget_refuses_once_spent(config: ConfigDir, workspace: Path) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"output_bytes_per_session": 150}})
    statuses = [(await runtime.call("shout", {})).status for _ in range(3)]
    assert statuses == [Status.ok, Status.ok, Status.denied]


async def test_max_concurrent_executions_per_tool_refuses_the_excess_in_a_parallel_turn(
    config: ConfigDir, workspace: Path
) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"max_concurrent_per_tool": {"slow": 2}}})
    results = await runtime.run_turn([call("slow", {}, id=f"c{i}") for i in range(4)])
    assert sorted(r.status.value for r in results) == ["denied", "denied", "ok", "ok"]
    assert all("max_concurrent_per_tool" in r.content for r in results if r.is_error)
    module = config.loaded_module()
    assert module.RUNNING["peak"] <= 2
    # the slots are given back when the calls finish
    assert (await runtime.call("slow", {})).status is Status.ok


async def test_a_breaker_opens_after_repeated_crashes_and_refuses_without_running(
    config: ConfigDir, workspace: Path
) -> None:
    runtime = runtime_with(
        config, workspace, {"circuit_breakers": [{"tools": ["boom"], "failures": 2, "window_s": 60, "cooldown_s": 60}]}
    )
    first, second, third = [await runtime.call("boom", {}) for _ in range(3)]
    assert first.code == second.code == "handler_error"
    assert (third.status, third.code) == (Status.denied, "circuit_open")
    assert "boom" in third.content and "2 failures" in third.content
    assert (await runtime.call("ping", {})).status is Status.ok  # other tools keep serving


async def test_tool_errors_on_purpose_do_not_trip_a_breaker(config: ConfigDir, workspace: Path) -> None:
    config.handlers(
        HANDLERS
        + "\nfrom runtime.errors import ToolError\ndef missing(args):\n    raise ToolError('ticket not found')\n"
    )
    config.tool("missing", config.py("missing"), read_only=True)
    config.document("Policy", "limits", {"circuit_breakers": [{"failures": 1, "window_s": 60, "cooldown_s": 60}]})
    config.write()
    runtime = Runtime([config.path], workspace_root=workspace)
    results = [await runtime.call("missing", {}) for _ in range(3)]
    assert [r.code for r in results] == ["tool_error"] * 3


async def test_quota_state_survives_a_reload(config: ConfigDir, workspace: Path) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"calls_per_session": 1}})
    assert (await runtime.call("ping", {})).status is Status.ok
    (config.path / "extra.yaml").write_text("# a comment-only change still rebuilds\n")
    assert runtime.reload().snapshot is not None
    assert (await runtime.call("ping", {})).status is Status.denied


async def test_a_cancelled_call_gives_its_concurrency_slot_back(config: ConfigDir, workspace: Path) -> None:
    runtime = runtime_with(config, workspace, {"quotas": {"max_concurrent_per_tool": {"slow": 1}}})
    task = asyncio.create_task(runtime.call("slow", {}))
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert (await runtime.call("slow", {})).status is Status.ok


async def test_a_call_gone_to_the_background_keeps_its_concurrency_slot_until_it_ends(
    config: ConfigDir, workspace: Path
) -> None:
    config.command_tool("build", ["sleep", "1.5"], read_only=True, timeout={"total_s": 0.2, "on_timeout": "background"})
    config.document("Policy", "limits", {"quotas": {"max_concurrent_per_tool": {"build": 1}}})
    config.write()
    runtime = Runtime([config.path], workspace_root=workspace)
    first = await runtime.call("build", {})
    second = await runtime.call("build", {})
    assert first.status is Status.background
    assert (second.status, second.code) == (Status.denied, "quota_exceeded")
    # Until the background job ends, every call is refused and changes nothing; then the
    # slot is given back and the next call gets it.
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        third = await runtime.call("build", {})
        if third.status is not Status.denied or asyncio.get_running_loop().time() > deadline:
            break
        assert third.code == "quota_exceeded"
        await asyncio.sleep(0.05)
    assert third.status is Status.background
    await runtime.close()
