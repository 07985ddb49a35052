"""A finished run's result as the journal stores it: the JSON of
:meth:`WorkflowResult.to_dict`, written without building those dicts first.

Every run writes this text once, when it ends; it is most of the journal's cost for a
run that only reads. The parts that repeat from run to run (a step's id and tool, the
workflow's name) are encoded once and kept; only the values of this run are encoded
each time. ``json.loads(result_text(r)) == r.to_dict()`` (tests hold it to that).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _text  # a str as a JSON string (C), as dumps(ensure_ascii=False)

from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult

_HEADS: dict[tuple[str, str, str], str] = {}  # (kind, id, tool) -> the constant start of its object
_HEADS_MAX = 4096  # distinct steps seen; past it the cache starts again (names come from configs)


def _head(kind: str, name: str, tool: str) -> str:
    key = (kind, name, tool)
    head = _HEADS.get(key)
    if head is None:
        if len(_HEADS) >= _HEADS_MAX:
            _HEADS.clear()
        field = "id" if kind == "step" else "step"
        head = _HEADS[key] = f'{{"{field}":{_text(name)},"tool":{_text(tool)},"status":'
    return head


def _number(value: float) -> str:
    # round(value, 3) as JSON: ".3f" is the same decimal rounding (the same number once
    # read, trailing zeros aside) at a third of the cost. Not finite: what json writes.
    return f"{value:.3f}" if value - value == 0 else json.dumps(round(value, 3))


def _step(report: StepReport) -> str:
    result = report.result
    reason = f',"reason":{_text(report.reason)}' if report.reason else ""
    tail = "}" if result is None else f',"code":{_optional(result.code)},"call_id":{_text(result.call_id)}}}'
    return (
        f"{_head('step', report.id, report.tool)}{_text(report.status)},"
        f'"duration_ms":{_number(report.duration_ms)},"attempts":{int(report.attempts)}{reason}{tail}'
    )


def _compensation(report: CompensationReport) -> str:
    result = report.result
    reason = f',"reason":{_text(report.reason)}' if report.reason else ""
    tail = "}" if result is None else f',"call_id":{_text(result.call_id)}}}'
    return (
        f"{_head('compensation', report.step, report.tool)}{_text(report.status)},"
        f'"duration_ms":{_number(report.duration_ms)}{reason}{tail}'
    )


def _optional(value: str | None) -> str:
    return "null" if value is None else _text(value)


def result_text(result: WorkflowResult) -> str:
    """``result.to_dict()`` as compact JSON."""
    steps = ",".join([_step(s) for s in result.steps])
    compensations = ",".join([_compensation(c) for c in result.compensations]) if result.compensations else ""
    error = f',"error":{_text(result.error)}' if result.error else ""
    note = f',"note":{_text(result.note)}' if result.note else ""
    return (
        f'{{"run_id":{_text(result.run_id)},"workflow":{_text(result.workflow)},"status":{_text(result.status)},'
        f'"duration_ms":{_number(result.duration_ms)},"steps":[{steps}],"compensations":[{compensations}]{error}{note}}}'
    )
