"""Every audit test gets a state directory of its own: the default audit log of a
workspace lives there (runtime.audit.location), and child processes inherit it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$XDG_STATE_HOME`` for one test, outside its ``tmp_path`` (which is often the workspace)."""
    home = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home
