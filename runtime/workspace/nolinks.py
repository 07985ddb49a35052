"""Open a path in one system call, refusing any symbolic link on the way (Linux ``openat2``).

``openat2(2)`` with ``RESOLVE_NO_SYMLINKS`` fails with ``ELOOP`` when any component
of the path, not only the last, is a symbolic link. For a path made of the resolved
workspace root (which holds no link) and components without ``..``, success means
the file opened lies physically under the root, checked by the kernel in the same
step that opens it: no window between a check and the open.

This is the fast path of :meth:`Workspace.open_file`; whenever it cannot answer (a
link on the way, a missing file, an older kernel, a seccomp filter, not Linux) the
caller falls back to the component-by-component resolver, which handles links and
words every refusal. Python's ``os`` has no ``openat2``, so it is called through
``ctypes``; the system call releases the interpreter lock like ``os.open`` does.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from typing import Any

O_PATH: int = getattr(os, "O_PATH", 0)
"""Open for looking up only (Linux); 0 elsewhere, where :func:`open_no_links` is never tried."""

_MAX_PATH_BYTES = 4096  # Linux PATH_MAX
_MAX_NAME_BYTES = 255  # Linux NAME_MAX
_PLAIN_ASCII = re.compile(f"[ -~]{{1,{_MAX_PATH_BYTES}}}")  # printable ASCII, at most PATH_MAX bytes

_SYS_OPENAT2 = 437  # the same number on every architecture Linux added it to after 5.x (not alpha)
_AT_FDCWD = -100
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL, errno.EOPNOTSUPP})

_call: Any = None  # (syscall, how-factory, sizeof, get_errno, byref) once loaded; False when unavailable
_hows: dict[int, Any] = {}  # open flags -> (struct open_how, its reference)


def _load() -> Any:
    global _call
    if _call is None:
        _call = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)

                class OpenHow(ctypes.Structure):
                    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

                syscall = libc.syscall
                syscall.restype = ctypes.c_long
                _call = (syscall, OpenHow, ctypes.sizeof(OpenHow), ctypes.get_errno, ctypes.byref)
            except (OSError, AttributeError, ImportError):
                _call = False
    return _call


def open_no_links(path: bytes, flags: int) -> int:
    """A descriptor of absolute ``path`` opened with ``flags`` and no symbolic link followed
    anywhere on the way; ``-errno`` on failure (``-ELOOP``: a link was in the way;
    ``-ENOSYS``: not available here, and never tried again)."""
    global _call
    loaded = _call if _call else _load()
    if not loaded:
        return -errno.ENOSYS
    syscall, how_type, size, get_errno, byref = loaded
    how = _hows.get(flags)
    if how is None:
        # The kernel only reads the struct: one per flag set, shared by every caller.
        struct = how_type(flags | os.O_CLOEXEC, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
        how = _hows[flags] = (struct, byref(struct))
    fd = int(syscall(_SYS_OPENAT2, _AT_FDCWD, path, how[1], size))
    if fd >= 0:
        return fd
    err = get_errno()
    if err in _UNSUPPORTED:
        _call = False  # an older kernel or a filter: the slow path from now on
        return -errno.ENOSYS
    return -err


def plain_relative(path: object) -> str | None:
    """``path`` in normal form when it is a plain relative path, else None.

    Plain: relative, no ``..`` and no ``~`` start, no trailing ``/``, printable (no
    control characters, no undecodable bytes), within PATH_MAX and NAME_MAX. ``.`` and
    empty components are dropped (``./a//b`` is ``a/b``); the root itself is not plain.
    Anything else is left to the full resolver, which words every refusal.
    """
    if type(path) is not str or path.startswith(("/", "~")) or path.endswith("/") or not path.strip():
        return None
    if path.isascii():
        if not _PLAIN_ASCII.fullmatch(path):
            return None
        longest = max(map(len, path.split("/")))
    elif path.isprintable() and len(encoded := path.encode()) <= _MAX_PATH_BYTES:  # no surrogates either
        longest = max(map(len, encoded.split(b"/")))
    else:
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts or longest > _MAX_NAME_BYTES:
        return None
    return "/".join(parts)
