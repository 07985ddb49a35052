"""External MCP servers' tools as toolrt tools.

- :mod:`.pool`: :class:`McpPool`, one live session per declared server, run on the
  pool's own event-loop thread so that sessions outlive the loops turns run on;
- :mod:`.connection`: one server's session: owner task, timeouts, restart with backoff;
- :mod:`.transports`: stdio and streamable-HTTP, as the McpServer document declares;
- :mod:`.calls`: stage 05 for ``mcp:<server>/<tool>`` handlers;
- :mod:`.results`: ``CallToolResult`` -> HandlerOutcome;
- :mod:`.mount`: a server's listed tools -> Tool documents of the snapshot build.

The MCP SDK is imported only when a session starts: without the ``mcp`` extra the
rest of toolrt works, and an mcp tool answers with an error saying how to install it.
"""

from runtime.mcpclient.calls import call_mcp_tool
from runtime.mcpclient.mount import Mounter
from runtime.mcpclient.pool import McpPool

__all__ = ["McpPool", "Mounter", "call_mcp_tool"]
