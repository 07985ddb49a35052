"""What the ``toolrt`` commands share: exit codes, loading a config, building a runtime."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from runtime.approvers import TerminalApprover
from runtime.config.compile import build_snapshot
from runtime.config.models import PermissionMode
from runtime.errors import ConfigError
from runtime.mcpclient.lock import LockedMounter, read_lock
from runtime.records import Session
from runtime.runtime import Runtime
from runtime.settings import Settings
from runtime.snapshot import Snapshot

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def engine_settings(engine: str | None) -> Settings:
    """Settings with the CEL and JSON Schema engine of ``--engine`` (None: as configured)."""
    if engine is None:
        return Settings()
    return Settings.model_validate({"cel_engine": engine, "schema_engine": engine})


def report_missing(paths: Sequence[Path], err: TextIO, what: str = "config") -> bool:
    """Say which of ``paths`` do not exist (True if any)."""
    missing = [p for p in paths if not p.exists()]
    if missing:
        err.write(f"toolrt: no such {what}: {', '.join(map(str, missing))}\n")
    return bool(missing)


def print_problems(error: ConfigError, err: TextIO) -> None:
    """Print every problem of a config that did not compile."""
    for problem in error.problems:
        err.write(f"{problem}\n")


def load_snapshot(paths: Sequence[Path], err: TextIO) -> Snapshot | None:
    """The compiled config, or None after printing every problem."""
    result = build_snapshot(paths, Settings(), mount=locked_tools(paths))
    if result.snapshot is None:
        print_problems(ConfigError(result.problems), err)
        return None
    return result.snapshot


def locked_tools(paths: Sequence[Path]) -> LockedMounter | None:
    """The tools of the config's MCP lock file, mounted offline (None without a lock)."""
    listings = read_lock(list(paths))
    return LockedMounter(listings) if listings is not None else None


def make_runtime(args: argparse.Namespace, err: TextIO) -> Runtime | None:
    """The Runtime a one-shot command runs with (None after printing the config's problems)."""
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
        print_problems(error, err)
        return None


def session_from_json(raw: object) -> Session | str:
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
