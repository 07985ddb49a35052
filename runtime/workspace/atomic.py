"""Atomic, durable file replacement relative to a directory descriptor.

A reader or a crash sees either the old file or the new one, never a mix: the data
goes to a temporary file in the same directory (same filesystem, so the rename is
atomic), is flushed with ``fsync``, renamed over the target with ``os.replace`` and
the directory is flushed so the rename itself survives a power loss.

Everything happens relative to ``dir_fd`` (see
:meth:`~runtime.workspace.sandbox.Workspace.open_parent_dir`): the temporary file is
created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and the rename replaces the directory
entry itself, so a symbolic link planted at the target name is replaced, never
followed. Hard links to the old file keep the old content (a new inode is written).

Where the kernel offers it (Linux ``O_TMPFILE``), the data is written to an unnamed
file that gets a name only once it is complete and synced, just before the rename: a
writer killed while writing (the long part, for a large file) leaves nothing behind.
Elsewhere the temporary file is named from the start. Either way a writer killed
between naming and renaming leaves it behind; the names start with
:data:`TEMP_PREFIX` and carry the writer's pid, so :func:`sweep_stale_temp_files`
removes those of dead writers at once and any other after a while, and the workspace
tools never list them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time

from runtime.workspace.sandbox import TEMP_PREFIX

__all__ = ["TEMP_PREFIX", "atomic_write", "sweep_stale_temp_files"]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def atomic_write(dir_fd: int, name: str, data: bytes | bytearray | memoryview, *, mode: int | None = None) -> None:
    """Replace (or create) ``name`` in directory ``dir_fd`` with ``data``, atomically and durably.

    ``mode`` sets the permission bits; None keeps those of the existing file, or, for a
    new file, uses 0666 less the process umask. Ownership of an existing file is kept
    where the process is allowed to (as root, or for the group when a member). On any
    error the temporary file is removed and the target is untouched.
    """
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        raise ValueError(f"not a file name: {name!r}")
    try:
        existing: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", name)
    regular = existing if existing is not None and stat.S_ISREG(existing.st_mode) else None
    if mode is None and regular is not None:
        mode = stat.S_IMODE(regular.st_mode)
    # With a known mode, start private and chmod after; otherwise let the umask decide.
    perm = 0o600 if mode is not None else 0o666
    unnamed = _open_unnamed(dir_fd, perm)
    temp, fd = ("", unnamed) if unnamed is not None else _create_temp(dir_fd, perm)
    try:
        try:
            _write_all(fd, data)
            if regular is not None:
                _keep_owner(fd, regular)
            if mode is not None:
                os.fchmod(fd, mode)  # after fchown, which may clear set-id bits
            os.fsync(fd)
            if unnamed is not None:
                temp = _name_unnamed(dir_fd, fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if temp:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
        raise
    try:
        os.fsync(dir_fd)
    except OSError as err:
        # The new content is in place; a filesystem without directory fsync is not a
        # reason to report the write as failed.
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise


def sweep_stale_temp_files(dir_fd: int, older_than_s: float, *, now: float | None = None) -> int:
    """Remove temporary files of crashed writers from directory ``dir_fd``; return how many.

    Only regular files named ``TEMP_PREFIX*`` are removed: at once when the pid in the
    name is a process of this machine that no longer exists (its writer is dead), and
    otherwise once their modification time is at least ``older_than_s`` seconds old,
    so live writers (which keep writing to theirs) are left alone as long as the age is
    well above a write's duration.
    """
    now = time.time() if now is None else now
    removed = 0
    try:
        names = os.listdir(dir_fd)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(TEMP_PREFIX):
            continue
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or (now - st.st_mtime < older_than_s and not _writer_dead(name)):
                continue
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            continue  # renamed by its writer, removed by another sweep, or not ours to remove
        removed += 1
    return removed


def _writer_dead(name: str) -> bool:
    """True when ``name`` (``TEMP_PREFIX<pid>-<random>``) names a pid with no process."""
    pid_text = name[len(TEMP_PREFIX) :].split("-", 1)[0]
    if not pid_text.isdigit() or int(pid_text) <= 1:
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # exists (another user's): not dead
    return False


def _open_unnamed(dir_fd: int, perm: int) -> int | None:
    """An unnamed file in ``dir_fd`` (``O_TMPFILE``), or None where the kernel or the
    file system offers none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", flag | os.O_WRONLY | os.O_CLOEXEC, perm, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise


def _name_unnamed(dir_fd: int, fd: int) -> str:
    """Give the complete unnamed file ``fd`` a temporary name in ``dir_fd`` (linkat)."""
    for _ in range(100):
        name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        try:
            os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)
            return name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not name the temporary file")


def _create_temp(dir_fd: int, perm: int) -> tuple[str, int]:
    for _ in range(100):
        name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        try:
            return name, os.open(name, _TEMP_FLAGS, perm, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a unique temporary file")


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    # os.write may write less than asked (signals, large buffers): loop until done.
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view[:_CHUNK])
        view = view[written:]


def _keep_owner(fd: int, old: os.stat_result) -> None:
    if (old.st_uid, old.st_gid) == (os.geteuid(), os.getegid()):
        return
    with contextlib.suppress(PermissionError):
        os.fchown(fd, old.st_uid, old.st_gid)
        return
    with contextlib.suppress(PermissionError):
        os.fchown(fd, -1, old.st_gid)
