"""What the config watcher hands to watchfiles, which changed paths matter, and where
a commit marker lives (see :mod:`runtime.reload`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from pathlib import Path

import watchfiles
from loguru import logger

from runtime.config.files import YAML_SUFFIXES
from runtime.config.view import Fingerprint


@dataclass(frozen=True)
class WatchTargets:
    """What to hand to watchfiles, and which changed paths matter."""

    watch: tuple[str, ...]  # existing directories (or files) to watch
    dirs: tuple[str, ...]  # config directories: YAML anywhere under them matters
    files: tuple[str, ...]  # config files given by name: only they (and ConfigMap entries beside them) matter


def watch_targets(paths: Sequence[Path]) -> WatchTargets:
    """The folders to watch for ``paths`` (config folders and files), and what matters in them."""
    watch: dict[str, None] = {}
    dirs: list[str] = []
    files: list[str] = []
    for path in paths:
        absolute = os.path.abspath(path)
        if os.path.isfile(absolute):
            # Watch the folder, not the file: an editor that saves by rename replaces the
            # file's inode, and a watch on the old inode would go quiet.
            files.append(absolute)
            watch.setdefault(os.path.dirname(absolute), None)
            continue
        dirs.append(absolute)
        if os.path.isdir(absolute):
            watch.setdefault(absolute, None)
        elif os.path.isdir(os.path.dirname(absolute)):
            watch.setdefault(os.path.dirname(absolute), None)  # so that creating it is seen
        else:
            logger.bind(path=absolute).warning(
                "config path {} does not exist and neither does its parent: not watched", absolute
            )
    return WatchTargets(tuple(watch), tuple(dirs), tuple(files))


def watch_identity(watch: Sequence[str]) -> tuple[tuple[int, int] | None, ...]:
    """Which filesystem object each watched path is (device, inode; None when gone). A
    folder deleted and created again under the same name is another object: a watch
    placed on the old one sees nothing of the new one."""
    identity: list[tuple[int, int] | None] = []
    for path in watch:
        try:
            found = os.stat(path)
        except OSError:
            identity.append(None)
        else:
            identity.append((found.st_dev, found.st_ino))
    return tuple(identity)


def _is_configmap_entry(name: str) -> bool:
    """``..data``, ``..data_tmp`` and the ``..2026_01_01_...`` folders of a ConfigMap volume."""
    return name.startswith("..") and len(name) > 2


class ChangeFilter:
    """watchfiles filter: keep the changes a config load could see.

    ``on_ignored`` is called with each path the filter drops (the watcher counts them);
    the paths in ``files`` (looked up live: the watcher may add to it) are kept too."""

    def __init__(
        self,
        targets: WatchTargets,
        on_ignored: Callable[[str], None] | None = None,
        files: Container[str] = frozenset(),
    ) -> None:
        self.dirs = targets.dirs
        self.files = frozenset(targets.files)
        self.file_dirs = frozenset(os.path.dirname(f) for f in targets.files)
        self._on_ignored = on_ignored
        self._watched_files = files

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        kept = self._keeps(change, path)
        if not kept and self._on_ignored is not None:
            self._on_ignored(path)
        return kept

    def _keeps(self, change: watchfiles.Change, path: str) -> bool:
        if path in self.files or path in self.dirs or path in self._watched_files:
            return True
        name = os.path.basename(path)
        if os.path.dirname(path) in self.file_dirs and _is_configmap_entry(name):
            return True  # a file given by name can be a symlink through ..data
        for root in self.dirs:
            if path.startswith(root + os.sep):
                return self._under_dir(change, path, path[len(root) + 1 :])
        return False

    @staticmethod
    def _under_dir(change: watchfiles.Change, path: str, relative: str) -> bool:
        parts = relative.split(os.sep)
        if any(_is_configmap_entry(p) for p in parts):
            return True
        if any(p.startswith(".") for p in parts):
            return False  # loading skips hidden entries: editor swap files, .git, ...
        name = parts[-1]
        if name.endswith(YAML_SUFFIXES):
            return True
        # A folder added, renamed or removed may carry YAML files with it; a removed
        # path cannot be checked, so an extension-less one is taken to be a folder.
        return "." not in name and (change == watchfiles.Change.deleted or os.path.isdir(path))


def hashless(view: Fingerprint) -> Fingerprint:
    """``view`` without its content hashes (what a cheap fingerprint is compared with)."""
    return tuple((*entry[:-1], "") if len(entry) == 7 else entry for entry in view)


def marker_path(marker: Path | str, paths: Sequence[Path]) -> Path:
    """An absolute marker as given; a relative one in the first config folder (or the
    folder of the first config file)."""
    given = Path(marker)
    if given.is_absolute() or not paths:
        return given
    first = Path(os.path.abspath(paths[0]))
    base = first.parent if first.suffix in YAML_SUFFIXES else first
    return base / given
