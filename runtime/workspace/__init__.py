"""The workspace action layer: safe paths, atomic writes, file_read and file_edit.

::

    sandbox.py   Workspace.resolve: one resolver for every path argument;
                 open_parent_dir: descriptors that never follow a swapped-in link;
                 open_file: resolve and open for reading (plain paths in one call)
    globs.py     the one path-glob dialect (deny globs, search globs, grant patterns)
    nolinks.py   openat2 with RESOLVE_NO_SYMLINKS: the one-call open of plain paths
    atomic.py    atomic_write (temp file, fsync, rename, fsync dir) and the sweep
                 of temp files left by crashed writers
    text.py      encodings, binary sniffing, line helpers, short diffs
    cache.py     ReadCache: decoded files by identity, TTL, byte budget, LRU
    read.py      FileReader: numbered windows of text files with their SHA-256
    delete.py    file_delete: remove one regular file under the same lock
    edit.py      FileEditor: replace/append/insert/str_replace under a
                 cross-process lock, with expected_hash concurrency checks
    errors.py    WorkspaceError and friends (all ToolError: the model reads them)
"""

from runtime.workspace.atomic import TEMP_PREFIX, atomic_write, sweep_stale_temp_files
from runtime.workspace.cache import CachedText, FileIdentity, ReadCache
from runtime.workspace.delete import DeleteResult, delete_file
from runtime.workspace.edit import EDIT_MODES, EditMode, EditResult, FileEditor
from runtime.workspace.errors import BinaryFileError, EditConflict, FileBusy, WorkspaceError
from runtime.workspace.read import FileReader, ReadResult
from runtime.workspace.sandbox import DEFAULT_DENY, Resolved, Workspace

__all__ = [
    "DEFAULT_DENY",
    "EDIT_MODES",
    "TEMP_PREFIX",
    "BinaryFileError",
    "DeleteResult",
    "CachedText",
    "EditConflict",
    "EditMode",
    "EditResult",
    "FileBusy",
    "FileEditor",
    "FileIdentity",
    "FileReader",
    "ReadCache",
    "ReadResult",
    "Resolved",
    "Workspace",
    "WorkspaceError",
    "atomic_write",
    "delete_file",
    "sweep_stale_temp_files",
]
