"""`toolrt explain`: a dry run that shows each schema error, each business rule with its
value, each policy rule considered and the final decision; nothing executes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from runtime.cli import main

CONFIG = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: write_note}
spec:
  description: Write a note.
  handler: python:nowhere_module_that_must_not_run:write
  input_schema:
    type: object
    required: [path, text]
    properties:
      path: {type: string}
      text: {type: string, maxLength: 20}
  rules:
    - {name: no-dotdot, expression: '!args.path.contains("..")', message: stay inside}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: sh}
spec:
  description: Run a command line.
  handler: builtin:tool_search
  command_line: line
  input_schema: {type: object, required: [line], properties: {line: {type: string}}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: p}
spec:
  rules:
    - {name: no-secrets, effect: deny, tools: [write_note], when: 'args.path.endsWith(".env")', reason: no secrets}
    - {name: notes-ok, effect: allow, tools: [write_note], when: 'args.path.startsWith("notes/")'}
    - {name: no-rm, effect: deny, tools: [sh], commands: ['rm *']}
    - {name: other, effect: deny, tools: [sh]  , when: 'false'}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "c.yaml").write_text(
        CONFIG.replace("python:nowhere_module_that_must_not_run:write", "builtin:tool_search")
    )
    return tmp_path


def explain(config: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["explain", "--config", str(config), *extra], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_explain_shows_each_policy_rule_and_the_final_decision(config: Path) -> None:
    code, out, _ = explain(config, "write_note", "--args", '{"path": "notes/a.md", "text": "hi"}')
    assert code == 0
    assert "schema    ok" in out
    assert "rule      pass  no-dotdot" in out and "=> true" in out
    assert "policy    skip   deny  p/no-secrets: `when` is false" in out
    assert "policy    match  allow p/notes-ok: `when` is true" in out
    assert "decision  ALLOW by `p/notes-ok`" in out
    assert "2 other rule(s) do not name this tool" in out


def test_explain_reports_every_schema_error_and_stops_at_validation(config: Path) -> None:
    code, out, _ = explain(config, "write_note", "--args", '{"text": "' + "x" * 30 + '", "extra": 1}')
    assert code == 0
    assert out.count("schema    ") >= 2
    assert "path" in out and "20" in out
    assert "stops at validate" in out and "decision" not in out


def test_explain_shows_a_failing_business_rule_with_its_value(config: Path) -> None:
    _, out, _ = explain(config, "write_note", "--args", '{"path": "../x", "text": "hi"}')
    assert "rule      FAIL  no-dotdot" in out and "=> false" in out
    assert "stops at validate" in out


def test_explain_shows_the_split_command_line(config: Path) -> None:
    _, out, _ = explain(config, "sh", "--args", '{"line": "ls && sudo rm -rf /"}')
    assert "commands  ls; sudo rm -rf /; rm -rf /" in out
    assert "decision  DENY by `p/no-rm`" in out


def test_explain_uses_the_session_mode(config: Path) -> None:
    _, out, _ = explain(
        config, "write_note", "--args", '{"path": "x.md", "text": "hi"}', "--session", '{"mode": "plan", "user": "u"}'
    )
    assert "decision  DENY" in out and "plan mode" in out


def test_explain_as_json_carries_the_same_findings(config: Path) -> None:
    code, out, _ = explain(config, "write_note", "--args", '{"path": "a.env", "text": "hi"}', "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert (data["decision"], data["decision_rule"], data["reason"]) == ("deny", "p/no-secrets", "no secrets")
    assert [t["rule"] for t in data["policy"]] == ["p/no-secrets", "p/notes-ok"]


def test_explain_of_an_unknown_tool_lists_the_close_names(config: Path) -> None:
    code, out, _ = explain(config, "write_nots")
    assert code == 0 and "write_note" in out and "stops at lookup" in out


@pytest.mark.parametrize(
    ("flag", "value", "phrase"),
    [
        ("--args", "{bad", "must be JSON"),
        ("--session", '{"mode": "yolo"}', "mode must be one of"),
        ("--session", "[1]", "must be a JSON object"),
        ("--session", '{"who": 1}', "unknown keys"),
    ],
)
def test_explain_rejects_bad_flags_with_a_usage_error(config: Path, flag: str, value: str, phrase: str) -> None:
    code, _, err = explain(config, "write_note", flag, value)
    assert code == 2 and phrase in err


def test_explain_never_runs_the_handler(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "h.py").write_text(f"def write(args):\n    open({str(marker)!r}, 'w').write('ran')\n")
    (tmp_path / "c.yaml").write_text(CONFIG.replace("nowhere_module_that_must_not_run", "h"))
    code, out, _ = explain(
        tmp_path, "write_note", "--args", '{"path": "notes/a", "text": "t"}', "--session", '{"mode": "bypass"}'
    )
    assert code == 0 and "ALLOW" in out
    assert not marker.exists()


def test_explain_refuses_what_validation_refuses_before_any_rule(config: Path) -> None:
    _, out, _ = explain(
        config, "write_note", "--args", '{"path": "notes/a", "text": "t", "n": 1000000000000000000000000000000}'
    )
    assert "64-bit" in out and "stops at validate" in out and "decision" not in out


ALLOW_READS = "    - {name: reads, effect: allow, tools: [sh], commands: ['cat *', 'git diff *', 'ls *']}\n"


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("cat ${IFS}.env", "word      `${IFS}.env` is only known when the line runs"),
        ("ls -A | xargs cat", "word      the input xargs appends is only known when the line runs"),
        ("git diff --output=.git/config", "word      `--output=.git/config` writes a file"),
        ("cat /etc/passwd", "word      `/etc/passwd` names a path outside the workspace"),
        ("cat src/*.py", None),
    ],
)
def test_explain_names_the_word_or_option_no_wildcard_allow_covers(
    tmp_path: Path, line: str, shown: str | None
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "c.yaml").write_text(
        CONFIG.replace("python:nowhere_module_that_must_not_run:write", "builtin:tool_search") + ALLOW_READS
    )
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.py").write_text("x")
    _, out, _ = explain(config, "sh", "--workspace", str(workspace), "--args", json.dumps({"line": line}))
    if shown is None:  # a glob whose matches are all allowed: judged through its expansion
        assert "commands  cat src/*.py; cat src/a.py" in out and "decision  ALLOW" in out, out
    else:
        assert shown in out, out
        assert "decision  ASK" in out, out


def test_explain_names_toolrts_own_files_as_the_reason_for_a_denial(tmp_path: Path, config: Path) -> None:
    _, out, _ = explain(config, "sh", "--workspace", str(config), "--args", json.dumps({"line": "echo x > evil.yaml"}))
    assert "decision  DENY" in out and "toolrt's own files" in out, out
