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


@contextmanager
def http_server(*options: str, scheme: str = "http") -> Iterator[str]:
    """The fixture server over streamable HTTP on 127.0.0.1 (``options``: its own, e.g.
    ``--ignore-close``, or ``--tls CERT KEY`` with ``scheme="https"``)."""
    port = free_port()
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--http", str(port), *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + CONNECT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the fixture HTTP server did not start") from None
                time.sleep(0.1)
        yield f"{scheme}://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
