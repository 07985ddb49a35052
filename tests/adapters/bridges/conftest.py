"""A runtime over the bridge test config, closed after each test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from bridge_cases import CONFIG

from runtime import Runtime
from runtime.approvers import ScriptedApprover


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = Runtime([CONFIG], workspace_root=tmp_path)
    try:
        yield rt
    finally:
        await rt.close()


@pytest.fixture
async def approving_runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    """A runtime whose own approver approves every deploy."""
    rt = Runtime([CONFIG], workspace_root=tmp_path, approver=ScriptedApprover({"deploy": True}))
    try:
        yield rt
    finally:
        await rt.close()


@pytest.fixture
def handlers():
    """The handler module the config loaded (its DEPLOYED list and HANGING event)."""
    module = sys.modules.get("bridge_test_tools")
    if module is None:
        pytest.fail("the bridge test handlers were not loaded")
    module.DEPLOYED.clear()
    module.TALLIED.clear()
    return module
