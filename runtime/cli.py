"""The ``toolrt`` command line: a thin adapter over the library.

``main(argv) -> exit code`` so that every command is testable without a subprocess.
Exit codes: 0 success, 1 problems found (lint errors, failed checks), 2 usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from loguru import logger

from runtime import adapters, cli_workflows
from runtime.adapters import PROVIDERS
from runtime.adapters import mcp as mcp_adapter
from runtime.approvers import TerminalApprover
from runtime.audit import format_json, format_table, parse_since, query
from runtime.audit.location import store_path
from runtime.audit.verify import parse_anchor, report_json, verify
from runtime.config.cache import CompileCache
from runtime.config.compile import build_snapshot
from runtime.config.load import load_documents
from runtime.config.models import McpServerDocument, PermissionMode
from runtime.config.schema import all_schemas, render
from runtime.errors import ConfigError, UsageError
from runtime.fleet import setup as fleet_setup
from runtime.lint.report import FORMATS
from runtime.lint.report import render as render_report
from runtime.logs import configure as configure_logs
from runtime.mcpclient import McpPool
from runtime.mcpclient.errors import McpFailure
from runtime.mcpclient.lock import LockedMounter, lock_path, read_lock, write_lock
from runtime.mcpclient.mount import ListedTool
from runtime.policy.explain import explain
from runtime.policy.placed import NOWHERE, Where
from runtime.policy.policytests import run_policy_tests
from runtime.records import Call, Session
from runtime.reload import ConfigWatcher, watch_events
from runtime.runtime import Runtime
from runtime.settings import Settings
from runtime.snapshot import Snapshot

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolrt", description="Declarative tool runtime for LLM agents.")
    parser.add_argument("--version", action="version", version=f"toolrt {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    lint = sub.add_parser("lint", help="validate config directories or files")
    lint.add_argument(
        "paths", nargs="*", type=Path, help="config directories or YAML files (default: the configured config_dir)"
    )
    lint.add_argument("--format", choices=FORMATS, default="text")
    lint.add_argument("--strict", action="store_true", help="treat warnings as errors")
    lint.add_argument("--engine", choices=("auto", "fast", "portable"), default=None, help="CEL and JSON Schema engine")

    schema = sub.add_parser("schema", help="write or check the JSON Schemas of the config kinds")
    schema.add_argument(
        "--out", type=Path, default=None, help="directory to write the schemas to (default: print the combined schema)"
    )
    schema.add_argument("--check", action="store_true", help="exit 1 if the files in --out differ from the models")
    schema.add_argument(
        "--reference", action="store_true", help="print the YAML reference of every kind as Markdown instead"
    )
    schema.add_argument(
        "--update",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --reference: rewrite the reference between the markers in FILE (e.g. README.md)",
    )

    def runtime_options(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--config", type=Path, action="append", required=True, help="config directory or YAML file (repeatable)"
        )
        command.add_argument(
            "--workspace", type=Path, default=None, help="workspace root (default: the workspace_root setting)"
        )
        command.add_argument("--provider", choices=PROVIDERS, default="anthropic")
        command.add_argument("--format", choices=("json", "text"), default="json")
        command.add_argument(
            "--mode", choices=[m.value for m in PermissionMode], default=None, help="the session's permission mode"
        )

    run = sub.add_parser("run", help="run one assistant turn's tool calls and print what to send back")
    runtime_options(run)
    run.add_argument("calls_file", help="the assistant message (or its list of calls) as JSON; - for stdin")

    call = sub.add_parser("call", help="run one tool call")
    runtime_options(call)
    call.add_argument("tool")
    call.add_argument("--args", default="{}", help="the arguments as a JSON object")

    tools = sub.add_parser("tools", help="print the tool definitions for a provider")
    tools.add_argument("--config", type=Path, action="append", required=True)
    tools.add_argument(
        "--provider", choices=("anthropic", "openai", "openai-chat", "openai-responses", "mcp"), default="anthropic"
    )

    test = sub.add_parser("test", help="run the PolicyTest cases of a config (nothing is executed)")
    test.add_argument(
        "paths", nargs="*", type=Path, help="config directories or YAML files (default: the configured config_dir)"
    )

    explain = sub.add_parser(
        "explain", help="dry-run one call through lookup, validation and permission (nothing executes)"
    )
    explain.add_argument("tool")
    explain.add_argument(
        "--config", type=Path, action="append", required=True, help="config directory or YAML file (repeatable)"
    )
    explain.add_argument("--args", default="{}", help="the arguments as a JSON object")
    explain.add_argument("--session", default="{}", help='the session as JSON: {"id", "user", "mode", "labels"}')
    explain.add_argument("--format", choices=("text", "json"), default="text")
    explain.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="judge command lines as run in this workspace (globs expanded, paths placed)",
    )

    mcp = sub.add_parser(
        "mcp",
        help="MCP servers: `lock` lists their tools once into a lock file that lint, test, explain and tools read offline",
    )
    mcp.add_argument("action", choices=("lock",))
    mcp.add_argument(
        "--config",
        type=Path,
        action="append",
        required=True,
        help="config directory or YAML file (repeatable); the lock goes in the first",
    )

    watch = sub.add_parser("watch", help="load a config, then print one JSON line per reload attempt until interrupted")
    watch.add_argument(
        "--config", type=Path, action="append", required=True, help="config directory or YAML file (repeatable)"
    )

    audit = sub.add_parser("audit", help="query the audit log of calls, or verify its hash chain")
    audit.add_argument(
        "action",
        nargs="?",
        choices=("verify",),
        default=None,
        help="verify: walk the hash chain; exit 0 when intact, 1 at the first broken link",
    )
    audit.add_argument(
        "--store",
        type=Path,
        default=None,
        help="the audit log (default: the workspace's log, see the audit_store setting)",
    )
    audit.add_argument("--workspace", type=Path, default=None, help="whose log (default: the workspace_root setting)")
    audit.add_argument(
        "--dsn",
        default=None,
        metavar="postgresql://...",
        help="read the PostgreSQL audit log of a fleet (default: the audit_sink setting when it is a postgresql:// URL)",
    )
    audit.add_argument(
        "--chain", default=None, help="with --dsn: only this workspace's chain (verify walks every chain otherwise)"
    )
    audit.add_argument(
        "--anchor",
        action="append",
        default=[],
        metavar="POSITION:HASH",
        help="with verify: a head printed by an earlier verify and kept elsewhere; the log must still hold it",
    )
    audit.add_argument("--session", default=None, help="only this session id")
    audit.add_argument("--tool", default=None, help="only this tool")
    audit.add_argument("--status", default=None, help="only this status (ok, error, denied, timeout, ...)")
    audit.add_argument("--since", default=None, help="only calls since: 15m, 2h, 7d, or an ISO-8601 date/time")
    audit.add_argument("--until", default=None, help="only calls before: same forms as --since")
    audit.add_argument("--limit", type=int, default=100, help="at most this many calls, newest first (default 100)")
    audit.add_argument("--format", choices=("table", "json"), default="table")

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

    cli_workflows.add_parsers(sub, runtime_options)

    demo = sub.add_parser(
        "demo", help="run a scripted coding-agent session through the shipped example (local, a few seconds)"
    )
    demo.add_argument("--config", type=Path, default=None, help="example config directory")
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command line; return the exit code."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = _parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    if args.command == "lint":
        return _lint(args, out, err)
    if args.command == "schema":
        return _schema(args, out, err)
    if args.command in ("run", "call"):
        return _run(args, out, err)
    if args.command == "tools":
        return _tools(args, out, err)
    if args.command == "test":
        return _test(args, out, err)
    if args.command == "explain":
        return _explain(args, out, err)
    if args.command == "audit":
        return _audit(args, out, err)
    if args.command == "status":
        return _status(args, out, err)
    if args.command == "watch":
        return _watch(args, out, err)
    if args.command == "mcp":
        return _mcp(args, out, err)
    if args.command == "serve":
        return _serve(args, err)
    if args.command == "workflow":
        return cli_workflows.workflow_command(args, out, err, _runtime, _load)
    if args.command == "versions":
        return cli_workflows.versions_command(args, out, err, _load)
    return _demo(args, out, err)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolrt")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


# How one call looks in each provider's format: given alone, it is answered like a turn of one.
_SINGLE_CALL = {
    "anthropic": lambda p: p.get("type") == "tool_use",
    "openai-chat": lambda p: "role" not in p and (p.get("type") == "function" or isinstance(p.get("function"), dict)),
    "openai-responses": lambda p: p.get("type") == "function_call",
}


def _calls_payload(provider: str, payload: object) -> tuple[object, str | None]:
    """The payload as the provider's parser takes it, or why it cannot be read."""
    if payload is None:
        return None, "the calls file holds null: give the assistant message, its list of calls, or one call"
    if isinstance(payload, dict) and _SINGLE_CALL[provider](payload):
        return [payload], None
    if not isinstance(payload, (dict, list)):
        return (
            None,
            f"the calls file holds a JSON {type(payload).__name__}: give the assistant message, its list of calls, or one call",
        )
    return payload, None


def _settings(engine: str | None) -> Settings:
    if engine is None:
        return Settings()
    return Settings.model_validate({"cel_engine": engine, "schema_engine": engine})


def _lint(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        settings = _settings(args.engine)
    except Exception as error:  # noqa: BLE001 - bad TOOLRT_* settings are a usage error
        err.write(f"toolrt: invalid settings: {error}\n")
        return EXIT_USAGE
    paths = args.paths or [settings.config_dir]
    if _missing(paths, err, "file or directory"):
        return EXIT_USAGE
    result = build_snapshot(paths, settings, mount=_locked_tools(paths))
    out.write(
        render_report(
            result.problems, args.format, files=len(result.files), documents=result.documents, strict=args.strict
        )
    )
    failing = [p for p in result.problems if p.is_error or args.strict]
    return EXIT_PROBLEMS if failing else EXIT_OK


def _schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.reference:
        return _reference(args.update, out, err)
    schemas = all_schemas()
    if args.out is None:
        out.write(render(schemas["toolrt.schema.json"]))
        return EXIT_OK
    if args.check:
        stale = [
            name
            for name, schema in schemas.items()
            if not (args.out / name).is_file() or (args.out / name).read_text(encoding="utf-8") != render(schema)
        ]
        for name in stale:
            err.write(f"{args.out / name}: out of date; run `toolrt schema --out {args.out}`\n")
        return EXIT_PROBLEMS if stale else EXIT_OK
    args.out.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        (args.out / name).write_text(render(schema), encoding="utf-8")
    out.write(f"wrote {len(schemas)} schemas to {args.out}\n")
    return EXIT_OK


def _reference(target: Path | None, out: TextIO, err: TextIO) -> int:
    """Print the Markdown reference, or rewrite it between the markers of ``target``."""
    from runtime.config.reference import BEGIN, END, reference_markdown, update_between_markers

    if target is None:
        out.write(reference_markdown())
        return EXIT_OK
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as error:
        err.write(f"toolrt schema: cannot read {target}: {error.strerror or error}\n")
        return EXIT_USAGE
    if BEGIN not in text or END not in text:
        err.write(
            f"toolrt schema: {target} has no reference markers; add these two lines where the reference goes:\n{BEGIN}\n{END}\n"
        )
        return EXIT_USAGE
    target.write_text(update_between_markers(text), encoding="utf-8")
    out.write(f"updated the reference in {target}\n")
    return EXIT_OK


def _missing(paths: Sequence[Path], err: TextIO, what: str = "config") -> bool:
    """Say which of ``paths`` do not exist (True if any)."""
    missing = [p for p in paths if not p.exists()]
    if missing:
        err.write(f"toolrt: no such {what}: {', '.join(map(str, missing))}\n")
    return bool(missing)


def _report(error: ConfigError, err: TextIO) -> None:
    for problem in error.problems:
        err.write(f"{problem}\n")


def _load(paths: Sequence[Path], err: TextIO) -> Snapshot | None:
    """The compiled config, or None after printing every problem."""
    result = build_snapshot(paths, Settings(), mount=_locked_tools(paths))
    if result.snapshot is None:
        _report(ConfigError(result.problems), err)
        return None
    return result.snapshot


def _locked_tools(paths: Sequence[Path]) -> LockedMounter | None:
    """The tools of the config's MCP lock file, mounted offline (None without a lock)."""
    listings = read_lock(list(paths))
    return LockedMounter(listings) if listings is not None else None


def _mcp(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt mcp lock``: list each declared server's tools once and write the lock file."""
    if _missing(args.config, err):
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
        _report(ConfigError(tuple(broken)), err)
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


def _runtime(args: argparse.Namespace, err: TextIO) -> Runtime | None:
    try:
        settings = Settings()
        return Runtime(
            args.config,
            settings=settings,
            workspace_root=args.workspace,
            approver=TerminalApprover(stderr=err),
            watch=False,
        )  # one turn: nothing to watch
    except ConfigError as error:
        _report(error, err)
        return None


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if _missing(args.config, err):
        return EXIT_USAGE
    if args.command == "run":
        try:
            text = sys.stdin.read() if args.calls_file == "-" else Path(args.calls_file).read_text(encoding="utf-8")
            payload = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            err.write(f"toolrt run: cannot read the calls file: {error}\n")
            return EXIT_USAGE
        except RecursionError:
            err.write("toolrt run: the calls file nests deeper than JSON can be read here; no call in it was run\n")
            return EXIT_USAGE
        payload, problem = _calls_payload(args.provider, payload)
        if problem is not None:
            err.write(f"toolrt run: {problem}\n")
            return EXIT_USAGE
    else:
        try:
            call_args = json.loads(args.args)
        except json.JSONDecodeError as error:
            err.write(f"toolrt call: --args is not valid JSON: {error}\n")
            return EXIT_USAGE
        payload = None
    runtime = _runtime(args, err)
    if runtime is None:
        return EXIT_PROBLEMS
    if payload is None:
        calls = [
            Call(
                id="call_1",
                name=args.tool,
                args=call_args if isinstance(call_args, dict) else None,
                parse_error=None if isinstance(call_args, dict) else "arguments must be a JSON object",
            )
        ]
    else:
        calls = adapters.parse_calls(args.provider, payload, snapshot=runtime.snapshot)
        if not calls:
            runtime.close_sync()
            err.write(
                f"toolrt run: no {args.provider} tool call found in the calls file (is --provider right?); nothing was run\n"
            )
            return EXIT_PROBLEMS
    session = Session(mode=args.mode or runtime.settings.permission_mode.value)
    results = runtime.run_turn_sync(calls, session)
    runtime.close_sync()  # the last audit records are written before the process ends
    if args.format == "json":
        out.write(json.dumps(adapters.render_results(args.provider, results), indent=2, ensure_ascii=False) + "\n")
    else:
        for result in results:
            out.write(f"[{result.call_id}] {result.name}: {result.status.value}\n{result.content}\n\n")
    return EXIT_OK


def _tools(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    snapshot = _load(args.config, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    provider = "openai-chat" if args.provider == "openai" else args.provider
    definitions = (
        mcp_adapter.tool_definitions(snapshot) if provider == "mcp" else adapters.tool_definitions(provider, snapshot)
    )
    out.write(json.dumps(definitions, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _test(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    paths = args.paths or [Settings().config_dir]
    if _missing(paths, err, "file or directory"):
        return EXIT_USAGE
    snapshot = _load(paths, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    results = run_policy_tests(snapshot)
    if not results:
        err.write(
            "toolrt test: no PolicyTest cases in the config: a test run that checks nothing does not pass. Add a PolicyTest document.\n"
        )
        return EXIT_PROBLEMS
    for case in results:
        out.write(
            f"{'PASS' if case.passed else 'FAIL'}  {case.suite} / {case.name}: {case.detail}"
            + ("" if case.passed else f"  ({case.location})")
            + "\n"
        )
    failed = sum(not c.passed for c in results)
    out.write(f"{len(results)} case(s): {len(results) - failed} passed, {failed} failed\n")
    return EXIT_PROBLEMS if failed else EXIT_OK


def _explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        call_args = json.loads(args.args)
        raw_session = json.loads(args.session)
    except json.JSONDecodeError as error:
        err.write(f"toolrt explain: --args and --session must be JSON: {error}\n")
        return EXIT_USAGE
    session = _session_from_json(raw_session)
    if isinstance(session, str):
        err.write(f"toolrt explain: --session {session}\n")
        return EXIT_USAGE
    if _missing(args.config, err):
        return EXIT_USAGE
    snapshot = _load(args.config, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    where = NOWHERE
    if args.workspace is not None:
        settings = Settings()
        where = Where.of(args.workspace, (), settings.commands_outside_workspace, configs=args.config)
    explanation = explain(snapshot, args.tool, call_args if isinstance(call_args, dict) else None, session, where)
    out.write((explanation.to_json() if args.format == "json" else explanation.to_text()) + "\n")
    return EXIT_OK


def _watch(args: argparse.Namespace, out: TextIO, err: TextIO, stop: threading.Event | None = None) -> int:
    """``toolrt watch``: the initial load, then every reload attempt, one JSON object per line."""
    if _missing(args.config, err):
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


def _status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt status``: one line per worker and its snapshot, then whether they agree.
    Exit 0 when every worker serves the same snapshot, 1 when not, 2 when it cannot tell."""
    url = args.limit_store if args.limit_store is not None else Settings().limit_store
    if not fleet_setup.is_redis(url):
        err.write(
            "toolrt status: no fleet to report: the limit store is this process's memory; give --limit-store redis://... (or set TOOLRT_LIMIT_STORE)\n"
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


def _audit(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    settings = Settings()
    dsn = (
        args.dsn
        if args.dsn is not None
        else (settings.audit_sink if args.store is None and fleet_setup.is_postgres(settings.audit_sink) else None)
    )
    if dsn is not None:
        return _audit_postgres(args, dsn, out, err)
    if args.chain is not None:
        err.write("toolrt audit: --chain is for a PostgreSQL log (--dsn)\n")
        return EXIT_USAGE
    workspace = args.workspace if args.workspace is not None else settings.workspace_root
    store = args.store if args.store is not None else store_path(workspace, settings)
    if args.action == "verify":
        return _audit_verify(args, store, out, err)
    if args.anchor:
        err.write("toolrt audit: --anchor is for `toolrt audit verify`\n")
        return EXIT_USAGE
    try:
        since = parse_since(args.since) if args.since else None
        until = parse_since(args.until) if args.until else None
        rows = query(
            store,
            session=args.session,
            tool=args.tool,
            status=args.status,
            since=since,
            until=until,
            limit=max(1, args.limit),
        )
    except (ValueError, UsageError) as error:
        err.write(f"toolrt audit: {error}\n")
        return EXIT_USAGE
    out.write((format_json(rows) if args.format == "json" else format_table(rows)) + "\n")
    return EXIT_OK


def _audit_postgres(args: argparse.Namespace, dsn: str, out: TextIO, err: TextIO) -> int:
    """``toolrt audit --dsn``: query a PostgreSQL log, or verify each of its chains."""
    from runtime.audit.pgread import query_postgres, verify_postgres

    if not fleet_setup.is_postgres(dsn):
        err.write(f"toolrt audit: --dsn must be a postgresql:// URL, not {dsn[:60]!r}\n")
        return EXIT_USAGE
    if args.store is not None:
        err.write("toolrt audit: --store and --dsn name two different logs; give one\n")
        return EXIT_USAGE
    if args.action == "verify":
        filters = [name for name in ("session", "tool", "status", "since", "until") if getattr(args, name) is not None]
        if filters:
            err.write(f"toolrt audit verify: --{filters[0]} filters a query; verify walks the whole log\n")
            return EXIT_USAGE
        try:
            anchors = dict(parse_anchor(text) for text in args.anchor)
            reports = verify_postgres(dsn, chain=args.chain, anchors=anchors)
        except (ValueError, UsageError) as error:
            err.write(f"toolrt audit verify: {error}\n")
            return EXIT_USAGE
        if args.format == "json":
            out.write(json.dumps([report.to_dict() for report in reports], indent=2) + "\n")
        else:
            out.write(
                "\n".join(report.to_text() for report in reports)
                if reports
                else "no chains: no calls have been recorded yet"
            )
            out.write("\n")
        return EXIT_OK if all(report.ok for report in reports) else EXIT_PROBLEMS
    if args.anchor:
        err.write("toolrt audit: --anchor is for `toolrt audit verify`\n")
        return EXIT_USAGE
    try:
        since = parse_since(args.since) if args.since else None
        until = parse_since(args.until) if args.until else None
        rows = query_postgres(
            dsn,
            chain=args.chain,
            session=args.session,
            tool=args.tool,
            status=args.status,
            since=since,
            until=until,
            limit=max(1, args.limit),
        )
    except (ValueError, UsageError) as error:
        err.write(f"toolrt audit: {error}\n")
        return EXIT_USAGE
    out.write((format_json(rows) if args.format == "json" else format_table(rows)) + "\n")
    return EXIT_OK


def _audit_verify(args: argparse.Namespace, store: Path, out: TextIO, err: TextIO) -> int:
    """``toolrt audit verify``: 0 when the chain is intact, 1 at its first broken link, 2 on usage errors."""
    filters = [name for name in ("session", "tool", "status", "since", "until") if getattr(args, name) is not None]
    if filters:
        err.write(f"toolrt audit verify: --{filters[0]} filters a query; verify walks the whole log\n")
        return EXIT_USAGE
    try:
        anchors = dict(parse_anchor(text) for text in args.anchor)
        report = verify(store, anchors=anchors)
    except (ValueError, UsageError) as error:
        err.write(f"toolrt audit verify: {error}\n")
        return EXIT_USAGE
    out.write((report_json(report) if args.format == "json" else report.to_text()) + "\n")
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _session_from_json(raw: object) -> Session | str:
    """A Session from ``--session`` JSON, or what is wrong with it."""
    if not isinstance(raw, dict):
        return "must be a JSON object"
    unknown = sorted(set(raw) - {"id", "user", "mode", "labels"})
    if unknown:
        return f"has unknown keys {unknown}; use id, user, mode, labels"
    modes = [m.value for m in PermissionMode]
    mode = raw.get("mode", "default")
    if mode not in modes:
        return f"mode must be one of {modes}, got {mode!r}"
    labels = raw.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return "labels must be an object of strings"
    user = raw.get("user")
    if user is not None and not isinstance(user, str):
        return "user must be a string"
    return Session(id=str(raw.get("id", "explain")), user=user, mode=mode, labels=labels)


def _serve(args: argparse.Namespace, err: TextIO) -> int:
    """``toolrt serve``: run the MCP server until the client goes (stdio) or SIGINT/SIGTERM."""
    if not args.config:  # a container sets the config folder in its environment
        configured = os.environ.get("TOOLRT_CONFIG_DIR", "").strip()
        if not configured:
            err.write("toolrt serve: give the config with --config PATH (repeatable) or set TOOLRT_CONFIG_DIR\n")
            return EXIT_USAGE
        args.config = [Path(configured)]
    if _missing(args.config, err):
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
        _report(error, err)
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


def _demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from runtime.demo import run_demo

    return run_demo(args.config, out, err)


def entrypoint() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
