"""Defects found in review, pinned: shell values stay data, turns own their calls,
output-closing commands finish, redaction reaches metadata, broken exceptions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime import Call, Runtime, Session, build_snapshot

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [redaction-default]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: echo_sh}
spec:
  description: Echo through a shell.
  handler: {command: {argv: ['echo "{msg}"'], shell: true}}
  read_only: true
  input_schema: {type: object, required: [msg], properties: {msg: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: run}
spec:
  description: Run a script.
  handler: {command: {argv: [sh, -c, "{script}"]}}
  read_only: true
  timeout: {total_s: 5}
  input_schema: {type: object, required: [script], properties: {script: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: digits}
spec:
  description: Takes digits.
  handler: {command: {argv: [echo, "{token}"]}}
  read_only: true
  redaction: [secrets]
  input_schema: {type: object, required: [token], properties: {token: {type: string, pattern: '^[0-9]+$'}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: broken}
spec:
  description: Raises an exception that cannot be printed.
  handler: python:review_handlers:broken
"""

HANDLERS = """
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text")

def broken(args):
    raise Unprintable()
"""


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG)
    (config / "review_handlers.py").write_text(HANDLERS)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Runtime([config], workspace_root=workspace)


async def test_shell_templates_pass_values_as_data_even_inside_double_quotes(runtime: Runtime) -> None:
    (result,) = await runtime.run_turn([Call("1", "echo_sh", {"msg": "$(id -un) `echo INJECTED` '; exit 7"})])
    assert result.status.value == "ok"
    assert result.content.strip() == "$(id -un) `echo INJECTED` '; exit 7"


@pytest.mark.parametrize(
    ("argv", "shell", "needle"),
    [
        ("[\"echo '{msg}'\"]", "true", "inside single quotes"),
        ('[echo, "x{msg[0]}"]', "false", "only plain argument names"),
    ],
)
def test_lint_rejects_templates_that_cannot_work(tmp_path: Path, argv: str, shell: str, needle: str) -> None:
    (tmp_path / "t.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: t}\nspec:\n  description: d\n"
        f"  handler: {{command: {{argv: {argv}, shell: {shell}}}}}\n"
        "  input_schema: {type: object, properties: {msg: {type: string}}}\n"
    )
    problems = build_snapshot([tmp_path]).problems
    assert [p.code for p in problems] == ["handler-template"]
    assert needle in problems[0].message


async def test_a_command_that_closes_its_output_early_still_runs_to_completion(runtime: Runtime) -> None:
    marker = runtime.workspace_root / "done"
    (result,) = await runtime.run_turn(
        [Call("1", "run", {"script": f"exec >/dev/null 2>&1; sleep 0.5; touch {marker}"})]
    )
    assert (result.status.value, result.metadata["exit_code"]) == ("ok", 0)
    assert marker.exists()


async def test_cancelling_a_turn_stops_the_calls_it_started(runtime: Runtime) -> None:
    calls = [Call(f"c{i}", "run", {"script": f"sleep 1; touch {runtime.workspace_root}/leak{i}"}) for i in range(2)]
    turn = asyncio.ensure_future(runtime.run_turn(calls))
    await asyncio.sleep(0.3)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await asyncio.sleep(1.2)
    assert not list(runtime.workspace_root.glob("leak*"))


async def test_validation_problems_in_metadata_are_redacted_too(runtime: Runtime) -> None:
    token = "ghp_" + "a" * 36
    (result,) = await runtime.run_turn([Call("1", "digits", {"token": token})])
    assert result.status.value == "invalid"
    assert token not in result.content
    assert token not in str(result.metadata["problems"])
    assert result.metadata["redactions"] == {"github_token": 2}


async def test_an_exception_that_cannot_be_printed_is_still_reported_as_the_handlers(runtime: Runtime) -> None:
    (result,) = await runtime.run_turn([Call("1", "broken", {})], Session(mode="bypass"))
    assert result.status.value == "unknown"
    assert "Unprintable" in result.content
