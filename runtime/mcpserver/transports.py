"""Running a :class:`ToolServer` on stdio or streamable HTTP until told to stop.

Neither transport installs signal handlers or configures logging: the caller (the
``toolrt serve`` command) turns SIGINT/SIGTERM into the ``stop`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

import anyio
import uvicorn
from mcp.server.stdio import stdio_server

from runtime.mcpserver.httpguard import HttpGuard, HttpLimits, security_settings
from runtime.mcpserver.server import ToolServer
from runtime.runtime import Runtime

MCP_PATH = "/mcp"
_GRACEFUL_S = 3  # open SSE streams are closed after this long at shutdown
_WILDCARDS = ("", "0.0.0.0", "::", "[::]")  # every interface: no one name the clients use


class _StdinLines:
    """The lines read from ``fd`` (a private duplicate of stdin's descriptor, closed at
    its end) by a daemon thread.

    Not the SDK's own reader: its blocking read in a worker thread cannot be
    cancelled, so a stop request would wait for the client's next message, and the
    thread would keep the process alive. A daemon thread does neither, and reading
    with ``os.read`` (no buffered file object, whose lock the interpreter needs at exit)
    lets the process end while the thread still waits.
    """

    def __init__(self, fd: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(
            target=self._read, args=(fd,), name="toolrt-mcp-stdin", daemon=True
        ).start()  # the thread owns fd

    def _read(self, fd: int) -> None:
        pending = bytearray()
        try:
            while chunk := os.read(fd, 65536):
                pending += chunk
                while (end := pending.find(b"\n")) >= 0:
                    self._put(pending[: end + 1].decode("utf-8", errors="replace"))
                    del pending[: end + 1]
            if pending:
                self._put(pending.decode("utf-8", errors="replace"))
        except OSError:
            pass  # stdin closed under us: the same as its end
        finally:
            os.close(fd)
            self._put(None)

    def _put(self, line: str | None) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
        except RuntimeError:
            pass  # the loop is gone: nobody is reading any more

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await self._queue.get()
        if line is None:
            raise StopAsyncIteration
        return line


async def serve_stdio(tools: ToolServer, stop: asyncio.Event) -> None:
    """Serve one client on this process's stdin and stdout until stdin ends or ``stop`` is set.

    While serving, only the transport touches the wire: the SDK points file descriptor
    1 at stderr (stray prints of handlers miss the wire) and descriptor 0 reads from the
    null device here (a handler reading stdin cannot eat protocol messages)."""
    with _stdin_diverted() as wire:
        await _serve_stdio(tools, stop, _StdinLines(wire))


async def _serve_stdio(tools: ToolServer, stop: asyncio.Event, lines: _StdinLines) -> None:
    # The transport runs inside the group's scope, so that a stop cancels its reader and
    # writer tasks too (left alone, the reader would wait for the client's next line).
    async with anyio.create_task_group() as group:

        async def wait_for_stop() -> None:
            await stop.wait()
            group.cancel_scope.cancel()

        group.start_soon(wait_for_stop)
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            await tools.server.run(read_stream, write_stream, tools.server.create_initialization_options())
        group.cancel_scope.cancel()  # stdin ended: the client is gone


async def serve_http(
    tools: ToolServer,
    stop: asyncio.Event,
    *,
    host: str,
    port: int,
    limits: HttpLimits | None = None,
    on_ready: Callable[[str], None] | None = None,
    metrics: Callable[[], str] | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until ``stop`` is set; with
    ``metrics`` (a function giving the Prometheus text exposition), also ``/metrics``.

    The socket is bound before anything else, so a port in use raises ``OSError``
    here. ``on_ready`` gets the endpoint's URL (with the real port when ``port`` is 0)
    once requests are accepted. Every request's Host and Origin must name loopback,
    ``host`` or one of ``limits.allowed_hosts`` (DNS rebinding protection); with
    ``limits.token`` every request must carry it as a bearer token; sessions expire and
    are capped as :class:`HttpLimits` says (see :mod:`runtime.mcpserver.httpguard`).
    A ``host`` other machines can reach is refused (``ValueError``) without a token."""
    limits = limits or HttpLimits()
    check_exposure(host, limits)
    names = limits.allowed_hosts if is_loopback(host) or host in _WILDCARDS else (host, *limits.allowed_hosts)
    security = security_settings(tuple(names))
    with _bound(host, port) as sock:
        app = tools.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            host=host,
            transport_security=security,
            # The guard ends idle sessions first; the SDK's own limits are the backstop.
            session_idle_timeout=limits.idle_s * 2,
            max_sessions=limits.max_sessions,
        )
        inner = app if metrics is None else _with_metrics(app, metrics)
        guard = HttpGuard(inner, path=MCP_PATH, limits=limits, security=security, on_session_end=tools.end_http_session)
        # log_config=None: the application, not the library, decides where logs go.
        config = uvicorn.Config(guard, log_config=None, lifespan="on", timeout_graceful_shutdown=_GRACEFUL_S)
        server = _QuietServer(config)
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        stopping = asyncio.create_task(stop.wait())
        sweeping = asyncio.create_task(guard.sweep())
        try:
            while not server.started and not serving.done():
                await asyncio.sleep(0.02)
            if server.started and on_ready is not None:
                on_ready(_url(host, sock.getsockname()[1]))
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            server.should_exit = True
            stopping.cancel()
            sweeping.cancel()
            try:
                await serving
            except SystemExit as exit_:  # uvicorn exits the process on a failed start; we report it instead
                raise OSError(
                    f"the MCP HTTP server could not start on {host}:{port} (exit code {exit_.code})"
                ) from None


METRICS_PATH = "/metrics"


def _with_metrics(app: Any, render: Callable[[], str]) -> Any:
    """``app``, answering ``GET /metrics`` with ``render()`` as Prometheus text format
    0.0.4. It sits inside the guard: the same Host/Origin checks and token apply."""

    async def serve(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != METRICS_PATH:
            await app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            headers = [(b"allow", b"GET, HEAD"), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        body = render().encode("utf-8")
        headers = [
            (b"content-type", b"text/plain; version=0.0.4; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body if scope.get("method") == "GET" else b""})

    return serve


def check_exposure(host: str, limits: HttpLimits) -> None:
    """``ValueError`` (saying what to do) when serving on ``host`` with ``limits`` would be unsafe:
    a host other machines can reach without a token, or every interface without the
    names clients will use (their Host header would be refused)."""
    if is_loopback(host):
        return
    if limits.token is None:
        raise ValueError(
            f"host {host} can be reached from other machines, so requests must carry a token: set one "
            "(toolrt serve: TOOLRT_SERVE_TOKEN or --token); clients send it as `Authorization: Bearer <token>`"
        )
    if host in _WILDCARDS and not limits.allowed_hosts:
        raise ValueError(
            f"host {host or '(empty)'} listens on every interface: name the host names clients use to reach it "
            "(toolrt serve: --allow-host NAME); requests whose Host header names anything else are refused"
        )


@contextlib.contextmanager
def _stdin_diverted() -> Iterator[int]:
    """A private duplicate of stdin's descriptor, while descriptor 0 reads from the null
    device; descriptor 0 is restored afterwards."""
    stdin = sys.stdin.fileno()
    wire, saved = os.dup(stdin), os.dup(stdin)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, stdin)
    finally:
        os.close(null)
    try:
        yield wire
    finally:
        os.dup2(saved, stdin)
        os.close(saved)


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: stopping is the caller's ``stop`` event."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.contextmanager
def _bound(host: str, port: int) -> Iterator[socket.socket]:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
        yield sock
    finally:
        sock.close()


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


def is_loopback(host: str) -> bool:
    """True for the hosts that only this machine can reach (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


async def serve(
    runtime: Runtime,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    watch: bool = True,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
    limits: HttpLimits | None = None,
    metrics: bool = False,
) -> None:
    """Serve ``runtime``'s tools on ``transport`` (``stdio`` or ``http``) until the client
    goes (stdio) or ``stop`` is set. ``limits``: the HTTP server's token, session expiry
    and cap, and allowed host names (see :class:`HttpLimits`). ``metrics``: HTTP also
    serves the runtime's Prometheus metrics at ``/metrics``.

    With ``watch``, config edits are hot-reloaded and the clients are told when the tool
    list changes (build the runtime with ``watch=False``: this starts the watcher). The
    runtime is not closed here: its owner closes it (``Runtime.close``) afterwards."""
    if transport not in ("stdio", "http"):
        raise ValueError(f"unknown MCP transport {transport!r}; use stdio or http")
    if transport == "http":
        check_exposure(host, limits or HttpLimits())  # before anything starts
    stop = stop or asyncio.Event()
    tools = ToolServer(runtime, stdio=transport == "stdio")
    if watch:
        tools.watch()
    if transport == "stdio":
        await serve_stdio(tools, stop)
    else:
        await serve_http(
            tools,
            stop,
            host=host,
            port=port,
            limits=limits,
            on_ready=on_ready,
            metrics=runtime.metrics.prometheus if metrics else None,
        )
