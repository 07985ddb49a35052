"""Running a real ``toolrt serve`` and talking to it with the official MCP client."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).resolve().parent / "config"
# Generous: a loaded 2-core machine starts the server in seconds, not milliseconds.
TIMEOUT_S = 90.0
_URL = re.compile(r"MCP over streamable HTTP at (http://\S+)")

EXTRA_TOOL = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: added_later}
spec:
  description: A tool that appears while the server runs.
  handler: builtin:tool_search
  read_only: true
"""


def serve_argv(config: Path, workspace: Path, *extra: str) -> list[str]:
    """``toolrt serve`` as the outside world runs it (the module form of the console script)."""
    return [
        sys.executable,
        "-m",
        "runtime.cli",
        "serve",
        "--config",
        str(config),
        "--workspace",
        str(workspace),
        *extra,
    ]


def copy_config(tmp_path: Path) -> Path:
    """The test config in a folder the test may edit."""
    return Path(shutil.copytree(CONFIG, tmp_path / "config", ignore=shutil.ignore_patterns("__pycache__")))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def answering(action: str, content: dict[str, Any] | None = None) -> Any:
    """An elicitation callback that gives ``action`` (and records the questions asked)."""
    asked: list[str] = []

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


class Notifications:
    """A message handler that remembers the notifications the client received."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.tools_changed = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        self.received.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed.set()


class StreamsOpened(logging.Handler):
    """Counts the standalone GET streams the official HTTP client opens (it logs each one),
    while used as a context manager."""

    _LOGGER = "mcp.client.streamable_http"

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.opened = 0
        self._level = logging.NOTSET

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "GET SSE connection established":
            self.opened += 1

    async def reach(self, count: int) -> None:
        while self.opened < count:
            await asyncio.sleep(0.05)

    def __enter__(self) -> StreamsOpened:
        client_logger = logging.getLogger(self._LOGGER)
        self._level = client_logger.level
        client_logger.setLevel(logging.DEBUG)
        client_logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        client_logger = logging.getLogger(self._LOGGER)
        client_logger.removeHandler(self)
        client_logger.setLevel(self._level)


@asynccontextmanager
async def stdio_session(
    workspace: Path,
    *,
    config: Path = CONFIG,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    **client: Any,
) -> AsyncIterator[ClientSession]:
    """An initialized client session with a ``toolrt serve`` child on stdio (``env``: extra variables)."""
    argv = serve_argv(config, workspace, *extra)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **(env or {})}, cwd=str(REPO))
    with open(workspace / "serve.stderr", "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=TIMEOUT_S, **client) as session,
        ):
            await session.initialize()
            yield session


@contextmanager
def http_server(
    workspace: Path, *, config: Path = CONFIG, extra: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A ``toolrt serve --transport http --port 0`` child: its URL (from stderr) and process
    (``env``: extra variables)."""
    stderr_path = workspace / "serve.stderr"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            serve_argv(config, workspace, "--transport", "http", "--port", "0", *extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
    try:
        yield wait_for_url(process, stderr_path), process
    finally:
        stop(process)


class SharedHttpServe:
    """One ``toolrt serve --transport http`` child over the test config for the tests of a
    test process that leave nothing behind on it (each opens its own session, none grants
    for the session, edits the config or stops the server): each child costs over a second
    of CPU, mostly importing the SDK. Started when first asked for; started again, on the
    same port, when it is no longer running."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._process: subprocess.Popen[bytes] | None = None
        self._url: str | None = None

    def url(self) -> str:
        """The URL of a running server."""
        if self._process is None or self._process.poll() is not None:
            port = self._url.rsplit(":", 1)[1].split("/")[0] if self._url else "0"
            try:
                self._process, self._url = self._start(port)
            except AssertionError:  # the old port was taken meanwhile: a new one
                self._process, self._url = self._start("0")
        assert self._url is not None
        return self._url

    def _start(self, port: str) -> tuple[subprocess.Popen[bytes], str]:
        stderr_path = self._workspace / "serve.stderr"
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                serve_argv(CONFIG, self._workspace, "--transport", "http", "--port", port),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=REPO,
            )
        try:
            return process, wait_for_url(process, stderr_path)
        except BaseException:
            stop(process)
            raise

    def close(self) -> None:
        if self._process is not None:
            stop(self._process)
            self._process = None


def wait_for_url(process: subprocess.Popen[bytes], stderr_path: Path) -> str:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        found = _URL.search(stderr_path.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            raise AssertionError(f"toolrt serve exited with {process.returncode}:\n{stderr_path.read_text()}")
        time.sleep(0.05)
    raise AssertionError(f"toolrt serve did not start listening:\n{stderr_path.read_text()}")


async def wait_for_text(path: Path, text: str) -> None:
    """Wait (up to ``TIMEOUT_S``) until the file at ``path`` contains ``text``."""
    deadline = time.monotonic() + TIMEOUT_S
    while text not in (path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} never said {text!r}")
        await asyncio.sleep(0.05)


def stop(process: subprocess.Popen[Any]) -> int:
    """SIGTERM, then the exit code (killed after the timeout, which fails the caller's check)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every HTTP client the tests open. httpx builds one for each
    client it makes (about 40 ms of CPU: it reads the CA bundle), though these clients
    speak plain HTTP to loopback only; each client still opens connections of its own."""
    return ssl.create_default_context()


def http_client(**options: Any) -> httpx2.AsyncClient:
    """An HTTP client as the MCP SDK makes one (its default timeouts, unless ``options``
    say otherwise), with the shared :func:`tls_context`."""
    options.setdefault("timeout", httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
    return httpx2.AsyncClient(verify=tls_context(), **options)


@asynccontextmanager
async def http_session(url: str, **client: Any) -> AsyncIterator[ClientSession]:
    """An initialized client session over streamable HTTP (a client connection of its own)."""
    async with (
        http_client() as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, read_timeout_seconds=TIMEOUT_S, **client) as session,
    ):
        await session.initialize()
        yield session


class Held:
    """An async context manager (a client with its server child) held open in a task of
    its own, so that a module-scoped fixture can share one server among tests.

    anyio's cancel scopes (inside the MCP client) must be left by the task that entered
    them, and pytest-asyncio runs a fixture's setup and teardown in different tasks: a
    task of its own enters the context, waits until :meth:`close`, and leaves it."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._opened: asyncio.Future[Any] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> Any:
        self._opened = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold())
        done, _ = await asyncio.wait({self._opened, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if self._opened in done:
            return self._opened.result()
        self._task.result()  # raises what opening raised
        raise RuntimeError("the held context ended before it opened")

    async def _hold(self) -> None:
        async with self._context as value:
            assert self._opened is not None
            self._opened.set_result(value)
            await self._stop.wait()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


class AnswerSwitch:
    """An elicitation callback for a shared client: each test sets :attr:`current`."""

    def __init__(self) -> None:
        self.current: Any = None

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert self.current is not None, "no answer set for this test"
        return await self.current(context, params)  # type: ignore[no-any-return]
