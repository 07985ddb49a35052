"""Other names for toolrt's own files: hard links.

A hard link is the same file under a second name, readable and writable wherever that
name sits: ``ln toolrt.d/policy.yaml notes.txt`` (or an archive's hard-link entry)
would make the config readable as ``notes.txt``. Path checks cannot see it; the inode
can. :class:`ProtectedInodes` answers, for a file just opened or looked up, whether it
is one of toolrt's own files under another name.

Only a file with more than one name can be such a link, so only those are looked up.
The answer for one inode is remembered with its link count and change time, which both
change when a name is added (``link``) or the file is moved (``rename``): a remembered
"not toolrt's" cannot go stale without the key changing.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

_MAX_ENTRIES = 50_000  # entries walked under toolrt's folders at most; beyond, assume the worst
_REMEMBERED = 4096
_NOT_CONFIG = frozenset({".git", "node_modules", ".venv", "__pycache__"})


class ProtectedInodes:
    """Answers whether a stat result is one of the files under ``paths`` (files, or
    folders and everything below them; with ``yaml_only``, only YAML files below)."""

    def __init__(self, paths: Iterable[tuple[Path, bool]]) -> None:
        self._paths = tuple((str(path), yaml_only) for path, yaml_only in paths)
        self._verdicts: dict[tuple[int, int, int, int], bool] = {}
        self._lock = threading.Lock()

    def holds(self, st: os.stat_result) -> bool:
        """Whether ``st`` (of a file reached by some other name) is one of toolrt's own
        files. Cheap for the usual file, with one name."""
        if st.st_nlink <= 1 or not stat.S_ISREG(st.st_mode) or not self._paths:
            return False
        key = (st.st_dev, st.st_ino, st.st_nlink, st.st_ctime_ns)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._look_for(st.st_dev, st.st_ino)
            with self._lock:
                if len(self._verdicts) >= _REMEMBERED:
                    self._verdicts.clear()
                self._verdicts[key] = verdict
        return verdict

    def _look_for(self, dev: int, ino: int) -> bool:
        walked = 0
        for top, yaml_only in self._paths:
            try:
                st = os.lstat(top)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) == (dev, ino):
                    return True
                continue
            for folder, dirs, files in os.walk(top):
                if yaml_only:
                    dirs[:] = [d for d in dirs if d not in _NOT_CONFIG]  # large trees that hold no config
                walked += len(dirs) + len(files)
                if walked > _MAX_ENTRIES:
                    return True  # too many to look through: fail closed
                for name in files:
                    if yaml_only and not name.lower().endswith((".yaml", ".yml")):
                        continue
                    try:
                        found = os.lstat(os.path.join(folder, name))
                    except OSError:
                        continue
                    if (found.st_dev, found.st_ino) == (dev, ino):
                        return True
        return False


NO_PROTECTED_INODES = ProtectedInodes(())


def linked_protected(inodes: ProtectedInodes) -> frozenset[tuple[int, int]] | None:
    """The (device, inode) of every one of toolrt's files that has another name (a hard
    link somewhere), or None when there are too many files to look through (assume the
    worst). Empty, as it usually is, when no such link exists anywhere."""
    found: set[tuple[int, int]] = set()
    walked = 0
    for top, yaml_only in inodes._paths:  # noqa: SLF001 - the same module's own class
        try:
            st = os.lstat(top)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            if st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
                found.add((st.st_dev, st.st_ino))
            continue
        for folder, dirs, files in os.walk(top):
            if yaml_only:
                dirs[:] = [d for d in dirs if d not in _NOT_CONFIG]
            walked += len(dirs) + len(files)
            if walked > _MAX_ENTRIES:
                return None
            for name in files:
                if yaml_only and not name.lower().endswith((".yaml", ".yml")):
                    continue
                try:
                    entry = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if entry.st_nlink > 1 and stat.S_ISREG(entry.st_mode):
                    found.add((entry.st_dev, entry.st_ino))
    return frozenset(found)
