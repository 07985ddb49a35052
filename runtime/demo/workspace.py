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


def lock_released(path: Path, wait_s: float = 10.0) -> bool:
    """Whether the process holding an exclusive ``flock`` on ``path`` has ended (the
    kernel releases the lock with its last open descriptor), waiting up to ``wait_s``.

    A lock, not a pid: a command may run in a PID namespace of its own (the command
    sandbox), so the pid it reports means nothing outside it."""
    import fcntl  # noqa: PLC0415 - POSIX only, like the demo's command tools

    deadline = time.monotonic() + wait_s
    with path.open("rb") as held:
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)
            else:
                fcntl.flock(held, fcntl.LOCK_UN)
                return True
