"""``toolrt serve``: the runtime's tools as a Model Context Protocol server.

Needs the ``mcp`` extra (``pip install 'toolrt[mcp]'``); the core runtime never
imports this package. :func:`serve` runs a :class:`Runtime` on stdio or streamable
HTTP; :class:`ElicitationApprover` puts ``ask`` decisions to the client's user.

    runtime = Runtime(["toolrt.d"], approver=ElicitationApprover(settings.approval_timeout_s), watch=False)
    try:
        await serve(runtime, transport="http", port=8765, stop=stop_event)
    finally:
        await runtime.close()
"""

from runtime.mcpserver.approver import ElicitationApprover
from runtime.mcpserver.server import ToolServer
from runtime.mcpserver.transports import MCP_PATH, is_loopback, serve

__all__ = ["MCP_PATH", "ElicitationApprover", "ToolServer", "is_loopback", "serve"]
