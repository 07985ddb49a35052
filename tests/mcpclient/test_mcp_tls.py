"""An McpServer over HTTPS: one TLS context per declared server, lent to every
connection (building one loads the trust store), and verification exactly as strict as
the HTTP client's own default: an untrusted certificate and one for another host are
refused. The fixture server over real TLS, certificates made for the test."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cryptography")

from mcp_support import http_server  # noqa: E402 - after the skip
from tls_support import Certs, make_certs  # noqa: E402

from runtime.config.models import McpServerSpec  # noqa: E402
from runtime.mcpclient.errors import TimedOut, Unavailable  # noqa: E402
from runtime.mcpclient.pool import McpPool  # noqa: E402


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def handshakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ssl.SSLContext]]:
    """The context of every client-side TLS handshake made meanwhile (the real one runs)."""
    seen: list[ssl.SSLContext] = []
    real = ssl.SSLContext.wrap_bio

    def wrap_bio(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        if not kwargs.get("server_side", False):
            seen.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "wrap_bio", wrap_bio)
    yield seen


def spec(url: str) -> McpServerSpec:
    return McpServerSpec(transport="http", url=url, connect_timeout_s=30, call_timeout_s=30)


@contextmanager
def https_pool(cert: tuple[Path, Path]) -> Iterator[tuple[McpPool, str]]:
    """A pool, and the URL of the fixture server serving HTTPS with ``cert``; the pool is
    closed while the server still runs."""
    with http_server("--tls", *map(str, cert), scheme="https") as url:
        pool = McpPool()
        try:
            yield pool, url
        finally:
            pool.close()


def test_two_connections_to_one_https_server_share_one_tls_context(
    certs: Certs, handshakes: list[ssl.SSLContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))  # the test CA, trusted the standard way
    with https_pool(certs.signed) as (pool, url):
        server = spec(url)
        listed = pool.list_tools({"web": server})["web"]
        assert isinstance(listed, list) and "echo" in {tool.name for tool in listed}
        first = len(handshakes)
        assert first >= 1

        async def restart_and_call() -> Any:
            # A call that times out retires the session; the next call starts a new one.
            with pytest.raises(TimedOut):
                await pool.call_tool("web", server, "hang", {}, total_s=0.5)
            return await pool.call_tool("web", server, "echo", {"text": "again"}, total_s=30)

        result = asyncio.run(restart_and_call())
        assert result.content[0].text == "again"
        assert len(handshakes) > first  # the new session made connections of its own
        assert len({id(context) for context in handshakes}) == 1
        assert handshakes[0].verify_mode is ssl.CERT_REQUIRED and handshakes[0].check_hostname


def refusal(pool: McpPool, url: str) -> str:
    failure = pool.list_tools({"web": spec(url)})["web"]
    assert isinstance(failure, Unavailable), failure
    return failure.message.lower()


def test_a_certificate_nobody_trusts_is_refused(certs: Certs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))  # trusted: the CA, not the self-signed certificate
    with https_pool(certs.self_signed) as (pool, url):
        assert "certificate verify failed" in refusal(pool, url)


def test_a_certificate_for_another_host_is_refused(certs: Certs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
    with https_pool(certs.signed) as (pool, url):
        other = url.replace("127.0.0.1", "localhost")  # the certificate names 127.0.0.1 only
        assert "certificate verify failed" in refusal(pool, other)


def test_without_its_ca_in_the_trust_store_a_signed_certificate_is_refused(
    certs: Certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.self_signed[0]))  # trusts another certificate only
    with https_pool(certs.signed) as (pool, url):
        assert "certificate verify failed" in refusal(pool, url)
