"""The runtime's tools served over MCP, on the SDK's low-level ``Server``.

``tools/list`` answers from the snapshot serving at that moment, so a hot reload
shows at once. ``tools/call`` goes through the whole pipeline (``Runtime.run_turn``:
validation, permission, timeouts, shaping, audit) and always answers with a
``CallToolResult``: whatever goes wrong with a call is an ``isError`` result the model
reads, never a protocol error. A reload that changes the tool list sends
``notifications/tools/list_changed`` to every connected client.

Transports live in :mod:`runtime.mcpserver.transports`.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import uuid
from typing import Any

import mcp_types as types
from loguru import logger
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from runtime.adapters.mcp import render_result, tool_definitions
from runtime.mcpserver.approver import ASKED_STATE, INPUT_KEY, McpRequest, current_request
from runtime.mcpserver.clients import Clients
from runtime.mcpserver.progress import ProgressRelay
from runtime.records import Call
from runtime.reload import ReloadEvent
from runtime.runtime import Runtime
from runtime.snapshot import Snapshot

SERVER_NAME = "toolrt"


def _version() -> str:
    try:
        return importlib.metadata.version("toolrt")
    except importlib.metadata.PackageNotFoundError:
        return "0"


class _ListChangedServer(Server[Any]):
    """The low-level server, declaring ``tools.listChanged`` on every transport (the
    streamable HTTP manager asks for the initialization options without arguments)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


class ToolServer:
    """Serves ``runtime``'s tools to MCP clients.

    Give the runtime an :class:`runtime.mcpserver.ElicitationApprover` so that ``ask``
    decisions reach the client's user. ``stdio`` says the server runs on stdio (one
    connection per process), which is how connections are told apart (see
    :mod:`runtime.mcpserver.clients`).
    """

    def __init__(self, runtime: Runtime, *, stdio: bool) -> None:
        self.runtime = runtime
        self.clients = Clients(runtime.settings.permission_mode.value, stdio=stdio, forget=runtime.end_session)
        self.server: Server[Any] = _ListChangedServer(
            SERVER_NAME, version=_version(), on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )
        self.server.add_notification_handler("notifications/initialized", types.NotificationParams, self._initialized)
        # On the stateless revision an approval question goes out as an input request and its
        # requestState comes back from the client: the SDK seals it and binds it to the tool and
        # arguments, so an answer counts only for the call it was asked about (approver.py).
        self.server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=SERVER_NAME)
        )
        self._listing: tuple[Snapshot, list[types.Tool]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: set[asyncio.Task[Any]] = set()

    # -- hot reload -------------------------------------------------------------

    def watch(self) -> None:
        """Watch the runtime's config and tell the clients when the tool list changes.

        Call it from the event loop that serves. The runtime must not be watching
        already (build it with ``watch=False``): the watcher's callback is fixed when
        it starts."""
        self._loop = asyncio.get_running_loop()
        if self.runtime.watcher is not None:
            logger.warning(
                "the runtime already watches its config without telling MCP clients; build it with watch=False to "
                "send tools/list_changed"
            )
            return
        self.runtime.watch(on_event=self._on_reload)

    def _on_reload(self, event: ReloadEvent) -> None:
        # On the watcher's thread: hand the notification to the serving loop.
        loop = self._loop
        if event.event != "reloaded" or not event.changed or loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._start_notifying)
        except RuntimeError:
            pass  # the loop is closed: the server has stopped

    def _start_notifying(self) -> None:
        task = asyncio.create_task(self.clients.notify_tools_changed())
        self._pending.add(task)  # keep a reference until it is done
        task.add_done_callback(self._pending.discard)

    def end_http_session(self, transport_session_id: str) -> None:
        """The HTTP session ``transport_session_id`` ended (expired, evicted or deleted by
        its client): forget its client, and end its toolrt session (grants, quotas)."""
        self.clients.end(f"http:{transport_session_id}")

    # -- handlers ---------------------------------------------------------------

    async def _initialized(self, ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
        self.clients.session_for(ctx)  # known from the start, so it hears of tool list changes

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self.clients.session_for(ctx)
        snapshot = self.runtime.snapshot
        listing = self._listing
        if listing is None or listing[0] is not snapshot:
            listing = self._listing = (snapshot, [types.Tool.model_validate(d) for d in tool_definitions(snapshot)])
        return types.ListToolsResult(tools=list(listing[1]))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        call = Call(id=f"mcp_{uuid.uuid4().hex[:12]}", name=params.name, args=dict(params.arguments or {}))
        relay = ProgressRelay(ctx.session) if "progress_token" in (ctx.meta or {}) else None
        request = McpRequest(ctx.session, ctx.request_id, params.input_responses, params.request_state)
        token = current_request.set(request)
        try:
            session = self.clients.session_for(ctx)
            (result,) = await self.runtime.run_turn(
                [call], session, on_progress=relay.listener if relay is not None else None
            )
            question = request.pending.get("question")
            if question is not None and result.code == "denied":  # a stateless revision: ask, run on the next round
                return types.InputRequiredResult(input_requests={INPUT_KEY: question}, request_state=ASKED_STATE)
            # Checked against the outputSchema tools/list gives for this name (see render_result).
            listed = self.runtime.snapshot.tools.get(params.name)
            output_check = listed.output_check if listed is not None else None
            return types.CallToolResult.model_validate(render_result(result, output_check))
        except Exception as err:  # noqa: BLE001 - the pipeline answers every call; this is a bug, and still an answer
            logger.opt(exception=err).error("MCP tools/call {} failed inside toolrt", params.name)
            text = (
                f"toolrt could not run `{params.name}`: internal error ({type(err).__name__}). The call may not have "
                "run; report this to the operator."
            )
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        finally:
            current_request.reset(token)
            if relay is not None:
                await relay.aclose()
