"""Config folders with McpServer documents pointing at the fixture server, and that
server run over streamable HTTP. Timeouts are generous: a server process needs a few
seconds to start on a slow machine."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FIXTURE_SERVER = Path(__file__).with_name("fixture_server.py")
SERVER_COMMAND = [sys.executable, str(FIXTURE_SERVER)]
CONNECT_S = 60.0

NATIVE_HANDLERS = """
def hello(args):
    return "hello from a native tool"
"""


def doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "toolrt/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def server_doc(name: str = "fx", **spec: Any) -> dict[str, Any]:
    """An McpServer running the fixture server over stdio (unless ``spec`` says otherwise)."""
    base: dict[str, Any] = {"transport": "stdio", "command": SERVER_COMMAND, "connect_timeout_s": CONNECT_S}
    return doc("McpServer", name, {**base, **spec})


def mcp_tool(name: str, target: str, schema: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A declared Tool with handler ``mcp:<target>``."""
    body = {
        "description": f"The {name} tool.",
        "handler": f"mcp:{target}",
        "input_schema": schema or {"type": "object", "properties": {}},
        **spec,
    }
    return doc("Tool", name, body)


ALLOW_ALL = doc("Policy", "test-policy", {"rules": [{"name": "allow-everything", "effect": "allow", "tools": ["*"]}]})


def write_config(folder: Path, *documents: dict[str, Any], native: bool = False) -> Path:
    """``documents`` as config.yaml in ``folder`` (JSON is YAML), plus a python
    handler module for a native tool if asked."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text("\n---\n".join(json.dumps(d) for d in documents), encoding="utf-8")
    if native:
        module = f"native_{folder.parent.name.replace('-', '_')}"
        (folder / f"{module}.py").write_text(NATIVE_HANDLERS, encoding="utf-8")
    return folder


def native_tool(folder: Path) -> dict[str, Any]:
    module = f"native_{folder.parent.name.replace('-', '_')}"
    return doc("Tool", "hello", {"description": "Say hello.", "handler": f"python:{module}:hello", "read_only": True})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_server(*options: str, port: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """The fixture server over streamable HTTP on 127.0.0.1 (on ``port``, or a free one),
    once it accepts connections: its process and port."""
    port = port or free_port()
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--http", str(port), *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + CONNECT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_server(process)
                raise RuntimeError("the fixture HTTP server did not start") from None
            time.sleep(0.1)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def http_server(*options: str, scheme: str = "http") -> Iterator[str]:
    """The fixture server over streamable HTTP on 127.0.0.1 (``options``: its own, e.g.
    ``--ignore-close``, or ``--tls CERT KEY`` with ``scheme="https"``)."""
    process, port = start_http_server(*options)
    try:
        yield f"{scheme}://127.0.0.1:{port}/mcp"
    finally:
        stop_server(process)


class SharedHttpServer:
    """One plain fixture server over HTTP for the tests of a test process that only list
    and call its tools (each server process costs about a second of CPU, mostly importing
    the SDK). Started when first asked for; started again, on the same port, when it is
    no longer running, so a URL handed out earlier reaches a live server again."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None

    def url(self) -> str:
        """The URL of a running server."""
        if self._process is None or self._process.poll() is not None:
            try:
                self._process, self._port = start_http_server(port=self._port)
            except RuntimeError:  # the old port was taken meanwhile: a new one
                self._process, self._port = start_http_server()
        return f"http://127.0.0.1:{self._port}/mcp"

    def close(self) -> None:
        if self._process is not None:
            stop_server(self._process)
            self._process = None
