"""``toolrt serve``, ``mcp lock``, ``watch`` and ``status``: the long-running and fleet commands."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import threading
from pathlib import Path
from typing import TextIO

from loguru import logger

from runtime.cli_common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    print_problems,
    report_missing,
)
from runtime.config.cache import CompileCache
from runtime.config.load import load_documents
from runtime.config.models import McpServerDocument
from runtime.errors import ConfigError
from runtime.fleet import setup as fleet_setup
from runtime.logs import configure as configure_logs
from runtime.mcpclient import McpPool
from runtime.mcpclient.errors import McpFailure
from runtime.mcpclient.lock import lock_path, write_lock
from runtime.mcpclient.mount import ListedTool
from runtime.reload import ConfigWatcher, watch_events
from runtime.runtime import Runtime
from runtime.settings import Settings


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register the `mcp`, `watch`, `status`, `serve` commands."""
    mcp = sub.add_parser(
        "mcp",
        help="MCP servers: `lock` lists their tools once into a lock file that lint, test, explain and tools read"
        " offline",
    )
    mcp.add_argument("action", choices=("lock",))
    mcp.add_argument(
        "--config",
        type=Path,
        action="append",
        required=True,
        help="config directory or YAML file (repeatable); the lock goes in the first",
    )

    watch = sub.add_parser(
        "watch",
        help="load a config (its MCP servers mounted), then print one JSON line per reload attempt, and per MCP"
        " server listing that differs from the lock file, until interrupted",
    )
    watch.add_argument(
        "--config", type=Path, action="append", required=True, help="config directory or YAML file (repeatable)"
    )

    status = sub.add_parser(
        "status", help="the workers sharing a Redis limit store, and the config snapshot each serves"
    )
    status.add_argument(
        "--limit-store",
        default=None,
        metavar="redis://...",
        help="the fleet's Redis (default: the limit_store setting)",
    )
    status.add_argument("--format", choices=("text", "json"), default="text")

    serve = sub.add_parser("serve", help="serve the tools to MCP clients (stdio or streamable HTTP) until stopped")
    serve.add_argument(
        "--config",
        type=Path,
        action="append",
        default=None,
        help="config directory or YAML file (repeatable; default: $TOOLRT_CONFIG_DIR)",
    )
    serve.add_argument(
        "--workspace", type=Path, default=None, help="workspace root (default: the workspace_root setting)"
    )
    serve.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable HTTP"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="HTTP address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765; 0 picks a free one)")
    serve.add_argument(
        "--watch",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="hot-reload config edits and tell clients when the tools change (default: the hot_reload setting)",
    )
    serve.add_argument(
        "--token",
        default=None,
        help="HTTP: every request must send `Authorization: Bearer TOKEN` (default: TOOLRT_SERVE_TOKEN; prefer it, "
        "a flag shows in the process list); required for a --host other machines can reach",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="HTTP: a host name clients use to reach the server, besides loopback and --host (repeatable)",
    )
    serve.add_argument(
        "--session-idle-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="HTTP: end a session idle this long (default 1800)",
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=1000,
        metavar="N",
        help="HTTP: at most N sessions; at the limit the least recently used idle one ends (default 1000)",
    )
    serve.add_argument(
        "--metrics",
        action="store_true",
        help="HTTP: also serve the Prometheus metrics at /metrics (same host checks and token)",
    )


def cmd_mcp(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt mcp lock``: list each declared server's tools once and write the lock file."""
    if report_missing(args.config, err):
        return EXIT_USAGE
    # Only the McpServer documents matter: the rest of the config may still name tools
    # that only the lock will make known.
    loaded = load_documents(args.config, Settings(), CompileCache())
    servers = {
        e.model.metadata.name: e.model.spec
        for e in loaded.documents
        if isinstance(e.model, McpServerDocument) and (e.model.spec.command or e.model.spec.url)
    }
    broken = [p for p in loaded.problems if p.is_error]
    if broken and not servers:
        print_problems(ConfigError(tuple(broken)), err)
        return EXIT_PROBLEMS
    if not servers:
        err.write("toolrt mcp lock: the config declares no McpServer; there is nothing to lock\n")
        return EXIT_PROBLEMS
    pool = McpPool()
    try:
        listings = pool.list_tools(servers)
    finally:
        pool.close()
    failed = {name: listed for name, listed in listings.items() if isinstance(listed, McpFailure)}
    for name, failure in failed.items():
        err.write(f"toolrt mcp lock: MCP server {name} {failure.message}\n")
    if failed:
        return EXIT_PROBLEMS
    locked = {
        name: tuple(ListedTool.of(tool) for tool in listed)
        for name, listed in listings.items()
        if not isinstance(listed, McpFailure)
    }
    path = lock_path(args.config)
    write_lock(path, locked)
    out.write(
        f"wrote {path}: " + ", ".join(f"{name} ({len(tools)} tool(s))" for name, tools in sorted(locked.items())) + "\n"
    )
    return EXIT_OK


def cmd_watch(args: argparse.Namespace, out: TextIO, err: TextIO, stop: threading.Event | None = None) -> int:
    """``toolrt watch``: the initial load, then every reload attempt (and ``mcp_drift``), one JSON object per line."""
    if report_missing(args.config, err):
        return EXIT_USAGE
    stop = stop or threading.Event()
    try:

        def announce(watcher: ConfigWatcher) -> None:
            err.write(f"toolrt watch: {watcher.describe_mode()}\n")
            err.flush()

        for event in watch_events(args.config, Settings(), stop=stop, on_start=announce):
            out.write(event.to_json() + "\n")
            out.flush()
    except KeyboardInterrupt:
        stop.set()
    return EXIT_OK


def cmd_status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt status``: one line per worker and its snapshot, then whether they agree.
    Exit 0 when every worker serves the same snapshot, 1 when not, 2 when it cannot tell."""
    url = args.limit_store if args.limit_store is not None else Settings().limit_store
    if not fleet_setup.is_redis(url):
        err.write(
            "toolrt status: no fleet to report: the limit store is this process's memory; give --limit-store"
            " redis://... (or set TOOLRT_LIMIT_STORE)\n"
        )
        return EXIT_USAGE
    from runtime.errors import LimitStoreError
    from runtime.fleet.presence import fleet_status, status_text

    try:
        workers = fleet_status(url)
    except LimitStoreError as error:
        err.write(f"toolrt status: {error}\n")
        return EXIT_USAGE
    if args.format == "json":
        out.write(
            json.dumps(
                [
                    {
                        "worker": w.worker,
                        "host": w.host,
                        "pid": w.pid,
                        "snapshot": w.snapshot,
                        "started": w.started,
                        "seen": w.seen,
                    }
                    for w in workers
                ],
                indent=2,
            )
            + "\n"
        )
    else:
        out.write(status_text(workers, url) + "\n")
    return EXIT_OK if len({w.snapshot for w in workers}) <= 1 else EXIT_PROBLEMS


def cmd_serve(args: argparse.Namespace, err: TextIO) -> int:
    """``toolrt serve``: run the MCP server until the client goes (stdio) or SIGINT/SIGTERM."""
    if not args.config:  # a container sets the config folder in its environment
        configured = os.environ.get("TOOLRT_CONFIG_DIR", "").strip()
        if not configured:
            err.write("toolrt serve: give the config with --config PATH (repeatable) or set TOOLRT_CONFIG_DIR\n")
            return EXIT_USAGE
        args.config = [Path(configured)]
    if report_missing(args.config, err):
        return EXIT_USAGE
    if not 0 <= args.port <= 65535:
        err.write(f"toolrt serve: --port must be between 0 and 65535, got {args.port}\n")
        return EXIT_USAGE
    try:
        from runtime import mcpserver
        from runtime.mcpserver.httpguard import HttpLimits, token_from_environment
        from runtime.mcpserver.transports import check_exposure
    except ImportError as error:
        if (error.name or "").split(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        err.write(f"toolrt serve needs the MCP SDK ({error.name} is not installed): pip install 'toolrt[mcp]'\n")
        return EXIT_USAGE
    try:
        token = args.token if args.token is not None else token_from_environment()
        limits = HttpLimits(
            idle_s=args.session_idle_timeout,
            max_sessions=args.max_sessions,
            token=token,
            allowed_hosts=tuple(args.allow_host),
        )
        if args.transport == "http":
            check_exposure(args.host, limits)  # before anything starts
    except ValueError as error:
        err.write(f"toolrt serve: {error}\n")
        return EXIT_USAGE
    try:
        settings = Settings()
    except Exception as error:  # noqa: BLE001 - bad TOOLRT_* settings are a usage error
        err.write(f"toolrt: invalid settings: {error}\n")
        return EXIT_USAGE
    try:
        runtime = Runtime(
            args.config,
            settings=settings,
            workspace_root=args.workspace,
            approver=mcpserver.ElicitationApprover(settings.approval_timeout_s),
            watch=False,
        )
    except ConfigError as error:
        print_problems(error, err)
        return EXIT_PROBLEMS
    # A server's logs go to stderr (stdout is the protocol on stdio), once: loguru's
    # default handler would print toolrt's records a second time.
    with contextlib.suppress(ValueError):
        logger.remove(0)
    configure_logs(settings, sink=err)
    watch = settings.hot_reload if args.watch is None else args.watch

    def ready(url: str) -> None:
        err.write(f"toolrt serve: MCP over streamable HTTP at {url} (stop with Ctrl-C)\n")
        err.flush()

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(
                NotImplementedError, RuntimeError
            ):  # no signal handlers on this platform or thread
                loop.add_signal_handler(signum, stop.set)
        try:
            await mcpserver.serve(
                runtime,
                transport=args.transport,
                host=args.host,
                port=args.port,
                watch=watch,
                stop=stop,
                on_ready=ready,
                limits=limits,
                metrics=args.metrics,
            )
        finally:
            await runtime.close()  # the last audit records are written before the process ends

    try:
        asyncio.run(run())
    except OSError as error:
        err.write(f"toolrt serve: {error}\n")
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        pass
    return EXIT_OK
