"""examples/coding-agent/app.py: the keyless replay end to end, and its two provider loops."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from runtime import Runtime, Session
from runtime.testing import ScriptedAnthropic, ScriptedOpenAI

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "coding-agent"
APP = EXAMPLE / "app.py"


def keyless_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="module")
def app() -> ModuleType:
    spec = importlib.util.spec_from_file_location("coding_agent_app", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    shutil.copytree(EXAMPLE / "workspace", tmp_path, dirs_exist_ok=True)
    runtime = Runtime([EXAMPLE], workspace_root=tmp_path, watch=False)
    yield runtime
    runtime.close_sync()


def test_app_without_api_keys_replays_the_scripted_session_end_to_end(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(APP)],
        cwd=tmp_path,
        env=keyless_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "model: the scripted session of `toolrt demo` (no API key is set)" in out
    lines = {line.split("]")[0].strip(" ["): line for line in out.splitlines() if line.startswith("  [toolu_")}
    assert list(lines) == [f"toolu_{i:02d}" for i in range(1, 14)]
    assert "file_read: denied" in lines["toolu_06"]
    assert "file_edit: error" in lines["toolu_07"] and "file_edit: ok" in lines["toolu_08"]
    assert "run_tests: unknown" in lines["toolu_09"] and "timed out after 2 s" in lines["toolu_09"]
    assert "run_command: ok" in lines["toolu_11"] and "Output truncated" in lines["toolu_11"]
    assert "answer: Done: needs_reorder now reorders at the reorder level too" in out
    assert "sk-proj-" not in out
    assert list(tmp_path.iterdir()) == []  # it worked in a temporary copy, not in the current directory


def test_app_without_api_keys_refuses_a_workspace_of_its_own(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(APP), "--workspace", str(tmp_path)],
        env=keyless_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "only the scripted session can run" in done.stderr


def test_anthropic_loop_runs_each_turn_and_returns_the_final_text(app: ModuleType, runtime: Runtime) -> None:
    client = ScriptedAnthropic(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"pattern": "def needs_reorder"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "file_read", "input": {"path": ".env"}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Found it."}]},
        ]
    )
    assert app.anthropic_loop(client, runtime, "Where is the reorder check?", Session(id="t")) == "Found it."
    first, second = client.requests
    assert {tool["name"] for tool in first["tools"]} >= {"file_read", "file_edit", "run_tests"}
    results = second["messages"][-1]
    assert results["role"] == "user"
    assert [(b["tool_use_id"], b.get("is_error", False)) for b in results["content"]] == [
        ("toolu_1", False),
        ("toolu_2", True),
    ]
    assert "src/inventory.py" in results["content"][0]["content"]


def test_openai_loop_runs_each_turn_and_returns_the_final_text(app: ModuleType, runtime: Runtime) -> None:
    client = ScriptedOpenAI(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "file_read",
                            "arguments": json.dumps({"path": "src/inventory.py", "offset": None, "limit": 3}),
                        },
                    }
                ],
            },
            {"role": "assistant", "content": "It is a dataclass module."},
        ]
    )
    assert (
        app.openai_loop(client, runtime, "What is in src/inventory.py?", Session(id="t")) == "It is a dataclass module."
    )
    tool_messages = [m for m in client.requests[1]["messages"] if isinstance(m, dict) and m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1"]
    assert (
        "Stock levels and the reorder check" in tool_messages[0]["content"]
    )  # strict mode's null offset read as "not given"
    assert all(tool["function"]["strict"] in (True, False) for tool in client.requests[0]["tools"])
