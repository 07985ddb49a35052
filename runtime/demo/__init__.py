"""``toolrt demo``: a scripted coding-agent session through the real runtime.

The shipped example (``examples/coding-agent``) is compiled, its project template
(``workspace/`` beside the config) is copied to a temporary directory, and the turns of
:mod:`runtime.demo.script` go through :class:`runtime.Runtime` as Anthropic assistant
messages: parsed with :func:`runtime.adapters.parse_calls`, answered with
:func:`runtime.adapters.render_results`. Real files, real subprocesses, no network:
parallel reads, a denied read, an edit conflict and its retry, a test run stopped by
its timeout, an output turned into an artifact and paged, a redacted secret. Then a
summary of every call. Everything is written to the ``out`` stream it is given.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from runtime import adapters
from runtime.approvers import AskedApproval, ScriptedApprover
from runtime.audit import query
from runtime.config.compile import build_snapshot
from runtime.demo.report import result_lines, summary, tools_table
from runtime.demo.script import APPROVALS, STEPS, TASK, OffScript, ScriptState, Step, Turn
from runtime.demo.workspace import interpreter_on_path, populate
from runtime.errors import ConfigError, UsageError
from runtime.records import Session, ToolResult
from runtime.runtime import Runtime
from runtime.settings import Settings

__all__ = ["default_example", "run_demo"]


def default_example() -> Path:
    """The shipped coding-agent example: the config the demo runs when none is given
    (the source checkout's ``examples/``, or the copy installed inside the package)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package.parent / "examples" / "coding-agent", package / "_examples" / "coding-agent"):
        if candidate.is_dir():
            return candidate
    return package / "_examples" / "coding-agent"


def run_demo(config: Path | None, out: TextIO, err: TextIO) -> int:
    """Run the scripted session against ``config`` (default: the shipped example); return the exit code."""
    started = time.perf_counter()
    config = config or default_example()
    if not config.is_dir():
        err.write(f"toolrt demo: example config not found at {config}; pass --config DIR\n")
        return 2
    template = config / "workspace"
    if not template.is_dir():
        err.write(f"toolrt demo: {config} has no workspace/ folder holding the project the scripted session works on\n")
        return 2
    result = build_snapshot([config], Settings())
    for problem in result.problems:
        out.write(f"{problem}\n")
    if result.snapshot is None:
        out.write("the example does not compile; see the problems above\n")
        return 1
    snapshot = result.snapshot
    out.write(
        f"== snapshot {snapshot.version}: {len(result.files)} files, {result.documents} documents, built in "
        f"{(time.perf_counter() - started) * 1000:.0f} ms (CEL engine: {snapshot.cel_engine}, schema engine: "
        f"{snapshot.schema_engine})\n\n"
    )
    tools_table(snapshot, out)
    try:
        results = _session(config, template, out)
    except (ConfigError, OffScript) as error:
        err.write(f"toolrt demo: {error}\n")
        return 1
    out.write("\n== summary\n")
    summary(results, out)
    out.write(f"\ndemo finished in {time.perf_counter() - started:.1f} s\n")
    return 0


def _session(config: Path, template: Path, out: TextIO) -> list[ToolResult]:
    """The scripted turns, in a fresh copy of the example project; every result, in order."""
    every: list[ToolResult] = []
    approver = ScriptedApprover(APPROVALS, on_ask=lambda asked: _show_approval(asked, out))
    with tempfile.TemporaryDirectory(prefix="toolrt-demo-") as directory, interpreter_on_path():
        workspace = Path(directory) / "workspace"
        workspace.mkdir()
        populate(template, workspace)
        # The audit log, artifacts and locks go to a state folder beside the workspace
        # (out of the agent's reach, as always), removed with it at the end.
        settings = Settings(state_dir=Path(directory) / "state", hot_reload=False)
        runtime = Runtime([config], settings=settings, workspace_root=workspace, approver=approver, watch=False)
        session = Session(id="demo", mode="default")
        out.write(
            f"\n== a scripted session in a copy of {template.name}/ (a temporary directory)\ntask: {TASK}\nsession "
            f"`{session.id}`, permission mode `{session.mode}`: read-only calls run, edits and commands ask.\nNobody "
            "is there to answer, so a ScriptedApprover does: it approves edits under src/ and `python scripts/...` "
            "commands, nothing else.\n"
        )
        state = ScriptState(workspace)
        try:
            for number, step in enumerate(STEPS, 1):
                every.extend(_play(number, step, state, runtime, session, out))
        finally:
            runtime.close_sync()
        records = _audit_records(runtime)
        if records:
            out.write(
                f"\naudit log: {len(records)} records in {runtime.audit_path()} (toolrt audit shows them; removed "
                "with the temporary folder)\n"
            )
    return every


def _play(
    number: int, step: Step, state: ScriptState, runtime: Runtime, session: Session, out: TextIO
) -> list[ToolResult]:
    """One scripted turn: the assistant message, its results, and what the step checks."""
    out.write(f"\n-- {number}. {step.title}: {step.shows}\n")
    message = step.reply(state)
    for block in message["content"]:
        if block["type"] == "text":
            out.write(f"  assistant: {block['text']}\n")
        else:
            out.write(f"  -> {block['id']} {block['name']} {_args(block['input'])}\n")
    calls = adapters.parse_calls("anthropic", message)
    if not calls:
        return []
    began, turn_started = time.time(), time.perf_counter()
    results = runtime.run_turn_sync(calls, session)
    turn = Turn(results, (time.perf_counter() - turn_started) * 1000, _spans(runtime, session, began))
    reply = adapters.render_results("anthropic", results)  # the user message a model would get next
    state.record([reply])
    for result in results:
        result_lines(result, out)
    for note in step.observe(state, turn) if step.observe else []:
        out.write(
            f"       {note}\n" if note.startswith("  ") else f"  => {note}\n"
        )  # indented notes continue the one above
    return results


def _audit_records(runtime: Runtime, session: str = "demo", since: float | None = None) -> list[dict[str, Any]]:
    """The session's audit records (newest first), or none when the audit log is off or unreadable."""
    if runtime.audit is None:
        return []
    runtime.audit.flush()  # records are written in batches by a background thread
    try:
        return query(runtime.audit_path(), session=session, since=since, limit=None)
    except (UsageError, OSError):
        return []


def _spans(runtime: Runtime, session: Session, began: float) -> dict[str, tuple[float, float]]:
    """When each call of the turn that began at ``began`` ran, in ms after that: an audit
    record is made as its call ends and holds its duration."""
    spans = {}
    for row in _audit_records(runtime, session.id, since=began):
        if isinstance(row.get("ts"), float | int) and isinstance(row.get("duration_ms"), float | int):
            end = (row["ts"] - began) * 1000
            spans[str(row["call_id"])] = (end - row["duration_ms"], end)
    return spans


def _args(args: dict[str, Any]) -> str:
    """Arguments in one line; long strings (hashes) shortened."""
    return " ".join(
        f"{key}={value!r}" if not isinstance(value, str) or len(value) <= 40 else f"{key}={value[:12]!r}..."
        for key, value in args.items()
    )


def _show_approval(asked: AskedApproval, out: TextIO) -> None:
    why = f"rule `{asked.rule}`" if asked.rule else "the session's mode"
    verdict = "approved" if asked.approval.approved else "declined"
    out.write(f"  ?  approval asked for {asked.tool} ({why}): {verdict} by the script\n")
