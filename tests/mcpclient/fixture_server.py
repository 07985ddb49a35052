"""A small MCP server for the client tests, built on the official SDK's low-level server.

Run: ``python fixture_server.py`` (stdio) or ``python fixture_server.py --http PORT``
(streamable HTTP on 127.0.0.1; ``--tls CERT KEY`` serves HTTPS). Its tools cover what a
client must handle: plain text, structured content, an error result, a hang, a crash,
progress notifications, large output, non-text content, and one tool whose input schema
is broken.

Misbehaving on request: ``--ignore-close`` ignores SIGTERM and the end of a session
(over stdio it keeps running once its stdin is closed; over HTTP the request that ends
a session is never answered); ``--silent`` (stdio) never answers at all, not even the
handshake. ``FIXTURE_PIDFILE``, when set, names a file it writes its process id to once
it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

_OBJECT = "object"


def _schema(properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    return {"type": _OBJECT, "properties": properties or {}, "required": required or []}


TOOLS = [
    types.Tool(
        name="echo",
        description="Return the text.",
        input_schema=_schema({"text": {"type": "string"}}, ["text"]),
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="structured",
        description="Return structured content.",
        input_schema=_schema({"name": {"type": "string"}}, ["name"]),
        annotations=types.ToolAnnotations(idempotent_hint=True, destructive_hint=False),
    ),
    types.Tool(name="fail", description="Always report an error.", input_schema=_schema()),
    types.Tool(
        name="hang", description="Sleep for a long time.", input_schema=_schema({"seconds": {"type": "number"}})
    ),
    types.Tool(
        name="crash",
        description="Make the server process exit.",
        input_schema=_schema(),
        annotations=types.ToolAnnotations(destructive_hint=True),
    ),
    types.Tool(
        name="progress",
        description="Report progress, then answer.",
        input_schema=_schema({"steps": {"type": "integer"}, "delay": {"type": "number"}}),
    ),
    types.Tool(
        name="big",
        description="Return a long text.",
        input_schema=_schema({"chars": {"type": "integer"}}, ["chars"]),
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="picture",
        description="Return an image and a resource.",
        input_schema=_schema(),
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="pid",
        description="Return the server's process id.",
        input_schema=_schema(),
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="typed",
        description="Return an object its output schema describes.",
        input_schema=_schema({"name": {"type": "string"}}, ["name"]),
        output_schema=_schema({"name": {"type": "string"}, "size": {"type": "integer"}}, ["name", "size"]),
    ),
    types.Tool(
        name="typed_liar",
        description="Declare an output schema and break it.",
        input_schema=_schema(),
        output_schema=_schema({"size": {"type": "integer"}}, ["size"]),
    ),
    types.Tool(
        name="typed_broken",
        description="Its output schema is not valid JSON Schema.",
        input_schema=_schema(),
        output_schema={"type": _OBJECT, "properties": {"n": {"type": "integr"}}},
    ),
    types.Tool(
        name="broken.schema",
        description="Its input schema is not valid JSON Schema.",
        input_schema={"type": _OBJECT, "properties": {"n": {"type": "integr"}}},
    ),
]


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _listing() -> list[types.Tool]:
    """TOOLS, changed by the JSON file named by ``FIXTURE_LISTING`` when it exists (read
    at every listing, so a test changes what a running server lists): ``drop`` (names),
    ``patch`` (name -> fields of ``Tool`` to replace, by their JSON names) and ``add``
    (tools, as JSON)."""
    path = os.environ.get("FIXTURE_LISTING")
    if not path or not os.path.exists(path):
        return TOOLS
    with open(path, encoding="utf-8") as file:
        change = json.load(file)
    tools = []
    for tool in TOOLS:
        if tool.name in change.get("drop", []):
            continue
        patch = change.get("patch", {}).get(tool.name)
        tools.append(types.Tool.model_validate({**tool.model_dump(by_alias=True), **patch}) if patch else tool)
    return tools + [types.Tool.model_validate(item) for item in change.get("add", [])]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_listing())


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return types.CallToolResult(content=_text(str(args["text"])))
    if name == "structured":
        value = {"name": args["name"], "token": "ghp_" + "a1B2" * 9, "items": [1, 2, 3]}
        return types.CallToolResult(content=_text(str(value)), structured_content=value)
    if name == "typed":
        value = {"name": args["name"], "size": len(args["name"])}
        return types.CallToolResult(content=_text(str(value)), structured_content=value)
    if name in ("typed_liar", "typed_broken"):
        value = {"size": "large"}
        return types.CallToolResult(content=_text(str(value)), structured_content=value)
    if name == "fail":
        return types.CallToolResult(content=_text("the widget is broken"), is_error=True)
    if name == "hang":
        await anyio.sleep(float(args.get("seconds", 3600)))
        return types.CallToolResult(content=_text("woke up"))
    if name == "crash":
        os._exit(3)
    if name == "progress":
        steps = int(args.get("steps", 3))
        for step in range(steps):
            await anyio.sleep(float(args.get("delay", 0.2)))
            await ctx.session.report_progress(step + 1, steps, f"step {step + 1}")
        return types.CallToolResult(content=_text(f"done after {steps} steps"))
    if name == "big":
        return types.CallToolResult(content=_text("x" * int(args["chars"])))
    if name == "picture":
        image = types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
        resource = types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///notes.txt", text="some notes", mime_type="text/plain"),
        )
        return types.CallToolResult(content=[*_text("a picture:"), image, resource])
    if name == "pid":
        return types.CallToolResult(content=_text(str(os.getpid())))
    return types.CallToolResult(content=_text(f"unknown tool {name}"), is_error=True)


server = Server("toolrt-fixture", on_list_tools=list_tools, on_call_tool=call_tool)


async def _stdio(ignore_close: bool) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    if ignore_close:
        await anyio.sleep_forever()  # the client closed our stdin: stay


def _silent() -> None:
    """Read stdin and never answer (not even the handshake); stay when it is closed."""
    while sys.stdin.buffer.read(65536):
        pass
    signal.pause()


def _ignoring_close(app: Any) -> Any:
    """``app``, except that a DELETE (the end of a session) is never answered: it is
    held until the client goes away."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        await app(scope, receive, send)

    return wrapped


def _http(port: int, tls: list[str] | None, ignore_close: bool) -> None:
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    if ignore_close:
        app = _ignoring_close(app)
    certfile, keyfile = tls if tls else (None, None)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--ignore-close", action="store_true")
    parser.add_argument("--silent", action="store_true")
    options = parser.parse_args()
    if options.ignore_close:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pidfile = os.environ.get("FIXTURE_PIDFILE")
    if pidfile:
        with open(pidfile + ".tmp", "w", encoding="utf-8") as file:
            file.write(str(os.getpid()))
        os.replace(pidfile + ".tmp", pidfile)
    if options.http is not None:
        _http(options.http, options.tls, options.ignore_close)
    elif options.silent:
        _silent()
    else:
        anyio.run(_stdio, options.ignore_close)


if __name__ == "__main__":
    main()
