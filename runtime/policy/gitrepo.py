"""Which repository a git command would open, and whether the agent could have made it.

git looks for its repository from the folder it runs in upwards: a ``.git`` folder, a
``.git`` file naming one elsewhere (``gitdir: ...``), or a folder that is itself a
repository (``HEAD``, ``objects/``, ``refs/``: a bare one). A repository's ``config``
can run commands on the most ordinary subcommand (``core.fsmonitor`` on ``git
status``), so a repository an agent made with file tools turns ``git status`` into
code. :func:`repository_problem` says so, before the line runs; the command runner
also sets ``safe.bareRepository=explicit`` (see :mod:`runtime.execution.command`).
"""

from __future__ import annotations

import os
import posixpath
import stat

_GITDIR_PREFIX = "gitdir:"
_MAX_GITFILE_BYTES = 4096
# git subcommands that do not open the repository of the folder they run in.
NO_REPOSITORY = frozenset({"clone", "init", "version", "help", "--version", "--help", "-h"})


def repository_problem(root: str, folder: str) -> str | None:
    """Why git run in ``folder`` (absolute, resolved) would use a repository the agent
    could have made inside the workspace ``root``, or None. Looks from ``folder`` up to
    ``root``; a repository above the workspace is not the agent's to make."""
    if not (folder == root or folder.startswith(root.rstrip("/") + "/")):
        return None
    current = folder
    while True:
        problem, found = _inspect(root, current)
        if problem is not None or found:
            return problem
        if current == root:
            return None
        current = posixpath.dirname(current)


def _inspect(root: str, folder: str) -> tuple[str | None, bool]:
    """(problem, whether git would stop looking here) for one folder."""
    dot_git = f"{folder}/.git"
    try:
        mode = os.lstat(dot_git).st_mode
    except OSError:
        mode = None
    shown = posixpath.relpath(folder, root)
    if mode is not None:
        if stat.S_ISDIR(mode):
            return None, True
        if stat.S_ISLNK(mode):
            return f"`{shown}/.git` is a symbolic link: git would open the repository it points to", True
        target = _gitdir_of(dot_git)
        if target is None:
            return None, False  # not a gitdir file: git ignores it and looks further up
        real = os.path.realpath(posixpath.join(folder, target))
        if real == f"{root}/.git" or real.startswith(f"{root}/.git/"):
            return None, True  # a submodule or a worktree of the workspace's own repository
        return (
            f"`{shown}/.git` points git at another repository (`{target[:80]}`), whose config could run commands",
            True,
        )
    if _looks_like_repository(folder):
        return (
            f"`{shown}` looks like a repository folder (HEAD, objects, refs) that could have been made in the "
            "workspace; git would run what its config says",
            True,
        )
    return None, False


def _gitdir_of(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_MAX_GITFILE_BYTES)
    except OSError:
        return None
    text = head.decode("utf-8", "replace").strip()
    if not text.startswith(_GITDIR_PREFIX):
        return None
    return text[len(_GITDIR_PREFIX) :].strip() or None


def _looks_like_repository(folder: str) -> bool:
    """What git's discovery accepts as a repository folder: HEAD, objects/ and refs/."""
    try:
        return (
            stat.S_ISREG(os.stat(f"{folder}/HEAD").st_mode)
            and stat.S_ISDIR(os.stat(f"{folder}/objects").st_mode)
            and stat.S_ISDIR(os.stat(f"{folder}/refs").st_mode)
        )
    except OSError:
        return False
