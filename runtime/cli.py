"""The ``toolrt`` command line: a thin adapter over the library.

``main(argv) -> exit code`` so that every command is testable without a subprocess.
Exit codes: 0 success, 1 problems found (lint errors, failed checks), 2 usage errors.
One module per group of commands::

    cli_lint.py       lint, schema, test, explain (checking a config, nothing runs)
    cli_calls.py      run, call, tools
    cli_audit.py      audit (query, verify)
    cli_serve.py      serve, mcp lock, watch, status
    cli_workflows.py  workflow run|resume|status|list, versions
    cli_common.py     exit codes, loading a config, building a runtime
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from runtime import cli_audit, cli_calls, cli_lint, cli_serve, cli_workflows
from runtime.adapters import PROVIDERS
from runtime.cli_common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, load_snapshot, make_runtime
from runtime.config.models import PermissionMode

__all__ = ["EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "entrypoint", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolrt", description="Declarative tool runtime for LLM agents.")
    parser.add_argument("--version", action="version", version=f"toolrt {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    cli_lint.add_parsers(sub)

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

    cli_calls.add_parsers(sub, runtime_options)
    cli_audit.add_parsers(sub)
    cli_serve.add_parsers(sub)
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
        return cli_lint.cmd_lint(args, out, err)
    if args.command == "schema":
        return cli_lint.cmd_schema(args, out, err)
    if args.command in ("run", "call"):
        return cli_calls.cmd_run(args, out, err)
    if args.command == "tools":
        return cli_calls.cmd_tools(args, out, err)
    if args.command == "test":
        return cli_lint.cmd_test(args, out, err)
    if args.command == "explain":
        return cli_lint.cmd_explain(args, out, err)
    if args.command == "audit":
        return cli_audit.cmd_audit(args, out, err)
    if args.command == "status":
        return cli_serve.cmd_status(args, out, err)
    if args.command == "watch":
        return cli_serve.cmd_watch(args, out, err)
    if args.command == "mcp":
        return cli_serve.cmd_mcp(args, out, err)
    if args.command == "serve":
        return cli_serve.cmd_serve(args, err)
    if args.command == "workflow":
        return cli_workflows.workflow_command(args, out, err, make_runtime, load_snapshot)
    if args.command == "versions":
        return cli_workflows.versions_command(args, out, err, load_snapshot)
    return _demo(args, out, err)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolrt")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def _demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from runtime.demo import run_demo

    return run_demo(args.config, out, err)


def entrypoint() -> None:
    """Console-script entry point."""
    # The command line is toolrt's own application, not a library's guest in someone's
    # process, so it may tune the garbage collector (as mypy's does); library code never
    # does. What exists now (the imported modules: about 60,000 objects) lives as long as
    # the process, yet every full collection walked it again: gc.freeze() leaves it out of
    # them. A 1,000-tool lint spent a fifth of its time in those walks.
    gc.freeze()
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
