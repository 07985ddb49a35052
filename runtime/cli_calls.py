"""``toolrt run``, ``call`` and ``tools``: one turn of calls, and the tool definitions."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from runtime import adapters
from runtime.adapters import mcp as mcp_adapter
from runtime.cli_common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    load_snapshot,
    make_runtime,
    report_missing,
)
from runtime.records import Call, Session


def add_parsers(sub: argparse._SubParsersAction, runtime_options: Callable[[argparse.ArgumentParser], None]) -> None:  # type: ignore[type-arg]
    """Register the `run`, `call`, `tools` commands."""
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
            f"the calls file holds a JSON {type(payload).__name__}: give the assistant message, its list of calls,"
            f" or one call",
        )
    return payload, None


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt run`` and ``toolrt call``: run one turn's calls (or one call) and print what to send back."""
    if report_missing(args.config, err):
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
    runtime = make_runtime(args, err)
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
                f"toolrt run: no {args.provider} tool call found in the calls file (is --provider right?); nothing"
                f" was run\n"
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


def cmd_tools(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt tools``: print the tool definitions in a provider's format."""
    snapshot = load_snapshot(args.config, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    provider = "openai-chat" if args.provider == "openai" else args.provider
    definitions = (
        mcp_adapter.tool_definitions(snapshot) if provider == "mcp" else adapters.tool_definitions(provider, snapshot)
    )
    out.write(json.dumps(definitions, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK
