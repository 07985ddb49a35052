"""Where a workspace's audit log lives: in the user's state directory, not in the workspace.

The agent's tools read, write and run commands inside the workspace, so a log kept
there (as ``.toolrt/audit.sqlite3`` once was) is within its reach. By default each
workspace gets a directory of its own under the state directory, named after the
resolved workspace root and a hash of it::

    $XDG_STATE_HOME/toolrt/audit/<name>-<hash>/audit.sqlite3   (or audit.jsonl)

with the same choice of state directory as the lock files of ``file_edit``: the
``state_dir`` setting when it is absolute and outside the workspace, else
``$XDG_STATE_HOME/toolrt`` (``~/.local/state/toolrt``) when that is outside the
workspace, else ``toolrt-<uid>`` in the temp directory. The path depends only on
the settings, the environment and the workspace, so ``toolrt audit --workspace .``
finds the log a Runtime for that workspace writes.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from runtime.settings import Settings

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def store_path(workspace_root: str | os.PathLike[str], settings: Settings | None = None) -> Path:
    """The audit log of the workspace at ``workspace_root`` under ``settings``
    (default: ``Settings()``, i.e. the ``TOOLRT_*`` environment).

    ``settings.audit_store`` absolute: used as given; relative (the default,
    ``audit.sqlite3``, or ``audit.jsonl`` when it is left unset and the sink is
    ``jsonl``): in :func:`audit_dir`. Creates nothing.
    """
    settings = settings if settings is not None else Settings()
    configured = settings.audit_store.expanduser()
    if configured.is_absolute():
        return configured
    if "audit_store" not in settings.model_fields_set and settings.audit_sink == "jsonl":
        configured = Path("audit.jsonl")
    return audit_dir(workspace_root, settings) / configured


def audit_dir(workspace_root: str | os.PathLike[str], settings: Settings | None = None) -> Path:
    """The directory of the workspace's audit log, outside the workspace (see the module docstring)."""
    return workspace_dir(workspace_root, "audit", settings)


def workspace_dir(workspace_root: str | os.PathLike[str], kind: str, settings: Settings | None = None) -> Path:
    """A directory of the workspace's own for ``kind`` (``audit``, ``artifacts``) in the
    state directory, outside the workspace: ``<state>/<kind>/<name>-<hash>``."""
    settings = settings if settings is not None else Settings()
    root = Path(workspace_root).resolve()
    digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    label = _UNSAFE.sub("_", root.name)[:40].strip("._")
    return _state_home(settings, root) / kind / (f"{label}-{digest}" if label else digest)


def own_paths(workspace_root: str | os.PathLike[str], settings: Settings | None = None) -> list[Path]:
    """What toolrt writes for the workspace's audit log, for the paths the agent's tools
    must not touch: the log's own directory when it is the default one, else the log
    and the files SQLite and the chain keep beside it."""
    store, directory = store_path(workspace_root, settings), audit_dir(workspace_root, settings)
    if store.resolve().is_relative_to(directory.resolve()):
        return [directory]
    suffixes = ("-wal", "-shm", "-journal", ".head", ".handoff")  # .handoff: the writer child's folder
    return [store, *(store.with_name(store.name + suffix) for suffix in suffixes)]


def inside(path: Path, workspace_root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is inside the workspace (after resolving links), where its tools reach."""
    return path.resolve().is_relative_to(Path(workspace_root).resolve())


def _state_home(settings: Settings, root: Path) -> Path:
    state_dir = settings.state_dir.expanduser()
    if state_dir.is_absolute() and not state_dir.resolve().is_relative_to(root):
        return state_dir
    # The XDG spec says to ignore a relative value.
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "state"
    candidate = base / "toolrt"
    if not candidate.resolve().is_relative_to(root):
        return candidate
    return Path(tempfile.gettempdir()) / f"toolrt-{os.getuid()}"
