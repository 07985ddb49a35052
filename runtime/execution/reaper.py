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

:data:`SUPERVISOR` is the program (run with ``python -I -S -c``, importing nothing of
toolrt, so it starts in milliseconds); :func:`supervised` wraps an argv in it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

SUPERVISOR = r"""
import ctypes, os, signal, sys, time
grace = float(sys.argv[1]); argv = sys.argv[2:]
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
# The stop signals and SIGCHLD are blocked and taken with sigtimedwait: no handler, so
# no moment at which a SIGTERM could end the supervisor before its tree is down.
WATCHED = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD}
signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
me = os.getpid()
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
    return found
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
        send(left, signal.SIGKILL)
        time.sleep(0.005)
        reap()
pid = os.fork()
if pid == 0:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)  # exec keeps the mask: give the command the usual one
    try:
        os.execvp(argv[0], argv)
    except OSError as err:
        os.write(2, ("%s: %s\n" % (argv[0], err.strerror)).encode())
        os._exit(127)
status = None; stopped = None
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
    info = signal.sigtimedwait(WATCHED, 1.0)
    if info is not None and info.si_signo != signal.SIGCHLD:
        stopped = info.si_signo
take_down(grace if stopped else min(grace, 0.5))
reap()
code = os.waitstatus_to_exitcode(status) if status is not None else -(stopped or signal.SIGTERM)
if code < 0:
    os.kill(me, -code)  # still blocked if it is one of WATCHED: delivered on the unblock below
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
    time.sleep(1)
os._exit(code & 0xFF)
"""


def supervised(argv: Sequence[str], grace_s: float) -> list[str]:
    """``argv`` run under the supervisor (the same Python as this process)."""
    return [sys.executable, "-I", "-S", "-c", SUPERVISOR, repr(float(grace_s)), *argv]
