"""Every fenced code block of README.md works as written, by language.

- ``python``: run as a script (``__name__ == "__main__"``) in a fresh directory holding a
  copy of ``examples/``; then each function it defines named ``test_...`` is called. A
  block that defines an agent loop named in ``DRIVERS`` (``anthropic_loop(client,
  runtime, task, session)``, ``openai_loop(...)``) is then driven once with a scripted
  client (:mod:`runtime.testing`) in place of the SDK's.
- ``yaml`` with ``apiVersion: toolrt/v1``: lints clean (no errors, no warnings) on its own.
- ``json``: parses.
- ``sh``: each line runs, in order, in one fresh directory holding a copy of
  ``examples/``, and exits 0: ``toolrt`` lines through ``runtime.cli.main`` in process
  (one whose only shell word is a final ``> FILE`` too, its output written to the file),
  lines with a pipe or another redirection and any other command through bash (this
  interpreter's directory first on PATH, no model API keys in the environment).
  ``make`` lines are skipped (they build the virtualenv this test runs in).
- anything else (``text``, no language): not run.

A block right after ``<!-- runs-until-interrupted -->`` holds ``toolrt`` commands that
serve until stopped (``watch``, ``serve``): each is started as a process, must still be
running a few seconds later (or once it has printed its first line), and must exit 0,
without a traceback, on SIGINT.

A block right after an HTML comment ``<!-- not-run: why -->`` is not run (for commands
that install packages or need a network). Use it sparingly.
"""

from __future__ import annotations

import io
import json
import os
import re
import runpy
import select
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runtime.cli import main
from runtime.config.compile import build_snapshot
from runtime.records import Session
from runtime.runtime import Runtime
from runtime.settings import Settings
from runtime.testing import ScriptedAnthropic, ScriptedOpenAI

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*\S.*-->$")
LONG_RUNNING = re.compile(r"^<!--\s*runs-until-interrupted\b.*-->$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    not_run: bool
    long_running: bool = False

    @property
    def id(self) -> str:
        return f"README.md:{self.line}:{self.lang or 'plain'}"


def blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of ``markdown``, each with the marker that precedes it (if any)."""
    found: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    previous = ""
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            if lines[index].strip():
                previous = lines[index].strip()
            index += 1
            continue
        fence = opening.group("fence")
        start = index + 1
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index])
            index += 1
        found.append(
            Block(
                start,
                opening.group("lang").lower(),
                "\n".join(body) + "\n",
                bool(NOT_RUN.match(previous)),
                bool(LONG_RUNNING.match(previous)),
            )
        )
        previous = ""
        index += 1
    return found


ALL = blocks(README.read_text(encoding="utf-8"))
RUNNABLE = {"python", "yaml", "json", "sh", "bash", "shell", "console"}


def _params(*langs: str) -> list[Any]:
    return [
        pytest.param(b, id=b.id, marks=[pytest.mark.skip(reason="marked not-run")] if b.not_run else [])
        for b in ALL
        if b.lang in langs and not b.long_running
    ]


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working directory with a copy of the repository's examples."""
    shutil.copytree(
        REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__", "*.sqlite3", ".toolrt")
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------------------
# the extraction itself


def test_blocks_are_found_with_their_language_line_and_marker() -> None:
    text = (
        "# t\n\n```sh\ntoolrt lint x\n```\n\n<!-- not-run: needs a network -->\n"
        "```python\nprint(1)\n```\n~~~\nplain\n~~~\n"
    )
    assert [(b.line, b.lang, b.text, b.not_run) for b in blocks(text)] == [
        (3, "sh", "toolrt lint x\n", False),
        (8, "python", "print(1)\n", True),
        (11, "", "plain\n", False),
    ]


def test_the_readme_has_runnable_blocks_of_every_kind_and_few_skipped() -> None:
    langs = {b.lang for b in ALL if not b.not_run}
    assert {"python", "yaml", "sh"} <= langs
    assert sum(b.not_run for b in ALL) <= 4, [
        b.id for b in ALL if b.not_run
    ]  # sparingly: each is a block nobody checks
    unknown = {b.lang for b in ALL} - RUNNABLE - {"", "text"}
    assert not unknown, f"code blocks in languages this test does not run: {unknown}; teach it or use ```text"


# ---------------------------------------------------------------------------
# python


def _drive_anthropic(loop: Callable[..., str], runtime: Runtime) -> None:
    path = "examples/coding-agent/workspace/README.md"
    client = ScriptedAnthropic(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "file_read", "input": {"path": path}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It is about stock keeping."}]},
        ]
    )
    answer = loop(client, runtime, "What is the example project about?", Session(id="readme"))
    assert answer == "It is about stock keeping."
    assert [t["name"] for t in client.requests[0]["tools"]] == [t["name"] for t in client.requests[1]["tools"]]
    result = client.requests[1]["messages"][-1]["content"][0]
    assert (result["type"], result["tool_use_id"], result.get("is_error", False)) == ("tool_result", "toolu_1", False)
    assert "stock-keeping module" in result["content"]


def _drive_openai(loop: Callable[..., str], runtime: Runtime) -> None:
    path = "examples/coding-agent/workspace/README.md"
    client = ScriptedOpenAI(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "file_read", "arguments": json.dumps({"path": path})},
                    }
                ],
            },
            {"role": "assistant", "content": "It is about stock keeping."},
        ]
    )
    answer = loop(client, runtime, "What is the example project about?", Session(id="readme"))
    assert answer == "It is about stock keeping."
    (result,) = [m for m in client.requests[1]["messages"] if isinstance(m, dict) and m.get("role") == "tool"]
    assert result["tool_call_id"] == "call_1"
    assert "stock-keeping module" in result["content"]


DRIVERS: dict[str, Callable[[Callable[..., str], Runtime], None]] = {
    "anthropic_loop": _drive_anthropic,
    "openai_loop": _drive_openai,
}


@pytest.mark.parametrize("block", _params("python"))
def test_python_block_runs(block: Block, sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    script = sandbox / "snippet.py"
    script.write_text(block.text, encoding="utf-8")
    namespace = runpy.run_path(str(script), run_name="__main__")
    for name, test in namespace.items():  # a block of an app's tests: run them as pytest would
        if name.startswith("test_") and callable(test):
            test()
    runtimes = [value for value in namespace.values() if isinstance(value, Runtime)]
    try:
        for name, drive in DRIVERS.items():
            if callable(namespace.get(name)):
                runtime = (
                    runtimes[0]
                    if runtimes
                    else Runtime([sandbox / "examples" / "coding-agent"], workspace_root=sandbox, watch=False)
                )
                runtimes.append(runtime)
                drive(namespace[name], runtime)
    finally:
        for runtime in runtimes:
            runtime.close_sync()


# ---------------------------------------------------------------------------
# yaml, json


@pytest.mark.parametrize("block", _params("yaml"))
def test_yaml_block_lints_clean(block: Block, tmp_path: Path) -> None:
    if not re.search(r"^apiVersion:\s*toolrt/v1\s*$", block.text, re.MULTILINE):
        pytest.skip("not a toolrt document")
    (tmp_path / "block.yaml").write_text(block.text, encoding="utf-8")
    result = build_snapshot([tmp_path], Settings())
    assert [str(p) for p in result.problems] == []


@pytest.mark.parametrize("block", _params("json"))
def test_json_block_parses(block: Block) -> None:
    json.loads(block.text)


# ---------------------------------------------------------------------------
# sh


def _commands(text: str) -> list[str]:
    """The block's command lines, backslash continuations joined, comments and blanks dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


@pytest.mark.parametrize("block", _params("sh", "bash", "shell", "console"))
def test_sh_block_commands_exit_0(block: Block, sandbox: Path) -> None:
    ran = 0
    for line in _commands(block.text):
        line = line.removeprefix("$ ")
        tokens = _tokens(line)
        if not tokens or tokens[0] == "make":
            continue
        code, output = _run_line(line, tokens)
        assert code == 0, f"{block.id}: `{line}` exited {code}:\n{output}"
        ran += 1
    if not ran:
        pytest.skip("only make lines")


def _tokens(line: str) -> list[str]:
    """Words and shell operators (``|``, ``>``, ``&&``... as tokens of their own), comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _shell_word(token: str) -> bool:
    return bool(token) and set(token) <= set("();<>|&")


def _run_line(line: str, tokens: list[str]) -> tuple[int, str]:
    """Plain toolrt commands run through its main in process (``toolrt ... > FILE`` too:
    bash would only open the file for its output); anything else through bash."""
    redirected = len(tokens) > 2 and tokens[-2] == ">" and not _shell_word(tokens[-1])
    words = tokens[:-2] if redirected else tokens
    if words[0] == "toolrt" and not any(_shell_word(token) for token in words):
        out, err = io.StringIO(), io.StringIO()
        code = main(words[1:], stdout=out, stderr=err)
        if redirected:
            Path(tokens[-1]).write_text(out.getvalue(), encoding="utf-8")
            return code, err.getvalue()[-3000:]
        return code, out.getvalue()[-3000:] + err.getvalue()[-3000:]
    env = {key: value for key, value in os.environ.items() if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    return done.returncode, done.stdout[-3000:] + done.stderr[-3000:]


# ---------------------------------------------------------------------------
# commands that serve until interrupted


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in ALL if b.long_running])
def test_long_running_commands_start_and_stop_cleanly_on_sigint(block: Block, sandbox: Path) -> None:
    for line in _commands(block.text):
        tokens = _tokens(line)
        assert tokens[0] == "toolrt", f"{block.id}: only toolrt commands may run until interrupted: {line}"
        process = subprocess.Popen(
            [sys.executable, "-m", "runtime.cli", *tokens[1:]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TOOLRT_HOT_RELOAD": "true"},
        )
        try:
            if "serve" in tokens and "http" not in tokens:
                # A stdio server prints nothing of its own: it is serving once it answers.
                assert process.stdin is not None
                process.stdin.write(json.dumps(_INITIALIZE) + "\n")
                process.stdin.flush()
            # Every command says something once it is up; a loaded machine may take a while.
            first = _first_line(process, seconds=90.0)
            assert first, f"{block.id}: `{line}` printed nothing within 90 s"
            assert process.poll() is None, f"{block.id}: `{line}` ended early (exit {process.returncode}): {first}"
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == 0, f"{block.id}: `{line}` exited {process.returncode} on SIGINT:\n{err[-3000:]}"
        assert "Traceback" not in err, err[-3000:]


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "readme-test", "version": "0"},
    },
}


def _first_line(process: subprocess.Popen[str], seconds: float) -> str:
    """The first line the process prints on stdout or stderr, waiting at most ``seconds``
    (a server may print nothing until a client comes)."""
    assert process.stdout is not None and process.stderr is not None
    ready, _, _ = select.select([process.stdout, process.stderr], [], [], seconds)
    return ready[0].readline() if ready else ""
