"""``toolrt audit``: query the audit log, or verify its hash chain (SQLite, JSON lines, PostgreSQL)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from runtime.audit import format_json, format_table, parse_since, query
from runtime.audit.location import store_path
from runtime.audit.query import ANY_STAGED
from runtime.audit.verify import parse_anchor, report_json, verify
from runtime.cli_common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
)
from runtime.errors import UsageError
from runtime.fleet import setup as fleet_setup
from runtime.settings import Settings


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register the `audit` commands."""
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
        help="read the PostgreSQL audit log of a fleet (default: the audit_sink setting when it is a postgresql://"
        " URL)",
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
    audit.add_argument(
        "--staged",
        nargs="?",
        const=ANY_STAGED,
        default=None,
        metavar="POLICY/RULE",
        help=(
            "only calls a rule under staged rollout (enforce: warn or audit) matched; with POLICY/RULE, only those "
            "that rule matched. DETAIL shows what each such rule would have done"
        ),
    )
    audit.add_argument("--since", default=None, help="only calls since: 15m, 2h, 7d, or an ISO-8601 date/time")
    audit.add_argument("--until", default=None, help="only calls before: same forms as --since")
    audit.add_argument("--limit", type=int, default=100, help="at most this many calls, newest first (default 100)")
    audit.add_argument("--format", choices=("table", "json"), default="table")


def cmd_audit(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt audit``: query the audit log, or verify its hash chain."""
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
            staged=args.staged,
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
        if _filters_given_to_verify(args, err):
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
            staged=args.staged,
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
    if _filters_given_to_verify(args, err):
        return EXIT_USAGE
    try:
        anchors = dict(parse_anchor(text) for text in args.anchor)
        report = verify(store, anchors=anchors)
    except (ValueError, UsageError) as error:
        err.write(f"toolrt audit verify: {error}\n")
        return EXIT_USAGE
    out.write((report_json(report) if args.format == "json" else report.to_text()) + "\n")
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _filters_given_to_verify(args: argparse.Namespace, err: TextIO) -> bool:
    """Whether ``verify`` was given a query filter (said on ``err``): it walks the whole log."""
    filters = [
        name for name in ("session", "tool", "status", "staged", "since", "until") if getattr(args, name) is not None
    ]
    if filters:
        err.write(f"toolrt audit verify: --{filters[0]} filters a query; verify walks the whole log\n")
    return bool(filters)
