"""Options whose value is a file that lists the names of the files a program opens.

``sort --files0-from=F``, ``tar -T F``, ``rsync --files-from=F``, ``git diff
--pathspec-from-file=F``: the file ``F`` is read (the program table places it like any
read), and then every file it names, which the line does not show. Those names are
only known when the line runs, so the option is a run-time word: no allow rule covers
it (the line asks, or is denied in ``plan``), as for the names ``xargs`` is fed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from runtime.policy.program_kinds import ABBREVIATION_MIN, Access

#: (program, option name as the program table reports it) pairs that read a list of files.
_LISTS = frozenset(
    {
        ("sort", "--files0-from"),
        ("wc", "--files0-from"),
        ("du", "--files0-from"),
        ("find", "-files0-from"),
        ("tar", "-T"),
        ("tar", "--files-from"),
        ("bsdtar", "-T"),
        ("bsdtar", "--files-from"),
        ("rsync", "--files-from"),
    }
)
#: git's spelling, for every subcommand that takes it (add, diff, reset, restore, rm, commit ...).
_GIT_LIST = "--pathspec-from-file"


def file_list_items(argv: Sequence[str], accesses: Sequence[Access]) -> tuple[int, ...]:
    """The argv indexes of options that make ``argv`` open files named inside another file."""
    if not argv:
        return ()
    program = posixpath.basename(argv[0])
    found = [a.index for a in accesses if (program, a.what) in _LISTS]
    if program == "git":
        for k, item in enumerate(argv[1:], 1):
            if item == "--":
                break
            name = item.partition("=")[0]
            if len(name) >= ABBREVIATION_MIN + 2 and _GIT_LIST.startswith(name) and len(name) > len("--pathspec"):
                found.append(k)
    return tuple(dict.fromkeys(found))
