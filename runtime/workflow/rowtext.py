"""A finished run's result as the journal stores it: the JSON of
:meth:`WorkflowResult.to_dict`, written without building those dicts first.

Every run writes this text once, when it ends; it is most of the journal's cost for a
run that only reads. The parts that repeat from run to run (a step's id and tool) are
encoded once, as a %-format kept per step; only the values of this run are encoded
each time, and a step's object is one formatting operation. A workflow's run whose
steps all ran once and are ok (the common case) is one formatting operation in all,
through a format made when the workflow is compiled (:func:`ok_format`).
``json.loads(result_text(r)) == r.to_dict()`` (tests hold it to that).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring as _text  # a str as a JSON string (C), as dumps(ensure_ascii=False)
from typing import Any

from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult

_STEPS: dict[tuple[str, str, bool], str] = {}  # (id, tool, with a result) -> the step's object with %-slots
_COMPENSATIONS: dict[tuple[str, str, bool], str] = {}  # likewise for a compensation
_CACHE_MAX = 4096  # distinct steps seen; past it a cache starts again (names come from configs)
_RUN = '{"run_id":%s,"workflow":%s,"status":%s,"duration_ms":%s,"steps":[%s],"compensations":[%s]%s%s}'


def _step_format(name: str, tool: str, with_result: bool) -> str:
    key = (name, tool, with_result)
    found = _STEPS.get(key)
    if found is None:
        if len(_STEPS) >= _CACHE_MAX:
            _STEPS.clear()
        tail = ',"code":%s,"call_id":%s}' if with_result else "}"
        found = _STEPS[key] = (
            f'{{"id":{_pct(name)},"tool":{_pct(tool)},"status":%s,"duration_ms":%s,"attempts":%d%s{tail}'
        )
    return found


def _compensation_format(step: str, tool: str, with_result: bool) -> str:
    key = (step, tool, with_result)
    found = _COMPENSATIONS.get(key)
    if found is None:
        if len(_COMPENSATIONS) >= _CACHE_MAX:
            _COMPENSATIONS.clear()
        tail = ',"call_id":%s}' if with_result else "}"
        found = _COMPENSATIONS[key] = f'{{"step":{_pct(step)},"tool":{_pct(tool)},"status":%s,"duration_ms":%s%s{tail}'
    return found


def _pct(name: str) -> str:
    # A name as a JSON string inside a %-format: its own % signs doubled.
    return _text(name).replace("%", "%%")


def _number(value: float) -> str:
    # round(value, 3) as JSON: ".3f" is the same decimal rounding (the same number once
    # read, trailing zeros aside) at a third of the cost. Not finite: what json writes.
    return f"{value:.3f}" if value - value == 0 else json.dumps(round(value, 3))


def _step(report: StepReport) -> str:
    result = report.result
    reason = report.reason
    duration = report.duration_ms
    if result is None:
        return _step_format(report.id, report.tool, False) % (
            _text(report.status),
            _number(duration),
            report.attempts,
            f',"reason":{_text(reason)}' if reason else "",
        )
    code = result.code
    return _step_format(report.id, report.tool, True) % (
        _text(report.status),
        _number(duration),
        report.attempts,
        f',"reason":{_text(reason)}' if reason else "",
        "null" if code is None else _text(code),
        _text(result.call_id),
    )


def _compensation(report: CompensationReport) -> str:
    result = report.result
    reason = f',"reason":{_text(report.reason)}' if report.reason else ""
    if result is None:
        return _compensation_format(report.step, report.tool, False) % (
            _text(report.status),
            _number(report.duration_ms),
            reason,
        )
    return _compensation_format(report.step, report.tool, True) % (
        _text(report.status),
        _number(report.duration_ms),
        reason,
        _text(result.call_id),
    )


def result_text(result: WorkflowResult, ok_form: str = "") -> str:
    """``result.to_dict()`` as compact JSON. ``ok_form``: the workflow's
    :func:`ok_format`, one formatting operation for a run whose steps all ran once and
    are ok (the common case); other runs are encoded piece by piece."""
    if ok_form and result.status == "ok" and not result.compensations and not result.error and not result.note:
        text = _ok_text(result, ok_form)
        if text is not None:
            return text
    steps = result.steps
    duration = result.duration_ms
    return _RUN % (
        _text(result.run_id),
        _text(result.workflow),
        _text(result.status),
        _number(duration),
        _step(steps[0]) if len(steps) == 1 else ",".join([_step(s) for s in steps]),
        ",".join([_compensation(c) for c in result.compensations]) if result.compensations else "",
        f',"error":{_text(result.error)}' if result.error else "",
        f',"note":{_text(result.note)}' if result.note else "",
    )


def ok_format(workflow: str, steps: Sequence[tuple[str, str]]) -> str:
    """The result text of a run of ``workflow`` in which every step (``(id, tool)``, in
    document order) ran once and is ok, as a %-format made once when the workflow is
    compiled: its values are the run id's JSON text and the run's duration, then each
    step's duration and call id's JSON text (see :func:`result_text`)."""
    objects = ",".join(
        f'{{"id":{_pct(step)},"tool":{_pct(tool)},"status":"ok","duration_ms":%.3f,"attempts":1,'
        '"code":null,"call_id":%s}'
        for step, tool in steps
    )
    return (
        f'{{"run_id":%s,"workflow":{_pct(workflow)},"status":"ok","duration_ms":%.3f,"steps":[{objects}],'
        '"compensations":[]}'
    )


def _ok_text(result: WorkflowResult, form: str) -> str | None:
    """``result`` through ``form`` (:func:`ok_format`), or None when it is not such a run."""
    duration = result.duration_ms
    if duration - duration != 0:
        return None  # not finite: the full path writes what json writes
    values: list[Any] = [_text(result.run_id), duration]
    for report in result.steps:
        tool_result = report.result
        duration = report.duration_ms
        if (
            report.status != "ok"
            or report.attempts != 1
            or report.reason
            or tool_result is None
            or tool_result.code is not None
            or duration - duration != 0
        ):
            return None
        values += (duration, _text(tool_result.call_id))
    try:
        return form % tuple(values)
    except TypeError:  # not as many steps as the workflow has (a result of another workflow)
        return None
