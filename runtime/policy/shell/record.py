"""What a split records: the :class:`CommandLine` result, the sink every (sub)parser of
one line writes to, and the :class:`Context` a command handler works in.

Handlers never import the parser: a :class:`Context` carries the :class:`Lines` that
split nested text (``sh -c`` scripts, ``eval`` arguments ...) and the judge that
resolves a nested command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from runtime.policy.bashglob import brace_variants
from runtime.policy.shell.expansions import has_brace, shape
from runtime.policy.shell.words import LITERAL, MAX_DEPTH, RUNTIME, TOO_DEEP, XARGS_INPUT, Word, basename

# Folders whose programs are the system's, not the agent's: `/usr/bin/git` is `git`. A
# program named by any other path is judged as a file whose code is known only at run time.
SYSTEM_PROGRAM_FOLDERS = frozenset(
    {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/libexec"}
)


def _trusted_program(word: str) -> bool:
    """Whether ``word`` names a program by its bare name or by its path in a system folder
    (written plainly: no ``.``/``..`` parts, no doubled slashes)."""
    if "/" not in word:
        return True
    folder, _, name = word.rpartition("/")
    return bool(name) and folder in SYSTEM_PROGRAM_FOLDERS


# Wrappers that run a shell reading its input when given no command (su, sudo -s, doas -s).
PRIVILEGE_WRAPPERS = frozenset({"su", "sudo", "doas"})
POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ksh", "zsh", "mksh", "ash", "yash", "posh", "rbash", "ksh93"})
_OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "pwsh", "powershell", "nu", "xonsh", "elvish"})
SHELLS = POSIX_SHELLS | _OTHER_SHELLS


@dataclass(frozen=True, slots=True)
class CommandLine:
    """The simple commands a shell command line runs.

    ``commands`` holds each command's argv (wrappers unwrapped, ``argv[0]`` reduced to
    its basename). ``problem`` says why the line could not be split with certainty;
    when it is set, deny/ask rules must be treated as matching and allow rules as
    not covering, and ``commands`` may be partial.

    ``shapes`` has one string per command, one character per argv item: :data:`LITERAL`
    for an item written out in the line, :data:`GLOB` for a glob pattern (``*``, ``?``,
    ``[...]``: its files are only known where the command runs), :data:`RUNTIME` for an
    item whose value is only known when the command runs (an expansion, ``$IFS``, a
    brace list, a leading ``~``, the input ``xargs`` appends, ``find -exec``'s ``{}``).
    """

    commands: tuple[tuple[str, ...], ...]
    problem: str | None = None
    shapes: tuple[str, ...] = ()
    # Brace words and what bash makes of them, read with their quoting: (the item as it
    # is in argv, its variants, or None when there are too many to list).
    braces: tuple[tuple[str, tuple[str, ...] | None], ...] = ()
    # One per command (empty when none applies): the index of the last ``cd`` the command
    # waits for, -1 for none. Set only where the line's own shell runs that ``cd`` as a
    # plain command of its top level, and the command runs only after it succeeded
    # (``cd src && cat ../a``, not after ``||``, ``;``, ``|`` or ``&``, nor in a line
    # with compound commands, whose loops and branches the order of the list hides).
    gates: tuple[int, ...] = ()

    @property
    def certain(self) -> bool:
        """True when every command of the line is known."""
        return self.problem is None


class Abort(Exception):
    """Stops a parse: the rest of the text cannot be read with certainty."""


class Sink:
    """Where every (sub)parser of one line puts commands and problems."""

    __slots__ = (
        "commands",
        "shapes",
        "braces",
        "problems",
        "scanned",
        "shell_started",
        "gate",
        "gates",
        "structured",
        "loops",
    )

    def __init__(self) -> None:
        self.commands: list[tuple[str, ...]] = []
        self.shapes: list[str] = []  # one per command: see CommandLine.shapes
        self.braces: dict[str, tuple[str, ...] | None] = {}  # see CommandLine.braces
        # A dict keeps the first-seen order and deduplicates in constant time.
        self.problems: dict[str, None] = {}
        self.scanned = 0  # how many commands started_shell has looked at
        self.shell_started = False
        self.gate = -1  # the cd the commands being read wait for: see CommandLine.gates
        self.gates: list[int] = []
        self.structured = False  # the line has compound commands: no gates
        self.loops = False  # the line has a loop (for, select, while, until)

    def started_shell(self) -> bool:
        """Whether a command listed so far is a shell (or su, sudo, doas); each command is looked at once."""
        commands = self.commands
        while not self.shell_started and self.scanned < len(commands):
            argv = commands[self.scanned]
            self.scanned += 1
            self.shell_started = bool(argv) and (argv[0] in SHELLS or argv[0] in PRIVILEGE_WRAPPERS)
        return self.shell_started

    def add_braces(self, words: Sequence[Word]) -> None:
        """Remember what bash makes of each brace word (several words spelled the same
        but quoted differently: all their variants)."""
        for word in words:
            if word.expanded or not has_brace(word):
                continue
            variants = brace_variants(word.value, active=word.plain)
            known = self.braces.get(word.value, ())
            if word.value in self.braces and known is None or variants is None:
                self.braces[word.value] = None
            else:
                self.braces[word.value] = tuple(dict.fromkeys([*(known or ()), *variants]))

    def add(self, argv: tuple[str, ...], shape: str | None) -> None:
        self.commands.append(argv)
        self.gates.append(self.gate)
        self.shapes.append(shape if shape is not None and len(shape) == len(argv) else LITERAL * len(argv))

    def problem(self, text: str) -> None:
        self.problems.setdefault(text, None)

    def summary(self) -> str | None:
        if not self.problems:
            return None
        problems = list(self.problems)
        text = "; ".join(problems[:3])
        if len(problems) > 3:
            text += f" (and {len(problems) - 3} more)"
        return text


@dataclass(slots=True)
class Chain:
    """Which ``cd`` the commands of the line's top-level lists wait for.

    A ``cd`` gates the commands after it when it is a whole element of its and-or list
    (not in a pipeline), starts the list or follows ``&&`` (after ``||`` it may be
    skipped with a zero status), and ``&&`` follows it: from there on every command of
    that list, until ``||``, waits for it. ``;``, ``&`` and newlines end the list.
    """

    sink: Sink
    pending: int = -1  # the cd just read, if it may gate
    in_pipe: bool = False
    after_or: bool = False
    joined: bool = False  # after &&, || or |: a newline does not end the list

    def command(self, cd: int) -> None:
        self.pending = cd if not self.in_pipe and not self.after_or else -1
        self.joined = False

    def and_(self) -> None:
        if self.pending >= 0:
            self.sink.gate = self.pending
        self.pending, self.in_pipe, self.after_or, self.joined = -1, False, False, True

    def or_(self) -> None:
        self.sink.gate = -1
        self.pending, self.in_pipe, self.after_or, self.joined = -1, False, True, True

    def pipe(self) -> None:
        self.pending, self.in_pipe, self.joined = -1, True, True

    def end(self) -> None:
        self.sink.gate = -1
        self.pending, self.in_pipe, self.after_or, self.joined = -1, False, False, False

    def newline(self) -> None:
        if not self.joined:
            self.end()


class Lines(Protocol):
    """Splits nested text, one level deeper, into the same sink (the parser provides it)."""

    def split(self, text: str, depth: int) -> None:
        """Split ``text`` as a command line of its own."""

    def expansions(self, text: str, depth: int) -> None:
        """List the command substitutions in ``text``, which is otherwise data."""

    def words(self, text: str, depth: int) -> list[Word] | None:
        """``text`` as the words of one command; None if it holds more than that."""


#: Judges one simple command: its words, its assignment prefixes, the context it runs in.
Judge = Callable[[list[Word], list[Word], "Context"], None]


@dataclass(slots=True)
class Context:
    """Where a command handler puts what it finds: the line's sink, how deep the command
    is nested, how to split nested text (``lines``) and how to judge a nested command
    (``judge``)."""

    sink: Sink
    depth: int
    lines: Lines
    judge: Judge

    def emit(self, argv: Sequence[str], shape: str | None = None) -> None:
        self.sink.add(tuple(argv), shape)

    def emit_words(self, name: str | None, words: Sequence[Word]) -> None:
        """List the command ``words`` (``argv[0]`` replaced by ``name`` when it is known)."""
        self.sink.add_braces(words)
        if name is None:
            self.sink.add(tuple(w.value for w in words), "".join(shape(w) for w in words))
        else:
            # A program named by a path outside the system's program folders (`./git`,
            # `node_modules/.bin/git`, `/abs/workspace/git`, `/tmp/git`) may be a file the
            # agent wrote: its code is only known when the line runs, so no allow rule for
            # `git` covers it.
            head = RUNTIME if not _trusted_program(words[0].value) else LITERAL
            self.sink.add((name, *(w.value for w in words[1:])), head + "".join(shape(w) for w in words[1:]))

    def problem(self, text: str) -> None:
        self.sink.problem(text)

    def deeper(self) -> Context | None:
        if self.depth >= MAX_DEPTH:
            self.sink.problem(TOO_DEEP)
            return None
        return Context(self.sink, self.depth + 1, self.lines, self.judge)

    def run(self, words: list[Word]) -> None:
        """Judge ``words`` as a command run in this context (a wrapper's command)."""
        self.judge(words, [], self)

    def parse_line(self, text: str) -> None:
        """Split ``text`` as a command line that this command runs."""
        if text == XARGS_INPUT:
            return  # only a stand-in for unknown text: the caller has set a problem
        self.lines.split(text, self.depth + 1)

    def scan_expansions(self, text: str) -> None:
        """List the command substitutions in ``text``, which is otherwise data."""
        self.lines.expansions(text, self.depth + 1)

    def split_words(self, text: str) -> list[Word] | None:
        """``text`` as the words of one command (for ``env -S``); None if it is more."""
        return self.lines.words(text, self.depth + 1)


#: A command handler: the command's basename, its words, its context.
Handler = Callable[[str, list[Word], Context], None]


def is_shell_name(word: Word) -> bool:
    """Whether the word names a shell (``bash``, ``/bin/sh`` ...)."""
    return not word.expanded and basename(word.value) in SHELLS
