"""Built-in compensation of ``file_edit`` and ``file_delete`` steps.

Before such a step runs, the file it names is read through the workspace sandbox
(the same resolver, deny globs and link-free descriptors as the tools themselves):
its bytes, or the fact that it does not exist. To undo the step, the runner calls a
``builtin:file_edit`` tool through the pipeline to write those bytes back, with the
hash the step left as ``expected_hash``, so a file that changed since the step is
refused and reported, never overwritten; a file the step created is removed with
``file_delete`` and the same check. The restored content is verified by hash.

Text files only: ``file_edit`` writes text, so a binary file's compensation is
refused with a reason instead of writing something else.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.errors import ToolError
from runtime.workspace.text import decode


@dataclass(frozen=True, slots=True)
class Backup:
    """The file a step is about to change, as it was: ``raw`` None when it did not exist;
    ``error`` when it could not be read (the step will most likely be refused too)."""

    path: str
    raw: bytes | None = None
    sha256: str | None = None
    error: str | None = None


def take_backup(tools: Any, path: Any) -> Backup:
    """Read ``path`` of the workspace (a ``WorkspaceTools``) before a step changes it."""
    if not isinstance(path, str):
        return Backup(str(path), error="the step's `path` is not a string")
    try:
        resolved = tools.workspace.resolve(path, for_write=True, must_exist=False)
        if not resolved.exists:
            return Backup(path)
        parent = tools.workspace.open_parent_dir(resolved)
        try:
            current = tools.editor.read_current(parent, resolved)
        finally:
            os.close(parent)
    except (ToolError, OSError) as err:
        return Backup(path, error=str(err))
    if current is None:
        return Backup(path)
    return Backup(path, current.raw, hashlib.sha256(current.raw).hexdigest())


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """The call that undoes a step (``tool`` and ``args``), the hash the file must have
    afterwards (None: it must be gone), or ``refused`` saying why it cannot be done."""

    tool: str | None = None
    args: Mapping[str, Any] | None = None
    expect_sha256: str | None = None
    refused: str | None = None


def plan_restore(
    backup: Backup | None, handler: str, metadata: Mapping[str, Any], restore_tool: str | None, remove_tool: str | None
) -> RestorePlan:
    """How to put back what a completed file_edit/file_delete step changed."""
    if backup is None or backup.error is not None:
        return RestorePlan(
            refused=f"the file could not be read before the step ran ({backup.error if backup else 'no copy'}), so"
            f" there is nothing to restore"
        )
    before = metadata.get("hash_before")
    if before != backup.sha256:
        return RestorePlan(
            refused="the file changed between the copy taken before the step and the step itself; restoring the copy"
            " could undo someone else's change"
        )
    after = metadata.get("hash_after") if handler == "file_edit" else None
    if handler == "file_edit" and not metadata.get("changed", True):
        return RestorePlan(refused="")  # the edit changed nothing: nothing to undo
    if backup.raw is None:
        if remove_tool is None:
            return RestorePlan(
                refused="the step created the file, and no builtin:file_delete tool is declared to remove it"
            )
        return RestorePlan(
            remove_tool, {"path": backup.path, "expected_hash": after} if after else {"path": backup.path}
        )
    try:
        decoded = decode(backup.raw)
    except ToolError:
        return RestorePlan(refused="the file was binary; file_edit writes text only, so its content cannot be restored")
    if restore_tool is None:
        return RestorePlan(refused="no builtin:file_edit tool is declared to write the content back")
    args: dict[str, Any] = {"path": backup.path, "mode": "replace", "content": decoded.text}
    if after:
        args["expected_hash"] = after
    return RestorePlan(restore_tool, args, backup.sha256)
