"""What a config load would see, as a comparable value: the stable-view check of hot reload.

A :func:`fingerprint` lists every file a load of ``paths`` reads (the same discovery
rules as :func:`runtime.config.files.discover`) with its inode, size, modification and
change times, and, when asked, the SHA-256 of its content. Two equal fingerprints
taken a settle window apart mean nobody was writing in between; a fingerprint taken
again after compiling tells whether the files the build read are still the ones on disk.

A :func:`marker_signature` identifies the state of a commit marker (a file a deploy step
writes last, or the ``..data`` symlink a Kubernetes ConfigMap volume swaps).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from runtime.config.files import YAML_SUFFIXES

Fingerprint = tuple[tuple[object, ...], ...]


def _stat_entry(path: str, with_hash: bool) -> tuple[object, ...]:
    try:
        st = os.stat(path)  # follows the symlinks of a ConfigMap volume to the real file
    except OSError as err:
        return (path, "unreadable", err.errno)
    digest = ""
    if with_hash:
        try:
            with open(path, "rb") as handle:
                digest = hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as err:
            digest = f"unreadable:{err.errno}"
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)


def _files_under(root: str) -> Iterable[str]:
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and name.endswith(YAML_SUFFIXES):
                yield os.path.join(current, name)


def fingerprint(paths: Iterable[Path | str], *, with_hash: bool = False) -> Fingerprint:
    """Every config file under ``paths`` with its identity, size and times (and content
    hash when ``with_hash``); a missing path is listed as missing, so that a folder
    renamed away and back differs from one that never moved only by its files' times."""
    entries: list[tuple[object, ...]] = []
    for root in paths:
        text = os.path.abspath(root)
        if os.path.isdir(text):
            try:
                st = os.stat(text)
                entries.append((text, "dir", st.st_dev, st.st_ino))
            except OSError as err:
                entries.append((text, "unreadable", err.errno))
            entries.extend(_stat_entry(path, with_hash) for path in _files_under(text))
        elif os.path.exists(text):
            entries.append(_stat_entry(text, with_hash))
        else:
            entries.append((text, "missing"))
    return tuple(entries)


def marker_signature(path: Path | str) -> tuple[object, ...] | None:
    """The state of a commit marker: None while it does not exist; for a symlink (the
    ``..data`` of a ConfigMap volume) its target; for a file its identity, times and content hash."""
    text = os.fspath(path)
    try:
        st = os.lstat(text)
    except OSError:
        return None
    if os.path.islink(text):
        try:
            return ("link", os.readlink(text), st.st_ino, st.st_mtime_ns)
        except OSError:
            return None
    return _stat_entry(text, True)
