"""The supervisor every command runs under: a child subreaper that takes its tree down.

A command's descendants can leave every trace the runtime could follow: a new session
(``setsid``), a double fork that re-parents them, a cleared environment (``env -i``)
that drops the tag variable. The supervisor is a small Python process between the
runtime and the command that marks itself ``PR_SET_CHILD_SUBREAPER``: every orphan of
the tree is re-parented to it instead of to init, so the parent links in ``/proc``
always lead back to it. When the command exits, or when the supervisor gets SIGTERM
(a timeout, a cancelled call), it sends SIGTERM to everything below it, waits up to
the grace period, then sends SIGKILL until nothing is left, reaps, and exits with the
command's status. Nothing of this runs in the application's process: the subreaper
flag and the signal handler belong to the supervisor alone.

Where the machine allows it (a cgroup v2 hierarchy, and the supervisor's own cgroup
writable: root, or a delegated subtree), the command also runs in a cgroup of its own,
``toolrt-<supervisor pid>-<its start time>`` below the supervisor's own cgroup: membership is inherited by
every descendant and cannot be left without write access elsewhere in the hierarchy,
so the tree is found by membership, not by parent links, and is killed with
``cgroup.kill`` (Linux 5.14+; else SIGKILL to every member until none is left); the
cgroup is removed when the tree is down. A supervisor killed by SIGKILL cannot remove
its cgroup: :func:`sweep_stale_cgroups` (run by each supervisor once its command has
started, and by a Runtime when it starts) kills what is left in the cgroup of a dead
supervisor and removes it. Its name says whose it is: the pid and the start time of the
supervisor that made it, so a pid reused by another process does not keep it, and a
live supervisor's cgroup is never touched. Where it does not (read-only cgroupfs, cgroup
v1 only, not allowed), the subreaper alone does the work; :func:`cgroup_base` says
which applies.

The cgroup lookups live in :mod:`runtime.execution.cgroup` (the supervisor embeds them too).

:data:`SUPERVISOR` is the program (run with ``python -I -S -c``, importing nothing of
toolrt, so it starts in milliseconds); :func:`supervised` wraps an argv in it.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Sequence

from runtime.execution.cgroup import cgroup_base as cgroup_base  # re-exported: defined there, read by proclimit
from runtime.execution.cgroup import own_cgroup
from runtime.execution.proclimit import limit_reached, limit_tasks, pids_v1_base, user_tasks
from runtime.execution.sandbox import encode, enter_sandbox, sandbox_init


def sweep_stale_cgroups(base: str | None) -> list[str]:
    """Kill what is left in, and remove, the cgroups below ``base`` made by supervisors
    that are gone (SIGKILLed before they could clean up); return the paths removed.

    A cgroup is stale when its name is ``toolrt-<pid>-<start time>`` and no process has
    that pid with that start time (``toolrt-<pid>``, the older name, when the pid has no
    process), and it belongs to this user. Never waits long: a cgroup whose members are
    still dying is left to the next sweep. (Runs inside the supervisor too: standard
    library only, names local.)"""
    removed: list[str] = []
    if base is None:
        return removed
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        parts = name.split("-")
        if parts[0] != "toolrt" or len(parts) not in (2, 3) or not all(p.isdigit() for p in parts[1:]):
            continue
        try:
            with open(f"/proc/{parts[1]}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rfind(b")") + 2 :].split()
            if fields[0] not in (b"Z", b"X") and (len(parts) == 2 or fields[19].decode() == parts[2]):
                continue  # its supervisor is alive
        except (OSError, IndexError):
            pass
        path = f"{base}/{name}"
        try:
            if os.stat(path).st_uid != os.geteuid():
                continue  # not ours to remove
        except OSError:
            continue
        try:
            with open(path + "/cgroup.kill", "w") as f:
                f.write("1")  # Linux 5.14+: every member of the subtree at once
        except OSError:
            pass
        for _ in range(100):
            left = []
            for folder, _dirs, _files in os.walk(path, topdown=False):
                try:
                    with open(folder + "/cgroup.procs") as f:
                        pids = [int(p) for p in f.read().split()]
                except (OSError, ValueError):
                    pids = []
                for pid in pids:
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                try:
                    os.rmdir(folder)
                except OSError:
                    left.append(folder)
            if not left:
                removed.append(path)
                break
            time.sleep(0.005)
    return removed


SUPERVISOR_MAIN = r"""
grace = float(sys.argv[1]); hide = [os.fsdecode(p) for p in bytes.fromhex(sys.argv[2]).split(b"\0") if p]
max_tasks, report = (int(x) for x in sys.argv[3].split(":"))
argv = sys.argv[4:]
if report >= 0:
    os.set_inheritable(report, False)  # the command never gets it
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
# The stop signals and SIGCHLD are blocked and taken with sigtimedwait: no handler, so
# no moment at which a SIGTERM could end the supervisor before its tree is down.
WATCHED = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD}
signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
me = os.getpid()
group = None
base = None if os.environ.get("TOOLRT_NO_CGROUP") else own_cgroup()
if base is not None:
    try:
        with open("/proc/self/stat", "rb") as f:
            started = f.read().rsplit(b")", 1)[1].split()[19].decode()
        os.mkdir(base + "/toolrt-%d-%s" % (me, started))
        group = base + "/toolrt-%d-%s" % (me, started)
    except (OSError, IndexError):
        group = None
# The ceiling on the command's tasks (runtime.execution.proclimit): its cgroup v2's
# pids.max, else a cgroup v1 pids folder of its own, else RLIMIT_NPROC set in the child.
limiter, tasks_group = "", None
if max_tasks > 0:
    try:
        with open("/proc/self/stat", "rb") as f:
            started = f.read().rsplit(b")", 1)[1].split()[19].decode()
        limiter, tasks_group = limit_tasks(group, base, "toolrt-%d-%s" % (me, started), max_tasks)
    except (OSError, IndexError):
        limiter, tasks_group = "", None
counted = group if limiter == "cgroup2" else tasks_group
def members():
    found = set()
    for folder in (group, tasks_group):
        if folder is None:
            continue
        try:
            with open(folder + "/cgroup.procs") as f:
                found |= {int(p) for p in f.read().split()}
        except (OSError, ValueError):
            pass
    return found
def below():
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry, "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            rest = stat[stat.rfind(b")") + 2:].split()
            if len(rest) > 1 and rest[0] not in (b"Z", b"X"):
                children.setdefault(int(rest[1]), []).append(int(entry))
    found, stack = set(), [me]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child); stack.append(child)
    return found | members()
def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
def send(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
def take_down(grace):
    send(below(), signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        reap()
        if not below():
            return
        time.sleep(0.01)
    for _ in range(2000):
        left = below()
        if not left:
            return
        if group is not None:
            try:
                with open(group + "/cgroup.kill", "w") as f:
                    f.write("1")  # every member at once: no fork can outrun it
            except OSError:
                pass
        send(left, signal.SIGKILL)
        time.sleep(0.005)
        reap()
ready_r, ready_w = os.pipe()
status_r = status_w = None
if hide:
    # The command's child becomes pid 1 of a PID namespace of its own (the sandbox,
    # runtime.execution.sandbox): it tells this process the command's wait status.
    status_r, status_w = os.pipe()
    if ctypes.CDLL(None, use_errno=True).unshare(0x20000000) != 0:  # CLONE_NEWPID
        os.write(2, b"toolrt: the command sandbox could not be set up (unshare: PID namespace)\n")
        os._exit(126)
pid = os.fork()
if pid == 0:
    os.close(ready_r)
    if report >= 0:
        os.close(report)
    if tasks_group is not None:
        try:
            with open(tasks_group + "/cgroup.procs", "w") as f:
                f.write("0")
        except OSError:
            os.write(2, b"toolrt: the command's process limit could not be set up (cgroup v1 pids)\n")
            os._exit(126)
    elif max_tasks > 0 and limiter == "" and os.geteuid() != 0:
        try:
            import resource
            ceiling = user_tasks(os.getuid()) + max_tasks
            _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
            if hard != resource.RLIM_INFINITY:
                ceiling = min(ceiling, hard)
            resource.setrlimit(resource.RLIMIT_NPROC, (ceiling, ceiling))
        except (OSError, ValueError):
            os.write(2, b"toolrt: the command's process limit could not be set up (RLIMIT_NPROC)\n")
            os._exit(126)
    if group is not None:
        # Join the command's cgroup before exec: everything it starts is born inside.
        try:
            with open(group + "/cgroup.procs", "w") as f:
                f.write("0")
            os.write(ready_w, b"1")
        except OSError:
            os.write(ready_w, b"0")
    os.close(ready_w)
    if hide:
        os.close(status_r)
        try:
            enter_sandbox(hide)
        except OSError as err:
            os.write(2, ("toolrt: the command sandbox could not be set up (%s)\n" % err).encode())
            os._exit(126)
        sandbox_init(argv, status_w, grace, WATCHED)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)  # exec keeps the mask: give the command the usual one
    try:
        os.execvp(argv[0], argv)
    except OSError as err:
        os.write(2, ("%s: %s\n" % (argv[0], err.strerror)).encode())
        os._exit(127)
os.close(ready_w)
if status_w is not None:
    os.close(status_w)
joined = os.read(ready_r, 1) == b"1" if group is not None else False
os.close(ready_r)
if group is not None and not joined:
    try:
        os.rmdir(group)
    except OSError:
        pass
    group = None
    if limiter == "cgroup2":
        counted = None
for swept in (base, pids_v1_base() if tasks_group is not None else None):
    if swept is not None:
        try:
            sweep_stale_cgroups(swept)  # those of supervisors SIGKILLed before they could clean up
        except Exception:
            pass
status = None; stopped = None; reached = False
while status is None and stopped is None:
    while True:
        try:
            done, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            done = -1
        if done <= 0:
            break
        if done == pid:
            status = st
    if status is not None or done == -1:
        break
    # With a ceiling, a fork bomb is noticed within 0.1 s: it is stopped, not left
    # spinning on failed forks until the timeout.
    info = signal.sigtimedwait(WATCHED, 1.0 if counted is None else 0.1)
    if info is not None and info.si_signo != signal.SIGCHLD:
        stopped = info.si_signo
    elif limit_reached(counted):
        reached = True
        break
take_down(grace if stopped else min(grace, 0.5))
reap()
reached = reached or limit_reached(counted)
for folder in (group, tasks_group):
    if folder is None:
        continue
    for _ in range(200):  # the last members leave the cgroup as they are reaped
        try:
            os.rmdir(folder)
            break
        except OSError:
            reap()
            time.sleep(0.005)
if report >= 0:
    try:
        os.write(report, b"process-limit %d\n" % max_tasks if reached else b"ok\n")
    except OSError:
        pass
if status_r is not None and status is not None:
    # The sandbox's pid 1 sent the command's own status (nothing: it did not get that far).
    os.set_blocking(status_r, False)
    try:
        sent = os.read(status_r, 4)
    except OSError:
        sent = b""
    if len(sent) == 4:
        status = int.from_bytes(sent, "little", signed=True)
code = os.waitstatus_to_exitcode(status) if status is not None else -(stopped or signal.SIGTERM)
if code < 0:
    os.kill(me, -code)  # still blocked if it is one of WATCHED: delivered on the unblock below
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
    time.sleep(1)
os._exit(code & 0xFF)
"""

#: The supervisor program: the cgroup lookup above, then the main part.
SUPERVISOR = (
    "from __future__ import annotations\nimport ctypes, os, signal, sys, time\n"
    + inspect.getsource(own_cgroup)
    + inspect.getsource(sweep_stale_cgroups)
    + inspect.getsource(pids_v1_base)
    + inspect.getsource(limit_tasks)
    + inspect.getsource(limit_reached)
    + inspect.getsource(user_tasks)
    + inspect.getsource(enter_sandbox)
    + inspect.getsource(sandbox_init)
    + SUPERVISOR_MAIN
)


def supervised(
    argv: Sequence[str], grace_s: float, hide: Sequence[str] = (), max_tasks: int = 0, report_fd: int = -1
) -> list[str]:
    """``argv`` run under the supervisor (the same Python as this process); with ``hide``,
    in the sandbox with those paths covered (:mod:`runtime.execution.sandbox`); with
    ``max_tasks``, at most that many processes and threads at once
    (:mod:`runtime.execution.proclimit`). The supervisor writes ``ok`` or
    ``process-limit N`` to ``report_fd`` (passed to it) as it ends."""
    limits = f"{max(0, int(max_tasks))}:{int(report_fd)}"
    return [sys.executable, "-I", "-S", "-c", SUPERVISOR, repr(float(grace_s)), encode(hide), limits, *argv]
