"""A rebuild reuses the whole compiled tool or policy of a document whose file and build
context did not change, and the condition plan of a tool whose rules did not change, and
recompiles everything else: what it reuses must be exactly what a fresh compilation would
give, decisions, problems and locations included."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime import Call, CompileCache, Session, Settings, build_snapshot, load_snapshot
from runtime.config.compile import BuildResult
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.decision import decide
from runtime.records import BoundCall, ValidatedCall
from runtime.settings import DefaultOutput
from runtime.snapshot import Snapshot

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: {description}
  handler: builtin:file_read
  read_only: true
  {extra}
  input_schema:
    type: object
    required: [path]
    properties:
      path: {{type: string}}
      limit: {{type: integer}}
  rules:
    - expression: 'args.path != ""'
      message: give a path
    - expression: '!has(args.limit) || args.limit <= 10'
      message: at most 10
"""


def tool(name: str, description: str = "Reads.", extra: str = "") -> str:
    return TOOL.format(name=name, description=description, extra=extra or "timeout: {total_s: 5}")


def profiles(max_chars: int = 100, pattern: str = "sk-[a-z]{8}") -> str:
    return (
        "apiVersion: toolrt/v1\nkind: OutputProfile\nmetadata: {name: small}\n"
        f"spec: {{max_chars: {max_chars}, preview_chars: 10}}\n---\n"
        "apiVersion: toolrt/v1\nkind: RedactionProfile\nmetadata: {name: keys}\n"
        f"spec:\n  patterns:\n    - {{name: key, regex: '{pattern}'}}\n"
    )


@pytest.fixture(params=["fast", "portable"])
def settings(request: pytest.FixtureRequest) -> Settings:
    return Settings(cel_engine=request.param, schema_engine=request.param)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "a.yaml").write_text(tool("stable") + "---\n" + tool("neighbour"))
    (tmp_path / "b.yaml").write_text(tool("changing"))
    (tmp_path / "profiles.yaml").write_text(profiles())
    (tmp_path / "c.yaml").write_text(tool("profiled", extra="output: {profile: small}\n  redaction: [keys]"))
    (tmp_path / "d.yaml").write_text(tool("unredacted", extra="redaction: []"))
    return tmp_path


def built(config: Path, settings: Settings, cache: CompileCache) -> BuildResult:
    result = build_snapshot([config], settings, cache)
    assert result.snapshot is not None, result.problems
    return result


def test_a_tool_of_an_unchanged_file_is_the_previous_builds_tool(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([config], settings, cache)
    (config / "b.yaml").write_text(tool("changing", "Reads more."))
    after = load_snapshot([config], settings, cache)
    for name in ("stable", "neighbour", "profiled", "unredacted"):
        assert after.tools[name] is before.tools[name], name
    assert after.tools["changing"] is not before.tools["changing"]
    assert after.tools["changing"].spec.description == "Reads more."


def test_every_tool_of_an_edited_file_is_compiled_again_with_its_new_place(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([config], settings, cache)
    # Two lines above both documents: the same content, two lines further down.
    (config / "a.yaml").write_text("# moved\n# down\n" + (config / "a.yaml").read_text())
    after = load_snapshot([config], settings, cache)
    fresh = load_snapshot([config], settings, CompileCache())
    for name in ("stable", "neighbour"):
        assert after.tools[name] is not before.tools[name]
        assert after.tools[name].source.line == before.tools[name].source.line + 2
        assert after.tools[name].source == fresh.tools[name].source


def test_a_reused_tool_reports_its_warnings_in_every_build(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    first = built(config, settings, cache)
    (config / "b.yaml").write_text(tool("changing", "Reads more."))
    second = built(config, settings, cache)
    fresh = built(config, settings, CompileCache())
    warned = [p for p in first.problems if p.code == "redaction-off"]
    assert warned and warned[0].location.file.endswith("d.yaml")
    assert second.problems == first.problems == fresh.problems


def test_a_broken_tool_is_reported_in_every_build_and_never_kept(config: Path, settings: Settings) -> None:
    (config / "e.yaml").write_text(tool("broken").replace('args.path != ""', "args.path == "))
    cache = CompileCache()
    first = build_snapshot([config], settings, cache)
    (config / "b.yaml").write_text(tool("changing", "Reads more."))
    second = build_snapshot([config], settings, cache)
    assert first.snapshot is None and second.snapshot is None
    assert first.errors and second.errors == first.errors
    (config / "e.yaml").unlink()
    assert build_snapshot([config], settings, cache).snapshot is not None


def test_an_edited_output_profile_recompiles_the_tools(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([config], settings, cache)
    assert before.tools["profiled"].output.max_chars == 100
    (config / "profiles.yaml").write_text(profiles(max_chars=250))
    after = load_snapshot([config], settings, cache)
    assert after.tools["profiled"].output.max_chars == 250
    assert after.tools["stable"] is not before.tools["stable"]


def test_an_edited_redaction_profile_reaches_the_tools_that_name_it(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([config], settings, cache)
    assert "sk-abcdefgh" not in before.tools["profiled"].redactor.redact("key sk-abcdefgh")[0]
    (config / "profiles.yaml").write_text(profiles(pattern="pk-[a-z]{8}"))
    after = load_snapshot([config], settings, cache)
    assert "sk-abcdefgh" in after.tools["profiled"].redactor.redact("key sk-abcdefgh")[0]
    assert "pk-abcdefgh" not in after.tools["profiled"].redactor.redact("key pk-abcdefgh")[0]


def test_other_default_output_settings_recompile_the_tools(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([config], settings, cache)
    changed = settings.model_copy(update={"default_output": DefaultOutput(max_chars=1234)})
    after = load_snapshot([config], changed, cache)
    assert after.tools["stable"] is not before.tools["stable"]
    assert after.tools["stable"].output.max_chars == 1234
    assert before.tools["stable"].output.max_chars != 1234


def test_the_other_engine_never_gets_a_tool_compiled_for_the_first(config: Path) -> None:
    cache = CompileCache()
    fast = load_snapshot([config], Settings(cel_engine="fast", schema_engine="fast"), cache)
    portable = load_snapshot([config], Settings(cel_engine="portable", schema_engine="portable"), cache)
    assert portable.tools["stable"] is not fast.tools["stable"]
    assert portable.cel_engine == "portable"


def test_a_new_environment_secret_recompiles_the_tools(
    config: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = CompileCache()
    monkeypatch.delenv("REUSE_TEST_TOKEN", raising=False)
    before = load_snapshot([config], settings, cache)
    monkeypatch.setenv("REUSE_TEST_TOKEN", "v3ry-s3cret-value")
    after = load_snapshot([config], settings, cache)
    assert after.tools["stable"] is not before.tools["stable"]
    assert "v3ry-s3cret-value" not in after.tools["stable"].redactor.redact("token v3ry-s3cret-value")[0]


def test_many_rebuilds_keep_the_cache_the_size_of_the_config(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    load_snapshot([config], settings, cache)
    size = cache.stats()["compiled"]
    for round_ in range(12):
        (config / "b.yaml").write_text(tool("changing", f"Reads, take {round_}."))
        load_snapshot([config], settings, cache)
    assert cache.stats()["compiled"] <= size + 1


def test_a_tool_that_comes_back_after_an_edit_is_compiled_like_a_fresh_one(config: Path, settings: Settings) -> None:
    cache = CompileCache()
    original = (config / "b.yaml").read_text()
    load_snapshot([config], settings, cache)
    (config / "b.yaml").write_text(tool("changing", "Reads more."))
    load_snapshot([config], settings, cache)
    (config / "b.yaml").write_text(original)
    back = load_snapshot([config], settings, cache)
    fresh = load_snapshot([config], settings, CompileCache())
    assert back.tools["changing"].spec == fresh.tools["changing"].spec
    assert back.tools["changing"].source == fresh.tools["changing"].source
    assert back.version == fresh.version


POLICY = """\
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: limits}}
spec:
  rules:
    - name: small-reads
      effect: allow
      tools: [stable, changing]
      when: 'has(args.limit) && args.limit <= {allow_up_to}'
    - name: read-only
      effect: allow
      tools: ["*"]
      when: 'tool.read_only'
    - name: big-reads
      effect: deny
      tools: [stable, changing]
      when: 'has(args.limit) && args.limit > {allow_up_to}'
      reason: too big
    - name: never
      effect: deny
      tools: [neighbour]
      commands: ["rm *"]
"""


def decided(snapshot: Snapshot, tool_name: str, limit: int | None) -> str:
    args: dict[str, object] = {"path": "a.txt"} if limit is None else {"path": "a.txt", "limit": limit}
    bound = lookup(Call("1", tool_name, args), snapshot)
    assert isinstance(bound, BoundCall), bound
    call = validate(bound, Session(), snapshot)
    assert isinstance(call, ValidatedCall), call
    return decide(call, Session(), snapshot).effect


@pytest.fixture
def with_policy(config: Path) -> Path:
    (config / "policy.yaml").write_text(POLICY.format(allow_up_to=5))
    return config


def test_a_policy_of_an_unchanged_file_and_its_plans_are_the_previous_builds(
    with_policy: Path, settings: Settings
) -> None:
    cache = CompileCache()
    before = load_snapshot([with_policy], settings, cache)
    (with_policy / "b.yaml").write_text(tool("changing", "Reads more."))
    after = load_snapshot([with_policy], settings, cache)
    assert after.policies == before.policies
    assert all(a is b for a, b in zip(after.policies, before.policies, strict=True))
    assert after.when_plans["stable"] is before.when_plans["stable"]
    assert after.when_plans["changing"] is not before.when_plans["changing"]


def test_an_edited_policy_decides_by_its_new_conditions(with_policy: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([with_policy], settings, cache)
    assert decided(before, "stable", 8) == "deny"
    (with_policy / "policy.yaml").write_text(POLICY.format(allow_up_to=9))
    after = load_snapshot([with_policy], settings, cache)
    assert after.when_plans["stable"] is not before.when_plans["stable"]
    fresh = load_snapshot([with_policy], settings, CompileCache())
    for limit in (None, 1, 5, 6, 8, 9, 10):
        for name in ("stable", "changing", "neighbour"):
            assert decided(after, name, limit) == decided(fresh, name, limit), (name, limit)
    assert decided(after, "stable", 8) == "allow"


def test_an_edited_tool_gets_a_plan_made_from_its_new_self(with_policy: Path, settings: Settings) -> None:
    cache = CompileCache()
    before = load_snapshot([with_policy], settings, cache)
    assert decided(before, "changing", 8) == "deny"
    (with_policy / "b.yaml").write_text(tool("changing").replace("read_only: true", "read_only: false"))
    after = load_snapshot([with_policy], settings, cache)
    fresh = load_snapshot([with_policy], settings, CompileCache())
    for limit in (None, 1, 5, 8):
        assert decided(after, "changing", limit) == decided(fresh, "changing", limit), limit
    assert decided(before, "changing", None) == "allow"
    assert decided(after, "changing", None) != "allow"  # no longer read-only: no rule allows it


def test_a_reused_policy_reports_its_warnings_in_every_build(with_policy: Path, settings: Settings) -> None:
    cache = CompileCache()
    first = built(with_policy, settings, cache)
    (with_policy / "b.yaml").write_text(tool("changing", "Reads more."))
    second = built(with_policy, settings, cache)
    fresh = built(with_policy, settings, CompileCache())
    assert any(p.code == "never-applies" for p in first.problems)
    assert second.problems == first.problems == fresh.problems


def test_a_broken_policy_is_reported_in_every_build(with_policy: Path, settings: Settings) -> None:
    (with_policy / "policy.yaml").write_text(POLICY.format(allow_up_to="'five'"))
    cache = CompileCache()
    first = build_snapshot([with_policy], settings, cache)
    (with_policy / "b.yaml").write_text(tool("changing", "Reads more."))
    second = build_snapshot([with_policy], settings, cache)
    assert first.snapshot is None and second.snapshot is None
    assert first.errors and second.errors == first.errors
