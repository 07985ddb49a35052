"""Why an MCP call got no usable answer, grouped by what the caller can conclude.

::

    McpFailure
     +-- Unavailable   the request was never sent: no session (not installed, cannot
     |                 start, handshake too slow, backing off after failures, closed)
     +-- Lost          the request was sent and the connection ended before the answer
     +-- TimedOut      the request was sent and no answer came in time
     +-- Refused       the server answered, but with a protocol error or a malformed result

Only :mod:`runtime.mcpclient.connection` translates the SDK's exceptions into these;
:mod:`runtime.mcpclient.calls` turns them into outcomes.
"""

from __future__ import annotations


class McpFailure(Exception):
    """A call or listing that ended without a usable answer. ``message`` completes
    the sentence "MCP server `name` ..."."""

    sent = True  # the request may have reached the server (and taken effect)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unavailable(McpFailure):
    """No session to send the request on; nothing reached the server."""

    sent = False


class Lost(McpFailure):
    """The connection ended (process exited, connection dropped) while the request was out."""


class TimedOut(McpFailure):
    """No answer in time; ``limit`` is ``total`` or ``idle`` (no progress), ``seconds`` its length."""

    def __init__(self, message: str, *, limit: str, seconds: float) -> None:
        super().__init__(message)
        self.limit = limit
        self.seconds = seconds


class Refused(McpFailure):
    """The server answered with a JSON-RPC error or a result that breaks the protocol."""
