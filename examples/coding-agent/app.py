"""A coding agent that embeds toolrt: the model decides, the runtime runs every tool call.

    python examples/coding-agent/app.py [--workspace DIR] [TASK]

With ANTHROPIC_API_KEY set, a Claude model drives the loop (``anthropic`` SDK); else
with OPENAI_API_KEY, an OpenAI model (``openai`` SDK, Chat Completions). Calls that
need approval are asked at the terminal. Without a workspace the agent works on a
temporary copy of the example project (``workspace/`` beside this file).

With neither key, the scripted session of ``toolrt demo`` stands in for the model
(``runtime.testing.ScriptedAnthropic``) and the very same Anthropic loop runs, with a
scripted approver: real files, real subprocesses, no network.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from runtime import Runtime, Session, ToolResult, adapters
from runtime.approvers import ScriptedApprover, TerminalApprover
from runtime.demo.script import APPROVALS, TASK, replies
from runtime.demo.workspace import interpreter_on_path, populate
from runtime.testing import ScriptedAnthropic

HERE = Path(__file__).resolve().parent
ANTHROPIC_MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
OPENAI_MODEL = os.environ.get("OPENAI_MODEL", "gpt-4.1")


def anthropic_loop(client: Any, runtime: Runtime, task: str, session: Session) -> str:
    """Messages API: tool_use blocks in, one user message of tool_result blocks back."""
    tools = adapters.tool_definitions("anthropic", runtime.snapshot)
    messages: list[Any] = [{"role": "user", "content": task}]
    while True:
        reply = client.messages.create(model=ANTHROPIC_MODEL, max_tokens=4096, tools=tools, messages=messages)
        messages.append({"role": "assistant", "content": reply.content})
        calls = adapters.parse_calls("anthropic", reply)
        if not calls:
            return "".join(block.text for block in reply.content if block.type == "text")
        results = runtime.run_turn_sync(calls, session)
        show(results)
        messages.append(adapters.render_results("anthropic", results))


def openai_loop(client: Any, runtime: Runtime, task: str, session: Session) -> str:
    """Chat Completions: tool_calls in, one role=tool message per call back."""
    tools = adapters.tool_definitions("openai-chat", runtime.snapshot)
    messages: list[Any] = [{"role": "user", "content": task}]
    while True:
        message = client.chat.completions.create(model=OPENAI_MODEL, tools=tools, messages=messages).choices[0].message
        messages.append(message)
        calls = adapters.parse_calls("openai-chat", message, snapshot=runtime.snapshot)
        if not calls:
            return message.content or ""
        results = runtime.run_turn_sync(calls, session)
        show(results)
        messages.extend(adapters.render_results("openai-chat", results))


def show(results: list[ToolResult]) -> None:
    """One line per result: its status and the start of what the model reads."""
    for result in results:
        first = result.content.splitlines()[0] if result.content else ""
        print(f"  [{result.call_id}] {result.name}: {result.status.value}  {first[:100]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the agent on the task; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("task", nargs="?", default=TASK)
    parser.add_argument("--workspace", type=Path, default=None, help="the project to work on (default: a temporary copy of the example project)")
    args = parser.parse_args(argv)
    scripted = not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("OPENAI_API_KEY"))
    if scripted and (args.workspace is not None or args.task != TASK):
        print("no ANTHROPIC_API_KEY or OPENAI_API_KEY: only the scripted session can run, on the example project", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="coding-agent-") as temporary, interpreter_on_path():
        workspace = args.workspace or Path(temporary)
        if args.workspace is None:
            populate(HERE / "workspace", workspace)
        approver = ScriptedApprover(APPROVALS) if scripted else TerminalApprover()
        runtime = Runtime([HERE], workspace_root=workspace, approver=approver, watch=False)
        session = Session(id="coding-agent", mode="default")
        print(f"workspace: {workspace}\ntask: {args.task}")
        try:
            if scripted:
                print("model: the scripted session of `toolrt demo` (no API key is set)")
                answer = anthropic_loop(ScriptedAnthropic(replies(workspace)), runtime, args.task, session)
            elif os.environ.get("ANTHROPIC_API_KEY"):
                import anthropic

                answer = anthropic_loop(anthropic.Anthropic(), runtime, args.task, session)
            else:
                import openai

                answer = openai_loop(openai.OpenAI(), runtime, args.task, session)
        finally:
            runtime.close_sync()
    print(f"\nanswer: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
