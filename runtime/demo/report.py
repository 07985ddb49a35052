"""How the demo shows things: the compiled tools, each result in short, the summary table."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any, TextIO

from runtime.records import ToolResult
from runtime.snapshot import Snapshot


def table(rows: Sequence[Sequence[str]], out: TextIO, indent: str = "") -> None:
    """Left-aligned columns; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n"
        )


def tools_table(snapshot: Snapshot, out: TextIO) -> None:
    """One row per compiled tool: handler, attributes, limits, rules and redaction."""
    rows = [("tool", "handler", "read_only", "risk", "timeout", "output", "rules", "redaction")]
    for tool in snapshot.tools.values():
        handler = f"{tool.handler.kind}:{tool.handler.target}" if tool.handler.target else tool.handler.kind
        timeout = f"{tool.spec.timeout.total_s:g}s" + (
            f"/idle {tool.spec.timeout.idle_s:g}s" if tool.spec.timeout.idle_s else ""
        )
        output = f"{tool.output.max_chars} {tool.output.on_success.value}"
        rows.append(
            (
                tool.key,
                handler,
                str(tool.spec.read_only).lower(),
                tool.spec.risk.value,
                timeout,
                output,
                str(len(tool.rules)),
                ",".join(r.name for r in tool.redaction) or "-",
            )
        )
    table(rows, out)


def duration_ms(result: ToolResult) -> float:
    """How long the call took in all, from its recorded stage timings (0 when absent)."""
    timings = result.metadata.get("timings_ms") or {}
    return float(timings.get("total_ms", 0.0))


def result_lines(result: ToolResult, out: TextIO, max_lines: int = 7, width: int = 110) -> None:
    """One header line per result, then the start of what the model reads (long lines wrapped)."""
    code = f" ({result.code})" if result.code and result.is_error and result.code != result.status.value else ""
    out.write(
        f"  <- {result.call_id} {result.name}: {result.status.value}{code}, {duration_ms(result):.0f} "
        f"ms{_flags(result)}\n"
    )
    lines = [
        piece
        for line in result.content.splitlines()
        for piece in (textwrap.wrap(line.expandtabs(4), width, drop_whitespace=False) or [""])
    ]
    for line in lines[:max_lines]:
        out.write(f"       | {line.rstrip()}\n")
    if len(lines) > max_lines:
        out.write(f"       | ... ({len(result.content):,} characters in all)\n")


def _flags(result: ToolResult) -> str:
    flags = []
    if result.metadata.get("truncated"):
        flags.append(f"truncated from {result.metadata.get('original_chars', 0):,} characters")
    redactions = _redactions(result)
    if redactions != "-":
        flags.append(f"redacted {redactions}")
    return "".join(f"; {flag}" for flag in flags)


def _redactions(result: ToolResult) -> str:
    counts: dict[str, Any] = dict(result.metadata.get("redactions") or {})
    return ", ".join(f"{name} x{count}" for name, count in sorted(counts.items())) or "-"


def summary(results: Sequence[ToolResult], out: TextIO) -> None:
    """Every call of the session: status, decision, duration, truncation, redactions."""
    rows = [("call", "tool", "status", "code", "decision", "ms", "truncated", "redactions")]
    for result in results:
        meta = result.metadata
        decision = str(meta.get("decision") or "-") + (" (approved)" if meta.get("approved") else "")
        truncated = (
            f"{meta.get('original_chars', 0):,} chars -> {meta.get('artifact_id') or meta.get('mode')}"
            if meta.get("truncated")
            else "-"
        )
        rows.append(
            (
                result.call_id,
                result.name,
                result.status.value,
                result.code or "-",
                decision,
                f"{duration_ms(result):.0f}",
                truncated,
                _redactions(result),
            )
        )
    table(rows, out, indent="  ")
    errors = sum(r.is_error for r in results)
    truncated_count = sum(bool(r.metadata.get("truncated")) for r in results)
    redacted = sum(bool(r.metadata.get("redactions")) for r in results)
    out.write(
        f"  {len(results)} calls: {len(results) - errors} ok, {errors} error results; {truncated_count} truncated, "
        f"{redacted} with redactions\n"
    )
