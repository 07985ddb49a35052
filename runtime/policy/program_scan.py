"""The scanner behind :func:`runtime.policy.programs.accesses`: walks an argv as its
program reads it (options, bundles of short options, abbreviations, subcommands,
operands) with the per-program table, listing each item that reads, writes or runs."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.policy.program_kinds import DELETE, Access
from runtime.policy.program_table import (
    ABBREVIATION_MIN,
    CODE,
    CODE_FILE,
    DIR,
    FOLLOW,
    GIT,
    GIT_OTHER,
    GUARDED,
    READ,
    SCRIPT,
    SYSTEM,
    WRITE,
    Option,
    Program,
)
from runtime.policy.scripts import UNKNOWN_PATH

PATH_KINDS = (READ, WRITE, DIR, CODE_FILE)


def scan(
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
                    scan(argv, i + 1, sub, found, patterns, seen_operands, top=False)
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
                if option.kind not in PATH_KINDS or option.paths is not None:
                    patterns.append(i)  # a pattern, a number, code: not a path
            i += 1
            given_pattern = given_pattern or name in program.given
            record(
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
                record(
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
                record(found, argv, program, option, name, i - 1, i, named=j + 1)
                if option.kind not in PATH_KINDS or option.paths is not None:
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
        what = DELETE if program.deletes and not _kept(argv, program) else "operand"
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
        if option.kind not in PATH_KINDS:
            patterns.append(value_index)
    named = len(item) if spec_index == item_index else len(argv[spec_index])
    record(found, argv, program, option, name, spec_index, value_index, named=named, value=value if equals else None)
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


_RANK = {None: 0, DIR: 1, READ: 2, FOLLOW: 3, SCRIPT: 4, SYSTEM: 4, WRITE: 4, CODE_FILE: 5, CODE: 5}


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


def record(
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
