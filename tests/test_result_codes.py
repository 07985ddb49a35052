"""The result-code catalogue (runtime.codes): every code the runtime can give is in it,
with its stage and status, and a member reads as its plain wire value everywhere."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from runtime.codes import ResultCode, known
from runtime.records import Stage, Status

RUNTIME = Path(__file__).resolve().parents[1] / "runtime"


def _code_literals() -> list[tuple[str, str, int]]:
    """Every string literal the runtime passes as a result code: the third argument of
    ``error_result``, the fifth of a ``ToolResult`` built in place, a ``code=`` keyword,
    and the fourth argument of the execute stage's ``_failure``."""
    found = []
    for path in RUNTIME.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            candidates = [kw.value for kw in node.keywords if kw.arg == "code"]
            position = {"error_result": 2, "ToolResult": 4, "_failure": 3}.get(name)
            if position is not None and len(node.args) > position:
                candidates.append(node.args[position])
            for value in candidates:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.append((value.value, str(path.relative_to(RUNTIME)), node.lineno))
    return found


def test_every_code_the_runtime_gives_is_in_the_catalogue() -> None:
    literals = _code_literals()
    assert len(literals) >= 10  # the scan sees the call sites
    missing = [(code, where, line) for code, where, line in literals if not known(code)]
    assert not missing, f"codes missing from runtime.codes.ResultCode: {missing}"


def test_internal_failures_have_one_code() -> None:
    assert not known("internal")
    assert ResultCode.internal_error.status is Status.internal
    assert all(code != "internal" for code, _where, _line in _code_literals())


@pytest.mark.parametrize("code", list(ResultCode))
def test_each_code_says_its_stage_and_status(code: ResultCode) -> None:
    assert isinstance(code.stage, Stage) and code.statuses and all(isinstance(s, Status) for s in code.statuses)
    assert code.status is code.statuses[0]
    assert code.value == code and str(code) == code.value and f"{code}" == code.value
    assert json.dumps({"code": code}) == json.dumps({"code": code.value})
    assert ResultCode(code.value) is code


def test_codes_are_grouped_by_the_stage_order() -> None:
    order = list(Stage)
    stages = [order.index(code.stage) for code in ResultCode]
    assert stages == sorted(stages)


def test_workflow_endings_are_known_by_their_prefix() -> None:
    assert known("workflow_failed") and known("workflow_ok")
    assert not known("made_up") and not known("")
