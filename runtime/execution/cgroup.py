"""Where this process's cgroup v2 folder is, and whether commands can get cgroups of their own below it.

Its own module, standard library only, so that the supervisor (:mod:`runtime.execution.reaper`, which embeds
:func:`own_cgroup`) and the process ceiling (:mod:`runtime.execution.proclimit`, which asks :func:`cgroup_base`
which ceiling applies) share it without importing each other.
"""

from __future__ import annotations

import os


def own_cgroup() -> str | None:
    """This process's cgroup v2 folder, if the unified hierarchy is mounted here (the
    supervisor runs this same function, its source embedded in :data:`runtime.execution.reaper.SUPERVISOR`)."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.rstrip("\n")[3:] for line in f if line.startswith("0::")), None)
        if path is None:
            return None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if right.split()[:1] == ["cgroup2"]:
                    root, mount = fields[3], fields[4]
                    if root == "/":
                        return mount + path.rstrip("/")
                    if path == root or path.startswith(root + "/"):
                        return mount + path[len(root) :]
    except (OSError, IndexError):
        pass
    return None


def cgroup_base() -> str | None:
    """The cgroup v2 folder the supervisor makes each command's cgroup in (its own
    cgroup, inherited from this process), or None when there is none or it is not
    writable: then the subreaper alone takes trees down."""
    found = own_cgroup()
    return found if found is not None and os.access(found, os.W_OK) else None
