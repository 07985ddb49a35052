"""The vocabulary of the per-program table (:mod:`runtime.policy.program_table`): access
kinds, :class:`Option` and :class:`Program`, shared by the table's parts and the scanner."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

READ, WRITE, CODE, DIR = "read", "write", "code", "dir"
#: Following symbolic links while walking a tree: it can leave the workspace.
FOLLOW = "follow"
#: What a link made by ``ln`` will point to: reachable through the link from then on.
LINK = "link"
#: Changing the machine's own settings (``date -s`` sets the clock): no file is named.
SYSTEM = "system"
#: Access kinds an allow rule must name literally, and what each does, for the reason of an ask.
GUARDED = frozenset({WRITE, CODE, FOLLOW, SYSTEM})
DOES = {
    CODE: "runs code",
    WRITE: "writes a file",
    FOLLOW: "follows symbolic links, which can lead out of the workspace",
    SYSTEM: "changes the machine's settings (its clock or host name)",
}
#: An option whose value is program text (sed -e, awk --source): checked like the script operand.
SCRIPT = "script"
#: An option whose value is a file of code or options (awk -f, curl -K): code run, and a file read.
CODE_FILE = "code-file"

#: How many characters an option name needs before a prefix of it counts (``--ou``).
ABBREVIATION_MIN = 3


# An option: its access kind (None: only takes a value, e.g. grep -e PATTERN), whether
# it takes a value ("yes"), never ("no"), or only when attached ("attached"), and
# which files its value names (default: the value itself, for file kinds).
@dataclass(frozen=True, slots=True)
class Option:
    kind: str | None
    value: str = "yes"
    paths: Callable[[str], tuple[str, ...]] | None = None


def opts(
    *specs: tuple[str, str | None, str] | tuple[str, str | None, str, Callable[[str], tuple[str, ...]]],
) -> Mapping[str, Option]:
    table: dict[str, Option] = {}
    for spec in specs:
        names, kind, value = spec[0], spec[1], spec[2]
        paths = spec[3] if len(spec) > 3 else None  # type: ignore[misc]
        for name in names.split():
            table[name] = Option(kind, value, paths)
    return table


#: Options that give a program its pattern or program text, so that its first operand is a file.
_GIVEN = frozenset({"-e", "-f", "--regexp", "--file", "--expression", "--source"})


@dataclass(frozen=True, slots=True)
class Program:
    options: Mapping[str, Option] = field(default_factory=dict)
    operands: str | None = None  # every operand is a file of this kind (tee: write)
    last_operand: str | None = None  # the last operand (cp: write) when there are two or more
    pattern_first: bool = False  # the first operand is a pattern, not a file (grep), unless -e/-f is given
    text_operands: bool = False  # operands are text, never files (echo)
    script: Callable[[str], tuple[tuple[str, str | None], ...]] | None = (
        None  # reads the program text operand (sed, awk): its effects
    )
    subcommands: Mapping[str, Program] | None = None
    subcommand_rule: Callable[[Sequence[str], int], str | None] | None = None  # (argv, index of subcommand) -> kind
    long_single_dash: bool = False  # options are whole words with one dash (find -delete)
    command_first: bool = False  # the first operand names a command of the program's own (npm test), not a file
    given: frozenset[str] = _GIVEN  # options that give the pattern or program text (the first operand is then a file)
    dash_w: bool = False  # ``-W NAME[=VALUE]`` is ``--NAME[=VALUE]`` (gawk, mawk)
    plus_code: bool = False  # an operand ``+CMD`` runs an editor command (vim, less)
    deletes: bool = False  # the operand files are deleted or replaced (gzip, git rm)
    keeps: frozenset[str] = frozenset()  # options that keep them after all (gzip -k, git rm --cached)


#: ``Access.what`` of an operand that the program deletes or replaces (gzip, tar --remove-files).
DELETE = "delete"


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
