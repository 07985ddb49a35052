"""A mounted MCP server is untrusted input: its annotations cannot make a tool read-only,
idempotent or less risky (which would let it run in plan mode, pass read-only allow
rules, be retried or skip approval) unless the McpServer says ``trust: trusted`` or the
config's own ``overrides`` say so. Hints may only tighten."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp_support import doc, server_doc, write_config

from runtime.adapters.mcp import tool_definitions
from runtime.config.models import McpServerSpec, Risk
from runtime.mcpclient.mount import ConfigFacts, ListedTool, mount_server
from runtime.records import Session, Status
from runtime.runtime import Runtime

FACTS = ConfigFacts(tool_names=frozenset(), mcp_targets=frozenset(), has_profile=False, redaction=())
ALL_LOOSE = {"read_only": True, "destructive": False, "idempotent": True}

# (server trust, the tool's override, its hints) -> (read_only, idempotent, risk)
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], tuple[bool, bool, Risk]]] = [
    ("untrusted-readOnlyHint-ignored", "untrusted", {}, {"read_only": True}, (False, False, Risk.high)),
    ("untrusted-idempotentHint-ignored", "untrusted", {}, {"idempotent": True}, (False, False, Risk.high)),
    ("untrusted-destructiveHint-false-ignored", "untrusted", {}, {"destructive": False}, (False, False, Risk.high)),
    ("untrusted-every-loosening-hint-ignored", "untrusted", {}, ALL_LOOSE, (False, False, Risk.high)),
    ("untrusted-destructiveHint-true-stays-high", "untrusted", {}, {"destructive": True}, (False, False, Risk.high)),
    ("untrusted-readOnlyHint-false", "untrusted", {}, {"read_only": False}, (False, False, Risk.high)),
    ("untrusted-no-hints", "untrusted", {}, {}, (False, False, Risk.high)),
    ("untrusted-override-read-only", "untrusted", {"read_only": True}, {}, (True, False, Risk.low)),
    (
        "untrusted-override-read-only-beats-hint",
        "untrusted",
        {"read_only": True},
        {"read_only": False},
        (True, False, Risk.low),
    ),
    ("untrusted-override-idempotent", "untrusted", {"idempotent": True}, {}, (False, True, Risk.high)),
    ("untrusted-override-risk", "untrusted", {"risk": "low"}, ALL_LOOSE, (False, False, Risk.low)),
    (
        "untrusted-override-trusted-believes-hints",
        "untrusted",
        {"trust": "trusted"},
        {"read_only": True},
        (True, False, Risk.low),
    ),
    ("untrusted-override-risk-critical", "untrusted", {"risk": "critical"}, ALL_LOOSE, (False, False, Risk.critical)),
    ("trusted-readOnlyHint", "trusted", {}, {"read_only": True}, (True, False, Risk.low)),
    ("trusted-idempotentHint", "trusted", {}, {"idempotent": True}, (False, True, Risk.high)),
    ("trusted-destructiveHint-false", "trusted", {}, {"destructive": False}, (False, False, Risk.medium)),
    ("trusted-every-hint", "trusted", {}, ALL_LOOSE, (True, True, Risk.low)),
    ("trusted-destructiveHint-true", "trusted", {}, {"destructive": True}, (False, False, Risk.high)),
    ("trusted-no-hints", "trusted", {}, {}, (False, False, Risk.high)),
    ("trusted-override-not-read-only", "trusted", {"read_only": False}, {"read_only": True}, (False, False, Risk.high)),
    (
        "trusted-override-untrusted-ignores-hints",
        "trusted",
        {"trust": "untrusted"},
        ALL_LOOSE,
        (False, False, Risk.high),
    ),
]


@pytest.mark.parametrize(
    ("trust", "override", "hints", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_hints_count_only_from_a_trusted_server_and_overrides_always_count(
    trust: str, override: dict[str, Any], hints: dict[str, Any], expected: tuple[bool, bool, Risk]
) -> None:
    spec = McpServerSpec(
        transport="stdio", command=["server"], trust=trust, overrides={"t": override} if override else {}
    )
    listed = ListedTool(name="t", description="d", input_schema={"type": "object"}, **hints)
    (mounted,) = mount_server("s", spec, [listed], FACTS)
    tool = mounted.model.spec
    assert (tool.read_only, tool.idempotent, tool.risk) == expected


# -- a real server, mounted twice: untrusted and trusted ---------------------------------

# Only read-only tools are allowed without asking; nothing answers an ask (no approver).
READ_ONLY_ONLY = doc(
    "Policy",
    "read-only-only",
    {"rules": [{"name": "allow-read-only", "effect": "allow", "tools": ["*"], "when": "tool.read_only == true"}]},
)
MOUNTS = [
    server_doc("wild", include=["echo", "structured", "pid"], overrides={"pid": {"read_only": True}}),
    server_doc("tame", include=["echo", "structured"], trust="trusted"),
    READ_ONLY_ONLY,
]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("mcp-trust")
    rt = Runtime([write_config(root / "config", *MOUNTS)], workspace_root=root, watch=False)
    yield rt
    rt.close_sync()


def test_both_mounts_list_the_same_tools(runtime: Runtime) -> None:
    assert sorted(runtime.snapshot.tools) == [
        "tame__echo",
        "tame__structured",
        "wild__echo",
        "wild__pid",
        "wild__structured",
    ]


@pytest.mark.parametrize(
    ("tool", "read_only", "idempotent", "risk"),
    [
        ("wild__echo", False, False, Risk.high),  # says readOnlyHint
        ("wild__structured", False, False, Risk.high),  # says idempotentHint and destructiveHint: false
        ("wild__pid", True, False, Risk.low),  # the override, not the hint
        ("tame__echo", True, False, Risk.low),
        ("tame__structured", False, True, Risk.medium),
    ],
)
def test_the_compiled_attributes_follow_trust(
    runtime: Runtime, tool: str, read_only: bool, idempotent: bool, risk: Risk
) -> None:
    spec = runtime.snapshot.tools[tool].spec
    assert (spec.read_only, spec.idempotent, spec.risk) == (read_only, idempotent, risk)


@pytest.mark.parametrize(("tool", "runs"), [("wild__echo", False), ("wild__pid", True), ("tame__echo", True)])
async def test_plan_mode_runs_an_untrusted_tool_only_when_the_config_says_it_is_read_only(
    runtime: Runtime, tool: str, runs: bool
) -> None:
    args = {"text": "in plan mode"} if tool.endswith("echo") else {}
    result = await runtime.call(tool, args, Session(id="planner", mode="plan"))
    if runs:
        assert result.status is Status.ok, result.content
    else:
        assert result.status is Status.denied and "plan mode" in result.content


@pytest.mark.parametrize(
    ("tool", "runs"), [("wild__echo", False), ("wild__structured", False), ("wild__pid", True), ("tame__echo", True)]
)
async def test_a_read_only_allow_rule_does_not_admit_an_untrusted_servers_claim(
    runtime: Runtime, tool: str, runs: bool
) -> None:
    args = {"text": "hi"} if tool.endswith("echo") else {"name": "x"} if tool.endswith("structured") else {}
    result = await runtime.call(tool, args, Session(id="worker"))
    if runs:
        assert result.status is Status.ok and result.metadata.get("rule") == "read-only-only/allow-read-only", (
            result.content
        )
    else:
        assert result.status is Status.denied, result.content  # asked, and nobody can approve


def test_toolrt_does_not_pass_an_untrusted_servers_hints_on_to_its_own_clients(runtime: Runtime) -> None:
    annotations = {d["name"]: d["annotations"] for d in tool_definitions(runtime.snapshot)}
    assert annotations["wild__echo"]["readOnlyHint"] is False
    assert annotations["wild__structured"]["idempotentHint"] is False
    assert annotations["wild__structured"]["destructiveHint"] is True
    assert annotations["tame__echo"]["readOnlyHint"] is True
