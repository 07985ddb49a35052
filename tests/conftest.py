"""Settings shared by the whole test suite.

Hot reload is on by default for a Runtime; here it is off unless a test turns it on
(``Runtime(..., watch=True)``), so that the hundreds of runtimes the tests build do
not each keep a watcher thread. The reload tests enable it explicitly. The state
directory (``XDG_STATE_HOME``) is a temporary folder of the suite's own.
"""

from __future__ import annotations

import atexit
import compileall
import gc
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("TOOLRT_HOT_RELOAD", "false")
# Hot reload waits for a settle window before publishing (2 s by default, for writers that
# save in steps); tests that are not about the window use a short one.
os.environ.setdefault("TOOLRT_RELOAD_SETTLE_MS", "150")

# Audit logs, artifacts and lock files go to the user's state directory by default; the
# suite's go to a folder of its own, removed at the end, never to the real one.
_STATE_HOME = tempfile.mkdtemp(prefix="toolrt-tests-state-")
os.environ["XDG_STATE_HOME"] = _STATE_HOME
atexit.register(shutil.rmtree, _STATE_HOME, True)


def _python3_without_a_shim() -> None:
    """Put a link to the interpreter ``python3`` stands for first on PATH, when the
    ``python3`` found on PATH is a script (a version manager's shim).

    Hundreds of commands the tests run start ``python3`` (printers, fork bombs, secret
    readers). Through a pyenv shim each start first runs a bash script and pyenv itself:
    about 70 ms of CPU on top of the interpreter's own 40 ms. The link runs the very
    interpreter the shim picks (asked once, here); the command lines stay as written.
    The link is in an empty virtual environment (a ``pyvenv.cfg`` above its folder): the
    commands use the standard library only, and the interpreter's own site-packages
    can hold ``.pth`` files that run at every start (about 25 ms of CPU each start on
    these machines, where a bare interpreter starts in 10).
    Done once in the first process; the workers and every child inherit PATH.
    """
    if os.environ.get("TESTS_PYTHON3_LINK"):
        return
    found = shutil.which("python3")
    try:
        with open(found or "", "rb") as program:
            if program.read(2) != b"#!":
                return
        real = subprocess.run(
            [found or "", "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            cwd=tempfile.gettempdir(),
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return
    if not os.path.isabs(real) or not os.access(real, os.X_OK):
        return
    root = tempfile.mkdtemp(prefix="toolrt-tests-python3-")
    atexit.register(shutil.rmtree, root, True)
    with open(os.path.join(root, "pyvenv.cfg"), "w", encoding="utf-8") as config:
        config.write(f"home = {os.path.dirname(real)}\ninclude-system-site-packages = false\n")
    folder = os.path.join(root, "bin")
    os.mkdir(folder)
    os.symlink(real, os.path.join(folder, "python3"))
    os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
    os.environ["TESTS_PYTHON3_LINK"] = folder


_python3_without_a_shim()

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


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collect with the cyclic garbage collector off, then freeze what collection built.

    Collection imports every test module (and the packages they use) and builds some
    23,000 test items, objects that live until the session ends. While the heap grows,
    the collector traverses all of it again and again and finds next to nothing to free:
    about a third of each worker's collection CPU. Frozen (``gc.freeze``), those objects
    are left out of the collections that run during the tests, which still see every
    object the tests make.
    """
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


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
    Test modules are compiled the way pytest imports them, with their asserts rewritten
    (``rewrite_test_modules_once``).
    """
    if os.environ.get("PYTEST_XDIST_WORKER") or hasattr(config, "workerinput"):
        return
    root = Path(__file__).resolve().parent.parent
    skip = re.compile(r"(^|[\\/])(test_[^\\/]*|conftest)\.py$")
    for folder, rx in ((root / "runtime", None), (root / "tests", skip)):
        if folder.is_dir():
            compileall.compile_dir(folder, quiet=2, rx=rx, workers=1)
    rewrite_test_modules_once(config, sorted(_test_modules(root / "tests")))


def _test_modules(tests: Path) -> list[Path]:
    """The files pytest rewrites the asserts of: test modules and conftest files."""
    found = []
    for folder, dirs, files in os.walk(tests):
        dirs[:] = [d for d in dirs if d not in ("benchmarks", "__pycache__") and not d.startswith(".")]
        found += [Path(folder, f) for f in files if re.fullmatch(r"test_.*\.py|conftest\.py", f)]
    return found


def rewrite_test_modules_once(config: object, modules: list[Path]) -> None:
    """Write pytest's cache of assert-rewritten test modules before the workers start.

    Every worker imports every test module while collecting, and pytest rewrites each
    module's asserts on import (about 12 s of CPU for the suite), caching the result only
    when byte code may be written. ``PYTHONDONTWRITEBYTECODE`` is set on these machines,
    so on every run each of the four workers did that work again. Done once here, the
    workers read the cache (pytest reads it whatever that variable says). The cache is
    keyed by a hash of the source, so an edited module is rewritten again; two processes
    share the work. Uses pytest's own rewrite functions; if a pytest release renames
    them, the workers simply rewrite as before.
    """
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    needed = getattr(rewrite, "_rewrite_test", None), getattr(rewrite, "_write_pyc", None)
    if None in needed or not hasattr(rewrite, "PYC_TAIL") or not hasattr(rewrite, "get_cache_dir"):
        return
    stale = [m for m in modules if not _rewritten_is_current(rewrite, m)]
    if not stale:
        return
    helper = os.fork() if len(stale) > 20 and len(os.sched_getaffinity(0)) > 1 else -1
    mine = stale[1::2] if helper == 0 else stale[0::2] if helper > 0 else stale
    try:
        for module in mine:
            _rewrite_one(rewrite, config, module)
    finally:
        if helper == 0:
            os._exit(0)
    if helper > 0:
        os.waitpid(helper, 0)


def _cached_rewrite(rewrite: Any, module: Path) -> Path:
    return rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)


def _rewritten_is_current(rewrite: Any, module: Path) -> bool:
    """Whether pytest's cached rewrite of the module matches its source (the pyc header)."""
    import importlib.util

    try:
        with open(_cached_rewrite(rewrite, module), "rb") as cached:
            header = cached.read(16)
        source_hash = importlib.util.source_hash(module.read_bytes())
    except OSError:
        return False
    return header[:4] == importlib.util.MAGIC_NUMBER and header[8:16] == source_hash[:8]


def _rewrite_one(rewrite: Any, config: object, module: Path) -> None:
    """Rewrite one module's asserts and store the result where pytest looks for it."""
    try:
        source_hash, code = rewrite._rewrite_test(module, config)
        _cached_rewrite(rewrite, module).parent.mkdir(exist_ok=True)
        rewrite._write_pyc(_NoTrace(), code, source_hash, _cached_rewrite(rewrite, module))
    except (OSError, SyntaxError, ValueError):
        return  # the worker that imports it reports the problem in full


class _NoTrace:
    """Stands in for pytest's assertion state, of which ``_write_pyc`` uses only ``trace``."""

    @staticmethod
    def trace(message: str) -> None:
        return None
