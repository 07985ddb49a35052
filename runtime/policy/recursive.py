"""Commands that read every file below a folder: ``grep -r``, ``rg``, ``find -exec``, ``cp -r``.

A recursive reader of a folder reads what the folder holds, toolrt's own files
included, without naming them. :func:`tree_reads` lists, for one command, the folders
it reads that way (the working folder when it names none); the placing layer then
judges each as a read of everything below it (see ``_Placer._recursive`` in
:mod:`runtime.policy.placed`). Spellings covered:

- grep and its kin: ``-r``/``-R`` alone or in a bundle (``-rn``, ``-nR``), ``--recursive``,
  ``--dereference-recursive`` and their abbreviations, ``-d recurse`` / ``-drecurse`` /
  ``--directories=recurse`` (any prefix of ``recurse``, as grep's argument matcher takes);
- searchers that always recurse: ``rg``, ``ag``, ``ack``, ``pt``, ``sift``, ``git grep``;
- ``find`` with ``-exec``, ``-execdir``, ``-ok``, ``-okdir`` (the command reads what find
  finds), and ``find``, ``fd``, ``ls -R``, ``tree``, ``git ls-files`` whose names a later
  command of the line reads (``| xargs cat``, ``| while read``): see :data:`LISTERS`;
- copies and archives that carry a folder's files elsewhere: ``cp -r``/``-R``/``-a``,
  ``rsync -r``/``-a``, ``scp -r``, ``tar -c``, ``zip -r``, ``diff -r``.

An option this module does not know is read as taking no value, so a word after it is
judged as a folder too: an unknown spelling makes the check stricter, never looser.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from collections.abc import Callable, Sequence

from runtime.policy.programs import pattern_operands
from runtime.policy.where import Where, within
from runtime.workspace.hardlinks import linked_protected

#: Entries looked through below a folder for other names of toolrt's files, at most
#: (only when such names exist somewhere); beyond, the folder counts as holding one.
MAX_WALKED = 50_000

_GREPS = frozenset({"grep", "egrep", "fgrep", "zgrep", "ugrep", "bsdgrep", "ggrep"})
_ALWAYS = frozenset({"rg", "ag", "ack", "ack-grep", "pt", "sift"})
#: grep's short options that take a value: the rest of a bundle after one is its value.
_GREP_VALUES = frozenset("efmABCdD")
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
#: Programs that list the files below a folder: a recursive read when their output feeds a reader.
LISTERS = frozenset({"find", "fd", "fdfind", "tree", "ls"})
_COPIES = {
    "cp": ("rRa", ("--recursive", "--archive")),
    "rsync": ("ra", ("--recursive", "--archive")),
    "scp": ("r", ()),
    "zip": ("rR", ("--recurse-paths", "--recurse-patterns")),
    "diff": ("r", ("--recursive",)),
}


def tree_reads(argv: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """The folders ``argv`` reads every file below: (argv index, the folder's text), with
    index 0 and ``.`` for the working folder when the command names none."""
    if not argv:
        return ()
    program = posixpath.basename(argv[0])
    if program in _GREPS:
        return _operands_or_here(argv, 1) if _grep_recursive(argv) else ()
    if program in _ALWAYS:
        found = _operands(argv, 1)
        if program != "rg" and found and not {"-e", "--regexp", "-f", "--file"} & set(argv):
            found = found[1:]  # the pattern (rg's is left out by the program table)
        return tuple(found) or ((0, "."),)
    if program == "git":
        index = _git_grep_index(argv)
        return git_diff_reads(argv) if index is None else _operands_or_here(argv, index + 1)
    if program == "find":
        return find_starts(argv) if any(item in _FIND_RUNS for item in argv[1:]) else ()
    if program == "tar":
        return _tar_sources(argv)
    if program in _COPIES:
        letters, words = _COPIES[program]
        if not _has_flag(argv, letters, words):
            return ()
        operands = _operands(argv, 1)
        return tuple(operands if program in ("diff", "zip") else operands[:-1])
    return ()


def lists_tree(argv: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """The folders whose file names ``argv`` prints, walking below them (``find .``,
    ``ls -R``, ``tree``, ``git ls-files``): a read of them when a later command of the
    line reads the files it is fed."""
    if not argv:
        return ()
    program = posixpath.basename(argv[0])
    if program == "find":
        return find_starts(argv)
    if program in ("fd", "fdfind", "tree"):
        return _operands_or_here(argv, 1)
    if program == "ls" and _has_flag(argv, "R", ("--recursive",)):
        return _operands_or_here(argv, 1)
    if program == "git" and "ls-files" in argv[1:3]:
        return ((0, "."),)
    return ()


def find_starts(argv: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """find's starting points (after -H/-L/-P/-D/-O), or ``.`` when it names none."""
    k = 1
    while k < len(argv) and argv[k] in ("-H", "-L", "-P"):
        k += 1
    starts = []
    while k < len(argv) and not argv[k].startswith(("-", "(", "!", ",")):
        starts.append((k, argv[k]))
        k += 1
    return tuple(starts) or ((0, "."),)


def _operands(argv: Sequence[str], start: int) -> list[tuple[int, str]]:
    """The operands from ``start`` on that name files (the program table's pattern and
    option values left out)."""
    skip = pattern_operands(argv)
    found = []
    ended = False
    for k in range(start, len(argv)):
        item = argv[k]
        if not ended and item == "--":
            ended = True
            continue
        if k in skip or (not ended and item.startswith("-") and item != "-"):
            continue
        found.append((k, item))
    return found


def _operands_or_here(argv: Sequence[str], start: int) -> tuple[tuple[int, str], ...]:
    found = _operands(argv, start)
    return tuple(found) or ((0, "."),)


def _grep_recursive(argv: Sequence[str]) -> bool:
    k = 1
    while k < len(argv):
        item = argv[k]
        k += 1
        if item == "--":
            return False
        if item.startswith("--"):
            name, equals, value = item.partition("=")
            if len(name) > 3 and ("--recursive".startswith(name) or "--dereference-recursive".startswith(name)):
                return True
            if len(name) > 3 and "--directories".startswith(name):
                if not equals and k < len(argv):
                    value = argv[k]
                    k += 1
                if _recurse(value):
                    return True
            continue
        if not item.startswith("-") or len(item) < 2:
            continue
        for j in range(1, len(item)):
            letter = item[j]
            if letter in "rR":
                return True
            if letter in _GREP_VALUES:
                value = item[j + 1 :]
                if not value and k < len(argv):
                    value = argv[k]
                    k += 1
                if letter == "d" and _recurse(value):
                    return True
                break
    return False


def _recurse(value: str) -> bool:
    """Whether a ``--directories`` value is (a prefix grep accepts of) ``recurse``."""
    return bool(value) and "recurse".startswith(value) and value not in ("r", "re")


def _has_flag(argv: Sequence[str], letters: str, words: tuple[str, ...]) -> bool:
    for item in argv[1:]:
        if item == "--":
            return False
        if item.startswith("--"):
            name = item.partition("=")[0]
            if len(name) > 3 and any(word.startswith(name) for word in words):
                return True
        elif item.startswith("-") and any(letter in item[1:] for letter in letters):
            return True
    return False


#: git commands that print the content of the repository's tracked files: ``git diff``,
#: ``git status -v``. They read the whole repository, from wherever they run, unless
#: plain paths after ``--`` narrow them; :mod:`runtime.policy.treesecrets` keeps the files git tracks.
GIT_REPOSITORY = ":/"


_NAMES_ONLY = frozenset({"--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--quiet", "--dirstat"})
_PATCH = frozenset({"-p", "-u", "--patch", "--patch-with-stat", "--patch-with-raw"})


def git_diff_reads(argv: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """The folders a ``git diff`` or ``git status -v`` reads: both operands' trees with
    ``--no-index``, else the paths after ``--`` when all are plain, else the whole
    repository (:data:`GIT_REPOSITORY`)."""
    from runtime.policy.programs import git_subcommand_index  # noqa: PLC0415 - one table, read lazily

    index = git_subcommand_index(argv)
    if index is None or argv[index] not in ("diff", "status"):
        return ()
    rest = argv[index + 1 :]
    if argv[index] == "status" and not any(
        item == "--verbose" or (item.startswith("-") and not item.startswith("--") and "v" in item) for item in rest
    ):
        return ()
    if argv[index] == "diff" and _NAMES_ONLY & set(rest) and not _PATCH & set(rest):
        return ()  # names and counts, no file text
    if argv[index] == "diff" and "--no-index" in rest:
        return tuple((k, item) for k, item in _operands(argv, index + 1) if item != "/dev/null")
    if "--" in rest:
        at = index + 1 + rest.index("--")
        paths = [(k, argv[k]) for k in range(at + 1, len(argv))]
        if paths and all(not item.startswith(":") and not any(c in item for c in "*?[") for _, item in paths):
            return tuple(paths)
    return ((0, GIT_REPOSITORY),)


def git_command(argv: Sequence[str]) -> str | None:
    """git's command in ``argv`` (``diff``, ``grep`` ...), after its global options."""
    from runtime.policy.programs import git_subcommand_index  # noqa: PLC0415 - one table, read lazily

    index = git_subcommand_index(argv)
    return None if index is None else argv[index]


def _git_grep_index(argv: Sequence[str]) -> int | None:
    """The index of ``grep`` in a git command line (after git's global options), else None."""
    from runtime.policy.programs import git_subcommand_index  # noqa: PLC0415 - one table, read lazily

    index = git_subcommand_index(argv)
    return index if index is not None and argv[index] == "grep" else None


def _tar_sources(argv: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """The folders ``tar`` packs: its operands when it creates, appends or updates an
    archive and recursion is not turned off."""
    if "--no-recursion" in argv:
        return ()
    first = argv[1] if len(argv) > 1 else ""
    creates = any(item in ("--create", "--append", "--update") for item in argv[1:]) or any(
        item.startswith("-") and not item.startswith("--") and any(c in item for c in "cru") for item in argv[1:]
    )
    if not first.startswith("-") and any(c in first for c in "cru"):
        creates = True  # old style: `tar cf out.tar .`
    if not creates:
        return ()
    skip = pattern_operands(argv)
    return tuple(
        (k, argv[k])
        for k in range(2 if not first.startswith("-") else 1, len(argv))
        if k not in skip and not argv[k].startswith("-")
    )


def tree_problem(where: Where, real: str, argv: Sequence[str]) -> str | None:
    """Why reading every file below the resolved folder ``real`` would read toolrt's own
    files (a protected path in it, or it in one, or another name for one of them below
    it), or None. Folders ``argv`` excludes by name (grep's ``--exclude-dir``) are skipped."""
    excluded = _excluded_dirs(argv)
    for protected in where.protected:
        if within(protected.text, real):
            rest = posixpath.relpath(protected.text, real)
            if not any(fnmatch.fnmatchcase(part, glob) for part in rest.split("/") for glob in excluded):
                return f"holds toolrt's own files (`{_shown(where, protected.text)}`)"
        elif within(real, protected.text) and (not protected.yaml_only or _holds_yaml(real)):
            return f"is inside toolrt's own files (`{_shown(where, protected.text)}`)"
    linked = linked_protected(where.inodes)
    if linked is None:
        return "may hold other names (hard links) for toolrt's files: they are too many to look through"
    if linked and _finds_inode(real, linked):
        return "holds another name (a hard link) for one of toolrt's files"
    return None


def _shown(where: Where, path: str) -> str:
    root = where.root_text
    return posixpath.relpath(path, root) if root is not None and within(path, root) else path


def _excluded_dirs(argv: Sequence[str]) -> tuple[str, ...]:
    """grep's ``--exclude-dir`` globs (matched against each folder name on the way)."""
    if not argv or posixpath.basename(argv[0]) not in _GREPS:
        return ()
    found = []
    for k, item in enumerate(argv[1:], 1):
        if item == "--":
            break
        name, equals, value = item.partition("=")
        if len(name) > 10 and "--exclude-dir".startswith(name):
            if not equals:
                value = argv[k + 1] if k + 1 < len(argv) else ""
            if value:
                found.append(value)
    return tuple(found)


def name_globs(argv: Sequence[str]) -> frozenset[int]:
    """Items of a grep argv that are ``--include=``, ``--exclude=`` or ``--exclude-dir=``
    with their glob attached: a name pattern grep matches, never a file it opens."""
    if not argv or posixpath.basename(argv[0]) not in _GREPS:
        return frozenset()
    found = set()
    for k, item in enumerate(argv[1:], 1):
        if item == "--":
            break
        name, equals, _ = item.partition("=")
        if equals and len(name) > 4 and any(word.startswith(name) for word in _NAME_GLOBS):
            found.add(k)
    return frozenset(found)


_NAME_GLOBS = ("--include", "--exclude", "--exclude-dir")


def _holds_yaml(real: str) -> bool:
    """Whether a YAML file (config, when below a config folder) is below ``real``."""
    return _walk_finds(real, lambda name, _st: name.lower().endswith((".yaml", ".yml")))


def _finds_inode(real: str, inodes: frozenset[tuple[int, int]]) -> bool:
    return _walk_finds(
        real, lambda _name, st: st.st_nlink > 1 and stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in inodes
    )


def _walk_finds(real: str, check: Callable[[str, os.stat_result], bool]) -> bool:
    """Whether a file below ``real`` is ``check(name, lstat)``; True past :data:`MAX_WALKED` entries."""
    try:
        top = os.lstat(real)
    except OSError:
        return False
    if not stat.S_ISDIR(top.st_mode):
        return check(posixpath.basename(real), top)
    walked = 0
    for folder, dirs, files in os.walk(real):
        walked += len(dirs) + len(files)
        if walked > MAX_WALKED:
            return True
        for name in files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if check(name, st):
                return True
    return False
