"""Approvers shipped with toolrt (the embedding app may supply its own)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from runtime.approval_text import describe
from runtime.pipeline.permit import Approval
from runtime.records import Decision, Session, ValidatedCall


class TerminalApprover:
    """Asks the person at the terminal; when nobody is there (no TTY), says no.

    The question shows the whole arguments with every invisible or control character
    marked, and each command of a command line (:func:`runtime.approval_text.describe`).

    Answers: ``y`` runs the call once, ``a`` allows the tool for the rest of the
    session, ``e`` asks for edited arguments (JSON) and runs with those (they are
    validated and judged again), anything else declines.
    """

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self._in = stdin or sys.stdin
        self._err = stderr or sys.stderr

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        if not self._in.isatty():
            return Approval(False, "no one is at a terminal to approve it")
        # Every character of the arguments, none of them raw control characters: see
        # runtime.approval_text (shared with the MCP approver).
        details = describe(call, decision)
        choices = "Run it? [y]es / [a]lways this session / [e]dit arguments / [N]o: "
        prompt = f"\n`{call.tool.name}` needs approval.\n{details}\n{choices}"
        answer = (await asyncio.to_thread(self._ask, prompt)).strip().lower()
        if answer in ("y", "yes"):
            return Approval(True, "approved at the terminal")
        if answer in ("a", "always"):
            return Approval(True, "approved at the terminal for this session", scope="session")
        if answer in ("e", "edit"):
            text = await asyncio.to_thread(self._ask, "Arguments as one line of JSON: ")
            try:
                edited = json.loads(text)
            except json.JSONDecodeError:
                return Approval(False, "the edited arguments were not valid JSON")
            if not isinstance(edited, dict):
                return Approval(False, "the edited arguments were not a JSON object")
            return Approval(True, "approved at the terminal with edited arguments", args=edited)
        return Approval(False, "declined at the terminal")

    def _ask(self, prompt: str) -> str:
        self._err.write(prompt)
        self._err.flush()
        return self._in.readline()


@dataclass(frozen=True, slots=True)
class AskedApproval:
    """One question a :class:`ScriptedApprover` answered, for the app to show or check."""

    tool: str
    args: Mapping[str, Any]
    rule: str | None
    reason: str | None
    approval: Approval


Answer = bool | Approval | Callable[[ValidatedCall], "bool | Approval"]


class ScriptedApprover:
    """Answers from a script instead of a person: for demos, replays and tests.

    ``answers`` maps a tool name to ``True`` (approve), ``False`` (decline), an
    :class:`Approval`, or a function of the call returning one of those. A tool not
    in the script is declined, so a replay never approves more than it says. Every
    question and its answer is appended to :attr:`asked` and passed to ``on_ask``.
    """

    def __init__(self, answers: Mapping[str, Answer], on_ask: Callable[[AskedApproval], None] | None = None) -> None:
        self._answers = dict(answers)
        self._on_ask = on_ask
        self.asked: list[AskedApproval] = []

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        answer = self._answers.get(call.tool.name, False)
        if callable(answer):
            answer = answer(call)
        if isinstance(answer, bool):
            answer = Approval(True, "approved by the script") if answer else Approval(False, "the script declines it")
        asked = AskedApproval(call.tool.name, dict(call.args), decision.rule, decision.reason, answer)
        self.asked.append(asked)
        if self._on_ask is not None:
            self._on_ask(asked)
        return answer
