"""The terminal approver: y runs once, a allows for the session, e edits the
arguments, anything else (or no terminal) declines."""

from __future__ import annotations

import io

import pytest

from runtime.approvers import TerminalApprover
from runtime.records import Call, Decision, Session, ValidatedCall


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def asked(answer: str, *, tty: bool = True):
    stdin = Terminal(answer) if tty else io.StringIO(answer)
    stderr = io.StringIO()
    approver = TerminalApprover(stdin=stdin, stderr=stderr)

    class Tool:
        name = "file_edit"

    call = ValidatedCall(Call("c1", "file_edit", {"path": "a"}), Tool(), {"path": "a"})  # type: ignore[arg-type]
    return approver, call, stderr


@pytest.mark.parametrize(("answer", "approved", "scope"), [("y\n", True, "once"), ("yes\n", True, "once"), ("a\n", True, "session"), ("\n", False, "once"), ("n\n", False, "once"), ("whatever\n", False, "once")])
async def test_answers_at_the_terminal(answer: str, approved: bool, scope: str) -> None:
    approver, call, stderr = asked(answer)
    result = await approver(call, Session(), Decision("ask", reason="it writes"))
    assert (result.approved, result.scope) == (approved, scope)
    assert "file_edit" in stderr.getvalue() and "it writes" in stderr.getvalue()


async def test_edit_takes_new_arguments_as_json() -> None:
    approver, call, _ = asked('e\n{"path": "b"}\n')
    result = await approver(call, Session(), Decision("ask"))
    assert result.approved and result.args == {"path": "b"}


@pytest.mark.parametrize("line", ["not json\n", "[1, 2]\n"])
async def test_edit_with_anything_but_a_json_object_declines(line: str) -> None:
    approver, call, _ = asked("e\n" + line)
    result = await approver(call, Session(), Decision("ask"))
    assert not result.approved and "edited arguments" in (result.reason or "")


async def test_without_a_terminal_the_answer_is_no() -> None:
    approver, call, stderr = asked("y\n", tty=False)
    result = await approver(call, Session(), Decision("ask"))
    assert not result.approved and stderr.getvalue() == ""
