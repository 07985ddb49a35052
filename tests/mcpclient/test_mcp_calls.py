"""Declared ``mcp:<server>/<tool>`` tools run end to end through Runtime against the
fixture server: validation, policies, the server's answer mapped to a result,
redaction, truncation to an artifact, the audit trail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import ALLOW_ALL, doc, mcp_tool, server_doc, write_config

from runtime.records import Call, Stage, Status
from runtime.runtime import Runtime
from runtime.settings import Settings

TEXT = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 50}},
    "required": ["text"],
    "additionalProperties": False,
}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CHARS = {"type": "object", "properties": {"chars": {"type": "integer"}}, "required": ["chars"]}
STEPS = {"type": "object", "properties": {"steps": {"type": "integer"}, "delay": {"type": "number"}}}
NO_SECRET_WORDS = [{"expression": "!args.text.contains('forbidden')", "message": "Leave out the word `forbidden`."}]

DOCUMENTS = [
    doc("Include", "packs", {"packs": ["redaction-default", "output-default"]}),
    server_doc(include=[]),  # declared tools only: nothing mounted
    mcp_tool("remote_echo", "fx/echo", TEXT, read_only=True, rules=NO_SECRET_WORDS),
    mcp_tool("remote_structured", "fx/structured", NAME, redaction=["secrets"], trust="untrusted"),
    mcp_tool("remote_fail", "fx/fail"),
    mcp_tool(
        "remote_big",
        "fx/big",
        CHARS,
        read_only=True,
        output={"max_chars": 500, "preview_chars": 100, "on_success": "artifact"},
    ),
    mcp_tool("remote_picture", "fx/picture", read_only=True),
    mcp_tool("remote_progress", "fx/progress", STEPS, read_only=True, timeout={"total_s": 60, "idle_s": 2}),
    mcp_tool("remote_denied", "fx/echo", TEXT, read_only=True),
    doc(
        "Policy",
        "test-policy",
        {
            "rules": [
                *ALLOW_ALL["spec"]["rules"],
                {"name": "no-denied", "effect": "deny", "tools": ["remote_denied"], "reason": "Not this one."},
            ]
        },
    ),
]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("mcp-calls")
    config = write_config(root / "config", *DOCUMENTS)
    settings = Settings(audit_sink="jsonl", audit_store=root / "audit.jsonl")
    rt = Runtime([config], settings=settings, workspace_root=root, watch=False)
    yield rt
    rt.close_sync()


async def test_declared_mcp_tool_returns_the_servers_text(runtime: Runtime) -> None:
    result = await runtime.call("remote_echo", {"text": "hello over MCP"})
    assert result.status is Status.ok, result.content
    assert result.content == "hello over MCP"


async def test_arguments_are_validated_before_the_server_is_called(runtime: Runtime) -> None:
    missing = await runtime.call("remote_echo", {})
    assert missing.status is Status.invalid and missing.stage is Stage.validate
    ruled_out = await runtime.call("remote_echo", {"text": "a forbidden word"})
    assert ruled_out.status is Status.invalid and "forbidden" in ruled_out.content


async def test_policy_deny_stops_an_mcp_tool(runtime: Runtime) -> None:
    result = await runtime.call("remote_denied", {"text": "hi"})
    assert result.status is Status.denied
    assert "Not this one." in result.content


async def test_structured_content_is_serialized_and_its_secret_redacted(runtime: Runtime) -> None:
    result = await runtime.call("remote_structured", {"name": "widget"})
    assert result.status is Status.ok, result.content
    assert "widget" in result.content and "ghp_a1B2" not in result.content
    assert result.metadata["redactions"] == {"github_token": 1}
    assert result.structured["name"] == "widget"
    assert "ghp_a1B2" not in json.dumps(result.structured)


async def test_is_error_result_becomes_an_error_result_with_the_servers_text(runtime: Runtime) -> None:
    result = await runtime.call("remote_fail", {})
    assert result.is_error and result.status is Status.error
    assert result.code == "tool_error"
    assert "the widget is broken" in result.content


async def test_long_remote_output_is_truncated_to_an_artifact(runtime: Runtime) -> None:
    result = await runtime.call("remote_big", {"chars": 5000})
    assert result.status is Status.ok
    assert result.metadata["truncated"] is True
    assert result.metadata["original_chars"] == 5000
    assert result.metadata["artifact_id"]
    assert len(result.content) < 1000


async def test_non_text_content_is_described_not_dropped(runtime: Runtime) -> None:
    result = await runtime.call("remote_picture", {})
    assert "[image content: image/png" in result.content
    assert "[resource <file:///notes.txt> (text/plain)]\nsome notes" in result.content


async def test_progress_notifications_keep_a_slow_call_alive_past_its_idle_limit(runtime: Runtime) -> None:
    # 4 steps of 1.2 s: 4.8 s in all, longer than idle_s (2 s) but never idle that long.
    result = await runtime.call("remote_progress", {"steps": 4, "delay": 1.2})
    assert result.status is Status.ok, result.content
    assert result.content == "done after 4 steps"


def test_one_session_serves_turns_on_fresh_event_loops(runtime: Runtime) -> None:
    first = runtime.run_turn_sync([Call("c1", "remote_echo", {"text": "one"})])[0]
    second = runtime.run_turn_sync([Call("c2", "remote_echo", {"text": "two"})])[0]
    assert (first.content, second.content) == ("one", "two")


def test_mcp_calls_are_in_the_audit_trail(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "config", server_doc(include=[]), mcp_tool("remote_echo", "fx/echo", TEXT, read_only=True), ALLOW_ALL
    )
    audit = tmp_path / "audit.jsonl"
    rt = Runtime(
        [config], settings=Settings(audit_sink="jsonl", audit_store=audit), workspace_root=tmp_path, watch=False
    )
    try:
        result = rt.run_turn_sync([Call("call-audited", "remote_echo", {"text": "for the record"})])[0]
    finally:
        rt.close_sync()
    assert result.status is Status.ok
    records = [json.loads(line) for line in audit.read_text().splitlines() if line.strip()]
    record = next(r for r in records if r.get("call_id") == "call-audited")
    assert record["tool"] == "remote_echo" and record["status"] == "ok"
