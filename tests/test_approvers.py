"""The terminal approver: y runs once, a allows for the session, e edits the
arguments, anything else (or no terminal) declines; its question, read on a real
pseudo-terminal, shows every hostile argument text in full and nothing raw. The
scripted approver answers from its script and declines whatever the script does not
name."""

from __future__ import annotations

import io
import os
import threading
import time
import tty
from pathlib import Path

import pytest
from approval_cases import CASES, CONFIG, Hostile, check

from runtime.approvers import AskedApproval, ScriptedApprover, TerminalApprover
from runtime.config.compile import load_snapshot
from runtime.pipeline.permit import Approval
from runtime.records import Call, Decision, Session, ValidatedCall
from runtime.snapshot import Snapshot

WAIT_S = 30.0


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    config = tmp_path_factory.mktemp("approval-config")
    (config / "tools.yaml").write_text(CONFIG, encoding="utf-8")
    return load_snapshot([Path(config)])


def validated(snapshot: Snapshot, tool: str, args: dict) -> ValidatedCall:
    return ValidatedCall(Call("c1", tool, args), snapshot.tools[tool], args)


@pytest.fixture
def asked(snapshot: Snapshot):
    def make(answer: str, *, tty: bool = True) -> tuple[TerminalApprover, ValidatedCall, io.StringIO]:
        stdin = Terminal(answer) if tty else io.StringIO(answer)
        stderr = io.StringIO()
        return TerminalApprover(stdin=stdin, stderr=stderr), validated(snapshot, "note", {"path": "a"}), stderr

    return make


@pytest.mark.parametrize(
    ("answer", "approved", "scope"),
    [
        ("y\n", True, "once"),
        ("yes\n", True, "once"),
        ("a\n", True, "session"),
        ("\n", False, "once"),
        ("n\n", False, "once"),
        ("whatever\n", False, "once"),
    ],
)
async def test_answers_at_the_terminal(asked, answer: str, approved: bool, scope: str) -> None:
    approver, call, stderr = asked(answer)
    result = await approver(call, Session(), Decision("ask", reason="it writes"))
    assert (result.approved, result.scope) == (approved, scope)
    assert "`note` needs approval" in stderr.getvalue() and "it writes" in stderr.getvalue()


async def test_edit_takes_new_arguments_as_json(asked) -> None:
    approver, call, _ = asked('e\n{"path": "b"}\n')
    result = await approver(call, Session(), Decision("ask"))
    assert result.approved and result.args == {"path": "b"}


@pytest.mark.parametrize("line", ["not json\n", "[1, 2]\n"])
async def test_edit_with_anything_but_a_json_object_declines(asked, line: str) -> None:
    approver, call, _ = asked("e\n" + line)
    result = await approver(call, Session(), Decision("ask"))
    assert not result.approved and "edited arguments" in (result.reason or "")


async def test_without_a_terminal_the_answer_is_no(asked) -> None:
    approver, call, stderr = asked("y\n", tty=False)
    result = await approver(call, Session(), Decision("ask"))
    assert not result.approved and stderr.getvalue() == ""


# ---------------------------------------------------------------------------
# What the terminal shows


class PseudoTerminal:
    """A real pseudo-terminal in raw mode (no echo, no newline translation): the
    approver reads the answer from it and writes its question to it; ``screen`` is
    every byte the terminal received, read as it arrives so that a long question
    never blocks its writer."""

    def __init__(self) -> None:
        self._master, slave = os.openpty()
        tty.setraw(slave)
        self.stdin = open(slave, encoding="utf-8", closefd=True)  # noqa: SIM115 - closed in close()
        self.stderr = open(os.dup(slave), "w", encoding="utf-8", closefd=True)  # noqa: SIM115
        self._screen = bytearray()
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # the other side was closed
                chunk = b""
            with self._changed:
                if not chunk:
                    return
                self._screen += chunk
                self._changed.notify_all()

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    def screen_until(self, ending: bytes) -> bytes:
        """The screen once it ends with ``ending`` (the question was written in full)."""
        deadline = time.monotonic() + WAIT_S
        with self._changed:
            while not self._screen.endswith(ending):
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    raise AssertionError(
                        f"the terminal never showed {ending!r}; it shows {bytes(self._screen[-500:])!r}"
                    )
            return bytes(self._screen)

    def close(self) -> None:
        self.stdin.close()
        self.stderr.close()
        self._reader.join(WAIT_S)
        os.close(self._master)


QUESTION_END = b"[N]o: "


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_the_terminal_shows_the_hostile_part_of_the_arguments_and_no_raw_control_character(
    snapshot: Snapshot, case: Hostile
) -> None:
    terminal = PseudoTerminal()
    try:
        terminal.type("n\n")  # the person's answer waits in the terminal's input
        approver = TerminalApprover(stdin=terminal.stdin, stderr=terminal.stderr)
        answer = await approver(
            validated(snapshot, case.tool, case.args), Session(), Decision("ask", reason="a person approves every call")
        )
        screen = terminal.screen_until(QUESTION_END)
    finally:
        terminal.close()
    assert not answer.approved
    assert b"\x1b" not in screen and b"\r" not in screen and b"\x00" not in screen
    check(case, screen.decode("utf-8"))


async def test_the_terminal_question_names_the_tool_and_ends_with_the_choices(snapshot: Snapshot) -> None:
    terminal = PseudoTerminal()
    try:
        terminal.type("y\n")
        approver = TerminalApprover(stdin=terminal.stdin, stderr=terminal.stderr)
        answer = await approver(
            validated(snapshot, "shell", {"command": "ls; rm -rf build"}),
            Session(),
            Decision("ask", reason="commands ask"),
        )
        screen = terminal.screen_until(QUESTION_END).decode("utf-8")
    finally:
        terminal.close()
    assert answer.approved
    assert screen == (
        "\n`shell` needs approval.\nWhy it asks: commands ask\nArguments:\n  command: ls; rm -rf build\nThe command "
        "line `command` runs these 2 commands, one per line (as the policy split it; programs by their base name):\n  "
        "1. ls\n  2. rm -rf build\nRun it? [y]es / [a]lways this session / [e]dit arguments / [N]o: "
    )


# ---------------------------------------------------------------------------
# ScriptedApprover


def scripted_call(tool: str, args: dict) -> ValidatedCall:
    class Tool:
        name = tool

    return ValidatedCall(Call("c1", tool, args), Tool(), args)  # type: ignore[arg-type]


async def test_scripted_approver_answers_from_its_script_and_records_each_question() -> None:
    heard: list[AskedApproval] = []
    approver = ScriptedApprover(
        {
            "file_edit": True,
            "run_command": lambda call: call.args["command"].startswith("ls"),
            "git_push": Approval(False, "not today"),
        },
        on_ask=heard.append,
    )
    answers = [
        await approver(
            scripted_call("file_edit", {"path": "a"}), Session(), Decision("ask", rule="r1", reason="edits ask")
        ),
        await approver(scripted_call("run_command", {"command": "ls -l"}), Session(), Decision("ask")),
        await approver(scripted_call("run_command", {"command": "rm x"}), Session(), Decision("ask")),
        await approver(scripted_call("git_push", {"branch": "b"}), Session(), Decision("ask")),
    ]
    assert [a.approved for a in answers] == [True, True, False, False]
    assert answers[3].reason == "not today"
    assert heard == approver.asked
    assert (heard[0].tool, heard[0].args, heard[0].rule, heard[0].reason) == (
        "file_edit",
        {"path": "a"},
        "r1",
        "edits ask",
    )


async def test_scripted_approver_declines_a_tool_its_script_does_not_name() -> None:
    answer = await ScriptedApprover({"file_edit": True})(scripted_call("close_ticket", {}), Session(), Decision("ask"))
    assert (answer.approved, answer.reason) == (False, "the script declines it")
