"""The demo's workspace: a copy of the example project, and the processes it starts."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def populate(template: Path, workspace: Path) -> None:
    """Copy the example project (hidden files such as ``.env`` included) into ``workspace``."""
    shutil.copytree(
        template,
        workspace,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "build", ".toolrt"),
    )


@contextlib.contextmanager
def interpreter_on_path() -> Iterator[None]:
    """Put this interpreter's directory first on PATH while the block runs.

    The example's command tools run ``python -m pytest`` and find ``python`` on PATH,
    as a coding agent's tools do in a real project. ``toolrt demo`` may be started
    from a virtualenv that is not activated; its interpreter is the one with pytest.
    """
    before = os.environ.get("PATH")
    directory = str(Path(sys.executable).parent)
    os.environ["PATH"] = directory + (os.pathsep + before if before else "")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def process_stopped(pid: int, wait_s: float = 3.0) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting to be reaped counts as ended),
    waiting up to ``wait_s`` for it to do so."""
    deadline = time.monotonic() + wait_s
    while True:
        if not _alive(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc (macOS): a process that answers the signal is alive
    state = stat.rsplit(")", 1)[-1].split()[:1]
    return state not in (["Z"], ["X"])
