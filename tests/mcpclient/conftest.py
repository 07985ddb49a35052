"""Fixtures of the MCP client tests: they need the MCP SDK (the ``mcp`` extra)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("mcp")

from mcp_support import SharedHttpServer  # noqa: E402 - only once the SDK is known to be there


@pytest.fixture(scope="session")
def shared_http_server() -> Iterator[SharedHttpServer]:
    """The fixture server over HTTP, one per test process for every module that only lists
    and calls its tools (tests that stop it or make it misbehave start their own)."""
    server = SharedHttpServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def http_url(shared_http_server: SharedHttpServer) -> str:
    """The URL of the shared fixture server over streamable HTTP on 127.0.0.1, running
    when the module's first test asks for it (started again if an earlier test stopped it)."""
    return shared_http_server.url()
