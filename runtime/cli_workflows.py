"""``toolrt workflow run|resume|status|list`` and ``toolrt versions``: thin adapters
over the library. ``status`` and ``list`` read the journal of the workspace's runs
(see :mod:`runtime.workflow.journal`) and need no config."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from runtime.cli_common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from runtime.records import Session
from runtime.runtime import Runtime
from runtime.settings import Settings
from runtime.snapshot import Snapshot
from runtime.workflow import WorkflowResult
from runtime.workflow.journal import Journal, JournalError, journal_for, journal_path
from runtime.workflow.resume import summary


def add_parsers(sub: argparse._SubParsersAction, runtime_options: Callable[[argparse.ArgumentParser], None]) -> None:  # type: ignore[type-arg]
    """Register the ``workflow`` and ``versions`` commands."""
    workflow = sub.add_parser("workflow", help="run or list the workflows of a config")
    actions = workflow.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="run one workflow and print its result (exit 1 unless it succeeded)")
    runtime_options(run)
    run.add_argument("name")
    run.add_argument("--args", default="{}", help="the workflow's arguments as a JSON object")
    run.add_argument("--session", default="cli", help="the session id (it decides canary assignments)")
    resume = actions.add_parser(
        "resume", help="go on with a run a stopped process left unfinished (exit 1 unless it ends ok)"
    )
    runtime_options(resume)
    resume.add_argument("run_id")
    status = actions.add_parser("status", help="show one journaled run: its state and its steps'")
    status.add_argument("run_id")
    _journal_options(status)
    listing = actions.add_parser("list", help="list the journaled runs (and, with --config, the workflows)")
    listing.add_argument("--config", type=Path, action="append", default=None)
    listing.add_argument("--limit", type=int, default=20, help="the newest runs shown (default 20)")
    _journal_options(listing)
    versions = sub.add_parser("versions", help="show each tool's versions, its rollout and the split it declares")
    versions.add_argument("--config", type=Path, action="append", required=True)


def _journal_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="the workspace the runs ran in (default: the workspace_root setting)",
    )
    command.add_argument("--format", choices=("json", "text"), default="text")


def _journal(args: argparse.Namespace, err: TextIO) -> Journal | None:
    settings = Settings()
    workspace = args.workspace or settings.workspace_root
    try:
        journal = journal_for(settings, workspace) if _journal_exists(settings, workspace) else None
        if journal is None:
            path = journal_path(settings, workspace)
            raise JournalError(
                "workflow runs are not journaled (the workflow_journal setting is off)"
                if path is None
                else f"no workflow journal at {path}: no run has been journaled for workspace {workspace}."
            )
    except JournalError as error:
        err.write(f"toolrt workflow {args.action}: {error}\n")
        return None
    return journal


def _journal_exists(settings: Settings, workspace: Path) -> bool:
    path = journal_path(settings, workspace)
    return path is not None and path.exists()


def _status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    journal = _journal(args, err)
    if journal is None:
        return EXIT_PROBLEMS
    try:
        record = journal.load(args.run_id)
    except JournalError as error:
        err.write(f"toolrt workflow status: {error}\n")
        return EXIT_PROBLEMS
    shown = summary(record)
    if args.format == "json":
        out.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    out.write(f"run {shown['run_id']}  workflow {shown['workflow']}  {shown['status']}\n")
    if "owner" in shown:
        owner = shown["owner"]
        state = "still running" if owner["alive"] else "stopped: resume it with `toolrt workflow resume`"
        out.write(f"  process {owner['pid']}: {state}\n")
    for step in shown["steps"]:
        out.write(f"  - {step['id']}: {step['status']}" + (f": {step['reason']}" if step.get("reason") else "") + "\n")
    for comp in shown.get("compensations", ()):
        out.write(f"  undone {comp['step']}: {comp['status']}\n")
    return EXIT_OK


def _list(args: argparse.Namespace, out: TextIO, err: TextIO, load: Callable[..., Snapshot | None]) -> int:
    if args.config:
        snapshot = load(args.config, err)
        if snapshot is None:
            return EXIT_PROBLEMS
        for name, workflow in sorted(snapshot.workflows.items()):
            order = " -> ".join(s.id for s in workflow.steps)
            kind = "read-only" if workflow.read_only else "writes"
            out.write(f"{name}  risk={workflow.risk}  {kind}  steps: {order}\n")
        if not snapshot.workflows:
            out.write("no workflows\n")
    settings = Settings()
    if not _journal_exists(settings, args.workspace or settings.workspace_root):
        if not args.config:
            out.write("no journaled runs\n")
        return EXIT_OK
    journal = _journal(args, err)
    if journal is None:
        return EXIT_PROBLEMS
    try:
        runs = journal.runs(args.limit)
    except JournalError as error:
        err.write(f"toolrt workflow list: {error}\n")
        return EXIT_PROBLEMS
    if args.format == "json":
        out.write(json.dumps([summary(r, alive=False) | {"steps": None} for r in runs], indent=2) + "\n")
        return EXIT_OK
    out.write("runs (newest first):\n" if runs else "no journaled runs\n")
    for record in runs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
        out.write(f"  {record.run_id}  {record.workflow}  {record.status}  started {when}\n")
    return EXIT_OK


def workflow_command(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    make_runtime: Callable[[argparse.Namespace, TextIO], Runtime | None],
    load: Callable[..., Snapshot | None],
) -> int:
    """``toolrt workflow run|resume|status|list``."""
    if args.action == "list":
        return _list(args, out, err, load)
    if args.action == "status":
        return _status(args, out, err)
    if args.action == "resume":
        runtime = make_runtime(args, err)
        if runtime is None:
            return EXIT_PROBLEMS
        session = Session(id="cli", mode=args.mode) if args.mode else None
        result = runtime.resume_workflow_sync(args.run_id, session)
        runtime.close_sync()
        return _report(args, result, out, err)
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
    return _report(args, result, out, err)


def _report(args: argparse.Namespace, result: WorkflowResult, out: TextIO, err: TextIO) -> int:
    if result.error and not result.steps:
        err.write(f"toolrt workflow {args.action}: {result.error}\n")
        return EXIT_PROBLEMS
    out.write(
        json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
        if args.format == "json"
        else result.render() + "\n"
    )
    return EXIT_OK if result.ok else EXIT_PROBLEMS


def versions_command(args: argparse.Namespace, out: TextIO, err: TextIO, load: Callable[..., Snapshot | None]) -> int:
    """``toolrt versions``: each tool's versions, its rollout and the split it declares."""
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
                    f"  rollback: canary error rate over stable + {rb.max_error_rate_margin:.0%} in {rb.window_s:g}"
                    f" s (at least {rb.min_calls} calls)\n"
                )
    if not shown:
        out.write("no tool is declared in more than one version\n")
    return EXIT_OK
