"""Redaction is on by default: a tool that names no profile gets `secrets`; `redaction: []`
turns it off and lint says so; the name `secrets` resolves even without the pack."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config.compile import build_snapshot
from runtime.config.problems import Severity
from runtime.settings import Settings

FAST = Settings(cel_engine="fast", schema_engine="fast")
AWS = "AKIAIOSFODNN7EXAMPLE"


def tool(name: str, redaction: str | None) -> str:
    line = f"  redaction: {redaction}\n" if redaction is not None else ""
    return f"""\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: d
  handler: builtin:file_read
{line}  input_schema: {{type: object, properties: {{path: {{type: string}}}}}}
"""


OWN_SECRETS = """\
apiVersion: toolrt/v1
kind: RedactionProfile
metadata: {name: secrets}
spec:
  patterns:
    - {name: house_token, regex: 'house_[0-9a-f]{8}'}
"""

PII_ONLY = """\
apiVersion: toolrt/v1
kind: RedactionProfile
metadata: {name: mine}
spec:
  patterns:
    - {name: house_token, regex: 'house_[0-9a-f]{8}'}
"""

INCLUDE = "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: inc}\nspec: {packs: [redaction-default]}\n"


def build(tmp_path: Path, *documents: str):
    (tmp_path / "config.yaml").write_text("---\n".join(documents), encoding="utf-8")
    return build_snapshot([tmp_path], FAST)


def redact(snapshot, name: str, text: str) -> str:
    return snapshot.tools[name].redactor.redact(text)[0]


@pytest.mark.parametrize("include", [False, True], ids=["without-the-pack", "with-the-pack"])
def test_a_tool_naming_no_profile_gets_the_shipped_secrets_profile(tmp_path: Path, include: bool) -> None:
    result = build(tmp_path, tool("t", None), *([INCLUDE] if include else []))
    assert result.snapshot is not None, result.problems
    compiled = result.snapshot.tools["t"]
    assert [p.name for p in compiled.redaction] == ["secrets"]
    assert redact(result.snapshot, "t", f"key {AWS}") == "key [REDACTED:aws_access_key]"
    assert not result.problems


def test_naming_secrets_without_including_the_pack_resolves_to_the_shipped_profile(tmp_path: Path) -> None:
    result = build(tmp_path, tool("t", "[secrets]"))
    assert result.snapshot is not None, result.problems
    assert redact(result.snapshot, "t", f"key {AWS}") == "key [REDACTED:aws_access_key]"


def test_an_empty_list_turns_redaction_off_and_lint_warns_where_it_is_written(tmp_path: Path) -> None:
    result = build(tmp_path, tool("t", "[]"))
    assert result.snapshot is not None
    assert redact(result.snapshot, "t", f"key {AWS}") == f"key {AWS}"
    (problem,) = result.problems
    assert problem.severity is Severity.warning
    assert problem.code == "redaction-off"
    assert problem.location.line == 7  # the `redaction:` line
    assert "Remove the line" in problem.message and "`t`" in problem.message


def test_a_tool_naming_its_own_profiles_gets_only_those(tmp_path: Path) -> None:
    result = build(tmp_path, tool("t", "[mine]"), PII_ONLY)
    assert result.snapshot is not None, result.problems
    assert [p.name for p in result.snapshot.tools["t"].redaction] == ["mine"]
    assert redact(result.snapshot, "t", f"{AWS} house_0123abcd") == f"{AWS} [REDACTED:house_token]"


def test_the_configs_own_secrets_profile_is_the_default_instead_of_the_shipped_one(tmp_path: Path) -> None:
    result = build(tmp_path, tool("t", None), OWN_SECRETS)
    assert result.snapshot is not None, result.problems
    assert redact(result.snapshot, "t", "house_0123abcd") == "[REDACTED:house_token]"


def test_the_audit_redactor_holds_the_shipped_secrets_even_without_the_pack(tmp_path: Path) -> None:
    result = build(tmp_path, tool("t", "[]"), PII_ONLY)
    assert result.snapshot is not None
    text, counts = result.snapshot.redactor.redact(f"{AWS} house_0123abcd")
    assert counts == {"aws_access_key": 1, "house_token": 1}
    assert AWS not in text


def test_the_shipped_examples_name_no_empty_redaction() -> None:
    root = Path(__file__).resolve().parents[2]
    for folder in ("examples/coding-agent", "examples/customer-service", "policies"):
        result = build_snapshot([root / folder], FAST)
        assert not [p for p in result.problems if p.code == "redaction-off"], folder
