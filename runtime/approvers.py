"""Approvers shipped with toolrt (the embedding app may supply its own)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TextIO

from runtime.pipeline.permit import Approval
from runtime.records import Decision, Session, ValidatedCall


class TerminalApprover:
    """Asks the person at the terminal; when nobody is there (no TTY), says no.

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
        args = json.dumps(dict(call.args), ensure_ascii=False)[:500]
        prompt = f"\n{call.tool.name} {args}\n{decision.reason or 'Approval needed.'}\nRun it? [y]es / [a]lways this session / [e]dit arguments / [N]o: "
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
