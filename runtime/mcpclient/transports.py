"""Opening the SDK transport an McpServer document declares (imported lazily: the
``mcp`` extra is optional).

stdio: the declared ``command`` runs in a new process group (the SDK kills the whole
tree on shutdown) with the SDK's small default environment plus the declared ``env``.
http: the SDK's streamable-HTTP client over an HTTP client carrying the declared
``headers``; its read timeout is off because every call is bounded by our own timers.
Its TLS context (:func:`tls_context`) is built once per declared server and lent to
every connection: building one loads the trust store, which is too slow to repeat at
each (re)connect, and a shared context verifies exactly as a fresh one would.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, TextIO

from runtime.config.models import McpServerSpec, McpTransport

INSTALL_HINT = "pip install 'toolrt[mcp]'"


def sdk_available() -> bool:
    """Whether the MCP SDK is installed (and not blocked, e.g. ``sys.modules["mcp"] = None``)."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError, AttributeError):
        return False


def tls_context() -> ssl.SSLContext:
    """The TLS context of an HTTP server's connections: the one the HTTP client would
    build for each of them by default (the system trust store, or ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR`` when set; certificates and host names verified)."""
    import httpx2

    return httpx2.create_ssl_context()


@asynccontextmanager
async def open_transport(
    spec: McpServerSpec, ended: asyncio.Event, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of a connection to the server; ``ended`` is set when
    the read side ends (the process exited or the connection dropped). An HTTP
    connection uses ``tls`` (see :func:`tls_context`), or builds its own without one."""
    async with AsyncExitStack() as stack:
        if spec.transport is McpTransport.stdio:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command = spec.command or []
            params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(spec.env) or None)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=stack.enter_context(_errlog())))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            client = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(spec.headers),
                    timeout=httpx2.Timeout(spec.connect_timeout_s, read=None),
                    verify=tls if tls is not None else True,
                )
            )
            read, write = await stack.enter_async_context(streamable_http_client(spec.url or "", http_client=client))
        yield _WatchedStream(read, ended), write


def _errlog() -> contextlib.AbstractContextManager[TextIO]:
    """Where a stdio server's stderr goes: ours when it is a real file (server logs
    belong with the app's), else nowhere (a process needs a file descriptor)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return open(os.devnull, "w")  # noqa: SIM115 - closed by the caller's exit stack
    return contextlib.nullcontext(sys.stderr)  # lent, not closed


class _WatchedStream:
    """The transport's read stream, marking ``ended`` when the session's receive loop
    leaves it: that is the moment the server is gone, even if no call is waiting."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    async def receive(self) -> Any:
        return await self._inner.receive()

    async def aclose(self) -> None:
        self._ended.set()
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._ended.set()
            raise

    async def __aenter__(self) -> _WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._ended.set()
        result: bool | None = await self._inner.__aexit__(exc_type, exc, tb)
        return result

    def __getattr__(self, name: str) -> Any:
        # e.g. ``last_context``, which the SDK's dispatcher reads when the stream has it
        return getattr(self._inner, name)
