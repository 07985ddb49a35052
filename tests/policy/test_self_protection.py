"""toolrt protects itself: its config, packs and state are out of reach of the agent's
file tools and command lines, wherever they sit, in every permission mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from packs_support import with_packs

from runtime import Runtime, Session
from runtime.records import Status
from runtime.settings import Settings

PACKS = with_packs(
    """\
apiVersion: toolrt/v1
kind: Policy
metadata: {name: shell}
spec:
  rules:
    - {name: deny-ls-secret, effect: deny, tools: [run_command], commands: ['nothing-here *']}
"""
)

BYPASS = Session(id="s", mode="bypass")
ACCEPT_EDITS = Session(id="s", mode="accept_edits")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    config = root / "toolrt.d"
    config.mkdir()
    (config / "packs.yaml").write_text(PACKS)
    return root


@pytest.fixture
def runtime(workspace: Path, tmp_path: Path) -> Runtime:
    settings = Settings(state_dir=tmp_path / "state", hot_reload=False)
    return Runtime([workspace / "toolrt.d"], workspace_root=workspace, settings=settings)


@pytest.mark.parametrize(
    "line",
    [
        "cat toolrt.d/packs.yaml",
        "echo '# x' >> toolrt.d/packs.yaml",
        "sed -i s/deny/allow/ toolrt.d/packs.yaml",
        "cp src/app.py toolrt.d/evil.yaml",
        "rm -rf toolrt.d",
        "mv toolrt.d gone",
        "git diff --no-index --output=toolrt.d/packs.yaml src/app.py src/app.py",
        "tee toolrt.d/p.yaml < src/app.py",
        "cat ./toolrt.d/../toolrt.d/packs.yaml",
        "ls toolrt.d/*",
        "rm -rf .",
    ],
)
async def test_command_lines_never_touch_the_config_even_in_bypass_mode(
    runtime: Runtime, workspace: Path, line: str
) -> None:
    before = (workspace / "toolrt.d" / "packs.yaml").read_text()
    result = await runtime.call("run_command", {"command": line}, BYPASS)
    assert result.status is Status.denied, (line, result.content)
    assert "toolrt's own files" in result.content
    assert (workspace / "toolrt.d" / "packs.yaml").read_text() == before
    assert not (workspace / "toolrt.d" / "evil.yaml").exists()


async def test_command_lines_never_touch_the_state_folder_outside_the_workspace(
    runtime: Runtime, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    result = await runtime.call("run_command", {"command": f"ls {state}"}, BYPASS)
    assert result.status is Status.denied and "toolrt's own files" in result.content


@pytest.mark.parametrize(
    "path", ["toolrt.d/packs.yaml", "./toolrt.d/packs.yaml", "src/../toolrt.d/packs.yaml", "toolrt.d/new.yaml"]
)
async def test_file_tools_never_touch_the_config(runtime: Runtime, workspace: Path, path: str) -> None:
    read = await runtime.call("file_read", {"path": path}, ACCEPT_EDITS)
    assert read.status is not Status.ok, read.content
    edit = await runtime.call("file_edit", {"path": path, "mode": "replace", "content": "kind: x\n"}, ACCEPT_EDITS)
    assert edit.status is not Status.ok, edit.content
    assert not (workspace / "toolrt.d" / "new.yaml").exists()
    assert "kind: x" not in (workspace / "toolrt.d" / "packs.yaml").read_text()


async def test_ordinary_work_in_the_workspace_still_runs(runtime: Runtime) -> None:
    result = await runtime.call("run_command", {"command": "ls src && cat src/app.py"}, BYPASS)
    assert result.status is Status.ok and "print(1)" in result.content
