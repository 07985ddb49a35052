"""Building snapshots: immutability, content versions, the compile cache, resolution."""

from pathlib import Path

import pytest

from runtime import CompileCache, ConfigError, Settings, build_snapshot, load_snapshot
from runtime.config.models import TruncationMode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}{version}}}
spec:
  description: {description}
  handler: builtin:file_read
  read_only: true
  output: {output}
  input_schema:
    type: object
    required: [path]
    properties:
      path: {{type: string}}
  rules:
    - expression: 'args.path != ""'
      message: give a path
"""


def write_tool(
    root: Path, file: str, name: str = "reader", description: str = "Reads.", output: str = "{}", version: str = ""
) -> Path:
    path = root / file
    version_text = f", version: '{version}'" if version else ""
    path.write_text(TOOL.format(name=name, description=description, output=output, version=version_text))
    return path


@pytest.fixture(params=["fast", "portable"])
def settings(request) -> Settings:
    return Settings(cel_engine=request.param, schema_engine=request.param)


def test_snapshot_containers_are_read_only(tmp_path, settings):
    write_tool(tmp_path, "a.yaml")
    snapshot = load_snapshot([tmp_path], settings)
    with pytest.raises(TypeError):
        snapshot.tools["other"] = snapshot.tools["reader"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        snapshot.tools["reader"].name = "x"  # type: ignore[misc]
    assert isinstance(snapshot.tools["reader"].rules, tuple)


def test_version_ignores_comments_and_formatting_but_not_content(tmp_path, settings):
    path = write_tool(tmp_path, "a.yaml")
    first = load_snapshot([tmp_path], settings).version
    path.write_text("# a comment\n" + path.read_text().replace("read_only: true", "read_only:   true"))
    assert load_snapshot([tmp_path], settings).version == first
    path.write_text(path.read_text().replace("Reads.", "Reads files."))
    assert load_snapshot([tmp_path], settings).version != first


def test_rebuild_reuses_compiled_pieces_of_unchanged_tools(tmp_path, settings):
    write_tool(tmp_path, "a.yaml", name="stable")
    changing = write_tool(tmp_path, "b.yaml", name="changing")
    cache = CompileCache()
    before = load_snapshot([tmp_path], settings, cache)
    changing.write_text(changing.read_text().replace("Reads.", "Reads more."))
    after = load_snapshot([tmp_path], settings, cache)
    assert after.tools["stable"].arguments is before.tools["stable"].arguments
    assert after.tools["stable"].rules[0].program is before.tools["stable"].rules[0].program
    assert after.tools["changing"].arguments is not before.tools["changing"].arguments


def test_cache_forgets_documents_that_are_gone(tmp_path, settings):
    write_tool(tmp_path, "a.yaml", name="one")
    gone = write_tool(tmp_path, "b.yaml", name="two")
    cache = CompileCache()
    load_snapshot([tmp_path], settings, cache)
    size = cache.stats()["models"]
    gone.unlink()
    load_snapshot([tmp_path], settings, cache)
    assert cache.stats()["models"] == size - 1


def test_output_limits_follow_tool_then_profile_then_default(tmp_path, settings):
    (tmp_path / "profile.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: OutputProfile\nmetadata: {name: small}\nspec: {max_chars: 100, preview_chars: "
        "10, on_success: head}\n"
    )
    write_tool(tmp_path, "a.yaml", output="{profile: small, max_chars: 50}")
    output = load_snapshot([tmp_path], settings).tools["reader"].output
    assert output.max_chars == 50  # the tool's own value
    assert output.preview_chars == 10  # from the profile
    assert output.on_success is TruncationMode.head  # from the profile
    assert output.tail_chars == settings.default_output.tail_chars  # the runtime default
    assert output.on_error is TruncationMode.head_tail


def test_tools_in_several_versions_default_to_the_unversioned_or_highest(tmp_path, settings):
    write_tool(tmp_path, "v2.yaml", version="2", description="Two.")
    write_tool(tmp_path, "v10.yaml", version="10", description="Ten.")
    snapshot = load_snapshot([tmp_path], settings)
    assert snapshot.tools["reader"].version == "10"
    assert snapshot.tool("reader", "2").spec.description == "Two."
    assert snapshot.tool("reader", "3") is None


def test_python_handler_beside_the_config_is_resolved_without_touching_sys_path(settings):
    import sys

    path_before = list(sys.path)
    snapshot = load_snapshot([EXAMPLES / "customer-service"], settings)
    handler = snapshot.tools["query_ticket"].handler
    assert handler.kind == "python"
    assert callable(handler.function)
    assert handler.function.__name__ == "query_ticket"
    assert sys.path == path_before


def test_included_packs_provide_profiles_and_policies(settings):
    snapshot = load_snapshot([EXAMPLES / "coding-agent"], settings)
    assert {"secrets", "pii"} <= set(snapshot.redaction_profiles)
    assert "inline-large" in snapshot.output_profiles
    assert "default-permissions" in {p.name for p in snapshot.policies}
    assert [r.name for r in snapshot.tools["file_read"].redaction] == ["secrets"]


def test_redaction_profile_compiles_one_combined_scan(settings):
    snapshot = load_snapshot([EXAMPLES / "coding-agent"], settings)
    secrets = snapshot.redaction_profiles["secrets"]
    text = "key AKIAABCDEFGHIJKLMNOP and commit 3f9a2b7c"
    assert secrets.combined.search(text) is not None
    names = [p.name for p in secrets.patterns if p.regex.search(text)]
    assert names == ["aws_access_key"]


def test_policy_rules_are_compiled_with_glob_matchers(settings):
    snapshot = load_snapshot([EXAMPLES / "coding-agent"], settings)
    rule = next(r for r in snapshot.policy_rules if r.name == "push-needs-approval")
    assert rule.matches_tool("git_push")
    assert not rule.matches_tool("git_pull")
    deny = next(r for r in snapshot.policy_rules if r.name == "deny-secret-files")
    assert deny.when is not None


def test_load_snapshot_raises_config_error_with_every_problem(tmp_path, settings):
    write_tool(tmp_path, "a.yaml", output="{profile: missing}")
    (tmp_path / "b.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: b}\nspec: {description: x, handler: 'builtin:nope'}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_snapshot([tmp_path], settings)
    codes = sorted(p.code for p in caught.value.problems)
    assert codes == ["unknown-builtin", "unknown-profile"]
    assert "a.yaml:8:" in str(caught.value)


def test_build_snapshot_reports_problems_instead_of_raising(tmp_path, settings):
    (tmp_path / "a.yaml").write_text("a: [1, 2\n")
    result = build_snapshot([tmp_path], settings)
    assert result.snapshot is None
    assert [p.code for p in result.problems] == ["yaml-syntax"]


def test_tool_names_that_model_apis_reject_are_lint_errors(tmp_path, settings):
    write_tool(tmp_path, "a.yaml", name="git.push")
    result = build_snapshot([tmp_path], settings)
    (problem,) = result.problems
    assert (problem.code, problem.location.line) == ("invalid-value", 3)
    assert "`git_push`" in problem.message
