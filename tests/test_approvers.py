"""The terminal approver: y runs once, a allows for the session, e edits the
arguments, anything else (or no terminal) declines. The scripted approver answers
from its script and declines whatever the script does not name."""

from __future__ import annotations

import io

import pytest

from runtime.approvers import AskedApproval, ScriptedApprover, TerminalApprover
from runtime.pipeline.permit import Approval
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


# ---------------------------------------------------------------------------
# ScriptedApprover


def scripted_call(tool: str, args: dict) -> ValidatedCall:
    class Tool:
        name = tool

    return ValidatedCall(Call("c1", tool, args), Tool(), args)  # type: ignore[arg-type]


async def test_scripted_approver_answers_from_its_script_and_records_each_question() -> None:
    heard: list[AskedApproval] = []
    approver = ScriptedApprover({"file_edit": True, "run_command": lambda call: call.args["command"].startswith("ls"), "git_push": Approval(False, "not today")}, on_ask=heard.append)
    answers = [
        await approver(scripted_call("file_edit", {"path": "a"}), Session(), Decision("ask", rule="r1", reason="edits ask")),
        await approver(scripted_call("run_command", {"command": "ls -l"}), Session(), Decision("ask")),
        await approver(scripted_call("run_command", {"command": "rm x"}), Session(), Decision("ask")),
        await approver(scripted_call("git_push", {"branch": "b"}), Session(), Decision("ask")),
    ]
    assert [a.approved for a in answers] == [True, True, False, False]
    assert answers[3].reason == "not today"
    assert heard == approver.asked
    assert (heard[0].tool, heard[0].args, heard[0].rule, heard[0].reason) == ("file_edit", {"path": "a"}, "r1", "edits ask")


async def test_scripted_approver_declines_a_tool_its_script_does_not_name() -> None:
    answer = await ScriptedApprover({"file_edit": True})(scripted_call("close_ticket", {}), Session(), Decision("ask"))
    assert (answer.approved, answer.reason) == (False, "the script declines it")
