"""https from an http tool: certificates are verified on every call, with the one TLS
context the process shares (built once, not per call), against a real local TLS server
whose certificate no authority signed."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.records import Status
from runtime.settings import Settings

pytest.importorskip("httpx")


class _Handler(BaseHTTPRequestHandler):
    served: list[str] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet server
        return

    def do_GET(self) -> None:  # noqa: N802 - the http.server naming
        type(self).served.append(self.path)
        body = b'{"secret": "served"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[str]:
    """A local https server with a self-signed certificate for 127.0.0.1."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    _Handler.served = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.daemon_threads = True
    httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # refused handshakes
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _runtime(tmp_path: Path, url: str) -> Runtime:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: fetch}\nspec:\n  description: Reads a page.\n"
        f'  handler: {{http: {{url: "{url}", allow_networks: [127.0.0.0/8]}}}}\n'
        "  read_only: true\n  input_schema: {type: object}\n"
    )
    (config / "policy.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: allow-all}\n"
        "spec: {rules: [{name: all, effect: allow, tools: ['*']}]}\n"
    )
    (tmp_path / "ws").mkdir()
    return Runtime(
        [config], workspace_root=tmp_path / "ws", settings=Settings(state_dir=tmp_path / "state", audit_sink="off")
    )


async def test_a_certificate_no_authority_signed_is_refused_on_every_call(tls_server: str, tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, f"https://{tls_server}/page")
    try:
        for _ in range(3):  # the shared context must not remember anything that lets a later call through
            result = await runtime.call("fetch", {})
            assert result.status is Status.error, result.content
            assert "served" not in str(result.content)
            assert "certificate" in str(result.content).lower(), result.content
    finally:
        await runtime.close()
    assert _Handler.served == []  # no request got past the handshake


def test_the_shared_tls_context_requires_and_checks_certificates() -> None:
    from runtime.http import client

    assert client._tls_context() is client._tls_context()  # one per process
    assert client._tls_context().verify_mode is ssl.CERT_REQUIRED
    assert client._tls_context().check_hostname is True
