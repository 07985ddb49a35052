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
from collections.abc import Sequence
from dataclasses import dataclass

from runtime.policy.program_table import CODE, DIR, FIND, FOLLOW, GIT, GUARDED, LINK, LN, READ, SCRIPT, TABLE, TAR, WRITE, Option, Program

__all__ = ["CODE", "DIR", "FOLLOW", "GUARDED", "LINK", "READ", "WRITE", "Access", "accesses", "destroys", "may_create_files", "pattern_operands", "text_operands"]


@dataclass(frozen=True, slots=True)
class Access:
    """One argv item that reads, writes, runs or moves into something.

    ``named``: how many leading characters of the item an allow pattern must spell out
    (the option itself, ``--output`` of ``--output=x``), 0 when any pattern may cover it.
    ``path``: the file or directory named, when there is one.
    """

    index: int
    kind: str
    what: str  # the option (``--output``), or a word for an operand (``operand``)
    path: str | None = None
    named: int = 0


def text_operands(program: str) -> bool:
    """Whether the operands of ``program`` are text, never files (``echo``)."""
    entry = TABLE.get(program)
    return entry is not None and entry.text_operands


def accesses(argv: Sequence[str]) -> tuple[Access, ...]:
    """The items of ``argv`` that read or write a file, run code or change directory
    (remembered for recent commands: agents run the same ones again and again)."""
    if not argv or argv[0] not in TABLE:
        return ()
    return _accesses(tuple(argv))


@functools.lru_cache(maxsize=4096)
def _accesses(argv: tuple[str, ...]) -> tuple[Access, ...]:
    program = TABLE.get(argv[0])
    if program is None:
        return ()
    found: list[Access] = []
    operands: list[int] = []
    _scan(_tar_modes(argv) if program is TAR else argv, 1, program, found, [], operands)
    if program is TAR:
        _tar_file_kind(argv, found)
    elif program is FIND and any(a.what == "-delete" for a in found):
        # The starting points, and everything below them, may be deleted.
        roots = [k for k in range(1, len(argv)) if not argv[k].startswith("-") and argv[k] not in ("(", "!")]
        roots = roots[: next((n for n, k in enumerate(roots) if k > 1 and argv[k - 1].startswith("-")), len(roots))]
        found.extend(Access(k, WRITE, "-delete", argv[k]) for k in roots)
    elif argv[0] == "unzip" and not any(a.what == "-d" for a in found) and not set(argv[1:]) & {"-l", "-t", "-v", "-Z", "-p", "-c"}:
        found.append(Access(1, WRITE, "extract", ".", 0))  # into the working folder
    elif program is LN and len(operands) >= 2:
        found.extend(Access(k, LINK, "target", argv[k]) for k in operands[:-1])
    elif program is GIT:
        _git_tree_writes(argv, found)
    if argv[0] in _URL_PROGRAMS:
        found.extend(_file_urls(argv))
    return tuple(found)


_URL_PROGRAMS = frozenset({"curl", "wget", "git"})

# Programs that make no files however they are called (their redirections are commands
# of their own), and git commands that only read.
_MAKE_NO_FILES = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "echo", "printf", "pwd", "true", "false",
        "test", "[", "[[", "stat", "file", "du", "df", "which", "type", "uniq", "cut", "tr", "diff", "cmp", "jq",
        "tree", "basename", "dirname", "realpath", "readlink", "date", "id", "whoami", "uname", "nl", "column", "tac",
        "rev", "seq", "sleep", "cd", "pushd", "popd", "<", "sort", "sed", "awk", "gawk", "find", "git",
        "shopt", "set", "export", "unset", "declare", "local", "readonly", "typeset", "read",
    }
)
_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "branch", "shortlog", "describe"})
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
    return bool(argv) and (argv[0] in _DESTRUCTIVE or access.kind == LINK or access.what in ("-delete", "clean", "stash"))


def _file_urls(argv: tuple[str, ...]) -> list[Access]:
    """``file:`` URLs read local files (``curl file:///etc/passwd``)."""
    found = []
    for k, item in enumerate(argv[1:], 1):
        value = item.partition("=")[2] if item.startswith("-") else item
        if value[:5].lower() == "file:":
            rest = value[5:]
            if rest.startswith("//"):
                rest = rest[2:]
                rest = rest[rest.find("/") :] if "/" in rest else "/"  # drop the host part
            found.append(Access(k, READ, "file URL", rest or "/"))
    return found


def _git_tree_writes(argv: tuple[str, ...], found: list[Access]) -> None:
    """git commands that delete untracked files (toolrt's own among them) write the whole tree."""
    for k, item in enumerate(argv[1:], 1):
        if item.startswith("-"):
            continue
        rest = argv[k + 1 :]
        untracked = {"-u", "--include-untracked", "-a", "--all"}
        if item == "clean" or (item == "stash" and untracked & set(rest)):
            found.append(Access(k, WRITE, item, ".", len(item)))
        return


def _tar_modes(argv: Sequence[str]) -> Sequence[str]:
    """tar's old style (``tar xzf a.tgz``): a first word without a dash is a cluster of options."""
    if len(argv) > 1 and not argv[1].startswith("-"):
        return [argv[0], "-" + argv[1], *argv[2:]]
    return argv


def _tar_file_kind(argv: Sequence[str], found: list[Access]) -> None:
    """tar's ``-f`` archive is written when creating; extracting writes the files in it."""
    letters = "".join(item.lstrip("-") for item in argv[1:] if item.startswith("-") and not item.startswith("--"))
    if len(argv) > 1 and not argv[1].startswith("-"):
        letters += argv[1]
    words = set(argv[1:])
    creates = bool(set(letters) & set("cruA")) or bool(words & {"--create", "--append", "--update", "--concatenate", "--delete"})
    extracts = "x" in letters or bool(words & {"--extract", "--get"})
    for k, access in enumerate(found):
        if access.what in ("-f", "--file") and not creates:
            found[k] = Access(access.index, READ, access.what, access.path, 0)
    if extracts:
        found.append(Access(1, WRITE, "extract", ".", 0))


def pattern_operands(argv: Sequence[str]) -> frozenset[int]:
    """Indices of items that are not paths: a pattern or program text (grep's first
    operand, sed's and awk's script), a subcommand (``git diff``), or the value of an
    option that is not a file (``grep -e PATTERN``, ``sort -k 2``)."""
    if not argv or argv[0] not in TABLE:
        return frozenset()
    return _pattern_operands(tuple(argv))


@functools.lru_cache(maxsize=4096)
def _pattern_operands(argv: tuple[str, ...]) -> frozenset[int]:
    program = TABLE[argv[0]]
    operands: list[int] = []
    _scan(_tar_modes(argv) if program is TAR else argv, 1, program, [], operands)
    return frozenset(operands)


def _scan(argv: Sequence[str], start: int, program: Program, found: list[Access], patterns: list[int],
          seen_operands: list[int] | None = None, *, top: bool = True) -> None:
    """Walk ``argv[start:]`` as ``program`` reads it, adding accesses to ``found`` and
    the indices of pattern or script operands to ``patterns``."""
    operands: list[int] = []
    given_pattern = False  # -e/-f: the first operand is then a file
    i, count = start, len(argv)
    options_end = False
    while i < count:
        item = argv[i]
        if options_end or item == "-" or not item.startswith("-") or len(item) < 2:
            if program.subcommands is not None and not operands and not options_end:
                sub = program.subcommands.get(item)
                if sub is not None or program is GIT:
                    patterns.append(i)
                if sub is not None:
                    if sub.subcommand_rule is not None:
                        kind = sub.subcommand_rule(argv, i)
                        if kind is not None:
                            found.append(Access(i, kind, item, None, len(item) if kind in GUARDED else 0))
                    _scan(argv, i + 1, sub, found, patterns, seen_operands, top=False)
                    return
                if program is GIT:
                    return  # another git command: its options are not in the table
            if top and program.command_first and not operands:
                patterns.append(i)
            if top and program.subcommand_rule is not None and not operands:
                kind = program.subcommand_rule(argv, i)
                if kind is not None:
                    found.append(Access(i, kind, item, None, len(item) if kind in GUARDED else 0))
            if argv[0] == "dd" and "=" in item:
                key, _, target = item.partition("=")
                if key in ("if", "of"):
                    found.append(Access(i, READ if key == "if" else WRITE, key, target, len(key) + 1 if key == "of" else 0))
            operands.append(i)
            i += 1
            continue
        if item == "--":
            options_end = True
            i += 1
            continue
        if item.startswith("--") or program.long_single_dash:
            name, equals, attached = item.partition("=")
            option = program.options.get(name)
            if option is None and name.startswith("--"):
                option = _abbreviated(program, name)
            if option is None:
                i += 1
                continue
            value = attached if equals else None
            option_index = i
            if not equals and option.value == "yes" and i + 1 < count:
                value = argv[i + 1]
                i += 1
                if option.kind not in (READ, WRITE, DIR):
                    patterns.append(i)  # a pattern, a number, code: not a path
            i += 1
            given_pattern = given_pattern or name in ("--regexp", "--file", "--expression", "--source")
            _record(found, program, option, name, option_index, value, named=len(name))
            continue
        # A cluster of short options: -abc, -oFILE, -o FILE.
        i += 1
        for j in range(1, len(item)):
            name = "-" + item[j]
            option = program.options.get(name)
            if option is None or option.value == "no" and option.kind is None:
                continue
            given_pattern = given_pattern or name in ("-e", "-f")
            attached = item[j + 1 :]
            if option.value == "no":
                found.append(Access(i - 1, option.kind or READ, name, None, j + 1 if option.kind in GUARDED else 0))
                continue
            if attached or option.value == "attached":
                _record(found, program, option, name, i - 1, attached or None, named=j + 1)
            elif i < count:
                _record(found, program, option, name, i - 1, argv[i], named=j + 1)
                if option.kind not in (READ, WRITE, DIR):
                    patterns.append(i)  # a pattern, a number, code: not a path
                i += 1
            break
    if seen_operands is not None:
        seen_operands.extend(operands)
    if operands:
        script_index = None
        if program.script is not None and not given_pattern:
            script_index = operands[0]
            kind = program.script(argv[script_index])
            patterns.append(script_index)
            if kind is not None:
                found.append(Access(script_index, kind, "script", None, len(argv[script_index]) if kind in GUARDED else 0))
            if argv[0] == "sed" and any(a.what in ("-i", "--in-place") for a in found):
                for index in operands[1:]:
                    found.append(Access(index, WRITE, "operand", argv[index]))
        elif program.pattern_first and not given_pattern:
            patterns.append(operands[0])
        files = [k for k in operands if k != script_index and not (program.pattern_first and not given_pattern and k == operands[0])]
        if program.operands is not None:
            found.extend(Access(k, program.operands, "operand", argv[k]) for k in files)
        elif program.last_operand is not None and len(files) >= 2:
            found.append(Access(files[-1], program.last_operand, "operand", argv[files[-1]]))


_RANK = {None: 0, DIR: 1, READ: 2, FOLLOW: 3, SCRIPT: 4, WRITE: 4, CODE: 5}


def _abbreviated(program: Program, name: str) -> Option | None:
    """The option a long-option prefix stands for: getopt_long and git accept any
    unambiguous prefix (``--out=x`` is ``--output=x``). When several options start so,
    the one that does the most counts (the program may take either)."""
    if len(name) < 3:
        return None
    candidates = [option for full, option in program.options.items() if full.startswith(name) and full.startswith("--")]
    if not candidates:
        return None
    return max(candidates, key=lambda option: _RANK[option.kind])


def _record(found: list[Access], program: Program, option: Option, name: str, option_index: int, value: str | None, *, named: int) -> None:
    """One option with its value: the access it makes, the path it names. ``named``:
    the characters of the item up to the option's name, which an allow rule must spell."""
    kind = option.kind
    if kind == SCRIPT:
        kind = program.script(value or "") if program.script is not None else CODE
    if kind is None:
        return
    guard = named if kind in GUARDED else 0
    path = value if kind in (READ, WRITE, DIR) and option.kind != SCRIPT else None
    found.append(Access(option_index, kind, name, path, guard))
