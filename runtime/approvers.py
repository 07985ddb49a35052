"""Approvers shipped with toolrt (the embedding app may supply its own)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TextIO

from runtime.pipeline.permit import Approval
from runtime.records import Decision, Session, ValidatedCall


class TerminalApprover:
    """Asks the person at the terminal; when nobody is there (no TTY), says no."""

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self._in = stdin or sys.stdin
        self._err = stderr or sys.stderr

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        if not self._in.isatty():
            return Approval(False, "no one is at a terminal to approve it")
        args = json.dumps(dict(call.args), ensure_ascii=False)[:500]
        prompt = f"\n{call.tool.name} {args}\n{decision.reason or 'Approval needed.'}\nRun it? [y/N] "
        answer = await asyncio.to_thread(self._ask, prompt)
        approved = answer.strip().lower() in ("y", "yes")
        return Approval(approved, None if approved else "declined at the terminal")

    def _ask(self, prompt: str) -> str:
        self._err.write(prompt)
        self._err.flush()
        return self._in.readline()
