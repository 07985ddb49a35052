"""Secrets never reach the model, the disk or the audit log through a side door.

A real Runtime with the coding-agent example's config, a real SQLite audit log, real
commands and a real artifact store. Secret-shaped values arrive through every way a
hostile agent can make them travel: the arguments of a call (then audited), a command's
output (then spilled, timed out, or failed), an error message, a command name that is
not found, a validation error. After every call, the result the model reads and every
byte toolrt wrote to disk (audit log, artifacts, state) are searched for each secret.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.records import Call, Session, ToolResult
from runtime.settings import Settings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding-agent"

SECRETS = {
    "aws": "AKIAQ3EGRZ7XKLPM4TNW",
    "github": "ghp_" + "x7Kq2mZ9vB4nL8pR1tY6wE3sA5dF0gH2jK4l",
    "slack": "xoxb-" + "2048-1024-Zq8wX7cV6bN5mL4kJ3hG2fD1",
    "stripe": "sk_live_" + "51HxQz8Lm2Nv4Bc6Xa9Sd3Fg7Hj",
    "password": "Tr0ub4dor&3-horse-battery",
}

SHELL = """\
apiVersion: toolrt/v1
kind: Policy
metadata: {name: shell}
spec:
  rules:
    - name: side-channel-commands
      effect: allow
      tools: [run_command]
      commands: ['cat *', 'printf *', 'sleep *', 'ls *', 'false', 'seq *']
"""


class Place:
    def __init__(self, base: Path) -> None:
        self.config = base / "config"
        shutil.copytree(EXAMPLE, self.config, ignore=shutil.ignore_patterns("workspace", "app.py"))
        policies = self.config / "policies.yaml"
        # The example asks before every command line; here the allow rule above decides.
        policies.write_text(
            policies.read_text().replace("effect: ask\n      tools: [run_command]", "effect: ask\n      tools: [none]")
        )
        (self.config / "shell.yaml").write_text(SHELL)
        self.ws = base / "ws"
        shutil.copytree(EXAMPLE / "workspace", self.ws)
        lines = [f"{name}_token = {value}" for name, value in SECRETS.items() if name != "password"]
        lines.append(f"password = {SECRETS['password']}")
        (self.ws / "creds.txt").write_text("\n".join(lines) + "\n")
        (self.ws / "big.txt").write_text(("filler line\n" * 4000) + "\n".join(lines) + "\n" + ("more\n" * 4000))
        self.state = base / "state"
        self.runtime = Runtime(
            [self.config],
            settings=Settings(state_dir=self.state, workspace_root=self.ws, hot_reload=False),
            workspace_root=self.ws,
        )

    def call(self, tool: str, args: dict[str, object], mode: str = "default") -> ToolResult:
        (result,) = self.runtime.run_turn_sync([Call("c1", tool, args)], Session(id="s", mode=mode))
        return result

    def disk_bytes(self) -> bytes:
        self.runtime.close_sync()
        return b"".join(p.read_bytes() for p in self.state.rglob("*") if p.is_file())


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    made = Place(tmp_path)
    try:
        yield made
    finally:
        made.runtime.close_sync()


def leaks(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


def disk_leaks(data: bytes) -> list[str]:
    return [name for name, value in SECRETS.items() if value.encode() in data]


OUTPUT_CALLS = [
    ("run_command", {"command": "cat creds.txt"}),
    ("run_command", {"command": "cat big.txt"}),  # spilled to an artifact
    ("run_command", {"command": "cat creds.txt; sleep 30", "timeout_s": 1}),  # timed out
    ("run_command", {"command": "cat creds.txt; false"}),  # failed
    ("run_command", {"command": "cat creds.txt >&2; false"}),  # on stderr
    ("run_command", {"command": "cat creds.txt creds.txt creds.txt"}),
    ("file_read", {"path": "creds.txt"}),
    ("file_read", {"path": "big.txt", "offset": 3990, "limit": 30}),
    ("grep", {"pattern": "token|password"}),
    ("grep", {"pattern": "AKIA[A-Z0-9]+"}),
    ("grep", {"pattern": "token", "path": "creds.txt"}),
]


@pytest.mark.parametrize(("tool", "args"), OUTPUT_CALLS, ids=[str(a) for _t, a in OUTPUT_CALLS])
def test_secrets_in_output_reach_neither_the_model_nor_the_disk(place: Place, tool: str, args: dict) -> None:
    result = place.call(tool, args)
    assert leaks(result.content) == [], result.content
    artifact = result.metadata.get("artifact_id")
    if artifact:
        page = place.call("artifact_read", {"artifact_id": artifact, "offset": 0, "limit": 100_000})
        assert leaks(page.content) == []
    assert disk_leaks(place.disk_bytes()) == []


def _in_args() -> list[tuple[str, dict[str, object]]]:
    aws, github, password = SECRETS["aws"], SECRETS["github"], SECRETS["password"]
    return [
        ("file_edit", {"path": "notes.txt", "mode": "replace", "content": f"aws_token = {aws}\n"}),
        ("file_edit", {"path": "notes.txt", "mode": "replace", "content": f"password: {password}\n"}),
        ("file_edit", {"path": ".env", "mode": "replace", "content": f"GITHUB_TOKEN={github}\n"}),  # denied
        ("run_command", {"command": f"printf '%s' {github}"}),
        ("run_command", {"command": f"{aws} --version"}),  # not found
        ("run_command", {"command": f"curl -H 'Authorization: Bearer {github}' x"}),  # asked, no approver
        ("file_read", {"path": f"{github}.txt"}),  # no such file
        ("file_read", {"path": "x" * 5000 + "/" + github}),  # too long for the schema
        ("grep", {"pattern": f"({github}"}),  # a bad pattern
        ("git_push", {"branch": f"main-{aws}", "remote": f"-{github}"}),  # fails validation
        ("nope", {"token": github}),  # an unknown tool
        ("file_edit", {"path": "notes.txt", "mode": "str_replace", "old_string": github, "new_string": aws}),
    ]


@pytest.mark.parametrize(("tool", "args"), _in_args(), ids=[f"{t}-{i}" for i, (t, _a) in enumerate(_in_args())])
def test_secrets_in_arguments_are_not_written_to_the_audit_log_or_state(
    place: Place, tool: str, args: dict[str, object]
) -> None:
    place.call(tool, args, mode="accept_edits")
    assert disk_leaks(place.disk_bytes()) == []
