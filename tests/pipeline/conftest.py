"""Fixtures for the pipeline tests; the helpers themselves live in pipeline_support.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import ConfigDir


@pytest.fixture
def config(tmp_path: Path) -> ConfigDir:
    """An empty config dir (tmp_path/config) with its own handler module name."""
    return ConfigDir(tmp_path / "config")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The workspace root (tmp_path/workspace)."""
    root = tmp_path / "workspace"
    root.mkdir()
    return root
