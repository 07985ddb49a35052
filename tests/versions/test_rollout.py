"""Tool versions: pins, canary rollouts (split, stickiness), their lint, and the
automatic rollback of a canary that fails more than the stable version."""

from __future__ import annotations

import sqlite3
import textwrap
import uuid
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.config.compile import build_snapshot
from runtime.config.models import Canary, Rollback, Rollout
from runtime.records import Session, Status
from runtime.settings import Settings
from runtime.versions import CanaryMonitor, compile_rollout

MODULE = """
from runtime.errors import ToolError


def v1(args):
    return "served by 1"


def v2(args):
    if args.get("fail"):
        raise ToolError("version 2 is broken")
    return "served by 2"


def v3(args):
    return "served by 3"
"""


def versions(rollout: str = "", *, on: str = "1", extra_versions: str = "") -> str:
    docs = []
    for version, func in (("1", "v1"), ("2", "v2"), *(("3", "v3"),) * bool(extra_versions)):
        spec_rollout = textwrap.indent(rollout.strip(), "  ") + "\n" if rollout and version == on else ""
        docs.append(
            f"apiVersion: toolrt/v1\nkind: Tool\nmetadata: {{name: greet, version: '{version}'}}\nspec:\n  "
            f"description: Greets.\n  handler: python:vmod:{func}\n  read_only: true\n  input_schema: {{type: object, "
            f"properties: {{fail: {{type: boolean}}}}}}\n{spec_rollout}"
        )
    return "---\n".join(docs)


def write(tmp_path: Path, documents: str) -> Path:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "vmod.py").write_text(MODULE)
    (config / "tools.yaml").write_text(documents)
    return config


def runtime_for(tmp_path: Path, documents: str, **settings: object) -> Runtime:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return Runtime(
        [write(tmp_path, documents)],
        workspace_root=tmp_path / "ws",
        settings=Settings(state_dir=tmp_path / "state", **settings),
    )  # type: ignore[arg-type]


def test_the_canary_split_is_within_two_percent_over_ten_thousand_sessions() -> None:
    table, problems = compile_rollout("greet", Rollout(stable="1", canary=Canary(version="2", percent=10)), ["1", "2"])
    assert table is not None and problems == []
    served = [table.assign(f"session-{i}") for i in range(10_000)]
    share = served.count("2") / len(served) * 100
    assert 8.0 <= share <= 12.0
    assert set(served) == {"1", "2"}


@pytest.mark.parametrize("percent", [0.5, 1, 25, 50, 90, 99.5])
def test_the_split_follows_the_declared_percentage(percent: float) -> None:
    table, _ = compile_rollout("t", Rollout(stable="1", canary=Canary(version="2", percent=percent)), ["1", "2"])
    assert table is not None
    ids = [uuid.UUID(int=i * 7919 + 17).hex for i in range(10_000)]
    share = sum(table.assign(i) == "2" for i in ids) / 100
    assert abs(share - percent) <= 2.0


def test_weighted_rollouts_split_between_three_versions() -> None:
    table, problems = compile_rollout("t", Rollout(weights={"1": 50, "2": 30, "3": 20}), ["1", "2", "3"])
    assert table is not None and problems == []
    served = [table.assign(f"s{i}") for i in range(10_000)]
    for version, percent in (("1", 50), ("2", 30), ("3", 20)):
        assert abs(served.count(version) / 100 - percent) <= 2.0
    assert table.split() == {"1": 50.0, "2": 30.0, "3": 20.0}


def test_a_session_always_gets_the_same_version() -> None:
    table, _ = compile_rollout("t", Rollout(stable="1", canary=Canary(version="2", percent=50)), ["1", "2"])
    assert table is not None
    for i in range(200):
        first = table.assign(f"sticky-{i}")
        assert all(table.assign(f"sticky-{i}") == first for _ in range(5))


def test_zero_and_hundred_percent_canaries_serve_one_version() -> None:
    none, _ = compile_rollout("t", Rollout(stable="1", canary=Canary(version="2", percent=0)), ["1", "2"])
    every, _ = compile_rollout("t", Rollout(stable="1", canary=Canary(version="2", percent=100)), ["1", "2"])
    assert none is not None and every is not None
    assert {none.assign(f"s{i}") for i in range(500)} == {"1"}
    assert {every.assign(f"s{i}") for i in range(500)} == {"2"}


BAD_ROLLOUTS = [
    (Rollout(weights={"1": 50, "2": 40}), "sum to 90"),
    (Rollout(weights={"1": 60, "2": 60}), "sum to 120"),
    (Rollout(weights={}), "empty"),
    (Rollout(weights={"1": 50, "9": 50}), "version `9`"),
    (Rollout(stable="9"), "version `9`"),
    (Rollout(stable="1", canary=Canary(version="7", percent=5)), "version `7`"),
    (Rollout(stable="1", canary=Canary(version="1", percent=5)), "canary is the stable"),
    (Rollout(canary=Canary(version="2", percent=5)), "needs `stable`"),
    (Rollout(stable="1", weights={"1": 100}), "not both"),
    (Rollout(stable="1", rollback=Rollback()), "needs a `canary`"),
    (Rollout(weights={"1": 100}, rollback=Rollback()), "stable version to fall back"),
]


@pytest.mark.parametrize(("rollout", "expected"), BAD_ROLLOUTS)
def test_a_broken_rollout_is_refused_with_a_reason(rollout: Rollout, expected: str) -> None:
    table, problems = compile_rollout("t", rollout, ["1", "2"])
    assert table is None
    assert any(expected in p for p in problems), problems


def test_a_rollout_declared_in_two_versions_is_a_lint_error(tmp_path: Path) -> None:
    docs = versions("rollout: {stable: '1'}", on="1") + "  rollout: {stable: '2'}\n"  # the last document is version 2
    result = build_snapshot([write(tmp_path, docs)])
    assert result.snapshot is None and [p.code for p in result.problems] == ["rollout-conflict", "rollout-conflict"]


def test_weights_that_do_not_sum_are_a_lint_error_at_the_tool(tmp_path: Path) -> None:
    result = build_snapshot([write(tmp_path, versions("rollout: {weights: {'1': 70, '2': 20}}"))])
    assert result.snapshot is None
    problem = next(p for p in result.problems if p.code == "rollout-invalid")
    assert "sum to 90" in problem.message and problem.location.file.endswith("tools.yaml")


async def test_calls_are_served_by_the_assigned_version_and_the_audit_log_says_which(tmp_path: Path) -> None:
    runtime = runtime_for(
        tmp_path, versions("rollout: {stable: '1', canary: {version: '2', percent: 50}}"), audit_sink="sqlite"
    )
    table = runtime.snapshot.rollouts["greet"]
    seen: dict[str, str] = {}
    for i in range(40):
        session = Session(id=f"user-{i}")
        result = await runtime.call("greet", {}, session)
        assert result.status is Status.ok
        expected = table.assign(session.id)
        assert result.content == f"served by {expected}" and result.metadata["tool_version"] == expected
        seen[session.id] = expected
    assert set(seen.values()) == {"1", "2"}
    await runtime.close()
    with sqlite3.connect(runtime.audit_path()) as db:
        rows = db.execute("SELECT session_id, tool_version FROM calls").fetchall()
    assert {s: v for s, v in rows} == seen


async def test_a_session_pin_wins_over_the_rollout(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path, versions("rollout: {stable: '1', canary: {version: '2', percent: 0}}"))
    pinned = await runtime.call("greet", {}, Session(id="p", pins={"greet": "2"}))
    assert pinned.content == "served by 2"
    plain = await runtime.call("greet", {}, Session(id="p"))
    assert plain.content == "served by 1"
    explicit = await runtime.call("greet@1", {}, Session(id="p", pins={"greet": "2"}))
    assert explicit.content == "served by 1"
    await runtime.close()


async def test_a_pin_without_a_rollout_chooses_the_version(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path, versions())
    assert (await runtime.call("greet", {}, Session(id="a"))).content == "served by 2"  # the highest
    assert (await runtime.call("greet", {}, Session(id="a", pins={"greet": "1"}))).content == "served by 1"
    await runtime.close()


@pytest.mark.parametrize("pin", ["9", "", "1.0", "x" * 500, "2 ", "../1"])
async def test_a_pin_to_an_unknown_version_is_an_error_result(tmp_path: Path, pin: str) -> None:
    runtime = runtime_for(tmp_path, versions("rollout: {stable: '1'}"))
    result = await runtime.call("greet", {}, Session(id="a", pins={"greet": pin}))
    if pin == "":
        assert result.status is Status.ok  # an empty pin is no pin
    else:
        assert result.status is Status.invalid and result.code == "unknown_version"
        assert "pins" in result.content and len(result.content) < 400
    await runtime.close()


async def test_a_pin_of_another_tool_changes_nothing(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path, versions("rollout: {stable: '1'}"))
    result = await runtime.call("greet", {}, Session(id="a", pins={"other": "5"}))
    assert result.content == "served by 1"
    await runtime.close()


def test_the_canary_is_rolled_back_when_it_fails_more_than_the_stable_version() -> None:
    now = [0.0]
    monitor = CanaryMonitor(clock=lambda: now[0])
    table, _ = compile_rollout(
        "t",
        Rollout(
            stable="1",
            canary=Canary(version="2", percent=50),
            rollback=Rollback(window_s=60, min_calls=10, max_error_rate_margin=0.2),
        ),
        ["1", "2"],
    )
    assert table is not None
    for _ in range(20):
        monitor.record(table, "1", failed=False)
    for i in range(9):
        monitor.record(table, "2", failed=True)
        assert not monitor.halted(table), i  # fewer than min_calls: not judged yet
    monitor.record(table, "2", failed=True)
    assert monitor.halted(table)
    assert {table.assign(f"s{i}", halted=True) for i in range(200)} == {"1"}
    assert "t@2" in next(iter(monitor.halts().values()))


def test_a_canary_within_the_margin_keeps_serving() -> None:
    monitor = CanaryMonitor(clock=lambda: 0.0)
    table, _ = compile_rollout(
        "t",
        Rollout(
            stable="1",
            canary=Canary(version="2", percent=50),
            rollback=Rollback(min_calls=10, max_error_rate_margin=0.2),
        ),
        ["1", "2"],
    )
    assert table is not None
    for i in range(100):
        monitor.record(table, "1", failed=i % 10 == 0)  # 10 %
        monitor.record(table, "2", failed=i % 5 == 0)  # 20 %: within 10 points + margin
    assert not monitor.halted(table)


def test_old_failures_leave_the_window() -> None:
    now = [0.0]
    monitor = CanaryMonitor(clock=lambda: now[0])
    table, _ = compile_rollout(
        "t",
        Rollout(
            stable="1",
            canary=Canary(version="2", percent=50),
            rollback=Rollback(window_s=10, min_calls=5, max_error_rate_margin=0.1),
        ),
        ["1", "2"],
    )
    assert table is not None
    for _ in range(4):
        monitor.record(table, "2", failed=True)
    now[0] = 100.0  # the failures are out of the window
    for _ in range(5):
        monitor.record(table, "2", failed=False)
    assert not monitor.halted(table)


def test_a_changed_rollout_starts_again() -> None:
    monitor = CanaryMonitor(clock=lambda: 0.0)
    rollback = Rollback(min_calls=1, max_error_rate_margin=0.0)
    first, _ = compile_rollout(
        "t", Rollout(stable="1", canary=Canary(version="2", percent=10), rollback=rollback), ["1", "2"]
    )
    second, _ = compile_rollout(
        "t", Rollout(stable="1", canary=Canary(version="2", percent=20), rollback=rollback), ["1", "2"]
    )
    assert first is not None and second is not None
    monitor.record(first, "2", failed=True)
    assert monitor.halted(first) and not monitor.halted(second)


async def test_a_failing_canary_stops_receiving_sessions_through_the_runtime(tmp_path: Path) -> None:
    rollout = (
        "rollout: {stable: '1', canary: {version: '2', percent: 50}, rollback: {window_s: 600, min_calls: 5, "
        "max_error_rate_margin: 0.5}}"
    )
    runtime = runtime_for(tmp_path, versions(rollout))
    table = runtime.snapshot.rollouts["greet"]
    canary_sessions = [f"c{i}" for i in range(400) if table.assign(f"c{i}") == "2"][:10]
    for sid in canary_sessions[:5]:
        result = await runtime.call("greet", {"fail": True}, Session(id=sid))
        assert result.is_error
    assert runtime.canaries.halted(table)
    after = await runtime.call("greet", {}, Session(id=canary_sessions[6]))
    assert after.content == "served by 1"
    assert runtime.metrics.snapshot()["sources"]["canaries"] == {"rolled_back": 1}
    await runtime.close()


def test_toolrt_versions_shows_versions_rollout_and_split(tmp_path: Path) -> None:
    import io

    from runtime.cli import main

    config = write(
        tmp_path, versions("rollout: {stable: '1', canary: {version: '2', percent: 10}, rollback: {min_calls: 5}}")
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["versions", "--config", str(config)], out, err) == 0
    text = out.getvalue()
    assert "greet: versions 1, 2; default 2" in text
    assert "2: 10%" in text and "1: 90%" in text and "canary 2" in text and "rollback" in text
