"""The paths a git repository tracks, read from its index file (``.git/index``).

``git grep`` and ``git diff`` read tracked files only: a ``.env`` that git ignores is
never in their output, one that is tracked is. Reading the index directly (versions 2,
3 and 4; SHA-1 and SHA-256 repositories) costs no process and runs none of the
repository's configuration, which the agent may have written.
"""

from __future__ import annotations

import os
import struct

#: Index files larger than this are not read (the caller then assumes every file is tracked).
MAX_INDEX_BYTES = 64 * 1024 * 1024
_STAT_BYTES = 40  # ctime, mtime, dev, ino, mode, uid, gid, size: ten 32-bit fields


def tracked_paths(git_dir: str) -> frozenset[str] | None:
    """Workspace-relative paths in ``git_dir``'s index; empty when it has none; None when
    the index cannot be read with certainty (then assume every file may be tracked)."""
    path = os.path.join(git_dir, "index")
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_INDEX_BYTES:
                return None
            data = handle.read()
    except FileNotFoundError:
        return frozenset()
    except OSError:
        return None
    for hash_bytes in (20, 32):
        found = _parse(data, hash_bytes)
        if found is not None:
            return found
    return None


def _parse(data: bytes, hash_bytes: int) -> frozenset[str] | None:
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return None
    paths: list[str] = []
    previous = b""
    at = 12
    try:
        for _ in range(count):
            start = at
            at += _STAT_BYTES + hash_bytes
            (flags,) = struct.unpack(">H", data[at : at + 2])
            at += 2
            if version >= 3 and flags & 0x4000:
                at += 2  # extended flags
            if version == 4:
                strip, at = _varint(data, at)
                end = data.index(b"\0", at)
                name = previous[: len(previous) - strip] + data[at:end]
                at = end + 1
            else:
                end = data.index(b"\0", at)
                name = data[at:end]
                at = start + ((end - start + 8) // 8) * 8  # NUL padding to a multiple of 8
            if at > len(data):
                return None
            previous = name
            paths.append(name.decode("utf-8", "surrogateescape"))
    except (struct.error, ValueError, IndexError):
        return None
    return frozenset(paths)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset encoding of version 4 (each continuation adds one before shifting)."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at
