"""``outputSchema`` over MCP, read by the official client (which checks every successful
result against the schema it was listed with): a tool's declared ``output_schema`` is
listed, matching results carry ``structuredContent``, and a result whose data was
withheld, cut or changed by redaction arrives as an error, never as a success the
client would reject."""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcpserver_support import stdio_session, text_of

from runtime.mcpserver.server import ToolServer
from runtime.runtime import Runtime
from runtime.settings import Settings

AWS = "AKIAIOSFODNN7EXAMPLE"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "key": {"type": "string", "pattern": "^AKIA[A-Z0-9]{16}$"}},
    "required": ["name"],
}


def _runtime(tmp_path: Path) -> Runtime:
    module = f"toolrt_out_{uuid.uuid4().hex[:10]}"
    config = tmp_path / "config"
    config.mkdir()
    (config / f"{module}.py").write_text(
        textwrap.dedent(
            f"""
            AWS = "{AWS}"

            def give(args):
                what = args["what"]
                if what == "ok":
                    return {{"name": "web"}}
                if what == "big":
                    return {{"name": "x" * 50_000}}
                if what == "key":
                    return {{"name": "web", "key": AWS}}
                if what == "bad":
                    return {{"name": 5}}
                return "plain text"
            """
        ),
        encoding="utf-8",
    )
    tool = {
        "description": "Returns an object, or not.",
        "handler": f"python:{module}:give",
        "read_only": True,
        "input_schema": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
        "output_schema": SCHEMA,
        "output": {"max_chars": 2000},
    }
    plain = {key: value for key, value in tool.items() if key != "output_schema"}
    (config / "tools.yaml").write_text(
        json.dumps({"apiVersion": "toolrt/v1", "kind": "Tool", "metadata": {"name": "service"}, "spec": tool})
        + "\n---\n"
        + json.dumps({"apiVersion": "toolrt/v1", "kind": "Tool", "metadata": {"name": "free"}, "spec": plain})
        + "\n",
        encoding="utf-8",
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Runtime([config], workspace_root=workspace, settings=Settings(state_dir=tmp_path / "state"), watch=False)


@asynccontextmanager
async def connected(tmp_path: Path) -> AsyncIterator[Any]:
    """The official client, in-process, on a ToolServer over the test config."""
    runtime = _runtime(tmp_path)
    try:
        async with Client(ToolServer(runtime, stdio=True).server) as client:
            yield client
    finally:
        await runtime.close()


async def test_a_declared_output_schema_is_listed_as_output_schema(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["service"].output_schema == SCHEMA
    assert tools["free"].output_schema is None


async def test_a_matching_result_carries_its_structured_content(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool("service", {"what": "ok"})
    assert result.is_error is False
    assert result.structured_content == {"name": "web"}


@pytest.mark.parametrize("what", ["bad", "text"])
async def test_a_result_that_breaks_the_schema_is_an_error(tmp_path: Path, what: str) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool("service", {"what": what})
    assert result.is_error is True
    assert result.structured_content is None
    assert "output_schema" in text_of(result)


async def test_a_result_cut_by_the_output_limit_is_an_error_that_keeps_the_text(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool("service", {"what": "big"})
    assert result.is_error is True
    assert "structured result is not sent" in text_of(result)
    assert "output limit" in text_of(result)
    assert "xxxx" in text_of(result)


async def test_a_redaction_that_breaks_the_schema_is_an_error_and_the_secret_stays_out(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool("service", {"what": "key"})
    assert result.is_error is True
    assert AWS not in text_of(result)
    assert AWS not in repr(result.structured_content)
    assert "structured result is not sent" in text_of(result)


async def test_a_tool_without_output_schema_is_unchanged(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool("free", {"what": "text"})
    assert result.is_error is False and text_of(result) == "plain text"


async def test_toolrt_serve_lists_and_honours_the_output_schema_over_stdio(tmp_path: Path) -> None:
    async with stdio_session(tmp_path) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        result = await session.call_tool("lookup_city", {"city": "Oslo"})
    assert listed["lookup_city"].output_schema["required"] == ["city", "temp_c", "sunny"]
    assert result.is_error is False
    assert result.structured_content == {"city": "Oslo", "temp_c": 21, "sunny": True}
