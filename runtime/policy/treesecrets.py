"""The secret files a recursive reader would read without naming them.

``grep -r KEY .``, ``rg --hidden KEY``, ``tar -cf - .``, ``cp -r . /tmp/x``, ``git diff
--no-index . empty``: each reads every file below a folder, ``.env`` and private keys
included, though the line names none of them. :func:`secrets_below` walks the folder
(bounded) for the names the workspace sandbox denies by default
(:data:`runtime.workspace.sandbox.DEFAULT_DENY`, which the shipped ``permissions-default``
rules mirror), and the placing layer shows each one found to deny and ask rules as a
read (a ``<`` command), so the rule that denies ``cat .env`` denies ``grep -r KEY .``
too. What the walk cannot settle (too many entries) counts as a run-time word.

Repository internals (``.git``) are not looked into: ``grep -r TODO .`` in a clone is
an everyday line, and what a ``.git`` folder holds is objects and config, which the
file tools refuse and redaction covers. grep's ``--include``, ``--exclude`` and
``--exclude-dir`` narrow the walk as they narrow grep's; ``rg``, ``ag`` and the like
skip hidden names unless told otherwise (``--hidden``, ``-.``, ``-uu``).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Sequence

from runtime.policy import gitindex
from runtime.policy.placecache import ENTRIES
from runtime.policy.recursive import GIT_REPOSITORY
from runtime.policy.recursive import git_command as recursive_git_sub
from runtime.policy.where import within
from runtime.workspace.globs import GlobSet
from runtime.workspace.sandbox import DEFAULT_DENY

#: Entries looked at below one folder at most; past that the folder's secrets are unknown.
MAX_SECRET_WALK = 50_000
#: Secret paths reported for one folder at most (one is enough for a deny rule to match).
MAX_REPORTED = 8

_SECRET_GLOBS = GlobSet(tuple(g for g in DEFAULT_DENY if g != "**/.git/**"), case_sensitive=False, below=True)
_GREPS = frozenset({"grep", "egrep", "fgrep", "zgrep", "ugrep", "bsdgrep", "ggrep"})
#: Searchers that skip hidden names unless an option turns that off.
_SKIP_HIDDEN = frozenset({"rg", "ag", "ack", "ack-grep", "pt", "sift"})
_SHOW_HIDDEN = frozenset({"--hidden", "-.", "--unrestricted"})


class TooMany(Exception):
    """The folder holds more entries than :data:`MAX_SECRET_WALK`."""


def secrets_below(real: str, argv: Sequence[str]) -> tuple[str, ...]:
    """Resolved paths of secret files (or secret folders) at or below ``real`` that
    ``argv`` would read; raises :class:`TooMany` when the walk is cut short."""
    program = posixpath.basename(argv[0]) if argv else ""
    include, exclude, exclude_dirs = _grep_filters(argv) if program in _GREPS else ((), (), ())
    skip_hidden = program in _SKIP_HIDDEN and not _shows_hidden(argv)
    if _SECRET_GLOBS.matches(posixpath.basename(real)):
        return (real,)
    if not os.path.isdir(real):
        return ()
    found: list[str] = []
    walked = 0
    for folder, dirs, files in os.walk(real):
        walked += len(dirs) + len(files)
        if walked > MAX_SECRET_WALK:
            raise TooMany
        rest = posixpath.relpath(folder, real)
        kept = []
        for name in dirs:
            if name == ".git" or (skip_hidden and name.startswith(".")):
                continue
            if any(fnmatch.fnmatchcase(name, glob) for glob in exclude_dirs):
                continue
            if not include and _SECRET_GLOBS.matches(name if rest == "." else f"{rest}/{name}"):
                found.append(f"{folder}/{name}")  # a secret folder (.ssh, .aws): everything in it
                continue
            kept.append(name)
        dirs[:] = kept
        for name in files:
            if skip_hidden and name.startswith("."):
                continue
            if include and not any(fnmatch.fnmatchcase(name, glob) for glob in include):
                continue
            if any(fnmatch.fnmatchcase(name, glob) for glob in exclude):
                continue
            if _SECRET_GLOBS.matches(name if rest == "." else f"{rest}/{name}"):
                found.append(f"{folder}/{name}")
        if len(found) >= MAX_REPORTED:
            break
    return tuple(found[:MAX_REPORTED])


def shown_secrets(text: str, real: str, argv: Sequence[str], root: str | None) -> tuple[str, ...] | None:
    """:func:`secrets_below` the folder ``text`` (resolved: ``real``) as rules see them:
    relative to the workspace root when inside it, else absolute; for git commands that
    read tracked files only, the secret files git tracks there (from its index, no walk).
    None when they cannot be known (too many entries, an index that cannot be read)."""
    if _reads_tracked(argv):
        if root is None or not os.path.isdir(f"{root}/.git"):
            return ()  # no repository of the workspace's own: git fails, or reads one above it
        tracked = tracked_secrets(root)
        if tracked is None:
            return None
        prefix = "." if text == GIT_REPOSITORY else posixpath.relpath(real, root)
        if prefix.startswith("../"):
            return ()
        return tuple(p for p in tracked if prefix == "." or p == prefix or p.startswith(f"{prefix}/"))
    try:
        found = secrets_below(real, argv)
    except TooMany:
        return None
    return tuple(posixpath.relpath(f, root) if root is not None and within(f, root) else f for f in found)


def index_checks(argv: Sequence[str], root: str | None) -> list[tuple[str, str, None]] | None:
    """For ``git diff`` and ``git status -v``, whose reads the repository's index settles,
    what a remembered decision rests on (``.git``'s entries: git replaces its index by
    renaming a new one into place); None for other readers, which walk a folder when judged."""
    if root is None or not _reads_tracked(argv) or recursive_git_sub(argv) not in ("diff", "status"):
        return None
    return [(f"{root}/.git", ENTRIES, None)] if os.path.isdir(f"{root}/.git") else []


_TRACKED: dict[str, tuple[tuple[int, int, int], tuple[str, ...] | None]] = {}


def tracked_secrets(root: str) -> tuple[str, ...] | None:
    """The tracked paths of the repository at ``root`` that are secret files, from its
    index (remembered while the index file is the same); None when it cannot be read."""
    try:
        st = os.stat(f"{root}/.git/index")
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = (0, 0, 0)
    known = _TRACKED.get(root)
    if known is not None and known[0] == key:
        return known[1]
    paths = gitindex.tracked_paths(f"{root}/.git")
    found = None if paths is None else tuple(sorted(p for p in paths if _SECRET_GLOBS.matches(p)))
    if len(_TRACKED) > 64:
        _TRACKED.clear()
    _TRACKED[root] = (key, found)
    return found


def _reads_tracked(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is a git command that reads only the files git tracks."""
    if not argv or posixpath.basename(argv[0]) != "git":
        return False
    return not any(item in ("--no-index", "--untracked") for item in argv[1:])


def _shows_hidden(argv: Sequence[str]) -> bool:
    for item in argv[1:]:
        if item == "--":
            return False
        if item in _SHOW_HIDDEN or item.startswith("--unrestricted"):
            return True
        if item.startswith("-") and not item.startswith("--") and ("u" in item[1:] or "." in item[1:]):
            return True
    return False


def _grep_filters(argv: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """grep's ``--include``, ``--exclude`` and ``--exclude-dir`` globs (any prefix of at
    least ``--inc``/``--exc``, value attached or separate); ``--exclude-from`` files are
    not read, so they narrow nothing."""
    lists: dict[str, list[str]] = {"--include": [], "--exclude": [], "--exclude-dir": []}
    k = 1
    while k < len(argv):
        item = argv[k]
        k += 1
        if item == "--":
            break
        name, equals, value = item.partition("=")
        if not name.startswith("--") or len(name) < 5:
            continue
        matches = [word for word in lists if word.startswith(name)]
        if len(matches) != 1 and name not in lists:
            continue  # ambiguous (--exclude is both a word and a prefix of --exclude-dir)
        word = name if name in lists else matches[0]
        if not equals:
            if k >= len(argv):
                break
            value = argv[k]
            k += 1
        lists[word].append(value)
    return tuple(lists["--include"]), tuple(lists["--exclude"]), tuple(lists["--exclude-dir"])
