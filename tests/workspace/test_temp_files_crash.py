"""SIGKILL during file_edit of a large file leaves no temporary file the model would see:
the data goes to an unnamed file (O_TMPFILE) until it is complete, the temporary files
of dead writers are swept when a Runtime starts and when a folder is first written, and
the workspace tools never list them meanwhile."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest
import ws_helpers

from runtime import Runtime
from runtime.settings import Settings
from runtime.tools.workspace_tools import WorkspaceTools
from runtime.workspace import TEMP_PREFIX, sweep_stale_temp_files
from runtime.workspace.search import glob, list_dir

WAIT_S = 60.0

# Editors start from a forkserver with the runtime preloaded (a fork each, not a fresh
# interpreter importing the runtime for each of the 40 kills): each is a process of its own.
CTX = multiprocessing.get_context("forkserver")
CTX.set_forkserver_preload(["runtime.workspace", "runtime.tools.workspace_tools", "ws_helpers"])


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"{TEMP_PREFIX}*")]


def _kill_during_edits(workspace: Path, locks: Path, kills: int, how: str, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(kills):
        ready = CTX.Event()
        child = CTX.Process(target=ws_helpers.edit_big_file_forever, args=(str(workspace), str(locks), how, ready))
        child.start()
        try:
            assert ready.wait(WAIT_S), "the editor never finished its first edit"
            time.sleep(rng.uniform(0.0, 0.25))  # fault injection: kill at a random point of an edit
        finally:
            child.kill()
            child.join(WAIT_S)
        assert child.exitcode == -signal.SIGKILL
        text = (workspace / "big.txt").read_text()
        assert text.startswith("edit ") and len(text.splitlines()) == 1_000_000  # never torn


def _until_no_temp_files(root: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while _temp_files(root):
        assert time.monotonic() < deadline, f"temporary files left: {_temp_files(root)}"
        time.sleep(0.02)


@pytest.mark.parametrize("seed", range(2))
def test_sigkills_during_large_edits_leave_no_temp_files_with_unnamed_files(tmp_path: Path, seed: int) -> None:
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this platform")
    workspace, locks = tmp_path / "ws", tmp_path / "locks"
    workspace.mkdir()
    _kill_during_edits(workspace, locks, 12, "unnamed", seed)
    left = _temp_files(workspace)
    assert len(left) <= 1, left  # only a kill between naming and renaming (microseconds) can leave one
    runtime = Runtime([_config(tmp_path)], workspace_root=workspace, settings=Settings(audit_sink="off"))
    try:
        _until_no_temp_files(workspace)
    finally:
        runtime.close_sync()


@pytest.mark.parametrize("seed", range(2))
def test_named_temp_files_of_killed_writers_are_swept_when_a_runtime_starts(tmp_path: Path, seed: int) -> None:
    workspace, locks = tmp_path / "ws", tmp_path / "locks"
    (workspace / "deep" / "er").mkdir(parents=True)
    _kill_during_edits(workspace, locks, 8, "named", seed)
    # and one in a folder file_edit has not written since: the startup sweep walks the tree
    (workspace / "deep" / "er" / f"{TEMP_PREFIX}999999999-abcdef").write_bytes(b"x" * 1000)
    tools = WorkspaceTools.create(workspace, (), locks)
    listed = list_dir(tools.workspace, ".", depth=5, show_hidden=True)
    assert TEMP_PREFIX not in listed
    assert TEMP_PREFIX not in glob(tools.workspace, "**/.*")
    assert glob(tools.workspace, f"**/{TEMP_PREFIX}*").startswith("No files match")
    runtime = Runtime([_config(tmp_path)], workspace_root=workspace, settings=Settings(audit_sink="off"))
    try:
        _until_no_temp_files(workspace)
        assert (workspace / "big.txt").read_text().startswith("edit ")
    finally:
        runtime.close_sync()


def test_a_live_writers_temp_file_is_kept_until_it_is_old(tmp_path: Path) -> None:
    mine = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-abcdef"
    mine.write_text("in progress")
    dead = tmp_path / f"{TEMP_PREFIX}999999999-abcdef"
    dead.write_text("crashed")
    odd = tmp_path / f"{TEMP_PREFIX}notapid"
    odd.write_text("unknown writer")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sweep_stale_temp_files(fd, 900.0) == 1
        assert mine.exists() and odd.exists() and not dead.exists()
        assert sweep_stale_temp_files(fd, 900.0, now=time.time() + 1000) == 2
    finally:
        os.close(fd)


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config"
    if not config.exists():
        config.mkdir()
        (config / "tools.yaml").write_text(
            "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: packs}\nspec: {packs: [builtin-tools]}\n"
        )
    return config
