"""``toolrt lint``, ``schema``, ``test`` and ``explain``: checking a config without running it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from runtime.cli_common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    engine_settings,
    load_snapshot,
    locked_tools,
    report_missing,
    session_from_json,
)
from runtime.config.compile import build_snapshot
from runtime.config.schema import all_schemas, render
from runtime.dryrun.explain import explain
from runtime.dryrun.policytests import run_policy_tests
from runtime.lint.report import FORMATS
from runtime.lint.report import render as render_report
from runtime.policy.placed import NOWHERE, Where
from runtime.settings import Settings


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register the `lint`, `schema`, `test`, `explain` commands."""
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


def cmd_lint(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt lint``: compile the config and report every problem (exit 1 on errors, or warnings with --strict)."""
    try:
        settings = engine_settings(args.engine)
    except Exception as error:  # noqa: BLE001 - bad TOOLRT_* settings are a usage error
        err.write(f"toolrt: invalid settings: {error}\n")
        return EXIT_USAGE
    paths = args.paths or [settings.config_dir]
    if report_missing(paths, err, "file or directory"):
        return EXIT_USAGE
    result = build_snapshot(paths, settings, mount=locked_tools(paths))
    out.write(
        render_report(
            result.problems, args.format, files=len(result.files), documents=result.documents, strict=args.strict
        )
    )
    failing = [p for p in result.problems if p.is_error or args.strict]
    return EXIT_PROBLEMS if failing else EXIT_OK


def cmd_schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt schema``: print, write or check the JSON Schemas of the config kinds, or the YAML reference."""
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
            f"toolrt schema: {target} has no reference markers; add these two lines where the reference"
            f" goes:\n{BEGIN}\n{END}\n"
        )
        return EXIT_USAGE
    target.write_text(update_between_markers(text), encoding="utf-8")
    out.write(f"updated the reference in {target}\n")
    return EXIT_OK


def cmd_test(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt test``: run the config's PolicyTest cases (nothing is executed)."""
    paths = args.paths or [Settings().config_dir]
    if report_missing(paths, err, "file or directory"):
        return EXIT_USAGE
    snapshot = load_snapshot(paths, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    results = run_policy_tests(snapshot)
    if not results:
        err.write(
            "toolrt test: no PolicyTest cases in the config: a test run that checks nothing does not pass. Add a"
            " PolicyTest document.\n"
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


def cmd_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``toolrt explain``: dry-run one call through lookup, validation and permission."""
    try:
        call_args = json.loads(args.args)
        raw_session = json.loads(args.session)
    except json.JSONDecodeError as error:
        err.write(f"toolrt explain: --args and --session must be JSON: {error}\n")
        return EXIT_USAGE
    session = session_from_json(raw_session)
    if isinstance(session, str):
        err.write(f"toolrt explain: --session {session}\n")
        return EXIT_USAGE
    if report_missing(args.config, err):
        return EXIT_USAGE
    snapshot = load_snapshot(args.config, err)
    if snapshot is None:
        return EXIT_PROBLEMS
    where = NOWHERE
    settings = Settings()
    if args.workspace is not None:
        where = Where.of(args.workspace, (), settings.commands_outside_workspace, configs=args.config)
    explanation = explain(
        snapshot,
        args.tool,
        call_args if isinstance(call_args, dict) else None,
        session,
        where,
        max_processes=settings.command_max_processes,
    )
    out.write((explanation.to_json() if args.format == "json" else explanation.to_text()) + "\n")
    return EXIT_OK
