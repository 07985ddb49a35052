"""One workspace with the reader, editor and read cache its tools share, and where its edit locks go.

Its own module so that the turn's environment (:mod:`runtime.pipeline.env`, which carries a :class:`WorkspaceTools`)
and the workspace built-ins (:mod:`runtime.tools.workspace_tools`, which take the turn's environment) do not import
each other.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.workspace import FileEditor, FileReader, ReadCache, Workspace
from runtime.workspace.hardlinks import NO_PROTECTED_INODES, ProtectedInodes

if TYPE_CHECKING:
    from runtime.settings import Settings


@dataclass(frozen=True)
class WorkspaceTools:
    """One workspace with the reader, editor and read cache its tools share."""

    workspace: Workspace
    cache: ReadCache
    reader: FileReader
    editor: FileEditor

    @classmethod
    def create(
        cls,
        root: Path,
        deny_globs: Sequence[str],
        lock_dir: Path,
        protected_inodes: ProtectedInodes = NO_PROTECTED_INODES,
    ) -> WorkspaceTools:
        """Tools for the workspace at ``root``; lock files go to ``lock_dir`` (outside it);
        ``protected_inodes`` finds toolrt's own files under other names (hard links)."""
        workspace = Workspace(root, deny_globs, protected_inodes)
        cache = ReadCache()
        return cls(workspace, cache, FileReader(workspace, cache), FileEditor(workspace, lock_dir, cache))


def lock_dir_for(settings: Settings, workspace_root: Path) -> Path:
    """Where file_edit keeps its lock files: never inside the user's workspace.

    ``state_dir`` when it is absolute and outside the workspace; else the user's state
    directory (``$XDG_STATE_HOME`` or ``~/.local/state``), else the temp directory.
    Every process editing the same files must agree on it, so it depends on nothing
    but the settings and the user.
    """
    root = workspace_root.resolve()
    if settings.state_dir.is_absolute() and not settings.state_dir.resolve().is_relative_to(root):
        return settings.state_dir / "locks"
    state_home = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    candidate = Path(state_home) / "toolrt" / "locks"
    if not candidate.resolve().is_relative_to(root):
        try:
            candidate.mkdir(parents=True, exist_ok=True, mode=0o700)
            return candidate
        except OSError:
            pass
    return Path(tempfile.gettempdir()) / f"toolrt-{os.getuid()}" / "locks"
