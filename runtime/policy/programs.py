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
from dataclasses import dataclass

from runtime.policy.program_table import (
    ABBREVIATION_MIN,
    CODE,
    CODE_FILE,
    DIR,
    FIND,
    FOLLOW,
    GIT,
    GIT_OTHER,
    GUARDED,
    LINK,
    LN,
    READ,
    SCRIPT,
    TABLE,
    TAR,
    TAR_VALUE_LETTERS,
    WRITE,
    Option,
    Program,
    curl_globs,
)
from runtime.policy.scripts import UNKNOWN_PATH

__all__ = [
    "CODE",
    "DIR",
    "FOLLOW",
    "GUARDED",
    "LINK",
    "READ",
    "WRITE",
    "Access",
    "accesses",
    "destroys",
    "may_create_files",
    "pattern_operands",
    "subcommand",
    "text_operands",
]


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
    _scan(argv, start, program, found, patterns, operands)
    if program is TAR:
        _tar_file_kind(argv, found)
        if any(a.what == "--remove-files" for a in found):
            found.extend(Access(k, WRITE, _DELETE, argv[k]) for k in operands)
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
        found.extend(Access(k, WRITE, _DELETE, argv[k]) for k in operands[1:])  # moved into the archive
    elif argv[0] == "rsync":
        moves = [a for a in found if a.what.startswith("--del") or a.what == "--remove-source-files"]
        if moves and len(operands) >= 2:
            deleted = operands[:-1] if any(a.what == "--remove-source-files" for a in moves) else []
            if any(a.what.startswith("--del") for a in moves):
                deleted.append(operands[-1])
            found.extend(Access(k, WRITE, _DELETE, argv[k]) for k in deleted)
    if argv[0] in _URL_PROGRAMS:
        found.extend(_file_urls(argv, patterns))
    return tuple(found), frozenset(patterns)


#: ``Access.what`` of an operand that the program deletes or replaces (gzip, tar --remove-files).
_DELETE = "delete"
_URL_PROGRAMS = frozenset({"curl", "wget", "git"})

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


_DELETING = frozenset({"-delete", "clean", "stash", _DELETE})


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
            if option.kind not in _PATH_KINDS or option.paths is not None:
                patterns.append(value_index)
            _record(found, argv, TAR, option, name, 1, value_index, named=j + 1)
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


_PATH_KINDS = (READ, WRITE, DIR, CODE_FILE)


def _scan(
    argv: Sequence[str],
    start: int,
    program: Program,
    found: list[Access],
    patterns: list[int],
    seen_operands: list[int] | None = None,
    *,
    top: bool = True,
) -> None:
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
                if sub is None and program is GIT:
                    sub = GIT_OTHER  # another git command: the options that run code or write wherever git takes them
                if sub is not None:
                    patterns.append(i)
                    if sub.subcommand_rule is not None:
                        kind = sub.subcommand_rule(argv, i)
                        if kind is not None:
                            found.append(Access(i, kind, item, None, len(item) if kind in GUARDED else 0))
                    _scan(argv, i + 1, sub, found, patterns, seen_operands, top=False)
                    return
            if program.plus_code and item.startswith("+") and len(item) > 1 and not options_end:
                found.append(Access(i, CODE, "+", None, len(item)))  # +CMD: an editor command
                patterns.append(i)
                i += 1
                continue
            if top and program.command_first and not operands:
                patterns.append(i)
            if top and program.subcommand_rule is not None and not operands:
                kind = program.subcommand_rule(argv, i)
                if kind is not None:
                    found.append(Access(i, kind, item, None, len(item) if kind in GUARDED else 0))
            if argv[0] == "dd" and "=" in item:
                key, _, target = item.partition("=")
                if key in ("if", "of"):
                    found.append(
                        Access(i, READ if key == "if" else WRITE, key, target, len(key) + 1 if key == "of" else 0)
                    )
            operands.append(i)
            i += 1
            continue
        if item == "--":
            options_end = True
            i += 1
            continue
        if item.startswith("--") or program.long_single_dash:
            typed, equals, attached = item.partition("=")
            name, option = typed, program.options.get(typed)
            if option is None and typed.startswith("--"):
                name, option = _abbreviated(program, typed)
            if option is None:
                i += 1
                continue
            option_index = value_index = i
            value = attached if equals else None
            if not equals and option.value == "yes" and i + 1 < count:
                i += 1
                value, value_index = argv[i], i
                if option.kind not in _PATH_KINDS or option.paths is not None:
                    patterns.append(i)  # a pattern, a number, code: not a path
            i += 1
            given_pattern = given_pattern or name in program.given
            _record(
                found,
                argv,
                program,
                option,
                name,
                option_index,
                value_index if value is not None else None,
                named=len(typed),
            )
            continue
        # A cluster of short options: -abc, -oFILE, -o FILE.
        i += 1
        for j in range(1, len(item)):
            letter = item[j]
            if program.dash_w and letter == "W":
                i, name = _dash_w(argv, program, found, patterns, i - 1, j, i)
                given_pattern = given_pattern or name in program.given
                break
            name = "-" + letter
            option = program.options.get(name)
            if option is None or option.value == "no" and option.kind is None:
                continue
            given_pattern = given_pattern or name in program.given
            attached_text = item[j + 1 :]
            if option.value == "no":
                found.append(Access(i - 1, option.kind or READ, name, None, j + 1 if option.kind in GUARDED else 0))
                continue
            if attached_text or option.value == "attached":
                _record(
                    found,
                    argv,
                    program,
                    option,
                    name,
                    i - 1,
                    i - 1 if attached_text else None,
                    named=j + 1,
                    attached_at=j + 1,
                )
            elif i < count:
                _record(found, argv, program, option, name, i - 1, i, named=j + 1)
                if option.kind not in _PATH_KINDS or option.paths is not None:
                    patterns.append(i)  # a pattern, a number, code: not a path
                i += 1
            break
    if seen_operands is not None:
        seen_operands.extend(operands)
    if not operands:
        return
    script_index = None
    if program.script is not None and not given_pattern:
        script_index = operands[0]
        patterns.append(script_index)
        _effects(found, program.script(argv[script_index]), script_index, "script", len(argv[script_index]))
    elif program.pattern_first and not given_pattern:
        patterns.append(operands[0])
    files = [
        k
        for k in operands
        if k != script_index and not (program.pattern_first and not given_pattern and k == operands[0])
    ]
    if argv[0] == "sed" and any(a.what in ("-i", "--in-place") for a in found):
        found.extend(Access(k, WRITE, "operand", argv[k]) for k in files)
    elif program.operands is not None:
        what = _DELETE if program.deletes and not _kept(argv, program) else "operand"
        found.extend(Access(k, program.operands, what, argv[k]) for k in files)
    elif program.last_operand is not None and len(files) >= 2:
        found.append(Access(files[-1], program.last_operand, "operand", argv[files[-1]]))


def _dash_w(
    argv: Sequence[str], program: Program, found: list[Access], patterns: list[int], item_index: int, j: int, i: int
) -> tuple[int, str]:
    """gawk's and mawk's ``-W NAME[=VALUE]``: the long option ``--NAME``. Returns the
    next index and the option's full name."""
    item = argv[item_index]
    spec, spec_index = item[j + 1 :], item_index
    if not spec and i < len(argv):
        spec, spec_index, i = argv[i], i, i + 1
        patterns.append(spec_index)
    typed, equals, value = spec.partition("=")
    name, option = ("--" + typed, program.options.get("--" + typed))
    if option is None:
        name, option = _abbreviated(program, "--" + typed, minimum=3)
    if option is None:
        return i, name
    value_index: int | None = None
    if equals:
        value_index = spec_index
    elif option.value == "yes" and i < len(argv):
        value_index, i = i, i + 1
        if option.kind not in _PATH_KINDS:
            patterns.append(value_index)
    named = len(item) if spec_index == item_index else len(argv[spec_index])
    _record(found, argv, program, option, name, spec_index, value_index, named=named, value=value if equals else None)
    return i, name


def _kept(argv: Sequence[str], program: Program) -> bool:
    """Whether an option keeps the operands that ``program`` would otherwise delete (gzip -k)."""
    for item in argv[1:]:
        if item in program.keeps:
            return True
        if (
            item.startswith("-")
            and not item.startswith("--")
            and any("-" + letter in program.keeps for letter in item[1:])
        ):
            return True
    return False


_RANK = {None: 0, DIR: 1, READ: 2, FOLLOW: 3, SCRIPT: 4, WRITE: 4, CODE_FILE: 5, CODE: 5}


def _abbreviated(program: Program, name: str, minimum: int = ABBREVIATION_MIN) -> tuple[str, Option | None]:
    """The option a long-option prefix stands for: getopt_long and git accept any
    unambiguous prefix (``--out=x`` is ``--output=x``). When several options start so,
    the one that does the most counts (the program may take either)."""
    if len(name) < minimum:
        return name, None
    candidates = [
        (full, option) for full, option in program.options.items() if full.startswith(name) and full.startswith("--")
    ]
    if not candidates:
        return name, None
    return max(candidates, key=lambda pair: _RANK[pair[1].kind])


def _effects(
    found: list[Access], effects: tuple[tuple[str, str | None], ...], index: int, what: str, named: int
) -> None:
    """The accesses of a sed or awk program at item ``index`` (``named``: its length)."""
    for kind, path in effects:
        if kind == UNKNOWN_PATH:
            found.append(Access(index, FOLLOW, what, None, named))  # a file named at run time: anywhere
        else:
            found.append(Access(index, kind, what, path, named if kind in GUARDED else 0))


def _record(
    found: list[Access],
    argv: Sequence[str],
    program: Program,
    option: Option,
    name: str,
    option_index: int,
    value_index: int | None,
    *,
    named: int,
    attached_at: int = 0,
    value: str | None = None,
) -> None:
    """One option with its value (at ``value_index``: the option's own item when
    attached, from character ``attached_at``): the access it makes, the path it names.
    ``named``: the characters of the item up to the option's name, which an allow rule
    must spell."""
    if value is None and value_index is not None:
        value = argv[value_index]
        if value_index == option_index:
            value = value[attached_at:] if attached_at else value.partition("=")[2]
    kind = option.kind
    if kind == SCRIPT:
        # The program text is judged like the script operand; an allow rule must spell it whole.
        where = value_index if value_index is not None else option_index
        effects = program.script(value or "") if program.script is not None else ((CODE, None),)
        _effects(found, effects, where, name, len(argv[where]))
        return
    if kind is None:
        return
    if kind == CODE_FILE:
        found.append(Access(option_index, CODE, name, None, named))
        kind = READ  # and the file is read
    guard = named if kind in GUARDED else 0
    if option.paths is not None:
        paths = option.paths(value or "")
        where = value_index if value_index is not None else option_index
        found.extend(Access(where, kind, name, path, 0 if where != option_index else guard) for path in paths)
        if kind in GUARDED and (where != option_index or not paths):
            found.append(Access(option_index, kind, name, None, guard))
        return
    path = value if kind in (READ, WRITE, DIR) else None
    found.append(Access(option_index, kind, name, path, guard))
