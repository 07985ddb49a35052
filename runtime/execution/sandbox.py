"""The command sandbox: toolrt's own files are out of sight of the commands it runs.

The policy judges a command line before it runs, but a word only known at run time
(``cat $(echo toolrt.d/p.yaml)``, a globstar glob, a variable) names its path only when
it runs: in ``bypass`` mode such a line is allowed. Where the machine allows it (Linux,
mount and PID namespaces permitted: root, as in most containers), each command therefore
runs in a mount namespace of its own in which toolrt's config, packs, state, artifacts,
locks and audit log are covered (a folder by an empty read-only tmpfs, a file by a
``/dev/null`` that cannot be opened), and in a PID namespace of its own with its own
``/proc``, so ``/proc/<pid>/root`` of a process outside cannot lead back to them.
``CAP_SYS_ADMIN`` is dropped from the command's capability bounding set, so a command run
as root cannot unmount the covers. Where it does not, the policy alone stands
(:func:`sandbox_available` says which; the ``command_sandbox`` setting chooses).

The functions :func:`enter_sandbox` and :func:`sandbox_init` run in the supervisor's
child (:mod:`runtime.execution.reaper` embeds their source): standard library only.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

#: At most this many YAML files are covered one by one in a config folder that holds
#: the workspace (the folder itself cannot be covered: the agent works below it).
MAX_COVERED_FILES = 256


def enter_sandbox(hide: Sequence[str]) -> None:
    """In a process that is pid 1 of a new PID namespace: a mount namespace of its own
    with a fresh /proc, every path of ``hide`` covered, CAP_SYS_ADMIN out of the bounding
    set (and the inheritable and ambient sets). Raises OSError when any step fails (the caller
    refuses to run the command)."""
    import ctypes  # noqa: PLC0415 - embedded in the supervisor, which imports it anyway

    libc = ctypes.CDLL(None, use_errno=True)

    def call(result: int, what: str) -> None:
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
        def b(text: str | None) -> bytes | None:
            return None if text is None else os.fsencode(text)

        call(libc.mount(b(source), b(target), b(kind), ctypes.c_ulong(flags), b(data)), "mount " + target)

    ms_rdonly, ms_nosuid, ms_nodev, ms_noexec, ms_remount, ms_bind, ms_rec, ms_private = (
        1,
        2,
        4,
        8,
        32,
        4096,
        16384,
        1 << 18,
    )
    locked = ms_nosuid | ms_nodev | ms_noexec
    call(libc.unshare(0x00020000), "unshare(CLONE_NEWNS)")
    mount(None, "/", None, ms_rec | ms_private)  # nothing done here reaches the host's mounts
    mount("proc", "/proc", "proc", locked)  # this namespace's processes only
    for path in hide:
        try:
            is_dir = os.path.isdir(path) and not os.path.islink(path)
            exists = os.path.lexists(path)
        except OSError:
            continue
        if not exists:
            continue
        if is_dir:
            mount("toolrt-hidden", path, "tmpfs", ms_rdonly | locked, "size=4k,mode=0555")
        else:
            mount("/dev/null", path, None, ms_bind)
            mount(None, path, None, ms_bind | ms_remount | ms_rdonly | locked)  # nodev: cannot be opened
    call(libc.prctl(24, 21, 0, 0, 0), "dropping CAP_SYS_ADMIN")  # PR_CAPBSET_DROP, CAP_SYS_ADMIN
    # The bounding set alone does not stop root keeping it across exec: the inheritable
    # and ambient sets carry capabilities over too, so clear it from both.
    call(libc.prctl(47, 4, 0, 0, 0), "clearing ambient capabilities")  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()  # two of (effective, permitted, inheritable)
    call(libc.capget(header, data), "reading capabilities")
    data[2] &= ~(1 << 21)  # CAP_SYS_ADMIN out of the inheritable set
    call(libc.capset(header, data), "clearing inheritable CAP_SYS_ADMIN")


def sandbox_init(argv: Sequence[str], status_w: int, grace: float, watched: Iterable[int]) -> None:
    """pid 1 of the command's PID namespace: start the command, reap every orphan, and
    when the command ends send its wait status to the supervisor (``status_w``), give
    what is left SIGTERM and up to ``grace`` seconds, then exit (the kernel kills the
    rest of the namespace with it). Never returns."""
    import signal  # noqa: PLC0415 - embedded in the supervisor
    import time  # noqa: PLC0415

    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(watched))
        try:
            os.execvp(argv[0], list(argv))
        except OSError as err:
            os.write(2, f"{argv[0]}: {err.strerror}\n".encode())
            os._exit(127)
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if done == child:
            os.write(status_w, status.to_bytes(4, "little", signed=True))
            break
    try:
        os.kill(-1, signal.SIGTERM)  # every other process of the namespace
    except OSError:
        pass
    end = time.monotonic() + grace
    while time.monotonic() < end:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.005)
        except ChildProcessError:
            break
    os._exit(0)


_PROBE = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "if libc.unshare(0x20000000) != 0: raise SystemExit(1)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        enter_sandbox([])\n"
    "    except OSError:\n"
    "        os._exit(1)\n"
    "    os._exit(0)\n"
    "raise SystemExit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
)


@functools.cache
def sandbox_available() -> bool:
    """Whether commands can run in the sandbox on this machine (tried once per process,
    in a child, with the same steps the supervisor takes)."""
    if not sys.platform.startswith("linux"):
        return False
    import inspect  # noqa: PLC0415 - only for the probe, once

    program = inspect.getsource(enter_sandbox) + _PROBE
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", "from __future__ import annotations\nimport os\n" + program],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def covered_paths(entries: Iterable[tuple[Path, bool, bool]], workspace: Path | None) -> tuple[str, ...]:
    """The paths to cover for toolrt's own ``(path, yaml_only, nested)`` entries: a folder
    or file whole; a YAML-only folder inside the workspace whole; a config folder that
    holds the workspace by its YAML files (up to :data:`MAX_COVERED_FILES`). A path below
    another covered folder is left out (the outer cover hides it)."""
    found: set[str] = set()
    for path, yaml_only, nested in entries:
        if not yaml_only or nested:
            found.add(str(path))
            continue
        count = 0
        for top, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))[:64]
            if top.count(os.sep) - str(path).count(os.sep) >= 3:
                dirs[:] = []
            for name in files:
                if name.lower().endswith((".yaml", ".yml")) and count < MAX_COVERED_FILES:
                    found.add(os.path.join(top, name))
                    count += 1
    if workspace is not None:
        # Never the workspace or a folder holding it: the agent works there.
        found = {p for p in found if not (str(workspace) + "/").startswith(p.rstrip("/") + "/")}
    ordered = sorted(found)
    kept: list[str] = []
    for candidate in ordered:
        if not any(candidate.startswith(outer.rstrip("/") + "/") for outer in kept):
            kept.append(candidate)
    return tuple(kept)


def encode(paths: Sequence[str]) -> str:
    """The covered paths as one argv word for the supervisor (hex of NUL-joined bytes)."""
    return b"\0".join(os.fsencode(p) for p in paths).hex()
