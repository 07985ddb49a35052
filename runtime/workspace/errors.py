"""Refusals of the workspace tools: all of them are :class:`ToolError`, so the model reads them.

Every message says what is wrong and how to fix it, and names files only by the
path the model gave or by their path relative to the workspace root: a resolved
location outside the workspace is never shown.
"""

from __future__ import annotations

from runtime.errors import ToolError, ToolrtError


class GlobError(ToolrtError, ValueError):
    """A glob that cannot be compiled (see :mod:`runtime.workspace.globs`); the message says why."""


class WorkspaceError(ToolError):
    """A path or file operation in the workspace was refused; nothing was changed."""


class BinaryFileError(WorkspaceError):
    """The file is not text (NUL bytes, a known binary format, or mostly control bytes)."""


class EditConflict(WorkspaceError):
    """The file changed since the caller read it (``expected_hash`` no longer matches).

    ``current_hash`` is the SHA-256 of the file as it is now (None when it no longer exists).
    """

    def __init__(self, message: str, current_hash: str | None) -> None:
        super().__init__(message)
        self.current_hash = current_hash


class FileBusy(WorkspaceError):
    """Another writer held the file's lock for longer than the lock timeout."""
