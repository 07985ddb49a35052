"""The python handler modules a snapshot takes from beside its config files are config too:
with the config folder inside the workspace (only its YAML was kept from the agent), no tool
of the agent may rewrite them, their package, or the ``__pycache__`` Python would run
instead; and a module an agent adds there under an installed handler's name is never used.
Real Runtimes, the real file tools, a real isolated child.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime import Call, Runtime, Session
from runtime.config.files import handler_paths
from runtime.settings import Settings

TOOLS = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: iso}}
spec:
  description: An isolated handler.
  handler: python:{module}:run
  read_only: true
  process_isolation: true
  input_schema: {{type: object}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: inapp}}
spec:
  description: A handler in the app.
  handler: python:{package}:run
  read_only: true
  input_schema: {{type: object}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: file_edit}}
spec:
  description: Edits a file.
  handler: builtin:file_edit
  edits_workspace: true
  input_schema:
    type: object
    properties:
      path: {{type: string}}
      mode: {{type: string}}
      content: {{type: string}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: all}}
spec:
  rules:
    - {{name: all, effect: allow, tools: ["*"]}}
"""

HANDLER = "def run(args):\n    return 'real'\n"
AGENT = "import pathlib\npathlib.Path({mark!r}).write_text('ran')\ndef run(args):\n    return 'agent'\n"


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    token = uuid.uuid4().hex[:10]
    module, package = f"hf_mod_{token}", f"hf_pkg_{token}"
    yield module, package
    for name in (module, package):
        sys.modules.pop(name, None)


def _runtime(tmp_path: Path, names: tuple[str, str], config: Path) -> Runtime:
    module, package = names
    config.mkdir(parents=True, exist_ok=True)
    (config / "tools.yaml").write_text(TOOLS.format(module=module, package=package))
    (config / f"{module}.py").write_text(HANDLER)
    (config / package).mkdir(exist_ok=True)
    (config / package / "__init__.py").write_text(HANDLER)
    return Runtime([config], workspace_root=tmp_path / "ws", settings=Settings(hot_reload=False, audit_sink="off"))


def _edit(runtime: Runtime, path: str, content: str) -> Any:
    (result,) = runtime.run_turn_sync(
        [Call("w", "file_edit", {"path": path, "mode": "replace", "content": content})], Session()
    )
    return result


@pytest.mark.parametrize("inside", ["toolrt.d", "config/tools", "."], ids=["nested", "deeper", "workspace-root"])
@pytest.mark.parametrize(
    "target",
    [
        "{module}.py",
        "{package}/__init__.py",
        "{package}/helpers.py",  # a new module in the handler's package
        "__pycache__/{module}.cpython-311.pyc",
        "__pycache__/anything",
    ],
    ids=["module", "package-init", "package-new-file", "compiled", "pycache"],
)
def test_the_agent_cannot_rewrite_a_handler_module_beside_a_config_inside_its_workspace(
    tmp_path: Path, names: tuple[str, str], inside: str, target: str
) -> None:
    (tmp_path / "ws").mkdir()
    config = (tmp_path / "ws" / inside).resolve()
    runtime = _runtime(tmp_path, names, config)
    mark = tmp_path / "mark"
    relative = (config / target.format(module=names[0], package=names[1])).relative_to((tmp_path / "ws").resolve())
    try:
        result = _edit(runtime, str(relative), AGENT.format(mark=str(mark)))
        assert result.is_error and "protected" in result.content, result.content
        (iso,) = runtime.run_turn_sync([Call("c", "iso", {})], Session())
        (inapp,) = runtime.run_turn_sync([Call("d", "inapp", {})], Session())
    finally:
        runtime.close_sync()
    assert (iso.content, inapp.content) == ("real", "real")
    assert not mark.exists()


def test_other_files_of_a_config_folder_inside_the_workspace_stay_the_agents(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    (tmp_path / "ws").mkdir()
    runtime = _runtime(tmp_path, names, tmp_path / "ws")  # the config folder is the workspace
    try:
        assert not _edit(runtime, "notes.txt", "mine").is_error
        assert not _edit(runtime, "src/app.py", "print('mine')\n").is_error
    finally:
        runtime.close_sync()


def test_a_module_the_agent_adds_under_an_installed_handlers_name_is_never_used(
    tmp_path: Path, names: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module, _package = names
    installed = tmp_path / "installed"
    installed.mkdir()
    (installed / f"{module}.py").write_text(HANDLER)
    monkeypatch.setenv("PYTHONPATH", str(installed))  # (the isolated child's path)
    monkeypatch.syspath_prepend(str(installed))  # (the app's)
    (tmp_path / "ws").mkdir()
    config = tmp_path / "ws" / "toolrt.d"
    runtime = _runtime(tmp_path, names, config)
    (config / f"{module}.py").unlink()  # only the installed one: what the agent adds is new
    mark = tmp_path / "mark"
    try:
        result = _edit(runtime, f"toolrt.d/{module}.py", AGENT.format(mark=str(mark)))
        assert not result.is_error, result.content  # (not a handler file of this snapshot)
        (iso,) = runtime.run_turn_sync([Call("c", "iso", {})], Session())
    finally:
        runtime.close_sync()
    assert iso.content == "real" and not mark.exists()


def test_only_the_modules_taken_from_beside_the_config_are_listed(
    tmp_path: Path, names: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module, package = names
    (tmp_path / "ws").mkdir()
    config = (tmp_path / "cfg").resolve()
    runtime = _runtime(tmp_path, names, config)
    try:
        listed = set(handler_paths(runtime.snapshot))
    finally:
        runtime.close_sync()
    assert listed == {config / f"{module}.py", config / package, config / "__pycache__"}
