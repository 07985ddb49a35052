"""``toolrt serve --transport http --metrics`` serves the Prometheus metrics at /metrics
behind the same checks as /mcp; ``toolrt serve`` finds its config in TOOLRT_CONFIG_DIR."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import httpx
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcpserver_support import CONFIG, REPO, TIMEOUT_S, http_server, http_session, text_of, tls_context

from runtime.cli import main


async def test_metrics_are_served_at_slash_metrics_when_asked_for(tmp_path: Path) -> None:
    with http_server(tmp_path, extra=("--metrics",)) as (url, _process):
        async with http_session(url) as session:
            result = await session.call_tool("lookup_city", {"city": "Oslo"})
            assert result.is_error is False
            await session.call_tool("no_such_tool_" + "x" * 40, {})
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(timeout=TIMEOUT_S, verify=tls_context()) as client:
            answer = await client.get(f"{base}/metrics")
            bad_host = await client.get(f"{base}/metrics", headers={"host": "evil.example"})
            posted = await client.post(f"{base}/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert 'toolrt_calls_total{tool="lookup_city",status="ok"} 1' in answer.text
    assert 'toolrt_calls_total{tool="(unknown)",status="invalid"} 1' in answer.text
    assert 'toolrt_tool_call_duration_seconds_bucket{tool="lookup_city",le="+Inf"} 1' in answer.text
    assert bad_host.status_code in (400, 403, 421)
    assert posted.status_code == 405


async def test_metrics_need_the_token_when_the_server_has_one(tmp_path: Path) -> None:
    with http_server(tmp_path, extra=("--metrics", "--token", "s3cret-token-for-tests")) as (url, _process):
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(timeout=TIMEOUT_S, verify=tls_context()) as client:
            refused = await client.get(f"{base}/metrics")
            allowed = await client.get(f"{base}/metrics", headers={"authorization": "Bearer s3cret-token-for-tests"})
    assert refused.status_code == 401
    assert allowed.status_code == 200 and "toolrt_calls_total" in allowed.text


async def test_without_the_flag_there_is_no_metrics_endpoint(shared_url: str) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT_S, verify=tls_context()) as client:
        answer = await client.get(shared_url.removesuffix("/mcp") + "/metrics")
    assert answer.status_code != 200 or "toolrt_calls_total" not in answer.text


async def test_serve_reads_its_config_from_toolrt_config_dir(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "runtime.cli", "serve", "--workspace", str(tmp_path)]
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env={**os.environ, "TOOLRT_CONFIG_DIR": str(CONFIG)}, cwd=str(REPO)
    )
    with open(tmp_path / "serve.stderr", "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=TIMEOUT_S) as session,
        ):
            await session.initialize()
            result = await session.call_tool("lookup_city", {"city": "Oslo"})
    assert result.is_error is False and "Oslo" in text_of(result)


def test_serve_without_config_or_toolrt_config_dir_says_what_to_give(monkeypatch) -> None:
    monkeypatch.delenv("TOOLRT_CONFIG_DIR", raising=False)
    err = io.StringIO()
    assert main(["serve"], stderr=err) == 2
    assert "--config" in err.getvalue() and "TOOLRT_CONFIG_DIR" in err.getvalue()


def test_serve_with_a_toolrt_config_dir_that_does_not_exist_is_a_usage_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLRT_CONFIG_DIR", str(tmp_path / "missing"))
    err = io.StringIO()
    assert main(["serve"], stderr=err) == 2
    assert "missing" in err.getvalue()
