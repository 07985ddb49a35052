"""``toolrt workflow run|list`` and ``toolrt versions``: thin adapters over the library."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from runtime.records import Session
from runtime.runtime import Runtime
from runtime.snapshot import Snapshot

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def add_parsers(sub: argparse._SubParsersAction, runtime_options: Callable[[argparse.ArgumentParser], None]) -> None:  # type: ignore[type-arg]
    """Register the ``workflow`` and ``versions`` commands."""
    workflow = sub.add_parser("workflow", help="run or list the workflows of a config")
    actions = workflow.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="run one workflow and print its result (exit 1 unless it succeeded)")
    runtime_options(run)
    run.add_argument("name")
    run.add_argument("--args", default="{}", help="the workflow's arguments as a JSON object")
    run.add_argument("--session", default="cli", help="the session id (it decides canary assignments)")
    listing = actions.add_parser("list", help="list the workflows with their steps")
    listing.add_argument("--config", type=Path, action="append", required=True)
    versions = sub.add_parser("versions", help="show each tool's versions, its rollout and the split it declares")
    versions.add_argument("--config", type=Path, action="append", required=True)


def workflow_command(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    make_runtime: Callable[[argparse.Namespace, TextIO], Runtime | None],
    load: Callable[..., Snapshot | None],
) -> int:
    if args.action == "list":
        snapshot = load(args.config, err)
        if snapshot is None:
            return EXIT_PROBLEMS
        for name, workflow in sorted(snapshot.workflows.items()):
            order = " -> ".join(s.id for s in workflow.steps)
            out.write(
                f"{name}  risk={workflow.risk}  {'read-only' if workflow.read_only else 'writes'}  steps: {order}\n"
            )
        if not snapshot.workflows:
            out.write("no workflows\n")
        return EXIT_OK
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as error:
        err.write(f"toolrt workflow run: --args is not valid JSON: {error}\n")
        return EXIT_USAGE
    if not isinstance(arguments, dict):
        err.write("toolrt workflow run: --args must be a JSON object\n")
        return EXIT_USAGE
    runtime = make_runtime(args, err)
    if runtime is None:
        return EXIT_PROBLEMS
    session = Session(id=args.session, mode=args.mode or runtime.settings.permission_mode.value)
    result = runtime.run_workflow_sync(args.name, arguments, session)
    runtime.close_sync()
    out.write(
        json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
        if args.format == "json"
        else result.render() + "\n"
    )
    return EXIT_OK if result.ok else EXIT_PROBLEMS


def versions_command(args: argparse.Namespace, out: TextIO, err: TextIO, load: Callable[..., Snapshot | None]) -> int:
    snapshot = load(args.config, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    shown = 0
    for name, versions in snapshot.tool_versions.items():
        named = sorted(v for v in versions if v)
        if not named:
            continue
        shown += 1
        default = snapshot.tools[name].version
        out.write(f"{name}: versions {', '.join(named)}; default {default}\n")
        table = snapshot.rollouts.get(name)
        if table is not None:
            split = ", ".join(f"{v}: {p:g}%" for v, p in table.split().items())
            out.write(
                f"  rollout: {split}"
                + (f" (stable {table.stable}, canary {table.canary})" if table.canary else "")
                + "\n"
            )
            if table.rollback is not None:
                rb = table.rollback
                out.write(
                    f"  rollback: canary error rate over stable + {rb.max_error_rate_margin:.0%} in {rb.window_s:g} s (at least {rb.min_calls} calls)\n"
                )
    if not shown:
        out.write("no tool is declared in more than one version\n")
    return EXIT_OK
