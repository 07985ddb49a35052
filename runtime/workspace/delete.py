"""``file_delete``: remove one regular file of the workspace, safely.

The path goes through the one resolver (:meth:`Workspace.resolve` with
``for_write``), so every protection of ``file_edit`` holds: no escape through links
or ``..``, deny globs (toolrt's own config and state included), no directories, no
devices or FIFOs, not the root, not a reserved temporary name. Two more refusals:

* a path whose *last* component is a symbolic link: removing it would remove the
  file it points to under another name (or only the link, which surprises just as
  much); the message names the target to delete instead;
* a file that changed since the caller read it, when ``expected_hash`` is given.

Writers of one file are serialised by the same cross-process lock as ``file_edit``
(:meth:`FileEditor.lock_path`), so a delete never interleaves with an edit. Under
the lock the file is read once (its SHA-256 and size go to the audit log as
``hash_before``), its identity is checked again just before the unlink, which goes
through a directory descriptor reached without following links, and the directory
is flushed so the removal survives a crash.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass

import filelock

from runtime.workspace.cache import FileIdentity
from runtime.workspace.edit import FileEditor
from runtime.workspace.errors import EditConflict, FileBusy, WorkspaceError

_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class DeleteResult:
    """What a delete removed: the path, and the SHA-256 and size of the content it had."""

    path: str
    sha256: str
    size: int

    def render(self) -> str:
        """A short report for the model."""
        return f"Deleted {self.path} ({self.size:,} bytes; its sha256 was {self.sha256})"


def delete_file(editor: FileEditor, path: str, expected_hash: str | None = None) -> DeleteResult:
    """Remove the regular file at ``path`` (see the module docstring for the rules).

    Refusals raise :class:`~runtime.workspace.errors.WorkspaceError` (an
    :class:`~runtime.workspace.errors.EditConflict` when ``expected_hash`` does not
    match); nothing is removed then."""
    if expected_hash is not None:
        if not isinstance(expected_hash, str) or not _HASH.fullmatch(expected_hash.strip().lower()):
            raise WorkspaceError(
                "expected_hash must be the 64-character hex sha256 that file_read returned for this file"
            )
        expected_hash = expected_hash.strip().lower()
    workspace = editor.workspace
    resolved = workspace.resolve(path, for_write=True, must_exist=True)
    _refuse_final_link(workspace.root, path, resolved.relative)
    lock = filelock.FileLock(
        str(editor.lock_path(resolved)), timeout=editor.lock_timeout_s, poll_interval=editor.lock_poll_s
    )
    try:
        lock.acquire()
    except filelock.Timeout:
        raise FileBusy(
            f"{resolved.relative} is busy: another edit has held it for over {editor.lock_timeout_s:g} s; try again "
            "shortly (nothing was deleted)"
        ) from None
    try:
        parent_fd = workspace.open_parent_dir(resolved)
        try:
            current = editor.read_current(parent_fd, resolved)
            if current is None:
                raise WorkspaceError(
                    f"{resolved.relative} not found (it may have just been removed); nothing was deleted"
                )
            digest = hashlib.sha256(current.raw).hexdigest()
            if expected_hash is not None and expected_hash != digest:
                raise EditConflict(
                    f"{resolved.relative} changed since you read it: expected sha256 {expected_hash}, current sha256 "
                    f"{digest}. Read it again before deleting it; nothing was deleted.",
                    digest,
                )
            now = FileIdentity.of(os.stat(resolved.name, dir_fd=parent_fd, follow_symlinks=False))
            if now != current.identity:
                raise EditConflict(
                    f"{resolved.relative} was changed by another program during the delete; read it again (nothing "
                    "was deleted)",
                    None,
                )
            try:
                os.unlink(resolved.name, dir_fd=parent_fd)
            except FileNotFoundError:
                raise WorkspaceError(
                    f"{resolved.relative} not found (it was removed meanwhile); nothing was deleted"
                ) from None
            except PermissionError:
                raise WorkspaceError(f"permission denied: {resolved.relative} cannot be deleted") from None
            with contextlib.suppress(OSError):
                os.fsync(parent_fd)
        finally:
            os.close(parent_fd)
    finally:
        lock.release()
    if editor.cache is not None:
        editor.cache.invalidate(str(resolved.absolute))
    return DeleteResult(resolved.relative, digest, len(current.raw))


def _refuse_final_link(root: os.PathLike[str], given: str, relative: str) -> None:
    """Refuse ``given`` when its last component is a symbolic link (the resolver followed it)."""
    base = given.rstrip("/")
    head, _, name = base.rpartition("/")
    if not name or name in (".", ".."):
        return
    if given.startswith("/"):
        folder = head or "/"
    else:
        folder = os.path.join(os.fspath(root), head) if head else os.fspath(root)
    try:
        real_folder = os.path.realpath(folder)
        st = os.lstat(os.path.join(real_folder, name))
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            return
        raise WorkspaceError(
            f"'{given[:160]}' cannot be looked up ({os.strerror(err.errno or errno.EINVAL)}); nothing was deleted"
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise WorkspaceError(
            f"'{given[:160]}' is a symbolic link to {relative}; file_delete does not delete through links. Delete "
            f"{relative} by its own path if that is what you mean."
        )
