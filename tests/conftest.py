"""Settings shared by the whole test suite.

Hot reload is on by default for a Runtime; here it is off unless a test turns it on
(``Runtime(..., watch=True)``), so that the hundreds of runtimes the tests build do
not each keep a watcher thread. The reload tests enable it explicitly. The state
directory (``XDG_STATE_HOME``) is a temporary folder of the suite's own.
"""

from __future__ import annotations

import atexit
import compileall
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path

os.environ.setdefault("TOOLRT_HOT_RELOAD", "false")
# Hot reload waits for a settle window before publishing (2 s by default, for writers that
# save in steps); tests that are not about the window use a short one.
os.environ.setdefault("TOOLRT_RELOAD_SETTLE_MS", "150")

# Audit logs, artifacts and lock files go to the user's state directory by default; the
# suite's go to a folder of its own, removed at the end, never to the real one.
_STATE_HOME = tempfile.mkdtemp(prefix="toolrt-tests-state-")
os.environ["XDG_STATE_HOME"] = _STATE_HOME
atexit.register(shutil.rmtree, _STATE_HOME, True)

# A suite started in the background (`nohup make test &`, a CI step without a terminal)
# inherits SIGINT ignored, and so would every `toolrt watch` or `serve` the tests start
# and then stop with SIGINT, as a user at a terminal would. With a handler here, the
# children start with SIGINT at its default (exec resets handlers, not "ignored").
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: object) -> int:
    """How many workers `-n auto` starts: twice the usable cores, at least four.

    Most of the suite's time is spent waiting (on child processes, kills, servers,
    conditions polled for), not computing, so more workers than cores finish sooner; each
    worker holds a few hundred MB. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still overrides it.
    """
    wanted = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    return max(4, 2 * len(os.sched_getaffinity(0)))


def pytest_configure(config: object) -> None:
    """Before any worker starts, compile the package (and the tests' helper modules) to
    byte code once, in the main process only.

    Each xdist worker imports the whole package, and so does every child the tests start
    (``toolrt serve``, the CLI, audit children, crashed workflow runs: hundreds of
    interpreters). On a fresh clone the workers start at once and each compiles every
    module; with ``PYTHONDONTWRITEBYTECODE`` set (it stops imports from writing byte code,
    not from reading it) every child does so too, about 0.7 s of CPU each. compileall
    writes the standard ``__pycache__`` files (git ignores them) and skips what is up to
    date, so a second run only checks timestamps.
    Test modules are left out: pytest compiles them itself, with its assertion rewriting.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") or hasattr(config, "workerinput"):
        return
    root = Path(__file__).resolve().parent.parent
    skip = re.compile(r"(^|[\\/])(test_[^\\/]*|conftest)\.py$")
    for folder, rx in ((root / "runtime", None), (root / "tests", skip)):
        if folder.is_dir():
            compileall.compile_dir(folder, quiet=2, rx=rx, workers=1)
