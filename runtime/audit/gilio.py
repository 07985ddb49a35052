"""Writes the audit writer thread makes without letting go of the interpreter lock.

``os.write`` lets go of the lock around the system call, so that other threads run while
it waits. For the audit writer thread of a busy app that is the costly choice: the lock
goes to the thread making the calls, and the writer gets it back only once that thread is
made to give it up, up to a switch interval (5 ms by default) later and at about 0.1 ms
of CPU in lock hand-offs each time on a virtual machine. A batch handed to the writer
child made several such calls; under load they cost more CPU than pickling the batch.

The writes here keep the lock (a ``ctypes.PyDLL`` call of the C library's ``write``),
because they do not wait: a byte down a non-blocking pipe, and a frame appended to a file
on a local disk, which lands in the kernel's page cache. A file on a network or
user-space filesystem (NFS, SMB, FUSE, or any kind not known to be local: see
:func:`on_local_disk`) is always written with ``os.write``: its writes can wait on a
server. The kernel can still make a local write wait when the machine has more dirty
pages than it can write back; an append that takes longer than :data:`SLOW_S` puts its
:class:`Appender` back on ``os.write`` (which lets the app's threads run meanwhile) for
:data:`BACK_OFF_S`, twice as long after each slow append (up to :data:`MAX_BACK_OFF_S`).
Where the C library cannot be reached this way (not a POSIX system), every write is
``os.write``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import time
from typing import Any

#: An append that took longer than this (seconds) was made to wait by the kernel.
SLOW_S = 0.002
#: After a slow append, appends let go of the interpreter lock for this long (seconds).
BACK_OFF_S = 5.0
#: The longest back-off, after slow appends one after another (seconds).
MAX_BACK_OFF_S = 600.0
# Filesystems whose writes wait only on this machine's own disks and memory.
_LOCAL = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs", "tmpfs", "ramfs", "overlay"}
)
_ESCAPED = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space in a mount point as \040


def _libc_write() -> Any:
    try:
        write = ctypes.PyDLL(None, use_errno=True).write  # PyDLL: the lock is kept during the call
    except (OSError, AttributeError, TypeError):
        return None
    write.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    write.restype = ctypes.c_ssize_t
    return write


_write = _libc_write()


def _write_held(fd: int, data: bytes) -> int:
    """One ``write(2)`` of ``data`` keeping the lock: the bytes written; raises OSError
    (EINTR included: the caller goes on with ``os.write``, which retries it)."""
    written = int(_write(fd, data, len(data)))
    if written < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return written


def poke(fd: int) -> bool:
    """Write one byte to the non-blocking pipe ``fd`` (a wake-up). True when it went or the
    pipe is full (it holds wake-ups enough); False when nobody reads the pipe any more."""
    try:
        if _write is not None:
            _write_held(fd, b"\x01")
        else:
            os.write(fd, b"\x01")
    except BlockingIOError:
        return True
    except OSError as err:
        if err.errno in (errno.EAGAIN, errno.EINTR):
            return True
        return False
    return True


def on_local_disk(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is on a filesystem of a kind known to be local (:data:`_LOCAL`), by
    the mount that holds it in ``/proc/self/mountinfo``; False where that cannot be read."""
    try:
        target = os.path.realpath(path)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.readlines()
    except OSError:
        return False
    longest, kind = -1, ""
    for line in lines:
        left, separator, right = line.partition(" - ")
        fields = left.split()
        if not separator or len(fields) < 5:
            continue
        point = _ESCAPED.sub(lambda match: chr(int(match.group(1), 8)), fields[4])
        inside = point == "/" or target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= longest:  # the deepest mount, the last one mounted there
            longest, kind = len(point), right.split(" ", 1)[0]
    return kind in _LOCAL


class Appender:
    """Appends whole frames to a file (opened with ``O_APPEND``) keeping the interpreter
    lock, until one append is slow (see the module docstring). ``hold=False`` (a file not
    on a local disk, :func:`on_local_disk`): every append is ``os.write``."""

    def __init__(
        self,
        fd: int,
        *,
        hold: bool = True,
        slow_s: float = SLOW_S,
        back_off_s: float = BACK_OFF_S,
        max_back_off_s: float = MAX_BACK_OFF_S,
    ) -> None:
        self.fd = fd
        self.slow_s = slow_s
        self.back_off_s = back_off_s
        self.max_back_off_s = max_back_off_s
        self.slow_appends = 0
        # Monotonic time from which to keep the lock again.
        self._held_from = 0.0 if hold and _write is not None else float("inf")

    @property
    def holds_lock(self) -> bool:
        """Whether the next append keeps the interpreter lock."""
        return time.monotonic() >= self._held_from

    def append(self, data: bytes) -> None:
        """Append ``data``; raises OSError as ``os.write`` does (disk full, ...)."""
        if type(data) is not bytes:  # (what the C call takes)
            data = bytes(data)
        view = memoryview(data)
        if view and time.monotonic() >= self._held_from:
            started = time.monotonic()
            try:
                written = _write_held(self.fd, data)
            except OSError as err:
                if err.errno != errno.EINTR:
                    raise
                written = 0
            if time.monotonic() - started > self.slow_s:
                self.slow_appends += 1
                self._held_from = time.monotonic() + self.back_off_s
                self.back_off_s = min(self.back_off_s * 2, self.max_back_off_s)
            view = view[written:]
        while view:  # the rest of a short write, or an append while backing off
            view = view[os.write(self.fd, view) :]
