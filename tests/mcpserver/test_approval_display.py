"""What the MCP client's user is asked (elicitation), for hostile argument texts: a real
``toolrt serve`` on stdio, driven by the official MCP client whose elicitation callback
records each question and declines. The question must show the hostile part, and
nothing that a screen would not show as itself."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mcpserver_support import answering, stdio_session, text_of

HERE = Path(__file__).resolve().parent


def _cases() -> ModuleType:
    # The table shared with the terminal approver's tests, one folder up (already
    # imported when those tests were collected first).
    if "approval_cases" in sys.modules:
        return sys.modules["approval_cases"]
    spec = importlib.util.spec_from_file_location("approval_cases", HERE.parent / "approval_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["approval_cases"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


CASES = _cases()


class _Questions:
    """An elicitation callback that files each question under the case being called, and declines."""

    def __init__(self) -> None:
        self.current = ""
        self.asked: dict[str, list[str]] = {}

    async def __call__(self, context: Any, params: Any) -> Any:
        self.asked.setdefault(self.current, []).append(params.message)
        return await answering("decline")(context, params)


async def _ask_every_case(config: Path, workspace: Path) -> dict[str, tuple[list[str], str]]:
    """case id -> (the questions the client was asked during its call, the call's result text)."""
    questions = _Questions()
    results: dict[str, str] = {}
    async with stdio_session(workspace, config=config, elicitation_callback=questions) as client:
        for case in CASES.CASES:
            questions.current = case.id
            results[case.id] = text_of(await client.call_tool(case.tool, case.args))
    return {case_id: (questions.asked.get(case_id, []), text) for case_id, text in results.items()}


@pytest.fixture(scope="module")
def questions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[str], str]]:
    """Every hostile case called once through one server (starting one per case would take minutes)."""
    config = tmp_path_factory.mktemp("approval-config")
    (config / "tools.yaml").write_text(CASES.CONFIG, encoding="utf-8")
    workspace = tmp_path_factory.mktemp("workspace")
    return asyncio.run(_ask_every_case(config, workspace))


@pytest.mark.parametrize("case", CASES.CASES, ids=[case.id for case in CASES.CASES])
def test_the_elicitation_question_shows_the_hostile_part_of_the_arguments(
    questions: dict[str, tuple[list[str], str]], case: Any
) -> None:
    asked, result = questions[case.id]
    assert len(asked) == 1, result
    (question,) = asked
    assert question.startswith(f"Allow `{case.tool}` to run?\nWhy it asks: a person approves every call\n")
    CASES.check(case, question)
    assert "declined in the MCP client" in result


def test_the_elicitation_question_fences_the_arguments_past_any_backtick_run_in_them(
    questions: dict[str, tuple[list[str], str]],
) -> None:
    (question,) = questions["markdown that would hide text"][0]
    assert "\n`````text\nArguments:\n" in question and question.endswith("\n`````")
