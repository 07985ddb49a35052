"""runtime.testing.ConfigFolder / runtime_from_yaml / snapshot_from_yaml: a snapshot or a
Runtime from YAML text inside a test, with a workspace and state of its own, nothing
written outside its folder and nothing left behind."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from runtime import Call, ConfigError, Session
from runtime.records import Status
from runtime.testing import ConfigFolder, FakeTool, runtime_from_yaml, snapshot_from_yaml

READER = """
    # The file tools of the workspace.
    apiVersion: toolrt/v1
    kind: Tool
    metadata: {name: file_read}
    spec:
      description: Read a file.
      handler: builtin:file_read
      read_only: true
"""

GREETER = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: greet}
spec:
  description: Greets.
  handler: python:greeter:greet
  read_only: true
  input_schema: {type: object, properties: {who: {type: string}}, required: [who]}
"""


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where this test's temporary folders go (of its own, so that other test workers'
    folders do not show up in what it checks is left behind)."""
    root = tmp_path / "temp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_a_snapshot_compiles_from_indented_yaml_text_and_its_folder_is_gone_afterwards(temp_root: Path) -> None:
    snapshot = snapshot_from_yaml(READER, GREETER, files={"greeter.py": "def greet(args):\n    return 'hi'\n"})
    assert set(snapshot.tools) == {"file_read", "greet"}
    assert list(temp_root.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: t}\nspec: {description: d, handler: 'builtin:nope'}\n",
            "nope",
        ),
        ("apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: t}\nspec:\n  description: [\n", "app.yaml:"),
        ("apiVersion: toolrt/v2\nkind: Tool\n", "apiVersion"),
        ("kind: Gadget\n", "Gadget"),
    ],
)
def test_config_that_does_not_compile_raises_config_error_listing_the_problems(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as raised:
        snapshot_from_yaml(text)
    assert raised.value.problems and expected in str(raised.value)


def test_a_runtime_reads_the_workspace_files_given_and_closes_at_the_end_of_the_with_block() -> None:
    with runtime_from_yaml(READER, workspace_files={"src/app.py": "print('hello')\n"}) as runtime:
        root = runtime.workspace_root
        [result] = runtime.run_turn_sync([Call(id="c", name="file_read", args={"path": "src/app.py"})])
        assert result.status is Status.ok and "print('hello')" in result.content
    assert not root.exists(), "the temporary folder was left behind"


def test_the_audit_log_and_artifacts_go_to_the_folders_state_not_the_users(tmp_path: Path) -> None:
    fake = FakeTool(returns="x" * 100_000)
    suite_state = Path(os.environ["XDG_STATE_HOME"])
    before = sorted(suite_state.rglob("*"))
    with ConfigFolder(GREETER, fakes={"greet": fake}, directory=tmp_path) as folder:
        runtime = folder.runtime()
        [result] = runtime.run_turn_sync([Call(id="c", name="greet", args={"who": "a"})])
        assert result.metadata["truncated"] is True
    written = [p.relative_to(folder.state) for p in folder.state.rglob("*") if p.is_file()]
    assert any(p.parts[0] == "audit" for p in written) and any(p.parts[0] == "artifacts" for p in written)
    assert sorted(suite_state.rglob("*")) == before
    assert folder.root.is_relative_to(tmp_path) and folder.root.exists(), "a given directory is kept"


def test_two_folders_in_one_directory_do_not_share_files(tmp_path: Path) -> None:
    with ConfigFolder(READER, directory=tmp_path) as one, ConfigFolder(GREETER, directory=tmp_path) as two:
        assert one.path != two.path
        assert [p.name for p in one.path.iterdir()] == ["app.yaml"] == [p.name for p in two.path.iterdir()]
        assert set(one.snapshot().tools) == {"file_read"}


def test_a_handler_module_beside_the_yaml_runs_for_real_and_is_forgotten_with_its_folder() -> None:
    for greeting in ("hello", "good day"):  # the second folder's greeter.py, not the first's
        greeter = f"def greet(args):\n    return f\"{greeting} {{args['who']}}\"\n"
        with runtime_from_yaml(GREETER, files={"greeter.py": greeter}) as runtime:
            [result] = runtime.run_turn_sync([Call(id="c", name="greet", args={"who": "Ada"})], Session(id="s"))
        assert result.content == f"{greeting} Ada"
        assert "greeter" not in sys.modules


def test_a_reload_picks_up_a_config_file_the_test_rewrites() -> None:
    with ConfigFolder(READER) as folder:
        runtime = folder.runtime()
        folder.write("app.yaml", GREETER)
        folder.write("greeter.py", "def greet(args):\n    return 'v2'\n")
        assert runtime.reload().snapshot is not None
        assert set(runtime.snapshot.tools) == {"greet"}
        assert runtime.run_turn_sync([Call(id="c", name="greet", args={"who": "x"})])[0].content == "v2"


async def test_async_with_gives_a_runtime_for_async_tests() -> None:
    fake = FakeTool(returns="async hi")
    async with runtime_from_yaml(GREETER, fakes={"greet": fake}) as runtime:
        [result] = await runtime.run_turn([Call(id="c", name="greet", args={"who": "x"})])
    assert result.content == "async hi"


def test_a_runtime_that_does_not_compile_raises_and_leaves_no_folder(temp_root: Path) -> None:
    with pytest.raises(ConfigError, match="greeter"):
        with runtime_from_yaml(GREETER):
            raise AssertionError("never entered")
    assert list(temp_root.iterdir()) == []


def test_faking_keeps_the_rest_of_the_yaml_as_written_and_drops_process_isolation() -> None:
    text = GREETER.replace("  read_only: true\n", "  read_only: true  # keep me\n  process_isolation: true\n")
    with ConfigFolder(text, fakes={"greet": FakeTool()}) as folder:
        written = (folder.path / "app.yaml").read_text()
        module = written.split("handler: python:", 1)[1].split(":", 1)[0]
        assert "# keep me" in written and "process_isolation" not in written
        assert "greeter" not in written and module in sys.modules
        assert folder.snapshot().tools["greet"].spec.process_isolation is False
    assert module not in sys.modules, "the fakes' module outlived its folder"


def test_a_fake_for_a_tool_the_yaml_does_not_declare_is_refused_naming_the_declared_ones(temp_root: Path) -> None:
    fakes_modules = {name for name in sys.modules if name.startswith("toolrt_testing_fakes_")}
    with pytest.raises(ValueError, match=r"do not declare: gret \(declared: greet\)"):
        ConfigFolder(GREETER, fakes={"gret": FakeTool()})
    assert list(temp_root.iterdir()) == []
    assert {name for name in sys.modules if name.startswith("toolrt_testing_fakes_")} == fakes_modules


def test_a_fake_that_is_not_a_fake_tool_is_refused() -> None:
    with pytest.raises(TypeError, match=r"fakes\['greet'\] is a function"):
        ConfigFolder(GREETER, fakes={"greet": lambda args: "x"})  # type: ignore[dict-item]


def test_no_yaml_text_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one YAML text"):
        ConfigFolder()


def test_options_reach_the_runtime_and_hot_reload_is_off_by_default() -> None:
    with runtime_from_yaml(READER) as quiet:
        assert quiet.watcher is None
    with ConfigFolder(READER) as folder:
        custom = folder.runtime(settings=folder.settings(max_concurrency=3))
        assert custom.settings.max_concurrency == 3 and custom.settings.state_dir == folder.state


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (GREETER + "  description: twice\n", "description"),
        (GREETER.replace("{who: {type: string}}", "{who: {type: string}"), "app.yaml:"),
        (GREETER + "\t- tab\n", "app.yaml:"),
    ],
    ids=["duplicate-key", "unclosed-flow-mapping", "tab"],
)
def test_yaml_that_cannot_be_read_is_reported_by_the_build_with_its_position_even_with_fakes(
    broken: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        snapshot_from_yaml(broken, fakes={"greet": FakeTool()})
