"""The ``toolrt serve`` command line: exit codes, problems on stderr, shutdown on a signal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from mcpserver_support import CONFIG, REPO, TIMEOUT_S, serve_argv, stop

from runtime.cli import main


def run(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, cwd=REPO, env=dict(os.environ), timeout=TIMEOUT_S, check=False, **options
    )  # type: ignore[call-overload, no-any-return]


def test_serve_with_a_broken_config_exits_1_and_prints_every_problem_on_stderr(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: a}\nspec: {description: x, handler: "
        "'python:no_such_module_here:run'}\n---\napiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: b}\nspec: "
        "{description: x, handler: 'builtin:file_read', read_only: maybe}\n",
        encoding="utf-8",
    )
    done = run(serve_argv(config, tmp_path), stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the protocol channel: nothing else is written there
    assert "tools.yaml:4" in done.stderr and "handler-unresolved" in done.stderr
    assert "tools.yaml:9" in done.stderr and "`spec.read_only` must be true or false" in done.stderr


def test_serve_with_a_missing_config_path_is_a_usage_error(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["serve", "--config", str(tmp_path / "nowhere"), "--workspace", str(tmp_path)], stderr=err) == 2
    assert "no such config" in err.getvalue()


def test_serve_with_an_unknown_transport_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["serve", "--config", str(CONFIG), "--transport", "carrier-pigeon"], stderr=io.StringIO()) == 2


def test_serve_without_the_mcp_sdk_says_how_to_install_it_and_exits_2(tmp_path: Path) -> None:
    # A None entry in sys.modules makes `import mcp` fail as if the package were not installed.
    script = (
        "import sys; sys.modules['mcp'] = None; from runtime.cli import main; "
        f"sys.exit(main({['serve', '--config', str(CONFIG), '--workspace', str(tmp_path)]!r}))"
    )
    done = run([sys.executable, "-c", script], stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "pip install 'toolrt[mcp]'" in done.stderr


def test_sigterm_stops_a_stdio_server_whose_client_is_still_connected(tmp_path: Path) -> None:
    process = subprocess.Popen(
        serve_argv(CONFIG, tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=dict(os.environ),
    )
    assert process.stdin is not None and process.stdout is not None
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    process.stdin.write((json.dumps(initialize) + "\n").encode())
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())  # the server is up and serving; stdin stays open
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "toolrt"
    try:
        assert stop(process) == 0
    finally:
        process.stdin.close()
        process.stdout.close()
