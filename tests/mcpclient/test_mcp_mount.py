"""Mounting: the tools a declared McpServer lists join the registry as
``<server>__<tool>``, filtered by include/exclude, with attributes from the server's
annotations and the document's overrides; declared Tools win; a broken schema or an
unreachable server never breaks the build; lint never connects."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import ALLOW_ALL, doc, mcp_tool, native_tool, server_doc, write_config

from runtime.cli import main
from runtime.config.compile import build_snapshot
from runtime.config.models import McpServerSpec, Risk, TruncationMode, Trust
from runtime.mcpclient.mount import ConfigFacts, ListedTool, mount_server, mounted_name
from runtime.records import Call, Status
from runtime.runtime import Runtime

OVERRIDES = {
    "crash": {"risk": "critical"},
    "pid": {"trust": "trusted", "timeout": {"total_s": 7}, "output": {"max_chars": 1234}},
}
MOUNTING = [
    doc("Include", "packs", {"packs": ["redaction-default", "output-default"]}),
    server_doc(include=["echo", "struct*", "crash", "broken*", "pid", "big"], exclude=["big"], overrides=OVERRIDES),
    ALLOW_ALL,
]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("mcp-mount")
    rt = Runtime([write_config(root / "config", *MOUNTING)], workspace_root=root, watch=False)
    yield rt
    rt.close_sync()


def test_include_and_exclude_choose_the_mounted_tools(runtime: Runtime) -> None:
    mounted = sorted(name for name in runtime.snapshot.tools if name.startswith("fx__"))
    # big: excluded; hang, fail, ...: not included; broken.schema: its schema is invalid.
    assert mounted == ["fx__crash", "fx__echo", "fx__pid", "fx__structured"]


def test_mounted_tools_take_attributes_from_the_servers_annotations_only_when_trusted(runtime: Runtime) -> None:
    echo = runtime.snapshot.tools["fx__echo"]
    assert echo.handler.kind == "mcp" and echo.handler.target == "fx/echo"
    # An untrusted server's readOnlyHint is not believed (see test_mount_trust.py).
    assert (echo.spec.read_only, echo.spec.idempotent, echo.spec.risk) == (False, False, Risk.high)
    assert echo.spec.trust is Trust.untrusted  # the server document's default
    pid = runtime.snapshot.tools["fx__pid"]  # trusted by its override: its readOnlyHint counts
    assert (pid.spec.read_only, pid.spec.risk) == (True, Risk.low)
    assert echo.spec.description == "Return the text."
    assert echo.spec.input_schema["required"] == ["text"]
    assert dict(echo.metadata.labels) == {"mcp_server": "fx", "mcp_tool": "echo"}
    structured = runtime.snapshot.tools["fx__structured"]
    assert (structured.spec.read_only, structured.spec.idempotent, structured.spec.risk) == (False, False, Risk.high)
    assert runtime.snapshot.tools["fx__crash"].spec.risk is Risk.critical  # overridden (the hint alone says high)


def test_overrides_and_the_mcp_output_profile_apply(runtime: Runtime) -> None:
    pid = runtime.snapshot.tools["fx__pid"]
    assert pid.spec.trust is Trust.trusted
    assert pid.spec.timeout.total_s == 7
    assert pid.output.max_chars == 1234  # the override...
    assert (
        pid.output.preview_chars == 4000 and pid.output.on_success is TruncationMode.artifact
    )  # ...over the mcp-25k-tokens profile
    echo = runtime.snapshot.tools["fx__echo"]
    assert echo.output.max_chars == 100_000
    assert echo.spec.timeout.total_s == 60  # the server's call_timeout_s
    assert {p.name for p in echo.redaction} == {"secrets", "pii"}


async def test_mounted_tool_is_called_and_validated_like_a_declared_one(runtime: Runtime) -> None:
    result = await runtime.call("fx__echo", {"text": "mounted"})
    assert result.status is Status.ok and "mounted" in result.content
    invalid = await runtime.call("fx__echo", {})
    assert invalid.status is Status.invalid


def test_a_declared_tool_wins_over_a_mounted_one(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "config",
        server_doc(include=["echo", "structured", "pid"]),
        mcp_tool("fx__echo", "fx/echo", description="My own echo."),  # same name as the mounted one
        mcp_tool("my_structured", "fx/structured"),  # already calls fx/structured
        ALLOW_ALL,
    )
    rt = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        tools = rt.snapshot.tools
        assert tools["fx__echo"].spec.description == "My own echo."
        assert "fx__structured" not in tools and "my_structured" in tools
        assert "fx__pid" in tools
    finally:
        rt.close_sync()


@pytest.mark.parametrize(
    "unreachable",
    [
        {"transport": "stdio", "command": ["/nonexistent/mcp-server"]},
        {"transport": "stdio", "command": [sys.executable, "-c", "import sys; sys.exit(1)"]},
        {"transport": "http", "url": "http://127.0.0.1:9/mcp", "command": None},
    ],
    ids=["missing-program", "exits-at-once", "nothing-listening"],
)
def test_unreachable_server_at_startup_mounts_nothing_and_the_runtime_starts(
    tmp_path: Path, unreachable: dict[str, object]
) -> None:
    folder = tmp_path / "config"
    config = write_config(
        folder, server_doc("gone", connect_timeout_s=10, **unreachable), native_tool(folder), ALLOW_ALL, native=True
    )
    rt = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        assert list(rt.snapshot.tools) == ["hello"]
        assert rt.run_turn_sync([Call("c", "hello", {})])[0].status is Status.ok
    finally:
        rt.close_sync()


def test_lint_and_plain_builds_never_start_a_server(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    config = write_config(
        tmp_path / "config", server_doc(command=command), mcp_tool("remote_echo", "fx/echo"), ALLOW_ALL
    )
    result = build_snapshot([config])
    assert result.snapshot is not None and list(result.snapshot.tools) == ["remote_echo"]
    assert main(["lint", str(config)], stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert not marker.exists()


SPEC = McpServerSpec(transport="stdio", command=["server"])
FACTS = ConfigFacts(tool_names=frozenset(), mcp_targets=frozenset(), has_profile=False, redaction=())


def test_mounted_names_are_safe_for_model_apis() -> None:
    assert mounted_name("my.server", "files/read") == "my_server__files_read"
    assert len(mounted_name("s", "t" * 100)) == 64


def test_tools_whose_names_collide_after_shortening_mount_once() -> None:
    tools = [
        ListedTool(name="t" * 80 + suffix, description="d", input_schema={"type": "object"}) for suffix in ("a", "b")
    ]
    mounted = mount_server("s", SPEC, tools, FACTS)
    assert [d.model.metadata.name for d in mounted] == [mounted_name("s", "t" * 80)]


def test_without_the_output_pack_mounted_tools_get_the_same_limits_inline() -> None:
    (mounted,) = mount_server("s", SPEC, [ListedTool(name="t", description="", input_schema={"type": "object"})], FACTS)
    spec = mounted.model.spec
    assert spec.output.profile is None and spec.output.max_chars == 100_000
    assert spec.description == "Tool `t` of MCP server `s`."
    assert spec.risk is Risk.high  # may write, and MCP's default for such a tool is destructive
