"""The embedding API: Runtime builds a snapshot (or raises ConfigError with every
problem), runs turns with or without a running event loop, reloads only clean config,
and lets every turn keep the snapshot it started with."""

from __future__ import annotations

import asyncio
import json
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import ConfigError
from runtime.pipeline.permit import Approval
from runtime.records import Call, Decision, Session, Status, ValidatedCall
from runtime.runtime import Runtime
from runtime.settings import Settings

HANDLERS = """
import asyncio


def hello(args):
    return f"hello {args.get('who', 'world')}"


def version_one(args):
    return "v1"


def version_two(args):
    return "v2"


async def slow(args):
    await asyncio.sleep(args.get("s", 0.3))
    return "slow done"


def write(args):
    return "written"
"""


class Config:
    """A config dir in tmp_path: a handler module with a unique name and tools.yaml."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "config"
        self.dir.mkdir()
        self.module = f"toolrt_rt_h_{uuid.uuid4().hex[:12]}"
        (self.dir / f"{self.module}.py").write_text(textwrap.dedent(HANDLERS))
        self.workspace = root / "workspace"
        self.workspace.mkdir()

    def tool(self, name: str, function: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "toolrt/v1",
            "kind": "Tool",
            "metadata": {"name": name},
            "spec": {"description": f"The {name} tool.", "handler": f"python:{self.module}:{function}", **spec},
        }

    def write(self, *documents: dict[str, Any] | str) -> None:
        text = "\n---\n".join(d if isinstance(d, str) else json.dumps(d) for d in documents)
        (self.dir / "tools.yaml").write_text(text + "\n")

    def standard(self) -> None:
        self.write(
            self.tool(
                "hello",
                "hello",
                read_only=True,
                input_schema={"type": "object", "properties": {"who": {"type": "string"}}},
            ),
            self.tool("pinned", "version_one", read_only=True),
            self.tool(
                "slow", "slow", read_only=True, input_schema={"type": "object", "properties": {"s": {"type": "number"}}}
            ),
            self.tool("doomed", "hello", read_only=True),
            self.tool("write", "write"),
        )

    def runtime(self, **kw: Any) -> Runtime:
        return Runtime([self.dir], workspace_root=self.workspace, **kw)


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    config = Config(tmp_path)
    config.standard()
    return config


BROKEN_DOCUMENT = """apiVersion: toolrt/v1
kind: Tool
metadata: {name: broken}
spec:
  handler: builtin:no_such_builtin
  read_only: maybe
"""


def test_broken_config_raises_config_error_listing_every_problem(tmp_path: Path) -> None:
    config = Config(tmp_path)
    config.write(config.tool("ok", "hello"), BROKEN_DOCUMENT, config.tool("missing", "no_such_function"))
    with pytest.raises(ConfigError) as raised:
        config.runtime()
    problems = raised.value.problems
    assert len([p for p in problems if p.is_error]) >= 2
    assert all(p.location.file.endswith("tools.yaml") for p in problems)
    assert all(p.location.line > 0 for p in problems), [str(p) for p in problems]
    text = str(raised.value)
    assert "config error(s)" in text
    assert "no_such_function" in text
    assert "tools.yaml:" in text


def test_run_turn_sync_works_without_a_running_loop(cfg: Config) -> None:
    rt = cfg.runtime()
    results = rt.run_turn_sync([Call(id="a", name="hello", args={"who": "sync"}), Call(id="b", name="hello", args={})])
    assert [r.content for r in results] == ["hello sync", "hello world"]


async def test_run_turn_sync_works_inside_a_running_loop(cfg: Config) -> None:
    rt = cfg.runtime()
    asyncio.get_running_loop()  # this test runs inside one
    results = rt.run_turn_sync([Call(id="a", name="hello", args={"who": "loop"})])
    assert results[0].content == "hello loop"


async def test_call_runs_one_call_by_name(cfg: Config) -> None:
    rt = cfg.runtime()
    result = await rt.call("hello", {"who": "call"})
    assert result.status is Status.ok and result.content == "hello call"
    assert result.call_id.startswith("call_")


async def test_result_metadata_has_snapshot_version_status_and_timings(cfg: Config) -> None:
    rt = cfg.runtime()
    ok, bad, unknown = await rt.run_turn(
        [
            Call(id="a", name="hello", args={}),
            Call(id="b", name="hello", args={"who": 1}),
            Call(id="c", name="nope", args={}),
        ]
    )
    for result in (ok, bad, unknown):
        assert result.metadata["snapshot"] == rt.snapshot.version
        assert result.metadata["status"] == result.status.value
        timings = result.metadata["timings_ms"]
        assert any("total" in key for key in timings), timings
        assert all(isinstance(v, (int, float)) and v >= 0 for v in timings.values())
    assert len(ok.metadata["timings_ms"]) > len(unknown.metadata["timings_ms"])  # the stages it went through
    assert ok.metadata["decision"] == "allow"


def test_reload_keeps_the_old_snapshot_on_a_broken_edit_and_swaps_on_a_fixed_one(cfg: Config) -> None:
    rt = cfg.runtime()
    first = rt.snapshot
    cfg.write(cfg.tool("hello", "hello", read_only=True), BROKEN_DOCUMENT)
    result = rt.reload()
    assert result.snapshot is None and result.errors
    assert rt.snapshot is first
    assert isinstance(rt.last_reload_error, ConfigError)
    assert any("tools.yaml:" in str(p) for p in rt.last_reload_error.problems)
    still = rt.run_turn_sync([Call(id="a", name="pinned", args={})])
    assert still[0].content == "v1" and still[0].metadata["snapshot"] == first.version

    cfg.write(
        cfg.tool("hello", "hello", read_only=True),
        cfg.tool("pinned", "version_two", read_only=True),
        cfg.tool("added", "hello", read_only=True),
    )
    result = rt.reload()
    assert result.snapshot is not None
    assert rt.last_reload_error is None
    assert rt.snapshot is result.snapshot and rt.snapshot.version != first.version
    new = rt.run_turn_sync(
        [Call(id="a", name="pinned", args={}), Call(id="b", name="added", args={}), Call(id="c", name="slow", args={})]
    )
    assert [r.content for r in new[:2]] == ["v2", "hello world"]
    assert new[2].code == "unknown_tool"  # removed by the edit
    assert all(r.metadata["snapshot"] == rt.snapshot.version for r in new)


def test_reload_of_an_unchanged_config_keeps_the_same_version(cfg: Config) -> None:
    rt = cfg.runtime()
    version = rt.snapshot.version
    rt.reload()
    assert rt.snapshot.version == version and rt.last_reload_error is None


async def test_a_turn_keeps_the_snapshot_it_captured_when_a_reload_happens_mid_turn(cfg: Config) -> None:
    rt = cfg.runtime()
    before = rt.snapshot.version
    calls = [
        Call(id="s", name="slow", args={"s": 0.3}),
        Call(id="p", name="pinned", args={}),
        Call(id="d", name="doomed", args={}),
    ]
    turn = asyncio.ensure_future(rt.run_turn(calls, parallel=False))
    await asyncio.sleep(0.1)  # `slow` is running
    cfg.write(
        cfg.tool("slow", "slow", read_only=True), cfg.tool("pinned", "version_two", read_only=True)
    )  # pinned changes, doomed goes
    assert rt.reload().snapshot is not None
    after = rt.snapshot.version
    assert after != before
    results = await turn
    assert [r.content for r in results] == ["slow done", "v1", "hello world"]
    assert {r.metadata["snapshot"] for r in results} == {before}
    fresh = await rt.run_turn([Call(id="p", name="pinned", args={}), Call(id="d", name="doomed", args={})])
    assert fresh[0].content == "v2" and fresh[1].code == "unknown_tool"
    assert {r.metadata["snapshot"] for r in fresh} == {after}


async def test_the_settings_permission_mode_is_the_default_session_mode(cfg: Config) -> None:
    planning = cfg.runtime(settings=Settings(permission_mode="plan"))
    (denied,) = await planning.run_turn([Call(id="w", name="write", args={})])
    assert denied.status is Status.denied and "plan mode" in denied.content
    (allowed,) = await planning.run_turn([Call(id="w", name="write", args={})], Session(mode="bypass"))
    assert allowed.content == "written"


async def test_the_runtime_approver_is_asked_for_writes(cfg: Config) -> None:
    asked: list[str] = []

    async def approver(call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        asked.append(call.tool.name)
        return Approval(True)

    rt = cfg.runtime(approver=approver)
    results = await rt.run_turn([Call(id="h", name="hello", args={}), Call(id="w", name="write", args={})])
    assert [r.content for r in results] == ["hello world", "written"]
    assert asked == ["write"]


async def test_max_concurrency_of_one_runs_read_only_calls_one_at_a_time(cfg: Config) -> None:
    rt = cfg.runtime(settings=Settings(max_concurrency=1))
    loop = asyncio.get_running_loop()
    started = loop.time()
    results = await rt.run_turn([Call(id=str(i), name="slow", args={"s": 0.1}) for i in range(3)])
    assert all(r.status is Status.ok for r in results)
    assert loop.time() - started >= 0.3


def test_a_reload_that_would_leave_no_tools_is_refused_and_the_tools_keep_serving(tmp_path) -> None:
    from runtime import Runtime

    (tmp_path / "t.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: t}\nspec:\n  description: d\n  handler: "
        "builtin:tool_search\n  read_only: true\n"
    )
    runtime = Runtime([tmp_path], workspace_root=tmp_path, watch=False)
    (tmp_path / "t.yaml").write_text("")  # caught half-written
    result = runtime.reload()
    assert result.snapshot is None and [p.code for p in result.errors] == ["no-tools"]
    assert "t" in runtime.snapshot.tools and runtime.last_reload_error is not None
