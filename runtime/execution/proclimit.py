"""A ceiling on the processes (and threads) one command may have at once.

A fork bomb in an allowed or approved command (``:(){ :|:& };:``, a script that forks
in a loop) would otherwise take every free pid of the machine long before its timeout:
nothing could fork any more, the runtime and the supervisor that should kill the tree
included. The ``command_max_processes`` setting caps it, by the first of these the
machine offers:

- ``cgroup2``: ``pids.max`` on the command's own cgroup v2 (the one the supervisor
  makes, :mod:`runtime.execution.reaper`), when the ``pids`` controller can be enabled
  for the children of the supervisor's cgroup;
- ``cgroup1``: a cgroup of the command's own in a cgroup v1 ``pids`` hierarchy (hybrid
  set-ups, as under many container runtimes), when it is writable;
- ``rlimit``: ``RLIMIT_NPROC`` for a command not run as root: the kernel counts every
  task of the user, so the command gets what the user runs already plus the limit (other
  work of the same user started meanwhile takes from it); root is not held by it;
- ``none``: no ceiling: only the timeout ends the tree.

With a cgroup, reaching the ceiling is seen (``pids.events``): the supervisor stops the
whole tree and says so, and the call ends with a ``process_limit`` error. Threads count
as tasks, as the kernel counts them.

The functions :func:`pids_v1_base`, :func:`limit_tasks`, :func:`limit_reached` and
:func:`user_tasks` run inside the supervisor (their source is embedded): standard
library only, names local.
"""

from __future__ import annotations

import os

from runtime.execution.cgroup import cgroup_base


def pids_v1_base() -> str | None:
    """This process's folder in a cgroup v1 hierarchy holding the ``pids`` controller,
    if one is mounted here (None on a pure cgroup v2 machine)."""
    try:
        path = None
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3 and "pids" in parts[1].split(","):
                    path = parts[2]
        if path is None:
            return None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                if len(tail) >= 3 and tail[0] == "cgroup" and "pids" in tail[2].split(","):
                    root, mount = fields[3], fields[4]
                    if root == "/":
                        return mount + path.rstrip("/")
                    if path == root or path.startswith(root + "/"):
                        return mount + path[len(root) :]
    except (OSError, IndexError):
        pass
    return None


def limit_tasks(group: str | None, base: str | None, name: str, limit: int) -> tuple[str, str | None]:
    """Set the ceiling of ``limit`` tasks for a command whose cgroup v2 is ``group``
    (below ``base``; either None when there is none). Returns the mechanism (``cgroup2``,
    ``cgroup1`` or ``""`` when neither applies) and the cgroup v1 folder made for the
    command (named ``name``), which the command must join and the caller remove."""
    if group is not None and base is not None:
        try:
            with open(base + "/cgroup.subtree_control") as f:
                enabled = f.read().split()
            if "pids" not in enabled:
                with open(base + "/cgroup.controllers") as f:
                    offered = f.read().split()
                if "pids" in offered:
                    with open(base + "/cgroup.subtree_control", "w") as f:
                        f.write("+pids")
            with open(group + "/pids.max", "w") as f:
                f.write(str(limit))
            return "cgroup2", None
        except OSError:
            pass
    if os.environ.get("TOOLRT_NO_CGROUP"):
        return "", None
    v1 = pids_v1_base()
    if v1 is None:
        return "", None
    folder = v1 + "/" + name
    try:
        os.mkdir(folder)
    except OSError:
        return "", None
    try:
        with open(folder + "/pids.max", "w") as f:
            f.write(str(limit))
        return "cgroup1", folder
    except OSError:
        try:
            os.rmdir(folder)
        except OSError:
            pass
        return "", None


def limit_reached(folder: str | None) -> bool:
    """Whether a fork in cgroup ``folder`` failed for its ``pids.max`` (``pids.events``)."""
    if folder is None:
        return False
    try:
        with open(folder + "/pids.events") as f:
            for line in f:
                key, _, count = line.partition(" ")
                if key == "max" and count.strip() not in ("", "0"):
                    return True
    except OSError:
        pass
    return False


def user_tasks(uid: int) -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) the user ``uid``
    runs now."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat("/proc/" + entry).st_uid != uid:
                continue
            with open("/proc/" + entry + "/stat", "rb") as f:
                stat = f.read()
            count += int(stat[stat.rfind(b")") + 2 :].split()[17])
        except (OSError, ValueError, IndexError):
            continue
    return count


def process_limit_mechanism(limit: int) -> str:
    """Which ceiling a command started now would get (see the module docstring), for
    ``explain`` and the README's claims; the supervisor's own try decides."""
    if limit <= 0:
        return "none"
    base = None if os.environ.get("TOOLRT_NO_CGROUP") else cgroup_base()
    if base is not None:
        try:
            with open(base + "/cgroup.subtree_control") as f:
                enabled = "pids" in f.read().split()
            with open(base + "/cgroup.controllers") as f:
                offered = "pids" in f.read().split()
            if enabled or offered:
                return "cgroup2"
        except OSError:
            pass
    v1 = None if os.environ.get("TOOLRT_NO_CGROUP") else pids_v1_base()
    if v1 is not None and os.access(v1, os.W_OK):
        return "cgroup1"
    return "rlimit" if os.geteuid() != 0 else "none"


def describe_limit(limit: int) -> str:
    """One line for ``explain``: the ceiling and what enforces it on this machine."""
    if limit <= 0:
        return "no process limit (command_max_processes = 0)"
    how = {
        "cgroup2": "cgroup v2 pids.max; reaching it stops the command",
        "cgroup1": "cgroup v1 pids.max; reaching it stops the command",
        "rlimit": "RLIMIT_NPROC over the user's tasks; forks beyond it fail",
        "none": "not enforced on this machine (no writable pids cgroup, and root ignores RLIMIT_NPROC)",
    }[process_limit_mechanism(limit)]
    return f"at most {limit} processes and threads at once ({how})"
