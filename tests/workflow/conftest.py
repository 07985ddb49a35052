"""A config with real tools for workflow tests: the workspace file tools, python
handlers that log, fail, flake or wait for each other, and command tools."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from wfconfig import CONFIG, TOOLS_MODULE

from runtime import Runtime
from runtime.settings import Settings


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


@pytest.fixture
def make_runtime(tmp_path: Path, workspace: Path) -> Callable[..., Runtime]:
    """A Runtime over the base config plus the given workflow documents."""
    made: list[Runtime] = []

    def make(workflows: str, **options: object) -> Runtime:
        config = tmp_path / "config"
        config.mkdir(exist_ok=True)
        (config / "wftools.py").write_text(TOOLS_MODULE)
        (config / "base.yaml").write_text(CONFIG)
        (config / "workflows.yaml").write_text(textwrap.dedent(workflows))
        settings = Settings(state_dir=tmp_path / "state", audit_sink="sqlite")
        runtime = Runtime([config], workspace_root=workspace, settings=settings, **options)  # type: ignore[arg-type]
        made.append(runtime)
        return runtime

    yield make  # type: ignore[misc]
    for runtime in made:
        runtime.close_sync()
