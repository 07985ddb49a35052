"""Fixtures for the workspace tests: a real directory tree with hostile symbolic links."""

from __future__ import annotations

from pathlib import Path

import pytest
from ws_helpers import Tree, build_tree, plain_tree


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return build_tree(tmp_path)


@pytest.fixture
def plain(tmp_path: Path) -> Tree:
    """An empty workspace with the tools over it (cache without the racy-timestamp rule)."""
    return plain_tree(tmp_path)
