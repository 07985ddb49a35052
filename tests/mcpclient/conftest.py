"""Fixtures of the MCP client tests: they need the MCP SDK (the ``mcp`` extra)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("mcp")

from mcp_support import http_server  # noqa: E402 - only once the SDK is known to be there


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The URL of the fixture server running over streamable HTTP on 127.0.0.1."""
    with http_server() as url:
        yield url
