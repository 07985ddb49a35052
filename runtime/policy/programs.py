"""What the options and operands of the programs agents commonly run do to files and code.

A command's argv says more than its words: ``git diff --output=.git/config`` writes a
file, ``sort -o x`` too, ``git -c alias.x='!sh' x`` runs code, ``grep -f list`` reads a
file. :func:`accesses` reads an argv with a per-program table and lists each such
item as an :class:`Access`: a file **read**, a file **written**, **code** run, or a
**dir**\\ ectory the program works in. The permission stage uses it three ways:

- a write or code item is covered by an allow rule only when the rule spells that
  option out (``git diff *`` never covers ``--output=...``; ``git diff --output=*`` does);
- every path an item names is checked like an argument: outside the workspace, or
  inside toolrt's own files;
- deny and ask rules see the files read and written as ``<`` and ``>`` commands,
  like redirections.

Options not in a table are treated as flags. Programs not in the table are judged by
their argv alone; what they do inside (``python script.py``, ``make``) is theirs.
"""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import Sequence

from runtime.policy.program_kinds import DELETE, DOES, Access
from runtime.policy.program_scan import PATH_KINDS, record, scan
from runtime.policy.program_table import (
    CODE,
    DIR,
    FIND,
    FOLLOW,
    GIT,
    GUARDED,
    LINK,
    LN,
    READ,
    SYSTEM,
    TABLE,
    TAR,
    TAR_VALUE_LETTERS,
    WRITE,
    curl_globs,
)

__all__ = [
    "CODE",
    "DIR",
    "DOES",
    "FOLLOW",
    "GUARDED",
    "LINK",
    "READ",
    "SYSTEM",
    "WRITE",
    "Access",
    "accesses",
    "destroys",
    "may_create_files",
    "pattern_operands",
    "subcommand",
    "text_operands",
]


def text_operands(program: str) -> bool:
    """Whether the operands of ``program`` are text, never files (``echo``)."""
    entry = TABLE.get(program)
    return entry is not None and entry.text_operands


def accesses(argv: Sequence[str]) -> tuple[Access, ...]:
    """The items of ``argv`` that read or write a file, run code or change directory
    (remembered for recent commands: agents run the same ones again and again).

    For a program outside the table only an attached short-option value that looks like
    a path (``-o/tmp/x``, ``-otoolrt.d/x``) is listed, as a file read (written for
    ``-o``): where it points is judged like an operand."""
    if not argv:
        return ()
    if argv[0] not in TABLE:
        return _attached_values(tuple(argv)) if len(argv) > 1 else ()
    return _analysed(tuple(argv))[0]


@functools.lru_cache(maxsize=4096)
def _attached_values(argv: tuple[str, ...]) -> tuple[Access, ...]:
    found = []
    for k, item in enumerate(argv[1:], 1):
        if (
            len(item) > 2
            and item[0] == "-"
            and item[1].isalpha()
            and "=" not in item
            and ("/" in item or "." in item[2:])
        ):
            found.append(Access(k, WRITE if item[1] in "oO" else READ, item[:2], item[2:]))
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def _analysed(argv: tuple[str, ...]) -> tuple[tuple[Access, ...], frozenset[int]]:
    """The accesses of a table program's argv, and the items that are not paths."""
    program = TABLE[argv[0]]
    found: list[Access] = []
    operands: list[int] = []
    patterns: list[int] = []
    start = _tar_old_style(argv, found, patterns) if program is TAR else 1
    scan(argv, start, program, found, patterns, operands)
    if program is TAR:
        _tar_file_kind(argv, found)
        if any(a.what == "--remove-files" for a in found):
            found.extend(Access(k, WRITE, DELETE, argv[k]) for k in operands)
    elif program is FIND and any(a.what == "-delete" for a in found):
        # The starting points, and everything below them, may be deleted.
        roots = [k for k in range(1, len(argv)) if not argv[k].startswith("-") and argv[k] not in ("(", "!")]
        roots = roots[: next((n for n, k in enumerate(roots) if k > 1 and argv[k - 1].startswith("-")), len(roots))]
        found.extend(Access(k, WRITE, "-delete", argv[k]) for k in roots)
    elif (
        argv[0] == "unzip"
        and not any(a.what == "-d" for a in found)
        and not set(argv[1:]) & {"-l", "-t", "-v", "-Z", "-p", "-c"}
    ):
        found.append(Access(1, WRITE, "extract", ".", 0))  # into the working folder
    elif program is LN and len(operands) >= 2:
        found.extend(Access(k, LINK, "target", argv[k]) for k in operands[:-1])
    elif program is GIT:
        _git_tree_writes(argv, found)
    elif argv[0] == "zip" and any(a.what in ("-m", "--move") for a in found):
        found.extend(Access(k, WRITE, DELETE, argv[k]) for k in operands[1:])  # moved into the archive
    elif argv[0] == "rsync":
        moves = [a for a in found if a.what.startswith("--del") or a.what == "--remove-source-files"]
        if moves and len(operands) >= 2:
            deleted = operands[:-1] if any(a.what == "--remove-source-files" for a in moves) else []
            if any(a.what.startswith("--del") for a in moves):
                deleted.append(operands[-1])
            found.extend(Access(k, WRITE, DELETE, argv[k]) for k in deleted)
    elif argv[0] == "date":
        # An operand that is not a `+FORMAT` sets the clock (`date 010112002020`), as `-s` does.
        found.extend(Access(k, SYSTEM, "operand", None, len(argv[k])) for k in operands if not argv[k].startswith("+"))
    elif argv[0] in _NAME_SETTERS:
        found.extend(Access(k, SYSTEM, "operand", None, len(argv[k])) for k in operands)
    if argv[0] in _URL_PROGRAMS:
        found.extend(_file_urls(argv, patterns))
    return tuple(found), frozenset(patterns)


_URL_PROGRAMS = frozenset({"curl", "wget", "git"})
_NAME_SETTERS = frozenset({"hostname", "domainname", "nisdomainname", "ypdomainname"})

# Programs that make no files however they are called (their redirections are commands
# of their own), and git commands that only read.
_MAKE_NO_FILES = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "echo",
        "printf",
        "pwd",
        "true",
        "false",
        "test",
        "[",
        "[[",
        "stat",
        "file",
        "du",
        "df",
        "which",
        "type",
        "uniq",
        "cut",
        "tr",
        "diff",
        "cmp",
        "jq",
        "tree",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "date",
        "id",
        "whoami",
        "uname",
        "nl",
        "column",
        "tac",
        "rev",
        "seq",
        "sleep",
        "cd",
        "pushd",
        "popd",
        "<",
        "sort",
        "sed",
        "awk",
        "gawk",
        "find",
        "git",
        "shopt",
        "set",
        "export",
        "unset",
        "declare",
        "local",
        "readonly",
        "typeset",
        "read",
    }
)
_GIT_READS = frozenset(
    {"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "branch", "shortlog", "describe"}
)
# Programs that delete, move away or lock up what they are given.
_DESTRUCTIVE = frozenset({"rm", "rmdir", "unlink", "shred", "mv", "chmod", "chown", "chgrp", "truncate"})


def may_create_files(argv: Sequence[str]) -> bool:
    """Whether running ``argv`` may make or change files (so a glob later on the same
    line could match something that is not there yet)."""
    if not argv or argv[0] not in _MAKE_NO_FILES:
        return True
    if argv[0] == "git":
        sub = next((item for item in argv[1:] if not item.startswith("-")), "")
        if sub not in _GIT_READS or any(a.kind in (WRITE, CODE) for a in accesses(argv)):
            return True
        return False
    return any(a.kind in (WRITE, CODE, LINK) for a in accesses(argv))


def destroys(argv: Sequence[str], access: Access) -> bool:
    """Whether ``access`` (a write by ``argv``) deletes, moves away, locks up or links to
    what it names, rather than writing into it."""
    return bool(argv) and (argv[0] in _DESTRUCTIVE or access.kind == LINK or access.what in _DELETING)


_DELETING = frozenset({"-delete", "clean", "stash", DELETE})


def _file_urls(argv: tuple[str, ...], patterns: list[int]) -> list[Access]:
    """``file:`` URLs read local files (``curl file:///etc/passwd``). curl expands
    ``{a,b}`` and ``[a-z]`` in URLs itself (unless ``-g``), so each expansion counts, and
    it decodes ``%XX`` in the path. Values of options other than ``--url`` are not URLs
    (``curl -d '[1,2]'``)."""
    globbing = argv[0] == "curl" and not any(
        item == "--globoff" or (item[:1] == "-" and item[1:2] != "-" and "g" in item) for item in argv[1:]
    )
    found = []
    skip = set(patterns)
    for k, item in enumerate(argv[1:], 1):
        if k in skip and argv[k - 1] != "--url":
            continue
        value = item.partition("=")[2] if item.startswith("-") else item
        urls: list[str] | None = [value]
        if globbing and ("{" in value or "[" in value) and not _plainly_remote(value):
            urls = curl_globs(value)
            if urls is None:
                found.append(Access(k, FOLLOW, "URL glob", None, len(item)))  # too many URLs to judge: any file
                continue
        for url in urls or ():
            if url[:5].lower() == "file:":
                rest = url[5:]
                if rest.startswith("//"):
                    rest = rest[2:]
                    rest = rest[rest.find("/") :] if "/" in rest else "/"  # drop the host part
                found.append(Access(k, READ, "file URL", urllib.parse.unquote(rest) or "/"))
    return found


def _plainly_remote(url: str) -> bool:
    """A URL whose scheme is written out and is not ``file:``: its globs only pick remote names."""
    scheme, colon, _ = url.partition(":")
    return bool(colon) and scheme.isalnum() and scheme.lower() != "file"


def _git_tree_writes(argv: tuple[str, ...], found: list[Access]) -> None:
    """git commands that delete untracked files (toolrt's own among them) write the whole tree."""
    k = git_subcommand_index(argv)
    if k is None:
        return
    item, rest = argv[k], argv[k + 1 :]
    untracked = {"-u", "--include-untracked", "-a", "--all"}
    if item == "clean" or (item == "stash" and untracked & set(rest)):
        found.append(Access(k, WRITE, item, ".", len(item)))


def git_subcommand_index(argv: Sequence[str]) -> int | None:
    """Where git's command is in ``argv``: after the global options and their values
    (the table's ``git`` entry says which take one)."""
    i = 1
    while i < len(argv):
        item = argv[i]
        if not item.startswith("-") or item == "-":
            return i
        if item == "--":
            return i + 1 if i + 1 < len(argv) else None
        option = GIT.options.get(item)
        i += 2 if option is not None and option.value == "yes" and "=" not in item else 1
    return None


def subcommand(argv: Sequence[str]) -> tuple[str, ...]:
    """The words that name what a program with commands of its own runs (``git push``,
    ``npm install``): the first operand after the options, their values skipped where
    the table knows them. When an option the table does not know stands right before
    it, that option may have taken it as its value, so the next operand counts too."""
    if not argv:
        return ()
    if argv[0] == "git":
        k = git_subcommand_index(argv)
        return (argv[k],) if k is not None else ()
    options = TABLE[argv[0]].options if argv[0] in TABLE else {}
    i = 1
    while i < len(argv):
        item = argv[i]
        if item == "--":
            return tuple(argv[i + 1 : i + 2])
        if not item.startswith("-") or item == "-":
            previous = argv[i - 1] if i > 1 else ""
            unsure = previous.startswith("-") and "=" not in previous and previous not in options
            following = next((later for later in argv[i + 1 :] if not later.startswith("-")), None)
            return (item, following) if unsure and following is not None else (item,)
        option = options.get(item)
        i += 2 if option is not None and option.value == "yes" and "=" not in item else 1
    return ()


def _tar_old_style(argv: Sequence[str], found: list[Access], patterns: list[int]) -> int:
    """tar's old style (``tar xzf a.tgz``, ``tar tfI a.tar prog``): a first word without a
    dash is a cluster of letters, and each letter that takes a value takes the next word
    in turn. Returns where the rest of the options start."""
    if len(argv) < 2 or argv[1].startswith("-"):
        return 1
    following = 2
    for j, letter in enumerate(argv[1]):
        name = "-" + letter
        option = TAR.options.get(name)
        if letter in TAR_VALUE_LETTERS:
            if following >= len(argv):
                break
            value_index, following = following, following + 1
            if option is None:
                patterns.append(value_index)
                continue
            if option.kind not in PATH_KINDS or option.paths is not None:
                patterns.append(value_index)
            record(found, argv, TAR, option, name, 1, value_index, named=j + 1)
        elif option is not None and option.kind is not None:
            found.append(Access(1, option.kind, name, None, j + 1 if option.kind in GUARDED else 0))
    return following


def _tar_file_kind(argv: Sequence[str], found: list[Access]) -> None:
    """tar's ``-f`` archive is written when creating; extracting writes the files in it."""
    letters = "".join(item.lstrip("-") for item in argv[1:] if item.startswith("-") and not item.startswith("--"))
    if len(argv) > 1 and not argv[1].startswith("-"):
        letters += argv[1]
    words = set(argv[1:])
    creates = bool(set(letters) & set("cruA")) or bool(
        words & {"--create", "--append", "--update", "--concatenate", "--delete"}
    )
    extracts = "x" in letters or bool(words & {"--extract", "--get"})
    for k, access in enumerate(found):
        if access.what in ("-f", "--file") and (not creates or access.path == "-"):  # "-": standard input or output
            found[k] = Access(access.index, READ, access.what, access.path, 0)
    if extracts:
        found.append(Access(1, WRITE, "extract", ".", 0))


def pattern_operands(argv: Sequence[str]) -> frozenset[int]:
    """Indices of items that are not paths: a pattern or program text (grep's first
    operand, sed's and awk's script), a subcommand (``git diff``), or the value of an
    option that is not a file (``grep -e PATTERN``, ``sort -k 2``)."""
    if not argv or argv[0] not in TABLE:
        return frozenset()
    return _analysed(tuple(argv))[1]
