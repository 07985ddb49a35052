"""Where each command of a line runs: the folders the line's ``cd`` commands may have
taken it to.

Every command may run in any folder a ``cd`` before it could have led to, the start
included (a ``cd`` that fails, runs in a subshell or a pipeline, or sits in a branch of
``||`` leaves the line where it was). The exception is a command that waits for a
``cd`` (:attr:`~runtime.policy.shell.CommandLine.gates`: ``cd src && cat ../a.txt``)
whose target is a plain folder of the workspace: it runs there and nowhere else.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Sequence

#: Folders a line's cd commands can have taken it to, tracked at most (per list).
MAX_FOLDERS = 16
# cd's options that change nothing here: -L and -P read `..` from the text or after
# links, which agree on a path without links; -e only changes the exit status of -P
# when the current folder cannot be found.
_PLAIN_OPTIONS = frozenset("LPe")


class Folders:
    """The folders each command may run in, as the line's ``cd`` commands are read."""

    __slots__ = ("everywhere", "after", "gates")

    def __init__(self, start: str, gates: Sequence[int]) -> None:
        self.everywhere = [start]  # where a command that waits for no cd may be
        self.after: dict[int, list[str]] = {}  # where the commands waiting for cd number k are
        self.gates = gates

    def at(self, index: int) -> list[str]:
        """The folders command ``index`` may run in."""
        gate = self.gates[index] if index < len(self.gates) else -1
        while gate >= 0:
            if gate in self.after:
                return self.after[gate]
            gate = self.gates[gate]  # a cd whose target is not certain: the one it waits for
        return self.everywhere

    def moved(self, index: int, moves: Callable[[str], list[str]], certain: list[str] | None) -> None:
        """Command ``index`` is a cd: each folder may lead to ``moves(folder)`` too; a
        command waiting for it runs only in ``certain`` (None: where it leads is unsure)."""
        for folders in (self.everywhere, *self.after.values()):
            grown = [*folders, *(move for folder in folders for move in moves(folder))]
            folders[:] = list(dict.fromkeys(grown))[:MAX_FOLDERS]
        if certain is not None and index < len(self.gates) and index in self.gates:
            self.after[index] = certain


def certain_target(argv: Sequence[str], shape: str) -> str | None:
    """The folder operand of ``cd [-L|-P|-e] [--] DIR`` when it is a plain relative
    path written out in the line, else None (``cd -``, ``cd``, ``cd ~``, a run-time word,
    an absolute path, other options, several operands)."""
    if not argv or argv[0] != "cd":
        return None
    operands: list[int] = []
    options = True
    for k in range(1, len(argv)):
        item = argv[k]
        if options and item == "--":
            options = False
        elif options and item.startswith("-") and item != "-":
            if not set(item[1:]) <= _PLAIN_OPTIONS:
                return None
        else:
            options = False
            operands.append(k)
    if len(operands) != 1 or shape[operands[0]] != "l":
        return None
    target = argv[operands[0]]
    if not target or target.startswith(("/", "~", "-")) or "\0" in target:
        return None
    return target


def real_folders(root: str, cwd: str, target: str) -> list[str] | None:
    """The paths to re-check (each a real folder) when ``cd target`` from ``cwd`` (both
    relative to ``root``) certainly leads to a folder of the workspace, by a way with no
    symbolic link on it; None when it may not (a link, a missing folder, outside)."""
    if cwd.startswith(("/", "~")):
        return None
    joined = posixpath.normpath(posixpath.join(cwd, target))
    if joined == ".." or joined.startswith("../"):
        return None
    checked: list[str] = []
    path = root
    for part in f"{cwd}/{target}".split("/"):
        if part in ("", "."):
            continue
        path = f"{path}/{part}"
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None  # a link (lstat does not follow it) or not a folder
        checked.append(path)
    return checked
