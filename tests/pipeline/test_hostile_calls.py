"""A corpus of hostile calls through Runtime.run_turn: every call gets exactly one
well-formed result (an error the model can act on, or ok), nothing raises, nothing
is blamed on toolrt (status ``internal``), and no result is as large as the input.

Cases that crash the interpreter (segfaults in the CEL engine) run in a child process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pipeline_support import ConfigDir

from runtime.records import Call, Session, Status, ToolResult
from runtime.runtime import Runtime
from runtime.settings import Settings

HANDLERS = """
def echo(args):
    return args


def first_chars(args):
    return str(args.get("text", ""))[:100]
"""

MAX_CONTENT = 50_000  # a result is read by a model: never anywhere near the input size


def build(config: ConfigDir) -> Path:
    c = config.handlers(HANDLERS)
    c.include("redaction-default", "builtin-tools")
    c.tool("echo", c.py("echo"), read_only=True, redaction=["secrets"])
    typed_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "text": {"type": "string", "maxLength": 1000},
            "n": {"type": "integer", "maximum": 100},
            "items": {"type": "array", "items": {"type": "string"}},
        },
    }
    c.tool("typed", c.py("echo"), read_only=True, input_schema=typed_schema)
    c.tool(
        "ruled",
        c.py("first_chars"),
        read_only=True,
        input_schema={"type": "object"},
        rules=[
            {
                "name": "not-x",
                "expression": '!has(args.text) || args.text != "x"',
                "message": "Pass a text other than x.",
            }
        ],
    )
    c.command_tool("cmd", ["printf", "%s", "{text}"], properties={"text": {}}, read_only=True)
    c.command_tool(
        "shell_cmd", ["printf", "%s", "{text}"], properties={"text": {}}, command={"shell": True}, read_only=True
    )
    c.tool("write", c.py("echo"))
    return c.write()


def deep_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        child: dict[str, Any] = {}
        node["a"] = child
        node = child
    return root


def deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


TEN_MB = "x" * 10_000_000
HUGE_INT = 10**5000  # more digits than int->str allows by default (4300)


CASES = [
    pytest.param("echo", {"text": TEN_MB}, id="10mb-string-to-python-handler"),
    pytest.param("typed", {"text": TEN_MB}, id="10mb-string-over-maxLength"),
    pytest.param("ruled", {"text": TEN_MB}, id="10mb-string-through-a-cel-rule"),
    pytest.param("typed", {"k" * 10_000_000: 1}, id="10mb-unknown-key"),
    pytest.param("cmd", {"text": TEN_MB}, id="10mb-string-to-command"),
    pytest.param("shell_cmd", {"text": TEN_MB}, id="10mb-string-to-shell-command"),
    pytest.param("echo", deep_dict(10_000), id="depth-10000-dict-to-python-handler"),
    pytest.param("typed", {"items": deep_list(10_000)}, id="depth-10000-list-through-schema"),
    pytest.param("cmd", {"text": deep_dict(10_000)}, id="depth-10000-dict-to-command"),
    pytest.param("ruled", deep_dict(10_000), id="depth-10000-dict-through-a-cel-rule"),
    pytest.param("echo", {"text": "a\ud800b", "\udfff": "c"}, id="lone-surrogates-to-python-handler"),
    pytest.param("typed", {"text": "a\udfffb", "n": "\ud800"}, id="lone-surrogates-through-schema"),
    pytest.param("typed", {"\ud800": 1}, id="lone-surrogate-key"),
    pytest.param("ruled", {"text": "\ud800"}, id="lone-surrogate-through-a-cel-rule"),
    pytest.param("cmd", {"text": "a\ud800b"}, id="lone-surrogate-to-command"),
    pytest.param("echo", {"text": "a\x00b"}, id="nul-to-python-handler"),
    pytest.param("ruled", {"text": "a\x00b"}, id="nul-through-a-cel-rule"),
    pytest.param("cmd", {"text": "a\x00b"}, id="nul-to-command"),
    pytest.param("shell_cmd", {"text": "a\x00b"}, id="nul-to-shell-command"),
    pytest.param("typed", {"text": 5, "n": "5", "items": [1, None, {}]}, id="non-strings-where-strings-expected"),
    pytest.param("cmd", {"text": {"a": [1, 2]}}, id="object-to-command-placeholder"),
    pytest.param("echo", [1, 2], id="arguments-are-a-list"),
    pytest.param("echo", "just a string", id="arguments-are-a-string"),
    pytest.param("echo", {"n": float("nan"), "m": float("inf")}, id="nan-and-infinity"),
    pytest.param("echo", {"n": HUGE_INT}, id="huge-int-to-python-handler"),
    pytest.param("ruled", {"text": 2**70}, id="int-beyond-64-bits-through-a-cel-rule"),
    pytest.param("cmd", {"text": HUGE_INT}, id="huge-int-to-command"),
    pytest.param("", {}, id="empty-name"),
    pytest.param("ech\x00o", {}, id="nul-in-name"),
    pytest.param("\ud800", {}, id="lone-surrogate-name"),
    pytest.param("x" * 10_000, {}, id="10kb-name"),
    pytest.param("write", {"text": TEN_MB}, id="10mb-string-to-a-denied-write"),
]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    root = tmp_path_factory.mktemp("hostile")
    workspace = root / "workspace"
    workspace.mkdir()
    return Runtime([build(ConfigDir(root / "config"))], workspace_root=workspace)


def assert_well_formed(result: ToolResult, call: Call) -> None:
    assert result.call_id == call.id and result.name == call.name
    assert isinstance(result.status, Status)
    assert isinstance(result.content, str) and result.content.strip()
    assert result.status is not Status.internal, result.content
    assert len(result.content) <= MAX_CONTENT, f"{len(result.content):,} characters of result"
    assert result.metadata["status"] == result.status.value


@pytest.mark.parametrize(("name", "args"), CASES)
async def test_a_hostile_call_gets_one_well_formed_result(runtime: Runtime, name: str, args: Any) -> None:
    call = Call(id="hostile", name=name, args=args)
    results = await runtime.run_turn([call])
    assert len(results) == 1
    assert_well_formed(results[0], call)


async def test_the_whole_corpus_in_one_turn_answers_every_call_in_order(runtime: Runtime) -> None:
    # The cases known to fail on their own are left out: this checks the scheduling.
    calls = [Call(id=f"c{i}", name=p.values[0], args=p.values[1], index=i) for i, p in enumerate(CASES) if not p.marks]
    calls.append(
        Call(
            id="bad-json",
            name="echo",
            args=None,
            parse_error="Arguments are not valid JSON: Unterminated string at char 12.",
        )
    )
    calls.append(Call(id="no-args", name="echo", args=None))
    results = await runtime.run_turn(calls, Session(mode="default"))
    assert [r.call_id for r in results] == [c.id for c in calls]
    for call, result in zip(calls, results, strict=True):
        assert_well_formed(result, call)
    assert results[-2].code == "parse_error" and "Unterminated string" in results[-2].content
    assert results[-1].code == "bad_arguments"


async def test_parse_error_wins_even_for_an_unknown_tool(runtime: Runtime) -> None:
    call = Call(id="p", name="nope", args=None, parse_error="Arguments are not valid JSON.")
    (result,) = await runtime.run_turn([call])
    assert (result.status, result.code) == (Status.invalid, "parse_error")


async def test_a_huge_int_does_not_slip_past_a_maximum(runtime: Runtime) -> None:
    (result,) = await runtime.run_turn([Call(id="h", name="typed", args={"n": HUGE_INT})])
    assert (result.status, result.code) == (Status.invalid, "invalid_arguments")


async def test_deeply_nested_arguments_are_refused_before_any_validator_recurses(runtime: Runtime) -> None:
    call = Call(id="d", name="echo", args=deep_dict(10_000))
    (result,) = await runtime.run_turn([call])
    assert (result.status, result.code) == (Status.invalid, "invalid_arguments")
    assert "nest deeper than" in result.content


async def test_a_deep_argument_through_a_portable_cel_rule_is_refused(tmp_path: Path) -> None:
    runtime = Runtime(
        [build(ConfigDir(tmp_path / "config"))], workspace_root=tmp_path, settings=Settings(cel_engine="portable")
    )
    call = Call(id="d", name="ruled", args=deep_dict(10_000))
    (result,) = await runtime.run_turn([call])
    assert_well_formed(result, call)
    assert result.status is Status.invalid


CHILD = """
import json, sys
from runtime.records import Call
from runtime.runtime import Runtime
from runtime.settings import Settings

def deep_dict(depth):
    root = node = {}
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root

config, workspace, engine, case = sys.argv[1:5]
args = {"deep": deep_dict(10_000), "huge-int": {"text": 10**5000}}[case]
rt = Runtime([config], workspace_root=workspace, settings=Settings(cel_engine=engine))
(result,) = rt.run_turn_sync([Call(id="c", name="ruled", args=args)])
print(json.dumps({"status": result.status.value, "code": result.code, "content": result.content[:300]}))
"""


def run_in_child(config: Path, workspace: Path, engine: str, case: str) -> subprocess.CompletedProcess[str]:
    script = workspace / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    return subprocess.run(
        [sys.executable, str(script), str(config), str(workspace), engine, case],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize(
    "case",
    [
        pytest.param("deep"),  # segfaulted in cel-expr-python until validate began refusing deep arguments
        pytest.param("huge-int"),
    ],
)
def test_a_hostile_argument_through_a_fast_cel_rule_does_not_crash_the_process(tmp_path: Path, case: str) -> None:
    pytest.importorskip("cel_expr_python")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = build(ConfigDir(tmp_path / "config"))
    child = run_in_child(config, workspace, "fast", case)
    assert child.returncode == 0, f"child exited with {child.returncode}: {child.stderr[-500:]}"
    outcome = json.loads(child.stdout)
    assert outcome["status"] == "invalid" and outcome["code"] in ("rule_failed", "invalid_arguments"), outcome


def test_a_huge_int_is_refused_before_any_cel_rule_sees_it(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    child = run_in_child(build(ConfigDir(tmp_path / "config")), workspace, "portable", "huge-int")
    assert child.returncode == 0, child.stderr[-500:]
    outcome = json.loads(child.stdout)
    assert (outcome["status"], outcome["code"]) == ("invalid", "invalid_arguments")
    assert "64-bit" in outcome["content"]
