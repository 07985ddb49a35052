"""``toolrt demo``: compile the shipped coding-agent example and exercise the snapshot.

Shows what the foundation does today: lint the example, build its snapshot, list the
compiled tools, then check a few model-style calls against the compiled argument
validators and CEL rules (nothing is executed).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from runtime.config.compile import build_snapshot
from runtime.policy.cel import RULE_VARIABLES, get_engine
from runtime.settings import Settings
from runtime.snapshot import CompiledTool, Snapshot

_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("file_read", {"path": "src/app.py", "limit": 50}),
    ("file_read", {"path": "../etc/passwd"}),
    ("file_read", {"path": "src/app.py", "limit": "ten", "lmit": 5}),
    ("file_edit", {"path": "src/app.py", "mode": "str_replace", "old_string": "a"}),
    ("git_push", {"branch": "main"}),
    ("run_tests", {"path": "tests/test_auth.py"}),
]


def default_example() -> Path:
    return Path(__file__).resolve().parent.parent / "examples" / "coding-agent"


def run_demo(config: Path | None, out: TextIO, err: TextIO) -> int:
    """Print the demo; return the exit code."""
    config = config or default_example()
    if not config.is_dir():
        err.write(f"toolrt demo: example config not found at {config}; pass --config DIR\n")
        return 2
    started = time.perf_counter()
    result = build_snapshot([config], Settings())
    elapsed_ms = (time.perf_counter() - started) * 1000
    for problem in result.problems:
        out.write(f"{problem}\n")
    snapshot = result.snapshot
    if snapshot is None:
        out.write("the example does not compile; see the problems above\n")
        return 1
    out.write(f"== snapshot {snapshot.version}: {len(result.files)} files, {result.documents} documents, built in {elapsed_ms:.0f} ms "
              f"(CEL engine: {snapshot.cel_engine}, schema engine: {snapshot.schema_engine})\n\n")
    _tools_table(snapshot, out)
    out.write("\n== model calls checked against the compiled snapshot (validation and rules only)\n")
    for name, args in _CALLS:
        _check_call(snapshot, name, args, out)
    _run_a_turn(config, out)
    return 0


_TURN = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me look around first."},
        {"type": "tool_use", "id": "toolu_01", "name": "tool_search", "input": {"query": "artifact output"}},
        {"type": "tool_use", "id": "toolu_02", "name": "fiel_read", "input": {"path": "README.md"}},
        {"type": "tool_use", "id": "toolu_03", "name": "git_push", "input": {"branch": "main"}},
        {"type": "tool_use", "id": "toolu_04", "name": "git_push", "input": {"branch": "feature/login"}},
        {"type": "tool_use", "id": "toolu_05", "name": "artifact_read", "input": {"id": "../../etc/passwd"}},
    ],
}


def _run_a_turn(config: Path, out: TextIO) -> None:
    """One recorded assistant turn through all seven stages, answered as Anthropic expects."""
    from runtime import adapters
    from runtime.records import Session
    from runtime.runtime import Runtime

    out.write("\n== one assistant turn through the whole pipeline (Anthropic format; nobody is there to approve)\n")
    with tempfile.TemporaryDirectory(prefix="toolrt-demo-") as workspace:
        runtime = Runtime([config], workspace_root=workspace, watch=False)
        calls = adapters.parse_calls("anthropic", _TURN)
        started = time.perf_counter()
        results = runtime.run_turn_sync(calls, Session(id="demo"))
        elapsed_ms = (time.perf_counter() - started) * 1000
        runtime.close_sync()
    for result in results:
        summary = " ".join(result.content.split())
        out.write(f"{result.call_id}  {result.name:14} {result.status.value:9} {summary[:110]}{'...' if len(summary) > 110 else ''}\n")
    reply = adapters.anthropic.render_results(results)
    out.write(f"\n{len(results)} calls, {sum(r.is_error for r in results)} error results, {elapsed_ms:.0f} ms; the reply is one user message with "
              f"{len(reply['content'])} tool_result blocks (toolrt run prints it whole)\n")


def _tools_table(snapshot: Snapshot, out: TextIO) -> None:
    rows = [("tool", "handler", "read_only", "risk", "timeout", "output", "rules", "redaction")]
    for tool in snapshot.tools.values():
        handler = f"{tool.handler.kind}:{tool.handler.target}" if tool.handler.target else tool.handler.kind
        timeout = f"{tool.spec.timeout.total_s:g}s" + (f"/idle {tool.spec.timeout.idle_s:g}s" if tool.spec.timeout.idle_s else "")
        output = f"{tool.output.max_chars} {tool.output.on_success.value}"
        rows.append((tool.key, handler, str(tool.spec.read_only).lower(), tool.spec.risk.value, timeout, output, str(len(tool.rules)), ",".join(r.name for r in tool.redaction) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")


def _check_call(snapshot: Snapshot, name: str, args: dict[str, Any], out: TextIO) -> None:
    tool = snapshot.tools[name]
    out.write(f"\n{name} {args}\n")
    problems = tool.arguments.validate(args)
    if problems:
        for problem in problems:
            out.write(f"  invalid: {problem.message}\n")
        return
    failed = _failed_rules(snapshot, tool, args)
    if failed:
        for message in failed:
            out.write(f"  rejected by rule: {message}\n")
        return
    out.write("  valid: would go on to the permission stage\n")


def _failed_rules(snapshot: Snapshot, tool: CompiledTool, args: dict[str, Any]) -> list[str]:
    engine = get_engine(snapshot.cel_engine)
    data = {"args": args, "tool": {"name": tool.name, "read_only": tool.spec.read_only, "risk": tool.spec.risk.value}, "session": {"id": "demo", "labels": {}}, "call": {"id": "demo-1"}}
    activation = engine.activation(data, RULE_VARIABLES)
    failed = []
    for rule in tool.rules:
        outcome = rule.program.evaluate(activation)
        if not outcome.is_true:
            failed.append(f"[{rule.name}] {rule.message}" + (f" (evaluation error: {outcome.error})" if outcome.error else ""))
    return failed
