"""The MCP lock file: `toolrt mcp lock` lists a server's tools once; lint, test, explain
and tools then see the mounted tools offline (no server started); at run time a live
listing that differs from the lock is reported and the live tool is what the policy
judges."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from loguru import logger
from mcp_support import doc, server_doc, write_config

from runtime.cli import main
from runtime.mcpclient.lock import LOCK_FILE, drift
from runtime.mcpclient.mount import ListedTool
from runtime.runtime import Runtime

DENY_ECHO = doc(
    "Policy",
    "p",
    {"rules": [{"name": "no-echo", "effect": "deny", "tools": ["fx__echo"], "when": 'args.text == "secret"'}]},
)
CASES = doc(
    "PolicyTest",
    "t",
    {
        "cases": [
            {
                "name": "secret echo denied",
                "tool": "fx__echo",
                "args": {"text": "secret"},
                "expect": {"decision": "deny", "rule": "no-echo"},
            },
        ]
    },
)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_a_locked_server_s_tools_are_checked_by_lint_test_explain_and_tools_offline(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config", server_doc(include=["echo"]), DENY_ECHO, CASES)
    code, out, _ = cli("lint", "--strict", str(config))
    assert code == 1 and "fx__echo" in out  # without the lock, the rule names an unknown tool
    code, out, err = cli("mcp", "lock", "--config", str(config))
    assert code == 0, err
    lock = json.loads((config / LOCK_FILE).read_text(encoding="utf-8"))
    (echo,) = [
        tool for tool in lock["servers"]["fx"] if tool["name"] == "echo"
    ]  # every listed tool: include applies when mounting
    assert echo["input_schema"]["required"] == ["text"] and echo["annotations"]["readOnlyHint"] is True
    # From here on no server may start: a command that would leave a marker if run.
    marker = tmp_path / "started"
    offline = json.loads((config / "config.yaml").read_text(encoding="utf-8").split("\n---\n")[0])
    offline["spec"]["command"] = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    text = (config / "config.yaml").read_text(encoding="utf-8").split("\n---\n")
    (config / "config.yaml").write_text("\n---\n".join([json.dumps(offline), *text[1:]]), encoding="utf-8")
    code, out, _ = cli("lint", "--strict", str(config))
    assert code == 0, out
    code, out, err = cli("test", str(config))
    assert code == 0 and "1 passed" in out, out + err
    code, out, _ = cli("tools", "--config", str(config))
    assert code == 0 and "fx__echo" in out
    code, out, _ = cli("explain", "fx__echo", "--config", str(config), "--args", '{"text": "secret"}')
    assert code == 0 and "no-echo" in out, out
    assert not marker.exists()


def test_a_typed_rule_over_a_locked_tool_is_checked_against_its_schema(tmp_path: Path) -> None:
    wrong = doc(
        "Policy", "p", {"rules": [{"name": "typo", "effect": "deny", "tools": ["fx__*"], "when": 'args.txt == "x"'}]}
    )
    config = write_config(tmp_path / "config", server_doc(include=["echo"]), wrong)
    assert cli("mcp", "lock", "--config", str(config))[0] == 0
    code, out, _ = cli("lint", "--strict", str(config))
    assert code == 1 and "cel-unknown-arg" in out and "args.txt" in out


def test_a_live_listing_that_differs_from_the_lock_is_reported_and_the_live_tool_is_mounted(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config", server_doc(include=["echo"]), DENY_ECHO)
    assert cli("mcp", "lock", "--config", str(config))[0] == 0
    lock_file = config / LOCK_FILE
    lock = json.loads(lock_file.read_text(encoding="utf-8"))
    (echo,) = [tool for tool in lock["servers"]["fx"] if tool["name"] == "echo"]
    echo["description"] = "An older description."
    lock_file.write_text(json.dumps(lock), encoding="utf-8")
    seen: list[dict[str, Any]] = []
    sink = logger.add(lambda message: seen.append(message.record["extra"]), level="WARNING")
    logger.enable("runtime")  # a library's logs are off until the app turns them on
    try:
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
        try:
            assert runtime.snapshot.tools["fx__echo"].spec.description == "Return the text."
        finally:
            runtime.close_sync()
    finally:
        logger.disable("runtime")
        logger.remove(sink)
    events = [e for e in seen if e.get("event") == "mcp_lock_drift"]
    assert events and events[0]["server"] == "fx" and "`echo` changed its description" in events[0]["changes"]


def test_drift_names_new_gone_and_changed_tools() -> None:
    a = ListedTool("a", "A", {"type": "object"})
    b = ListedTool("b", "B", {"type": "object"})
    b2 = ListedTool("b", "B", {"type": "object", "properties": {"x": {"type": "string"}}}, read_only=True)
    c = ListedTool("c", "C", {"type": "object"})
    assert drift([a, b], [b2, c]) == [
        "`c` is new",
        "`a` is gone",
        "`b` changed its input_schema, annotations (readOnlyHint: null -> true)",
    ]
    assert drift([a], [a]) == []


def test_lock_without_servers_fails_with_a_message(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config", DENY_ECHO)
    code, _, err = cli("mcp", "lock", "--config", str(config))
    assert code == 1 and "no McpServer" in err
