"""What a workflow run returns: each step's status and duration, and what was undone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.records import ToolResult

_SHOWN_CHARS = 2000


@dataclass(frozen=True, slots=True)
class StepReport:
    """One step of a run.

    ``status``: ``ok``; ``failed`` (the call ended in an error: its ``result`` says
    which); ``unknown`` (a write that timed out or was cut short: it may or may not
    have taken effect); ``skipped`` (its ``when`` was false); ``not_run`` (an upstream
    step did not complete, or the run stopped first)."""

    id: str
    tool: str
    status: str
    duration_ms: float = 0.0
    attempts: int = 0
    reason: str | None = None
    result: ToolResult | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "tool": self.tool,
            "status": self.status,
            "duration_ms": round(self.duration_ms, 3),
            "attempts": self.attempts,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.result is not None:
            out["code"] = self.result.code
            out["call_id"] = self.result.call_id
        return out


@dataclass(frozen=True, slots=True)
class CompensationReport:
    """The undoing of one completed step: ``ok``, ``failed`` (the call failed),
    ``refused`` (it could not safely run, e.g. the file changed since) or
    ``not_declared`` (the step changed something and declares no compensation)."""

    step: str
    tool: str
    status: str
    reason: str | None = None
    duration_ms: float = 0.0
    result: ToolResult | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "tool": self.tool,
            "status": self.status,
            "duration_ms": round(self.duration_ms, 3),
        }
        if self.reason:
            out["reason"] = self.reason
        if self.result is not None:
            out["call_id"] = self.result.call_id
        return out


@dataclass(frozen=True, slots=True)
class WorkflowResult:
    """A whole run. ``status``: ``ok`` (every step ok or skipped), ``failed``,
    ``compensated`` (a step failed and every completed step that needed it was undone)
    or ``compensation_failed`` (some could not be undone: see ``compensations``)."""

    run_id: str
    workflow: str
    status: str
    steps: tuple[StepReport, ...]
    compensations: tuple[CompensationReport, ...] = ()
    duration_ms: float = 0.0
    error: str | None = None  # why the run could not start (bad input)
    note: str | None = None  # how a resumed run went on ("resumed after ...", "already finished")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def step(self, step_id: str) -> StepReport | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "duration_ms": round(self.duration_ms, 3),
            "steps": [s.to_dict() for s in self.steps],
            "compensations": [c.to_dict() for c in self.compensations],
        }
        if self.error:
            out["error"] = self.error
        if self.note:
            out["note"] = self.note
        return out

    def render(self) -> str:
        """The text the model reads when the workflow is called as a tool."""
        if self.error:
            return f"Workflow `{self.workflow}` did not start: {self.error}"
        done = {
            "ok": "finished",
            "failed": "failed",
            "compensated": "failed and its completed steps were undone",
            "compensation_failed": "failed, and undoing its completed steps failed too",
        }
        lines = [
            f"Workflow `{self.workflow}` {done.get(self.status, self.status)} (run {self.run_id},"
            f" {self.duration_ms:.0f} ms)."
        ]
        if self.note:
            lines.append(self.note)
        for s in self.steps:
            line = f"- {s.id} ({s.tool}): {s.status}, {s.duration_ms:.0f} ms" + (
                f", {s.attempts} attempts" if s.attempts > 1 else ""
            )
            if s.reason:
                line += f": {s.reason}"
            lines.append(line)
            if s.result is not None and s.status in ("ok", "failed", "unknown"):
                text = s.result.content
                shown = (
                    text
                    if len(text) <= _SHOWN_CHARS
                    else text[:_SHOWN_CHARS] + f"... [{len(text) - _SHOWN_CHARS:,} more characters]"
                )
                lines.append("  " + shown.replace("\n", "\n  "))
        if self.compensations:
            lines.append("Compensations (in the order they ran):")
            for c in self.compensations:
                lines.append(f"- {c.step} via {c.tool}: {c.status}" + (f": {c.reason}" if c.reason else ""))
        return "\n".join(lines)


# The run's own path builds a report per step and a result per run. A frozen dataclass's
# __init__ sets each field through object.__setattr__ (a generic attribute lookup per
# field, ~1 us a report); these set the same slots through their descriptors directly
# and make the very same objects (tests compare them field by field).
_new = object.__new__
_STEP_SLOTS = tuple(StepReport.__dict__[name].__set__ for name in StepReport.__slots__)
_RESULT_SLOTS = tuple(WorkflowResult.__dict__[name].__set__ for name in WorkflowResult.__slots__)


def step_report(
    id: str,  # noqa: A002 - the field's name
    tool: str,
    status: str,
    duration_ms: float,
    attempts: int,
    reason: str | None,
    result: ToolResult | None,
) -> StepReport:
    """``StepReport(id, tool, status, duration_ms, attempts, reason, result)``, made faster."""
    report = _new(StepReport)
    s_id, s_tool, s_status, s_duration, s_attempts, s_reason, s_result = _STEP_SLOTS
    s_id(report, id)
    s_tool(report, tool)
    s_status(report, status)
    s_duration(report, duration_ms)
    s_attempts(report, attempts)
    s_reason(report, reason)
    s_result(report, result)
    return report


def workflow_result(
    run_id: str,
    workflow: str,
    status: str,
    steps: tuple[StepReport, ...],
    compensations: tuple[CompensationReport, ...],
    duration_ms: float,
    note: str | None,
) -> WorkflowResult:
    """``WorkflowResult(run_id, workflow, status, steps, compensations, duration_ms, note=note)``, made faster."""
    made = _new(WorkflowResult)
    s_run, s_workflow, s_status, s_steps, s_compensations, s_duration, s_error, s_note = _RESULT_SLOTS
    s_run(made, run_id)
    s_workflow(made, workflow)
    s_status(made, status)
    s_steps(made, steps)
    s_compensations(made, compensations)
    s_duration(made, duration_ms)
    s_error(made, None)
    s_note(made, note)
    return made


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` with read-only mappings and tuples turned into dicts and lists (what CEL
    and JSON take)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if depth > 32:
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v, depth + 1) for v in value]
    return str(value)
