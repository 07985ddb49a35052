"""Split a POSIX shell command line into the simple commands it would run.

An agent's shell tool receives a whole command line (``ls && rm -rf /``), while
permission rules judge one command at a time. :func:`split_command_line` reads the
line the way bash would and lists every simple command it would start, including
the ones hidden in ``$(...)``, backquotes, subshells, groups, process substitutions,
``bash -c`` scripts, wrappers (``sudo``, ``env``, ``timeout``, ``xargs`` ...) and
``find -exec``. :func:`command_matches` is the pattern language rules use to match
one of those commands.

The fail-closed contract
------------------------
:attr:`CommandLine.problem` is set whenever the splitter cannot be sure that it has
seen every command the line runs, or which program a command is: the command name
comes from a variable, the line uses ``eval``, ``source``, a here-document, a
function definition, a ``case`` statement, arithmetic on variables, an unclosed
quote, nesting deeper than :data:`MAX_DEPTH`, a line longer than
:data:`MAX_LINE_LENGTH`, and so on. When ``problem`` is set, callers MUST treat
every deny and ask command rule as matching and every allow rule as not covering
the line. ``commands`` then still holds whatever could be extracted (for messages),
but it may be incomplete.

What ``commands`` holds
-----------------------
Each entry is one simple command's argv, in the order the shell starts them (a
command's substitutions come before the command itself):

- quotes and backslashes are removed (``'r''m'`` and ``r\\m`` are ``rm``); ``$'...'``
  escapes are decoded; expansions are kept as their source text (``"$HOME"`` is the
  item ``$HOME``); globs and brace expressions in arguments are kept as written;
- ``VAR=value`` prefixes are dropped; a redirection to or from a file is listed as
  a command of its own, ``(">", target)`` for writing (``>``, ``>>``, ``>|``,
  ``&>``, ``<>``) and ``("<", target)`` for reading, so rules see every file a line
  touches (``/dev/null`` and descriptor duplications such as ``2>&1`` are left
  out); the commands inside a redirection target's substitution are listed too;
- ``argv[0]`` is reduced to its basename (``/usr/bin/rm`` is ``rm``) unless it is
  not a literal, in which case it is kept as written and ``problem`` is set;
- shell keywords (``if``, ``then``, ``while``, ``do``, ``!``, ``time``, ``{`` ...)
  are skipped; a ``for``/``select`` header is not a command; ``[[ ... ]]`` is
  listed as the command ``[[`` (like ``[`` and ``test``).

Decisions
---------
- ``env -C DIR`` and ``sudo -D DIR`` (also ``--chdir``, ``sudo -R``) set ``problem``: the
  command runs elsewhere, so its relative paths name other files than they seem to.
- Harmless wrappers are invisible: ``env``, ``nohup``, ``timeout``, ``nice``,
  ``time``, ``command``, ``exec``, ``builtin``, ``stdbuf``, ``ionice``, ``setsid``,
  ``chrt``, ``taskset``, ``busybox``, ``xargs``, ``watch`` and ``sh -c``-style
  shells list only the command they run. Wrappers that change privilege stay
  visible: for ``sudo``, ``doas`` and ``su`` the wrapper's own argv is listed, then
  the command it runs, so a rule can ask about ``sudo *`` while ``rm *`` still
  fires. ``eval``, ``find`` and ``trap`` are listed too, followed by the commands
  they run.
- ``xargs`` appends arguments read from its input: the command it runs gets the
  extra item :data:`XARGS_INPUT`, so an exact pattern (``rm x``) does not cover it.
  With ``-I``/``-i`` the replacement string, and with ``find -exec`` the ``{}``,
  count as run-time values, so ``sh -c 'echo {}'`` under them sets ``problem``.
- Arithmetic that only holds numbers and operators (``$((1+2))``) is not a command
  and is fine. Arithmetic that reads a variable (``$((i+1))``, ``((n++))``,
  ``[[ $a -lt 3 ]]``, ``${a[i]}``, ``${s:i}``, ``printf -v 'a[i]'``) sets ``problem``: bash evaluates the
  variable's value as an expression, and an array subscript in that value runs
  commands (``x='a[$(rm -rf /)]'; echo $((x))``).
- ``declare``, ``typeset``, ``local``, ``export`` and ``readonly`` with an ``-i`` flag
  (alone or combined, ``-ai``, ``-gi`` ...) set ``problem``: every later assignment to
  an integer variable is arithmetic, however it is written (``n=...``, ``n+=...``,
  ``read n``, ``for n in ...``, ``printf -v n``, ``${n:=...}``, ``arr=(...)``), so it
  can run the commands in an array subscript of the value. So does ``-n``: a name
  reference makes later assignments write to another variable (``PATH``, ``HOME``
  ...). Flags only known at run time (``declare "-$f" n``) set it too.
- ``compgen`` and ``complete`` are listed. ``compgen -C CMD`` runs ``CMD`` as a command
  line (bash appends the words ``compgen``, the word and ``''``, and so does the
  split); ``-W WORDLIST`` expands the wordlist again when it runs, so its
  substitutions are listed, and a wordlist that is not literal sets ``problem``;
  ``-F FUNC`` calls a function, which sets ``problem``. ``complete -C``/``-F`` (and
  ``-W`` with a substitution) register code that runs later: ``problem``. Options
  only known at run time set ``problem`` as well.
- Arguments that hold variables are fine (kept as written); the command name, the
  options of a wrapper, and the script given to ``sh -c``, ``watch``, ``su -c`` or
  ``trap`` must be literal, or ``problem`` is set.
- Variables that programs run as a command line (``GIT_SSH_COMMAND``, ``PAGER``,
  ``EDITOR``, names ending ``_COMMAND`` ...) are split like ``sh -c`` scripts, and
  their commands listed (the program adds arguments of its own); prompt variables
  (``PS4``) have their substitutions listed. Setting one of them to a value only
  known at run time sets ``problem``.
- Setting a variable that makes the shell or a program load code, settings or
  programs from somewhere this splitter cannot see sets ``problem``, whatever the
  value (``HOME=. git status`` reads ``./.gitconfig``, whose settings run commands).
  The list is :data:`_CODE_VARIABLES` plus every name starting ``BASH_FUNC_``,
  ``GIT_CONFIG_`` or ``DYLD_``: shell start-up and behaviour (``BASH_ENV``, ``ENV``, ``SHELLOPTS``,
  ``BASHOPTS``, ``PROMPT_COMMAND``, ``PATH``, ``IFS``, ``ZDOTDIR``), where programs
  find their configuration (``HOME``, ``XDG_CONFIG_HOME``, ``XDG_CONFIG_DIRS``,
  ``GIT_CONFIG``, ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG_COUNT``
  with ``GIT_CONFIG_KEY_*``/``GIT_CONFIG_VALUE_*``, ``GIT_DIR``, ``GIT_EXEC_PATH``,
  ``GIT_TEMPLATE_DIR``), libraries and interpreter start-up (``LD_PRELOAD``,
  ``LD_AUDIT``, ``LD_LIBRARY_PATH``, ``DYLD_*``, ``GCONV_PATH``, ``PYTHONPATH``,
  ``PYTHONSTARTUP``, ``PYTHONHOME``, ``PYTHONUSERBASE``, ``NODE_OPTIONS``,
  ``NODE_PATH``, ``PERL5OPT``, ``PERL5LIB``, ``PERLLIB``, ``PERL5DB``, ``RUBYOPT``,
  ``RUBYLIB``, ``JAVA_TOOL_OPTIONS``, ``_JAVA_OPTIONS``, ``JDK_JAVA_OPTIONS``) and
  helpers (``LESSOPEN``, ``LESSCLOSE``, ``BROWSER``). Two values are fine: ``IFS``
  set to a literal made only of spaces, tabs and newlines (``IFS= read -r line``),
  which can only remove split points, and ``PATH`` set to a literal list of system
  directories (``env -i PATH=/bin:/usr/bin cmd``). The same names set any other way
  (``read``, ``printf -v``, ``mapfile``, ``getopts``, ``wait -p``, a ``for``/``select``
  variable, ``${NAME:=...}``, ``{NAME}>file``, ``declare -n``) set ``problem`` too.
- ``bash script.sh`` and ``curl x | sh`` are plain commands (rules can deny
  ``bash *``). Here-documents set ``problem``; here-strings (``<<<``) are plain
  redirections, except that both, when fed to a shell (a word of the command is a
  shell name, the command is ``su``, ``sudo`` or ``doas``, or they are attached to a compound command such as ``{ ...; }`` or
  ``done`` after a shell has been started on the line), have their text split as a
  command line and set ``problem`` (``bash <<< 'rm x'``).
- The line is read as bash reads it. Where POSIX sh (dash) would run other commands
  (``a &>f b`` runs ``b`` in sh), ``problem`` is set.

Limits
------
Only the shell's own syntax and the wrappers above are unwrapped. Other programs
that run commands (``ssh host cmd``, ``docker exec``, ``npx``, ``make``, ``python -c``,
``git`` aliases and ``-c core.sshCommand=...`` ...) are judged by their own argv:
deny rules do not see inside them, and an allow rule for one allows whatever it
runs. A name is judged by its basename, so ``./ls`` can run another program under an
allowed name (setting ``PATH`` on the line sets ``problem``); and state left by
earlier commands of a persistent shell (functions, aliases, exported variables such
as ``PATH`` or ``HOME``, integer or name-reference attributes, ``shopt`` settings)
is not visible here. Globs and brace expressions in arguments are kept as written:
which files they name is only known when the command runs, so rules that judge file
names must treat hidden-name globs such as ``.e*`` as touching what they could match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import NoReturn

from runtime.policy.bashglob import brace_variants

#: Longer lines are not split: the result is an empty, uncertain CommandLine.
MAX_LINE_LENGTH = 100_000
#: How deeply substitutions, subshells, ``sh -c`` scripts and wrappers may nest.
MAX_DEPTH = 16
#: The argv item standing for the arguments ``xargs`` reads from its input.
XARGS_INPUT = "<xargs input>"
#: The characters of :attr:`CommandLine.shapes`.
LITERAL, GLOB, RUNTIME = "l", "g", "r"


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

    @property
    def certain(self) -> bool:
        """True when every command of the line is known."""
        return self.problem is None


def split_command_line(line: str) -> CommandLine:
    """Split ``line`` into the simple commands a POSIX shell (bash) would run.

    Never raises: anything that cannot be read with certainty (including a defect in
    this module) sets ``problem`` instead. See the module docstring for the contract.
    """
    if not isinstance(line, str):
        return CommandLine((), "the command line is not text")
    if len(line) > MAX_LINE_LENGTH:
        return CommandLine(
            (), f"the command line is too long to check ({len(line)} characters; the limit is {MAX_LINE_LENGTH})"
        )
    sink = _Sink()
    try:
        _Parser(line, sink, 0).parse()
    except _Abort:
        pass  # the reason is already recorded in the sink
    except RecursionError:
        sink.problem("the command line nests too deeply to check")
    except Exception as err:  # noqa: BLE001 - a parser defect must fail closed, never let a line through unjudged
        sink.problem(f"the command line could not be checked (internal error: {type(err).__name__})")
    return CommandLine(tuple(sink.commands), sink.summary(), tuple(sink.shapes), tuple(sink.braces.items()))


def command_matches(argv: Sequence[str], pattern: str) -> bool:
    """Whether a command's argv matches a rule's command pattern.

    The pattern is split on whitespace into words. Each word matches exactly one argv
    item, with fnmatch globs (``*``, ``?``, ``[seq]``), case-sensitively; ``*`` inside
    a word matches any characters, ``/`` included. A final word that is a lone ``*``
    matches zero or more remaining items. Otherwise the pattern and argv must have the
    same length. The first word is compared with ``argv[0]`` as split_command_line
    gives it, that is a basename (write ``rm``, not ``/bin/rm``). A blank pattern
    matches nothing.

    - ``git push *`` matches ``git push`` and ``git push origin main``, not ``git pull``;
    - ``rm *`` matches every rm command; ``ls`` matches only a bare ``ls``;
    - ``npm run test*`` matches ``npm run test:unit`` (exactly three items).
    """
    words = pattern.split()
    if not words:
        return False
    if words[-1] == "*":
        fixed = words[:-1]
        if len(argv) < len(fixed):
            return False
    else:
        fixed = words
        if len(argv) != len(fixed):
            return False
    return all(fnmatchcase(item, word) for item, word in zip(argv, fixed, strict=False))


# ---------------------------------------------------------------------------
# Results and words


class _Abort(Exception):
    """Stops a parse: the rest of the text cannot be read with certainty."""


# Redirection targets that are not files anyone cares about.
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


class _Sink:
    """Where every (sub)parser of one line puts commands and problems."""

    __slots__ = ("commands", "shapes", "braces", "problems", "scanned", "shell_started")

    def __init__(self) -> None:
        self.commands: list[tuple[str, ...]] = []
        self.shapes: list[str] = []  # one per command: see CommandLine.shapes
        self.braces: dict[str, tuple[str, ...] | None] = {}  # see CommandLine.braces
        # A dict keeps the first-seen order and deduplicates in constant time.
        self.problems: dict[str, None] = {}
        self.scanned = 0  # how many commands started_shell has looked at
        self.shell_started = False

    def started_shell(self) -> bool:
        """Whether a command listed so far is a shell (or su, sudo, doas); each command is looked at once."""
        commands = self.commands
        while not self.shell_started and self.scanned < len(commands):
            argv = commands[self.scanned]
            self.scanned += 1
            self.shell_started = bool(argv) and (argv[0] in _SHELLS or argv[0] in _PRIVILEGE_WRAPPERS)
        return self.shell_started

    def add_braces(self, words: Sequence[_Word]) -> None:
        """Remember what bash makes of each brace word (several words spelled the same
        but quoted differently: all their variants)."""
        for word in words:
            if word.expanded or not _has_brace(word):
                continue
            variants = brace_variants(word.value, active=word.plain)
            known = self.braces.get(word.value, ())
            if word.value in self.braces and known is None or variants is None:
                self.braces[word.value] = None
            else:
                self.braces[word.value] = tuple(dict.fromkeys([*(known or ()), *variants]))

    def add(self, argv: tuple[str, ...], shape: str | None) -> None:
        self.commands.append(argv)
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
class _Word:
    """One shell word after quote removal.

    ``plain`` has one byte per character of ``value``: 1 when the character was
    written unquoted and unescaped (so it may be a keyword, glob or brace character).
    """

    value: str
    plain: bytes
    quoted: bool = False  # some part was quoted or escaped
    expanded: bool = False  # holds a parameter, command, arithmetic or process expansion
    split: bool = False  # holds an unquoted expansion, which may become several words or none

    @property
    def is_plain(self) -> bool:
        """Written as bare characters: the only form in which keywords are recognised."""
        return not self.quoted and not self.expanded


class _WordBuilder:
    __slots__ = ("parts", "mask", "started", "quoted", "expanded", "split")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.mask = bytearray()
        self.started = False
        self.quoted = False
        self.expanded = False
        self.split = False

    def add_plain(self, text: str) -> None:
        self.parts.append(text)
        self.mask += b"\x01" * len(text)
        self.started = True

    def add_quoted(self, text: str) -> None:
        self.parts.append(text)
        self.mask += b"\x00" * len(text)
        self.started = True
        self.quoted = True

    def add_expansion(self, source: str, *, splits: bool) -> None:
        self.parts.append(source)
        self.mask += b"\x00" * len(source)
        self.started = True
        self.expanded = True
        self.split = self.split or splits

    def text(self) -> str:
        return "".join(self.parts)

    def build(self) -> _Word:
        return _Word(self.text(), bytes(self.mask), self.quoted, self.expanded, self.split)


def _literal_word(text: str) -> _Word:
    return _Word(text, b"\x01" * len(text))


def _runtime_word(text: str) -> _Word:
    """A word whose real value is only known when the command runs."""
    return _Word(text, b"\x00" * len(text), quoted=True, expanded=True, split=True)


def _has_glob(word: _Word) -> bool:
    """Unquoted ``*``, ``?`` or ``[...]``: the word depends on the files present."""
    value, plain = word.value, word.plain
    for match in _GLOB_CHAR.finditer(value):
        i = match.start()
        if not plain[i]:
            continue
        if value[i] != "[" or "]" in value[i + 1 :]:
            return True
    return False


def _has_brace(word: _Word) -> bool:
    """Unquoted ``{a,b}`` or ``{1..3}``: the word may become several words."""
    value, plain = word.value, word.plain
    opening = -1
    for i, ch in enumerate(value):
        if not plain[i]:
            continue
        if ch == "{":
            opening = i
        elif ch == "}" and opening >= 0:
            inner = value[opening + 1 : i]
            if "," in inner or ".." in inner:
                return True
    return False


def _shape(word: _Word) -> str:
    """The :attr:`CommandLine.shapes` character of one argv item."""
    if (
        word.expanded
        or _has_brace(word)
        or _has_extglob(word)
        or (word.plain[:1] == b"\x01" and word.value.startswith("~"))
    ):
        return RUNTIME
    return GLOB if _has_glob(word) else LITERAL


def _has_extglob(word: _Word) -> bool:
    """Unquoted ``@(...)``, ``!(...)``, ``+(...)``, ``*(...)``, ``?(...)`` (extglob patterns)."""
    value, plain = word.value, word.plain
    return any(plain[i] and value[i] in "@!+*?" and value[i + 1] == "(" for i in range(len(value) - 1))


def _fixed(word: _Word) -> bool:
    """Known before the command runs, and exactly one word."""
    return not word.expanded and not _has_glob(word) and not _has_brace(word)


def _is_assignment(word: _Word) -> bool:
    """``NAME=value`` (or ``NAME[sub]=``, ``NAME+=``) written with an unquoted name."""
    match = _ASSIGNMENT.match(word.value)
    if match is None:
        return False
    name_end, equals = match.end(1), match.end() - 1
    return 0 not in word.plain[:name_end] and word.plain[equals] == 1


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


_PLAIN_RUN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
_DQUOTE_RUN = re.compile(r'[^"\\$`]+')
_BLANKS = re.compile(r"[ \t]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLOB_CHAR = re.compile(r"[*?\[]")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")
_ARRAY_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_FD = re.compile(r"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")
_EXPANSION_START = re.compile(r"[\\$`]")
_ARITH_SPECIAL = re.compile(r"[\\'\"()]")
_DQUOTE_END = re.compile(r'[\\"]')
_BACKQUOTE_SPECIAL = re.compile(r"[\\`]")
_ANSI_C_END = re.compile(r"[\\']")
# Numbers and operators only; possessive quantifiers keep a failed match linear.
_PURE_ARITH = re.compile(r"(?:\s++|0[xX][0-9a-fA-F]++|[0-9]++#[0-9A-Za-z@_]++|[0-9]++|[-+*/%<>=!&|^~?:(),])*+")
_PARAM_HEAD = re.compile(r"([!#]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])")
_SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[(?:[0-9]+|@|\*)\])?")
_SAFE_NUMBER = re.compile(r"[-+]?[0-9]+|\$[?#$!]|\$\{[?#$!]\}|\$\{#[A-Za-z_][A-Za-z0-9_]*\}")
_ANSI_C_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|c(.))",
    re.DOTALL,
)
_ANSI_C_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}

_TOO_DEEP = f"the command line nests commands more than {MAX_DEPTH} levels deep"
_SKIPPED_KEYWORDS = frozenset(
    {"if", "then", "elif", "else", "fi", "while", "until", "do", "done", "!", "{", "}", "esac"}
)
_TEST_ARITH_OPERATORS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def _decode_ansi_c(body: str) -> str:
    """The value of ``$'body'``; like bash, the value ends at a NUL character."""

    def replace(match: re.Match[str]) -> str:
        simple, octal, hex2, hex_u, hex_big_u, control = match.groups()
        if simple is not None:
            return _ANSI_C_SIMPLE[simple]
        if control is not None:
            return chr(ord(control) & 0x1F)
        digits = octal or hex2 or hex_u or hex_big_u
        code = int(digits, 8 if octal is not None else 16)
        if octal is not None:
            code &= 0xFF
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return match.group()
        return chr(code)

    return _ANSI_C_ESCAPE.sub(replace, body).split("\x00", 1)[0]


# ---------------------------------------------------------------------------
# The parser


@dataclass(slots=True)
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool
    feeds_shell: bool = False


class _Parser:
    """Reads one piece of shell text, putting commands and problems into a sink.

    Nested texts (backquotes, ``sh -c`` scripts, ``eval`` arguments ...) get their own
    parser one level deeper, sharing the sink.
    """

    def __init__(self, text: str, sink: _Sink, depth: int) -> None:
        if depth > MAX_DEPTH:
            sink.problem(_TOO_DEEP)
            raise _Abort
        self.text = text
        self.end = len(text)
        self.pos = 0
        self.sink = sink
        self.depth = depth
        self.heredocs: list[_Heredoc] = []
        self.herestrings: list[_Word] = []  # the <<< words of the commands being read

    def parse(self) -> None:
        """Read the whole text as a command line."""
        self._list("")

    # -- low-level reading ------------------------------------------------

    def _fail(self, problem: str) -> NoReturn:
        self.sink.problem(problem)
        raise _Abort

    def _peek(self) -> str:
        """The current character, after any line continuations (backslash-newline)."""
        text, pos = self.text, self.pos
        while text.startswith("\\\n", pos):
            pos += 2
        self.pos = pos
        return text[pos] if pos < self.end else ""

    def _peek2(self) -> str:
        """The character after the current one, skipping line continuations."""
        self._peek()
        pos = self.pos + 1
        while self.text.startswith("\\\n", pos):
            pos += 2
        return self.text[pos] if pos < self.end else ""

    def _take(self, char: str) -> bool:
        if self._peek() == char:
            self.pos += 1
            return True
        return False

    def _blanks(self) -> None:
        while self._peek() in (" ", "\t"):
            match = _BLANKS.match(self.text, self.pos)
            if match is None:
                return
            self.pos = match.end()

    def _comment(self) -> None:
        newline = self.text.find("\n", self.pos)
        self.pos = newline if newline >= 0 else self.end

    def _newline(self) -> None:
        self.pos += 1
        if self.heredocs:
            self._read_heredocs()

    def _blank_lines(self) -> None:
        """Blanks, newlines and comments."""
        while True:
            self._blanks()
            char = self._peek()
            if char == "\n":
                self._newline()
            elif char == "#":
                self._comment()
            else:
                return

    @contextmanager
    def _nested(self) -> Iterator[None]:
        if self.depth >= MAX_DEPTH:
            self._fail(_TOO_DEEP)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def _sub_parse(self, text: str) -> None:
        """Split ``text`` as a command line of its own, one level deeper."""
        try:
            _Parser(text, self.sink, self.depth + 1).parse()
        except _Abort:
            pass  # recorded; the enclosing text goes on, its extent is known

    def _sub_expansions(self, text: str) -> None:
        """Run the substitutions in ``text``, which is otherwise data."""
        try:
            _Parser(text, self.sink, self.depth + 1)._expansions()
        except _Abort:
            pass

    # -- lists and commands --------------------------------------------------

    def _list(self, closer: str) -> str:
        """Commands up to ``closer``: "" (end of text), ")" (consumed), or "case".

        For "case" the list ends after ``;;`` / ``;&`` / ``;;&`` (returning ";;") or
        before an ``esac`` in command position (returning "esac").
        """
        while True:
            self._blanks()
            char = self._peek()
            if not char:
                if closer == ")":
                    self._fail("a '(' or '$(' is not closed")
                if closer == "case":
                    self._fail("a case statement is not closed with esac")
                return ""
            if char == "\n":
                self._newline()
            elif char == "#":
                self._comment()
            elif char == ")":
                self.pos += 1
                if closer == ")":
                    return ""
                self.sink.problem("a ')' has no matching '('")
            elif char == ";":
                self.pos += 1
                if self._take(";") or self._take("&"):
                    self._take("&")
                    if closer == "case":
                        return ";;"
                    self.sink.problem("';;' appears outside a case statement")
            elif char == "|":
                self.pos += 1
                if not self._take("|"):
                    self._take("&")
            elif char == "&" and self._peek2() != ">":
                self.pos += 1
                self._take("&")
            elif self._command(closer):
                return "esac"

    def _command(self, closer: str) -> bool:
        """One simple command, with any keywords before it; True if it stopped before ``esac``."""
        words: list[_Word] = []
        assignments: list[_Word] = []
        heredocs_before, herestrings_before = len(self.heredocs), len(self.herestrings)
        header = ""  # "for-name", "for-in", "for-list" or "for-arith" while reading a for/select header
        after_time = False
        posix_break = -1  # len(words) at the first "&>", which ends the command in POSIX sh
        while True:
            self._blanks()
            char = self._peek()
            if not char or char in "\n;|)#" or (char == "&" and self._peek2() != ">"):
                break
            at_start = not words and not assignments and not header
            if char == "(":
                if header == "for-name" and self._arith_command():
                    header = "for-arith"
                elif at_start:
                    if not self._arith_command():
                        self.pos += 1
                        with self._nested():
                            self._list(")")
                elif len(words) == 1 and not assignments and not header and self._function_parens():
                    self.sink.problem(
                        f"a function ({_short(words[0].value)}) is defined: its body runs later under that name"
                    )
                    words = []
                else:
                    self._fail("a '(' appears where a command cannot start")
                continue
            if (char in "<>" and self._peek2() != "(") or char == "&":
                if self._redirection() in ("&>", "&>>") and posix_break < 0:
                    posix_break = len(words)
                continue
            start = self.pos
            word = self._word()
            if word is None:
                self._fail(f"unexpected character {char!r}")
            if self._peek() in ("<", ">") and self._peek2() != "(" and not word.quoted and _FD.fullmatch(word.value):
                if word.value.startswith("{"):  # "{fd}>file" stores the new descriptor's number in fd
                    _check_assigned_names("a redirection", [word.value[1:-1]], _Context(self.sink, self.depth))
                self._redirection()  # "2>file": the number is the redirected descriptor
                continue
            if header:
                if header == "for-name":
                    _check_assigned_names("a for/select loop", [word.value], _Context(self.sink, self.depth))
                header = self._for_header(header, word)
                continue
            if after_time:
                after_time = False
                if word.is_plain and word.value == "-p":
                    after_time = True
                    continue
                if word.is_plain and word.value == "--":
                    continue
            if at_start and word.is_plain:
                keyword = word.value
                if keyword == "esac" and closer == "case":
                    self.pos = start
                    return True
                if keyword in _SKIPPED_KEYWORDS:
                    continue
                if keyword == "time":
                    after_time = True
                    continue
                if keyword in ("for", "select"):
                    header = "for-name"
                    continue
                if keyword == "case":
                    self._case()
                    continue
                if keyword == "[[":
                    self._double_bracket()
                    continue
                if keyword == "function":
                    self._function_keyword()
                    continue
                if keyword == "coproc":
                    self.sink.problem("coproc starts a command in the background under a name")
                    continue
            if not words and _is_assignment(word):
                assignments.append(word)
                continue
            words.append(word)
        herestrings = self.herestrings[herestrings_before:]
        del self.herestrings[herestrings_before:]
        if header:
            return False
        ctx = _Context(self.sink, self.depth)
        feeds_shell = (herestrings or len(self.heredocs) > heredocs_before) and self._feeds_shell(words)
        if feeds_shell:
            for heredoc in self.heredocs[heredocs_before:]:
                heredoc.feeds_shell = True  # its body is split when it is read, after this line
        _finish(words, assignments, ctx)
        if 0 <= posix_break < len(words):
            # bash reads "a &>f b" as "a b" with a redirection; sh (dash) runs "a &" and then "b >f".
            ctx.problem(
                "'&>' is a redirection in bash but ends the command in sh, where the words after its target run as a command"
            )
            _finish(words[posix_break:], [], ctx)
        if feeds_shell:
            for herestring in herestrings:
                ctx.problem(
                    f"a here-string ({_short(herestring.value, 20)}) feeds its text to a shell, which runs it as a script"
                )
                self._sub_parse(herestring.value)
        return False

    def _feeds_shell(self, words: list[_Word]) -> bool:
        """Whether the input redirected into this command may be read by a shell as a script.

        True when a word is a shell's name (``bash``, ``sudo sh``, ``env bash -s`` ...), or
        the command is ``su``, ``sudo`` or ``doas``, which start a shell reading its input
        when given no command (``su``, ``sudo -s``, ``doas -s``). A command with no words carries the redirections of a compound command
        (``{ bash; } <<< x``, ``done <<< x``, ``(sh) <<< x``), whose commands have already
        been listed: then it is True when any command listed so far is a shell.
        """
        if words:
            return any(_is_shell_name(w) for w in words) or (
                not words[0].expanded and _basename(words[0].value) in _PRIVILEGE_WRAPPERS
            )
        return self.sink.started_shell()

    @staticmethod
    def _for_header(state: str, word: _Word) -> str:
        """The next state of a for/select header after ``word``; "" when the header ends.

        ``for NAME in WORDS`` ends at a separator (where ``do`` is just a word);
        ``for NAME do`` and ``for ((...)) do`` end at ``do``.
        """
        keyword = word.value if word.is_plain else ""
        if state == "for-name":
            return "for-in"
        if state in ("for-in", "for-arith") and keyword == "do":
            return ""
        if state == "for-arith":
            return state
        return "for-list"

    def _function_parens(self) -> bool:
        """Consume ``()`` of ``name()``; False (consuming nothing) if it is not there."""
        saved = self.pos
        self.pos += 1
        self._blanks()
        if self._take(")"):
            return True
        self.pos = saved
        return False

    def _function_keyword(self) -> None:
        self._blanks()
        name = self._word()
        self.sink.problem(
            f"a function ({_short(name.value if name else '?')}) is defined: its body runs later under that name"
        )
        self._blanks()
        if self._peek() == "(" and not self._function_parens():
            self._fail("a '(' appears where a command cannot start")

    def _redirection(self) -> str:
        """Read a redirection (its target's substitutions run); returns the operator.

        A redirection to or from a file is listed as a command of its own,
        ``(">", target)`` for writing and ``("<", target)`` for reading, so that rules
        see the files a line touches: an allow for ``echo *`` does not cover
        ``echo x > ~/.bashrc``, and ``cat < .env`` reads ``.env`` as surely as
        ``cat .env`` does."""
        operator = self._redirection_operator()
        self._blanks()
        target = self._word()
        if target is None:
            self._fail(f"a redirection ({operator}) has no target")
        if operator in ("<<", "<<-"):
            self.sink.problem(
                f"a here-document ({operator}{_short(target.value, 20)}) feeds text to a command, and that text is not checked"
            )
            self.heredocs.append(_Heredoc(target.value, operator == "<<-", not target.quoted and not target.expanded))
        elif operator == "<<<":
            self.herestrings.append(target)  # text, not a file; split if a shell reads it (see _command)
        elif operator in (">&", "<&") and (target.value == "-" or target.value.isdigit()):
            pass  # duplicates or closes a descriptor (2>&1, >&-): no file
        elif target.value not in _HARMLESS_TARGETS:
            self.sink.add(("<" if operator in ("<", "<&") else ">", target.value), "l" + _shape(target))
        return operator

    def _redirection_operator(self) -> str:
        char = self._peek()
        self.pos += 1
        if char == "&":
            self._take(">")
            return "&>>" if self._take(">") else "&>"
        if char == "<":
            if self._take("<"):
                if self._take("<"):
                    return "<<<"
                return "<<-" if self._take("-") else "<<"
            if self._take(">"):
                return "<>"
            return "<&" if self._take("&") else "<"
        if self._take(">"):
            return ">>"
        if self._take("&"):
            return ">&"
        self._take("|")
        return ">"

    def _read_heredocs(self) -> None:
        """Skip the bodies of the here-documents opened on the line just ended."""
        pending, self.heredocs = self.heredocs, []
        text = self.text
        for heredoc in pending:
            body_start = body_end = self.pos
            while self.pos < self.end:
                newline = text.find("\n", self.pos)
                line_end = newline if newline >= 0 else self.end
                line = text[self.pos : line_end]
                line_start, self.pos = self.pos, line_end + 1 if newline >= 0 else self.end
                if (line.lstrip("\t") if heredoc.strip_tabs else line) == heredoc.delimiter:
                    body_end = line_start
                    break
                body_end = self.pos
            body = text[body_start:body_end]
            if heredoc.feeds_shell:
                self._sub_parse(body)
            elif heredoc.expands:
                self._sub_expansions(body)

    def _case(self) -> None:
        self.sink.problem("a case statement picks its commands by matching patterns at run time")
        with self._nested():
            self._blank_lines()
            if self._word() is None:
                self._fail("a case statement has no subject")
            self._blank_lines()
            keyword = self._word()
            if keyword is None or not keyword.is_plain or keyword.value != "in":
                self._fail("a case statement lacks 'in'")
            while True:
                self._blank_lines()
                if not self._peek():
                    self._fail("a case statement is not closed with esac")
                if not self._take("("):
                    first = self._word()
                    if first is not None and first.is_plain and first.value == "esac":
                        return
                self._case_patterns()
                if self._list("case") == "esac":
                    self._blanks()
                    self._word()
                    return

    def _case_patterns(self) -> None:
        while True:
            self._blanks()
            char = self._peek()
            if char == ")":
                self.pos += 1
                return
            if char == "|":
                self.pos += 1
            elif not char or char in "\n;&(<>" or self._word() is None:
                self._fail("a case pattern is malformed")

    def _double_bracket(self) -> None:
        """``[[ ... ]]``: listed as the command ``[[``; its operands are checked."""
        tokens: list[_Word] = []
        while True:
            self._blanks()
            char = self._peek()
            if not char:
                self._fail("a [[ test is not closed with ]]")
            if char == "\n":
                self._newline()
                continue
            if char in "&|":
                self.pos += 1
                if not self._take(char):
                    self._fail(f"a single '{char}' inside [[ ]]")
                tokens.append(_literal_word(char * 2))
                continue
            if char in "()<>":
                self.pos += 1
                tokens.append(_literal_word(char))
                continue
            if char == ";":
                self._fail("a ';' inside [[ ]]")
            regex = bool(tokens) and tokens[-1].is_plain and tokens[-1].value == "=~"
            word = self._regex_word() if regex else self._word()
            if word is None:
                self._fail(f"unexpected character {char!r} inside [[ ]]")
            if word.is_plain and word.value == "]]":
                break
            tokens.append(word)
        ctx = _Context(self.sink, self.depth)
        _check_test_operands("[[", tokens, ctx)
        ctx.emit(["[[", *(t.value for t in tokens), "]]"], "l" + "".join(_shape(t) for t in tokens) + "l")

    # -- words -----------------------------------------------------------------

    def _word(self) -> _Word | None:
        """The next word, or None when the current character cannot start one."""
        builder = _WordBuilder()
        text = self.text
        while True:
            char = self._peek()
            if not char:
                break
            match = _PLAIN_RUN.match(text, self.pos)
            if match is not None:
                builder.add_plain(match.group())
                self.pos = match.end()
            elif char == "'":
                close = text.find("'", self.pos + 1)
                if close < 0:
                    self._fail("a single quote is not closed")
                builder.add_quoted(text[self.pos + 1 : close])
                self.pos = close + 1
            elif char == '"':
                self._double_quoted(builder)
            elif char == "\\":
                # A backslash quotes the next character; a trailing one stays itself.
                builder.add_quoted(text[self.pos + 1 : self.pos + 2] or "\\")
                self.pos = min(self.pos + 2, self.end)
            elif char == "$":
                self._dollar(builder, quoted=False)
            elif char == "`":
                self._backquote(builder, quoted=False)
            elif char in "<>" and self._peek2() == "(":
                self._process_substitution(builder)
            elif (
                char == "(" and not builder.quoted and not builder.expanded and _ARRAY_PREFIX.fullmatch(builder.text())
            ):
                self._array_literal(builder)
            else:
                break
        return builder.build() if builder.started else None

    def _regex_word(self) -> _Word | None:
        """The right side of ``=~``, where ( ) | < > & belong to the word."""
        builder = _WordBuilder()
        depth = 0
        while True:
            char = self._peek()
            if not char or (depth == 0 and char in " \t\n;"):
                break
            if char in "()|<>&":
                depth += {"(": 1, ")": -1}.get(char, 0)
                builder.add_plain(char)
                self.pos += 1
            elif char in " \t":
                builder.add_plain(char)
                self.pos += 1
            else:
                word = self._word()
                if word is None:
                    break
                builder.parts.append(word.value)
                builder.mask += word.plain
                builder.started = True
                builder.quoted |= word.quoted
                builder.expanded |= word.expanded
        return builder.build() if builder.started else None

    def _double_quoted(self, builder: _WordBuilder) -> None:
        self.pos += 1
        builder.add_quoted("")
        text = self.text
        while True:
            char = self._peek()
            if not char:
                self._fail("a double quote is not closed")
            if char == '"':
                self.pos += 1
                return
            match = _DQUOTE_RUN.match(text, self.pos)
            if match is not None:
                builder.add_quoted(match.group())
                self.pos = match.end()
            elif char == "\\":
                following = text[self.pos + 1 : self.pos + 2]
                if following and following in '$`"\\':
                    builder.add_quoted(following)
                    self.pos += 2
                else:
                    builder.add_quoted("\\")
                    self.pos += 1
            elif char == "$":
                self._dollar(builder, quoted=True)
            else:
                self._backquote(builder, quoted=True)

    def _dollar(self, builder: _WordBuilder, *, quoted: bool) -> None:
        start = self.pos
        self.pos += 1
        char = self._peek()
        if char == "(":
            if self.text.startswith("((", self.pos) and self._arith_expansion():
                pass
            else:
                self.pos += 1
                with self._nested():
                    self._list(")")
        elif char == "{":
            self._parameter(quoted=quoted)
        elif char == "[":
            self._old_arith()
        elif char == "'" and not quoted:
            self._ansi_c(builder)
            return
        elif char == '"' and not quoted:
            self._double_quoted(builder)  # $"..." (translated text) reads like "..."
            return
        elif (name := _NAME.match(self.text, self.pos)) is not None:
            self.pos = name.end()
        elif char and char in "0123456789@*#?$!-":
            self.pos += 1
        else:
            # A lone "$" is an ordinary character.
            if quoted:
                builder.add_quoted("$")
            else:
                builder.add_plain("$")
            return
        builder.add_expansion(self.text[start : self.pos], splits=not quoted)

    def _ansi_c(self, builder: _WordBuilder) -> None:
        """``$'...'`` with its backslash escapes decoded."""
        body_start = i = self.pos + 1
        text = self.text
        while True:
            match = _ANSI_C_END.search(text, i)
            if match is None:
                self._fail("a $'...' quote is not closed")
            if text[match.start()] == "'":
                break
            i = match.start() + 2
        builder.add_quoted(_decode_ansi_c(text[body_start : match.start()]))
        self.pos = match.end()

    def _backquote(self, builder: _WordBuilder, *, quoted: bool) -> None:
        """`` `...` ``: the text, with its backslash escapes undone, is split as a command line."""
        start = self.pos
        text = self.text
        chunks: list[str] = []
        i = start + 1
        while True:
            match = _BACKQUOTE_SPECIAL.search(text, i)
            if match is None:
                self._fail("a backquote is not closed")
            j = match.start()
            chunks.append(text[i:j])
            if text[j] == "`":
                break
            following = text[j + 1 : j + 2]
            if following in ("$", "`", "\\") or (quoted and following == '"'):
                chunks.append(following)
            elif following != "\n":
                chunks.append("\\" + following)
            i = j + 2
        self.pos = j + 1
        builder.add_expansion(text[start : self.pos], splits=not quoted)
        self._sub_parse("".join(chunks))

    def _process_substitution(self, builder: _WordBuilder) -> None:
        start = self.pos
        self.pos += 1
        self._take("(")
        with self._nested():
            self._list(")")
        builder.add_expansion(self.text[start : self.pos], splits=False)

    def _array_literal(self, builder: _WordBuilder) -> None:
        """``name=(a b c)``: the elements are words (their substitutions run)."""
        start = self.pos
        self.pos += 1
        expanded = False
        with self._nested():
            while True:
                self._blank_lines()
                char = self._peek()
                if not char:
                    self._fail("an array assignment is not closed")
                if char == ")":
                    self.pos += 1
                    break
                element = self._word()
                if element is None:
                    self._fail(f"unexpected character {char!r} in an array assignment")
                expanded = expanded or element.expanded
                subscript = re.match(r"\[([^\]]*)\]=", element.value)
                if subscript is not None and not _PURE_ARITH.fullmatch(subscript.group(1)):
                    self.sink.problem(_arith_problem(subscript.group(1)))
        source = self.text[start : self.pos]
        if expanded:
            builder.add_expansion(source, splits=False)
        else:
            builder.add_quoted(source)

    # -- arithmetic and parameters ------------------------------------------

    def _arith_end(self, i: int) -> int:
        """Where ``))`` closes arithmetic whose body starts at ``i``; -1 if it is not arithmetic."""
        text = self.text
        depth = 0
        while True:
            match = _ARITH_SPECIAL.search(text, i)
            if match is None:
                return -1
            i = match.start()
            char = text[i]
            if char == "\\":
                i += 2
                continue
            if char == "'":
                close = text.find("'", i + 1)
                if close < 0:
                    return -1
                i = close + 1
                continue
            if char == '"':
                close = self._closing_dquote(i + 1)
                if close < 0:
                    return -1
                i = close + 1
                continue
            if char == "(":
                depth += 1
                if depth > MAX_DEPTH * 16:
                    return -1  # read as nested subshells instead, which stop at MAX_DEPTH
            elif depth:
                depth -= 1
            else:
                return i if text.startswith(")", i + 1) else -1
            i += 1

    def _closing_dquote(self, i: int) -> int:
        while True:
            match = _DQUOTE_END.search(self.text, i)
            if match is None:
                return -1
            if self.text[match.start()] == '"':
                return match.start()
            i = match.start() + 2

    def _arith_expansion(self) -> bool:
        """``$((...))`` at ``((``; False (consuming nothing) when it is ``$( (...) )`` instead."""
        end = self._arith_end(self.pos + 2)
        if end < 0:
            return False
        self._check_arith(self.text[self.pos + 2 : end])
        self.pos = end + 2
        return True

    def _arith_command(self) -> bool:
        """``((...))`` at the current ``(``; False (consuming nothing) when it is a subshell."""
        if not self.text.startswith("((", self.pos):
            return False
        return self._arith_expansion()

    def _old_arith(self) -> None:
        """``$[...]``, the old spelling of ``$((...))``."""
        start = self.pos + 1
        depth, i = 0, start
        text = self.text
        while i < self.end:
            char = text[i]
            if char == "[":
                depth += 1
            elif char == "]":
                if depth == 0:
                    break
                depth -= 1
            i += 1
        else:
            self._fail("a '$[' is not closed")
        self._check_arith(text[start:i])
        self.pos = i + 1

    def _check_arith(self, body: str) -> None:
        if _PURE_ARITH.fullmatch(body):
            return
        self.sink.problem(_arith_problem(body))
        self._sub_expansions(body)

    def _parameter(self, *, quoted: bool) -> None:
        """``${...}``: nested substitutions run; forms that can run commands set a problem."""
        self.pos += 1  # the "{"
        with self._nested():
            head = _PARAM_HEAD.match(self.text, self.pos)
            if head is None:
                self.sink.problem(
                    f"a parameter expansion is malformed ({_short(self.text[self.pos - 2 : self.pos + 20])})"
                )
                prefix, name = "", ""
            else:
                prefix, name = head.group(1), head.group(2)
                self.pos = head.end()
            subscript = ""
            if self._peek() == "[":
                self.pos += 1
                subscript = self._expansion_text("]", quoted=quoted)
                self.pos += 1
            rest = self._expansion_text("}", quoted=quoted)
            self.pos += 1
        self._check_parameter(prefix, name, subscript, rest)

    def _check_parameter(self, prefix: str, name: str, subscript: str, rest: str) -> None:
        shown = f"${{{prefix}{name}{'[' + subscript + ']' if subscript else ''}{rest}}}"
        if prefix == "!" and not (rest in ("*", "@") or (subscript in ("@", "*") and not rest)):
            self.sink.problem(
                f"an indirect expansion ({_short(shown)}) reads a variable named at run time, which can run commands through an array subscript"
            )
        if subscript and subscript not in ("@", "*") and not _PURE_ARITH.fullmatch(subscript):
            self.sink.problem(_arith_problem(subscript))
        if not prefix and rest.startswith((":=", "=")):
            _check_assigned_names(f"an expansion ({_short(shown)})", [name], _Context(self.sink, self.depth))
        if rest.startswith("@") and "P" in rest[1:2]:
            self.sink.problem(f"a prompt expansion ({_short(shown)}) runs the command substitutions held in a variable")
        if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+"):
            offsets = rest[1:]
            if not _PURE_ARITH.fullmatch(offsets):
                self.sink.problem(_arith_problem(offsets))

    def _expansion_text(self, stop: str, *, quoted: bool) -> str:
        """Raw text up to an unquoted ``stop`` (not consumed), running nested substitutions."""
        start = self.pos
        opening = "[" if stop == "]" else "{"
        depth = 0
        scratch = _WordBuilder()
        text = self.text
        while True:
            char = self._peek()
            if not char:
                self._fail(f"a '{'${' if stop == '}' else '['}' is not closed")
            if char == stop:
                if depth == 0:
                    return text[start : self.pos]
                depth -= 1
                self.pos += 1
            elif char == opening:
                depth += 1
                self.pos += 1
            elif char == "'":
                close = text.find("'", self.pos + 1)
                if close < 0:
                    self._fail("a single quote is not closed")
                if quoted:
                    # Inside "${...}" single quotes do not stop substitutions.
                    self._sub_expansions(text[self.pos + 1 : close])
                self.pos = close + 1
            elif char == '"':
                self._double_quoted(scratch)
            elif char == "\\":
                self.pos = min(self.pos + 2, self.end)
            elif char == "$":
                self._dollar(scratch, quoted=True)
            elif char == "`":
                self._backquote(scratch, quoted=True)
            else:
                self.pos += 1

    def _expansions(self) -> None:
        """Run the substitutions in this parser's text, which is otherwise data."""
        scratch = _WordBuilder()
        text = self.text
        while True:
            match = _EXPANSION_START.search(text, self.pos)
            if match is None:
                return
            self.pos = match.start()
            char = text[self.pos]
            if char == "\\":
                self.pos += 2
            elif char == "$":
                self._dollar(scratch, quoted=True)
            else:
                self._backquote(scratch, quoted=True)

    def lone_words(self) -> list[_Word] | None:
        """The text as the words of one command, or None if it holds more than that."""
        words: list[_Word] = []
        while True:
            self._blanks()
            char = self._peek()
            if not char or char == "#":
                return words
            if char in "\n;&|()<>":
                return None
            word = self._word()
            if word is None:
                return None
            words.append(word)


def _arith_problem(expression: str) -> str:
    return f"arithmetic ({_short(expression, 40)}) reads variables, whose values can run commands through an array subscript"


# ---------------------------------------------------------------------------
# Resolving simple commands: names, wrappers and commands that run commands


@dataclass(slots=True)
class _Context:
    sink: _Sink
    depth: int

    def emit(self, argv: Sequence[str], shape: str | None = None) -> None:
        self.sink.add(tuple(argv), shape)

    def emit_words(self, name: str | None, words: Sequence[_Word]) -> None:
        """List the command ``words`` (``argv[0]`` replaced by ``name`` when it is known)."""
        self.sink.add_braces(words)
        if name is None:
            self.sink.add(tuple(w.value for w in words), "".join(_shape(w) for w in words))
        else:
            self.sink.add((name, *(w.value for w in words[1:])), "l" + "".join(_shape(w) for w in words[1:]))

    def problem(self, text: str) -> None:
        self.sink.problem(text)

    def deeper(self) -> _Context | None:
        if self.depth >= MAX_DEPTH:
            self.sink.problem(_TOO_DEEP)
            return None
        return _Context(self.sink, self.depth + 1)

    def parse_line(self, text: str) -> None:
        """Split ``text`` as a command line that this command runs."""
        if text == XARGS_INPUT:
            return  # only a stand-in for unknown text: the caller has set a problem
        try:
            _Parser(text, self.sink, self.depth + 1).parse()
        except _Abort:
            pass

    def scan_expansions(self, text: str) -> None:
        """List the command substitutions in ``text``, which is otherwise data."""
        try:
            _Parser(text, self.sink, self.depth + 1)._expansions()
        except _Abort:
            pass

    def split_words(self, text: str) -> list[_Word] | None:
        """``text`` as the words of one command (for ``env -S``); None if it is more."""
        try:
            return _Parser(text, self.sink, self.depth + 1).lone_words()
        except _Abort:
            return None


_Handler = Callable[[str, list[_Word], _Context], None]


def _finish(words: list[_Word], assignments: list[_Word], ctx: _Context) -> None:
    for assignment in assignments:
        match = _ASSIGNMENT.match(assignment.value)
        if match is not None:
            _check_variable(match.group(1), assignment.value[match.end() :], not assignment.expanded, ctx)
        subscript = re.match(r"[A-Za-z_][A-Za-z0-9_]*\[([^\]]*)\]", assignment.value)
        if subscript is not None and not _PURE_ARITH.fullmatch(subscript.group(1)):
            ctx.problem(_arith_problem(subscript.group(1)))
    if words:
        _resolve(words, ctx)


def _resolve(words: list[_Word], ctx: _Context) -> None:
    """List the command ``words`` runs, unwrapping wrappers."""
    head = words[0]
    if not _name_known(head, ctx):
        ctx.emit_words(None, words)
        return
    name = _basename(head.value)
    handler = _HANDLERS.get(name)
    if handler is None:
        ctx.emit_words(name, words)
    else:
        handler(name, words, ctx)


def _name_known(word: _Word, ctx: _Context) -> bool:
    if word.expanded:
        ctx.problem(
            f"the command name comes from an expansion ({_short(word.value)}), so the command is only known at run time"
        )
        return False
    if _has_glob(word):
        ctx.problem(
            f"the command name is a glob pattern ({_short(word.value)}), so the command depends on the files present"
        )
        return False
    if _has_brace(word):
        ctx.problem(
            f"the command name uses brace expansion ({_short(word.value)}), which can turn it into another command"
        )
        return False
    return True


def _argv(name: str, words: list[_Word]) -> list[str]:
    return [name, *(w.value for w in words[1:])]


def _is_shell_name(word: _Word) -> bool:
    return not word.expanded and _basename(word.value) in _SHELLS


# Variables whose value a program (or the shell) runs as a command line.
_COMMAND_VARIABLES = frozenset(
    {
        "PROMPT_COMMAND", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "MANPAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
        "EDITOR", "VISUAL", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "RSYNC_RSH", "CVS_RSH",
        # build tools run these (make's implicit rules, configure, cargo, pip builds)
        "CC", "CXX", "CPP", "LD", "AR", "AS", "FC", "MAKE", "SHELL", "RUSTC", "RUSTDOC", "RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
    }
)  # fmt: skip
_COMMAND_SUFFIXES = ("_COMMAND", "_CMD", "_PAGER", "_EDITOR", "ASKPASS")
# Prompts: their command substitutions run when the shell prints them (PS4 under set -x).
_PROMPT_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4"})
# Variables that make the shell or a program load code, settings or programs from
# somewhere this splitter cannot see: setting one (any way, to any value) is a problem.
# Names starting with _CODE_PREFIXES count too. Keep the module docstring in step.
_CODE_VARIABLES = frozenset(
    {
        # shell start-up and behaviour
        "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PATH", "IFS", "ZDOTDIR", "INPUTRC",
        # where programs find their configuration (a .gitconfig can run commands)
        "HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS", "GIT_CONFIG", "GIT_DIR",
        "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "CURL_HOME", "WGETRC", "SYSTEM_WGETRC", "RIPGREP_CONFIG_PATH",
        "KUBECONFIG", "DOCKER_CONFIG", "CARGO_HOME", "GNUPGHOME", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES",
        "PIP_CONFIG_FILE", "UV_CONFIG_FILE", "POETRY_CONFIG_DIR", "GOENV", "GOFLAGS", "GOTOOLCHAIN", "GOROOT",
        "VIMINIT", "EXINIT", "GVIMINIT", "MYVIMRC", "VIMRUNTIME", "VIM", "EMACSLOADPATH", "AWKPATH", "AWKLIBPATH",
        "GLIBC_TUNABLES",
        # options a program reads from the environment, as if given on its command line
        "TAR_OPTIONS", "GREP_OPTIONS", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS",
        "MAKEFILES", "LESS", "LESSKEY", "LESSKEYIN", "LESSKEY_CONTENT", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM", "MANOPT",
        "ZIPOPT", "ZIP", "UNZIP", "UNZIPOPT", "GZIP", "BZIP", "BZIP2", "XZ_OPT", "XZ_DEFAULTS", "CFLAGS", "CXXFLAGS",
        "CPPFLAGS", "LDFLAGS", "RUSTFLAGS", "NODE_REPL_EXTERNAL_MODULE",
        # libraries and interpreter start-up
        "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH",
        "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
        "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "NODE_OPTIONS", "NODE_PATH",
        "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "PERL5SHELL", "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH",
        "BUNDLE_GEMFILE", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
        # helpers other programs start
        "LESSOPEN", "LESSCLOSE", "BROWSER",
    }
)  # fmt: skip
# GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n>, GIT_CONFIG_VALUE_<n> ...
_CODE_PREFIXES = ("BASH_FUNC_", "GIT_CONFIG_", "DYLD_", "PIP_", "NPM_CONFIG_", "YARN_", "CARGO_")
# git reads many variables that point it at other repositories, configs, object stores
# or programs (GIT_COMMON_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_ALLOW_PROTOCOL ...):
# every GIT_ name is a problem but these, which only change messages, identities and
# limits, the command variables above, and the trace variables (a file git writes).
_GIT_SAFE_VARIABLES = frozenset(
    {
        "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "GIT_FLUSH", "GIT_MERGE_VERBOSITY",
        "GIT_MERGE_AUTOEDIT", "GIT_NO_REPLACE_OBJECTS", "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_PAGER_IN_USE", "GIT_ADVICE", "GIT_PROGRESS_DELAY",
        "GIT_DEFAULT_HASH", "GIT_DEFAULT_REF_FORMAT", "GIT_REFLOG_ACTION", "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_HTTP_USER_AGENT", "GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME",
        "GIT_HTTP_MAX_REQUESTS", "GIT_CURL_VERBOSE", "GIT_REDACT_COOKIES", "GIT_TRACE_REDACT", "GIT_TRACE2_REDACT",
        "GIT_TRACE2_CONFIG_PARAMS", "GIT_TRACE2_ENV_VARS", "GIT_TRACE2_MAX_FILES", "GIT_TRACE2_BRIEF",
        "GIT_TRACE2_PERF_BRIEF", "GIT_TRACE2_EVENT_BRIEF", "GIT_TRACE2_EVENT_NESTING", "GIT_PROTOCOL_FROM_USER",
        "GIT_SSL_NO_VERIFY", "GIT_QUIET",
    }
)  # fmt: skip
# Variables naming a file (or folder) a program writes: the value is judged as a write,
# like a redirection.
_WRITTEN_FILE_VARIABLES = frozenset(
    {
        "SSLKEYLOGFILE", "LD_DEBUG_OUTPUT", "LD_PROFILE_OUTPUT", "TAPE", "TMPDIR", "TMP", "TEMP", "TEMPDIR",
        "HISTFILE", "LESSHISTFILE", "NODE_REPL_HISTORY", "PYTHON_HISTORY", "SQLITE_HISTORY", "PSQL_HISTORY",
        "MYSQL_HISTFILE", "REDISCLI_HISTFILE", "COVERAGE_FILE", "PYTHONPYCACHEPREFIX", "CCACHE_DIR", "XDG_CACHE_HOME",
        "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    }
)  # fmt: skip
# Variables naming a file a program reads (certificates, netrc): judged as a read.
_READ_FILE_VARIABLES = frozenset(
    {
        "CURL_CA_BUNDLE",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "NETRC",
        "HOSTALIASES",
    }
)
# LD_ names the dynamic loader reads only as switches; any other LD_ name loads code or writes a file.
_LD_SWITCHES = frozenset(
    {
        "LD_DEBUG",
        "LD_BIND_NOW",
        "LD_BIND_NOT",
        "LD_WARN",
        "LD_VERBOSE",
        "LD_SHOW_AUXV",
        "LD_TRACE_LOADED_OBJECTS",
        "LD_DYNAMIC_WEAK",
        "LD_POINTER_GUARD",
    }
)
# Values of GIT_TRACE* that send the trace to standard error or a descriptor, not a file.
_TRACE_SWITCHES = frozenset(
    {"", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "true", "false", "yes", "no", "on", "off"}
)
# Characters an IFS value may hold and still only remove split points from the default.
_DEFAULT_IFS = frozenset(" \t\n")
# System directories a literal PATH may list (``env -i PATH=/bin cmd``); anything else
# (``.``, an empty entry, a relative or workspace directory, an expansion) is a problem.
_SYSTEM_PATH_DIRS = frozenset({"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})


def _loads_code(name: str, value: str, literal: bool) -> bool:
    """Whether setting ``name`` to ``value`` can make the shell or a program load unseen code."""
    if name == "IFS":
        return not (literal and set(value) <= _DEFAULT_IFS)
    if name == "PATH":
        return not (literal and all(directory.rstrip("/") in _SYSTEM_PATH_DIRS for directory in value.split(":")))
    if name in _CODE_VARIABLES or name.upper().startswith(_CODE_PREFIXES):
        return True
    if name.startswith("GIT_"):
        return name not in _GIT_SAFE_VARIABLES and not name.startswith("GIT_TRACE") and not _runs_value(name)
    if name.startswith("LD_"):
        return name not in _LD_SWITCHES and name not in _WRITTEN_FILE_VARIABLES
    return False


def _runs_value(name: str) -> bool:
    """Whether the shell or a program runs ``name``'s value as a command line or prompt."""
    return name in _COMMAND_VARIABLES or name.endswith(_COMMAND_SUFFIXES) or name in _PROMPT_VARIABLES


def _names_file(name: str) -> str | None:
    """``>`` when a program writes the file ``name``'s value names, ``<`` when it reads it."""
    if name in _WRITTEN_FILE_VARIABLES or (name.startswith("GIT_TRACE") and name not in _GIT_SAFE_VARIABLES):
        return ">"
    if name in _READ_FILE_VARIABLES:
        return "<"
    return None


def _check_variable(name: str, value: str, literal: bool, ctx: _Context) -> None:
    """Some variables make programs run their value, or files it names, as code, or
    write or read the file it names.

    A command-line value (``GIT_PAGER=cat``) is split and listed like any command;
    one that is only known at run time, or that names code elsewhere, is a problem.
    A variable can be both (``PROMPT_COMMAND``): then it is a problem and its
    commands are listed. A file a variable names (``GIT_TRACE=/tmp/t``, ``TMPDIR=x``)
    is listed like a redirection, ``(">", file)`` or ``("<", file)``.
    """
    if _loads_code(name, value, literal):
        ctx.problem(
            f"the variable {name} is set, and it changes which code, settings or programs the shell and the programs it starts load, which this check cannot see"
        )
    if _runs_value(name):
        if not literal:
            ctx.problem(f"the variable {name} holds a command that is only known at run time")
        elif name in _PROMPT_VARIABLES:
            ctx.scan_expansions(value)
        else:
            ctx.parse_line(value)
    direction = _names_file(name)
    if direction is not None:
        target = value
        if name.startswith("GIT_TRACE"):
            if target.lower() in _TRACE_SWITCHES:
                return
            target = re.sub(r"^af_unix:(?:stream:|dgram:)?", "", target)
        if target:
            # Like an assignment's value, a leading ~ is expanded: somewhere only known at run time.
            ctx.emit((direction, target), "l" + ("l" if literal and not target.startswith("~") else RUNTIME))


def _check_assigned_names(what: str, names: Sequence[str], ctx: _Context) -> None:
    """``what`` assigns the variables ``names`` a value only known at run time."""
    for variable in names:
        name = variable.partition("[")[0]
        if _loads_code(name, "", False) or _runs_value(name) or _names_file(name):
            ctx.problem(
                f"{what} sets the variable {name} to a value only known at run time, and that variable makes the shell or programs run or load code, or names a file they write or read"
            )


# -- option scanning -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Options:
    """Which options of a wrapper take a value (so the command starts after it)."""

    short_values: str = ""  # "-u USER" or "-uUSER"
    long_values: frozenset[str] = frozenset()  # "--user USER" ("--user=USER" always works)
    short_optional: str = ""  # "-e[EOF]": a value only when attached
    numbers: bool = False  # "-5" is an option (nice)


_NUMBER_OPTION = re.compile(r"-[+-]?[0-9]+")


def _abbreviates(option: str, long_values: frozenset[str]) -> bool:
    return len(option) > 3 and any(full.startswith(option) for full in long_values)


def _scan_options(words: list[_Word], start: int, spec: _Options) -> tuple[int, list[tuple[str, str | None]]]:
    """Skip the options at ``words[start:]``: the index of the first operand, and the options seen."""
    seen: list[tuple[str, str | None]] = []
    i, count = start, len(words)
    while i < count:
        value = words[i].value
        if value == "--":
            return i + 1, seen
        if value.startswith("--"):
            option, equals, attached = value.partition("=")
            if equals:
                seen.append((option, attached))
                i += 1
            elif i + 1 < count and (option in spec.long_values or _abbreviates(option, spec.long_values)):
                # getopt_long takes any unambiguous prefix (--out x is --output x).
                full = (
                    option
                    if option in spec.long_values
                    else next(v for v in sorted(spec.long_values) if v.startswith(option))
                )
                seen.append((full, words[i + 1].value))
                i += 2
            else:
                seen.append((option, None))
                i += 1
            continue
        if len(value) < 2 or value[0] != "-":
            break
        i += 1
        if spec.numbers and _NUMBER_OPTION.fullmatch(value):
            seen.append(("-n", value[1:]))
            continue
        for j in range(1, len(value)):
            letter = value[j]
            if letter in spec.short_values:
                given: str | None = value[j + 1 :]
                if not given and i < count:
                    given = words[i].value  # the value is the next word
                    i += 1
                seen.append(("-" + letter, given or None))
                break
            if letter in spec.short_optional:
                seen.append(("-" + letter, value[j + 1 :] or None))
                break
            seen.append(("-" + letter, None))
    return i, seen


def _wrapped(
    name: str, words: list[_Word], i: int, ctx: _Context, *, visible: bool = False, extra: Sequence[_Word] = ()
) -> None:
    """The wrapper ``words`` runs ``words[i:]``: list that command (and the wrapper if visible)."""
    if visible or i >= len(words):
        ctx.emit_words(name, words)
    if i >= len(words):
        return
    if not all(_fixed(w) or _quoted_assignment(w) for w in words[1:i]):
        ctx.problem(
            f"the options of {name} are only known at run time, so the command it runs is unclear ({_short(' '.join(_argv(name, words)))})"
        )
    inner = ctx.deeper()
    if inner is not None:
        _resolve([*words[i:], *extra], inner)


_NO_OPTIONS = _Options()


def _quoted_assignment(word: _Word) -> bool:
    """``NAME="$value"``: one word whatever the value, so it cannot move the command."""
    return not word.split and not _has_glob(word) and not _has_brace(word) and _ASSIGNMENT.match(word.value) is not None


def _emit_files(seen: list[tuple[str, str | None]], files: Mapping[str, str], ctx: _Context) -> None:
    """A wrapper's options that name a file it writes (``time -o``) or reads (``xargs -a``):
    listed like redirections."""
    for option, value in seen:
        direction = files.get(option)
        if direction is None and option.startswith("--") and len(option) > 3:
            direction = next((d for key, d in files.items() if key.startswith(option)), None)
        if direction is not None and value:
            ctx.emit((direction, value), "l" + (RUNTIME if value.startswith("~") else LITERAL))


def _wrapper(
    spec: _Options = _NO_OPTIONS,
    *,
    operands: int = 0,
    no_command: frozenset[str] = frozenset(),
    visible: bool = False,
    files: Mapping[str, str] | None = None,
) -> _Handler:
    """A handler for a wrapper: options, ``operands`` fixed operands, then the command.
    ``files``: options whose value is a file the wrapper writes (``>``) or reads (``<``)."""

    def handle(name: str, words: list[_Word], ctx: _Context) -> None:
        i, seen = _scan_options(words, 1, spec)
        if files:
            _emit_files(seen, files, ctx)
        if any(option in no_command for option, _ in seen):
            ctx.emit_words(name, words)
            return
        _wrapped(name, words, i + operands, ctx, visible=visible)

    return handle


# -- handlers ------------------------------------------------------------------


def _env(name: str, words: list[_Word], ctx: _Context) -> None:
    words = list(words)
    i, splits = 1, 0
    while i < len(words):
        value = words[i].value
        if value == "--":
            i += 1
            break
        if value == "-":  # the old spelling of -i
            i += 1
            continue
        if not value.startswith("-"):
            break
        split_text: str | None = None
        width = 1
        if value.startswith("--"):
            option, equals, attached = value.partition("=")
            if option in ("--unset", "--chdir", "--split-string") and not equals:
                width, attached = 2, words[i + 1].value if i + 1 < len(words) else ""
            if option == "--split-string":
                split_text = attached
        else:
            for j in range(1, len(value)):
                if value[j] in "uCS":
                    attached = value[j + 1 :]
                    if not attached:
                        width, attached = 2, words[i + 1].value if i + 1 < len(words) else ""
                    if value[j] == "S":
                        split_text = attached
                    break
        if (
            value.startswith("--ch")
            and "--chdir".startswith(value.partition("=")[0])
            or (not value.startswith("--") and "C" in value[1:])
        ):
            # The command runs in another directory: its relative paths are not where they seem.
            ctx.problem(
                f"{name} {_short(value, 30)} runs the command in another directory, so its paths cannot be placed"
            )
        if split_text is None:
            i += width
            continue
        # -S splits its string into arguments that take the option's place.
        splits += 1
        pieces = ctx.split_words(split_text) if splits <= MAX_DEPTH else None
        if pieces is None or not all(_fixed(w) for w in words[i : i + width]):
            ctx.problem(f"env -S splits a string that cannot be read with certainty ({_short(split_text)})")
            ctx.emit_words(name, words)
            return
        words[i : i + width] = pieces
    while i < len(words) and "=" in words[i].value[1:]:
        variable, _, value = words[i].value.partition("=")
        _check_variable(variable, value, not words[i].expanded, ctx)
        i += 1
    _wrapped(name, words, i, ctx)


_SUDO = _Options(
    short_values="CDgpRrTtUuac",
    short_optional="h",
    long_values=frozenset(
        {
            "--user",
            "--group",
            "--chdir",
            "--close-from",
            "--prompt",
            "--chroot",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
            "--auth-type",
            "--login-class",
        }
    ),
)
_SUDO_NO_COMMAND = frozenset(
    {"-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "--help", "-K", "--remove-timestamp"}
)


def _sudo(name: str, words: list[_Word], ctx: _Context) -> None:
    i, seen = _scan_options(words, 1, _SUDO)
    if any(option in ("-D", "--chdir", "-R", "--chroot") for option, _ in seen):
        ctx.problem(f"{name} runs the command in another directory or root, so its paths cannot be placed")
    if any(option in _SUDO_NO_COMMAND or (option == "-h" and value is None) for option, value in seen):
        ctx.emit_words(name, words)
        return
    while i < len(words) and (assignment := _ASSIGNMENT.match(words[i].value)) is not None:
        _check_variable(assignment.group(1), words[i].value[assignment.end() :], not words[i].expanded, ctx)
        i += 1
    _wrapped(name, words, i, ctx, visible=True)


_SU = _Options(
    short_values="cCsgGw",
    long_values=frozenset(
        {"--command", "--session-command", "--shell", "--group", "--supp-group", "--whitelist-environment"}
    ),
)


def _su(name: str, words: list[_Word], ctx: _Context) -> None:
    ctx.emit_words(name, words)
    if not all(_fixed(w) for w in words[1:]):
        ctx.problem(f"the arguments of {name} are only known at run time, so the command it runs is unclear")
    seen: list[tuple[str, str | None]] = []
    i = 1
    # su passes the arguments after the user to the shell, so options may follow it.
    while i < len(words):
        after, found = _scan_options(words, i, _SU)
        seen += found
        i = after if after > i else i + 1
    shells = [value for option, value in seen if option in ("-s", "--shell") and value]
    if any(_basename(shell) not in _POSIX_SHELLS for shell in shells):
        ctx.problem(f"{name} runs a shell this splitter does not read ({_short(shells[-1])})")
    for option, value in seen:
        if option in ("-c", "--command", "-C", "--session-command") and value is not None:
            ctx.parse_line(value)


def _shell(name: str, words: list[_Word], ctx: _Context) -> None:
    """``sh -c SCRIPT`` runs SCRIPT as a command line; other forms run a file or stdin."""
    i, script_option = 1, False
    while i < len(words):
        value = words[i].value
        if value in ("--", "-"):
            i += 1
            break
        if value.startswith("--"):
            i += 2 if value in ("--rcfile", "--init-file") else 1
            continue
        if len(value) > 1 and value[0] in "-+":
            script_option = script_option or (value[0] == "-" and "c" in value[1:])
            i += 1 + value.count("o") + value.count("O")  # -o/-O take a value
            continue
        break
    if not script_option or i >= len(words):
        ctx.emit_words(name, words)
        return
    script = words[i]
    if not all(_fixed(w) for w in words[1:i]) or not _fixed(script):
        ctx.problem(f"the script run by {name} -c is only known at run time ({_short(script.value)})")
    if name not in _POSIX_SHELLS:
        ctx.problem(f"{name} -c runs a script in a language this splitter does not read")
    ctx.parse_line(script.value)


_XARGS = _Options(
    short_values="adEILnPsJRS",
    short_optional="eil",
    long_values=frozenset(
        {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}
    ),
)


_XARGS_FILES = {"-a": "<", "--arg-file": "<"}


def _xargs(name: str, words: list[_Word], ctx: _Context) -> None:
    i, seen = _scan_options(words, 1, _XARGS)
    _emit_files(seen, _XARGS_FILES, ctx)
    if i >= len(words):
        ctx.emit_words(name, words)  # runs echo
        return
    replace = next(((value or "{}") for option, value in seen if option in ("-I", "-i", "--replace", "-J")), None)
    if replace is None:
        _wrapped(name, words, i, ctx, extra=(_runtime_word(XARGS_INPUT),))
        return
    # Input lines replace the string wherever it appears, the command name included.
    marked = [w if replace not in w.value else _runtime_word(w.value) for w in words[i:]]
    _wrapped(name, [*words[:i], *marked], i, ctx)


_WATCH = _Options(short_values="nq", short_optional="d", long_values=frozenset({"--interval", "--equexit"}))


def _watch(name: str, words: list[_Word], ctx: _Context) -> None:
    i, seen = _scan_options(words, 1, _WATCH)
    if any(option in ("-x", "--exec") for option, _ in seen):
        _wrapped(name, words, i, ctx)
        return
    if i >= len(words):
        ctx.emit_words(name, words)
        return
    if not all(_fixed(w) for w in words[1:]):
        ctx.problem(f"{name} runs its arguments as a shell command line, and they are only known at run time")
    ctx.parse_line(" ".join(w.value for w in words[i:]))


_FIND_ACTIONS = ("-exec", "-execdir", "-ok", "-okdir")


def _find(name: str, words: list[_Word], ctx: _Context) -> None:
    """find is listed, and so is each command its -exec/-execdir/-ok/-okdir runs."""
    ctx.emit_words(name, words)
    count = len(words)
    last_terminator = max((k for k in range(count) if words[k].value in (";", "+")), default=-1)
    i = 1
    while i < count:
        word = words[i]
        if word.value in _FIND_ACTIONS and not word.expanded:
            start = j = i + 1
            while j < count and not (
                words[j].value == ";" or (words[j].value == "+" and j > start and words[j - 1].value == "{}")
            ):
                j += 1
            command = [w if "{}" not in w.value else _runtime_word(w.value) for w in words[start:j]]
            inner = ctx.deeper() if command else None
            if inner is not None:
                _resolve(command, inner)
            i = j + 1
            continue
        if _find_word_may_hide_action(words, i, last_terminator):
            ctx.problem(
                f"an argument of find ({_short(word.value)}) is only known at run time and could add an -exec action"
            )
        i += 1


def _find_word_may_hide_action(words: list[_Word], i: int, last_terminator: int) -> bool:
    word = words[i]
    if word.split or _has_brace(word):
        return True
    if _has_glob(word):
        return any(fnmatchcase(action, word.value) for action in _FIND_ACTIONS)
    if not word.expanded or i >= last_terminator or i + 1 >= len(words):
        return False
    # A quoted expansion is one word; as "-exec" it would run the next word as a command.
    following = words[i + 1].value
    return not (following.startswith("-") or following in ("(", ")", "!", ","))


def _eval(name: str, words: list[_Word], ctx: _Context) -> None:
    ctx.problem(f"{name} runs its arguments as a new command line")
    ctx.emit_words(name, words)
    arguments = words[2:] if len(words) > 1 and words[1].value == "--" else words[1:]
    ctx.parse_line(" ".join(w.value for w in arguments))


def _source(name: str, words: list[_Word], ctx: _Context) -> None:
    target = words[1].value if len(words) > 1 else ""
    ctx.problem(f"{name} runs the commands in a file ({_short(target)}), which are not checked")
    ctx.emit_words(name, words)


def _trap(name: str, words: list[_Word], ctx: _Context) -> None:
    """``trap ACTION SIGNAL...``: ACTION is a command line run later."""
    ctx.emit_words(name, words)
    arguments = words[1:]
    if arguments and arguments[0].value == "--":
        arguments = arguments[1:]
    if len(arguments) < 2 or arguments[0].value in ("", "-") or arguments[0].value.startswith("-"):
        return
    action = arguments[0]
    if not _fixed(action):
        ctx.problem(f"the command trap registers is only known at run time ({_short(action.value)})")
    ctx.parse_line(action.value)


# The options of compgen and complete that take a value (-V is bash 5.3's output variable).
_COMPLETION_VALUES = "oAGWFCXPSV"


def _completion(name: str, words: list[_Word], ctx: _Context) -> None:
    """``compgen`` and ``complete``: ``-C`` runs a command line, ``-W`` expands a
    wordlist again, ``-F`` calls a function. ``complete`` only registers them, to run
    when a completion is asked for, later."""
    ctx.emit_words(name, words)
    found: list[tuple[str, _Word]] = []  # (option letter, value) of the options that take one
    options_unknown = False
    i, count = 1, len(words)
    while i < count:
        word = words[i]
        value = word.value
        # An expansion or a glob here (the first operand included) can become options.
        options_unknown = options_unknown or not _fixed(word)
        if value == "--":
            i += 1
            break
        if len(value) < 2 or value[0] not in "-+":
            break
        i += 1
        for j in range(1, len(value)):
            letter = value[j]
            if letter not in _COMPLETION_VALUES:
                continue
            if j + 1 < len(value):
                given = _Word(value[j + 1 :], word.plain[j + 1 :], word.quoted, word.expanded, word.split)
            elif i < count:
                given = words[i]
                i += 1
                # A quoted expansion stays one word; an unquoted one or a glob can become more.
                options_unknown = options_unknown or given.split or _has_glob(given) or _has_brace(given)
            else:
                break
            found.append((letter, given))
            break
    if options_unknown:
        ctx.problem(
            f"the options of {name} are only known at run time, and -C, -F or -W would run code ({_short(' '.join(_argv(name, words)))})"
        )
    registers = name != "compgen"
    for letter, given in found:
        if letter == "F":
            ctx.problem(
                f"{name} -F {_short(given.value, 30)} calls a shell function, whose commands are not visible here"
            )
        elif letter == "V":
            _check_set_names(name, [given.value], ctx)
        elif letter == "C":
            if not _fixed(given):
                ctx.problem(f"the command line {name} -C runs is only known at run time ({_short(given.value)})")
            if registers:
                ctx.problem(f"{name} -C registers a command line that runs later, at completion time")
                ctx.parse_line(given.value)
            else:
                # bash runs the command line with the words "compgen", the word and "" appended.
                completed = words[i].value if i < count else ""
                ctx.parse_line(f"{given.value} 'compgen' {_single_quoted(completed)} ''")
        elif letter == "W":
            if not _fixed(given):
                ctx.problem(
                    f"the wordlist of {name} -W is only known at run time, and its expansions run when it is used ({_short(given.value)})"
                )
            elif registers and ("$" in given.value or "`" in given.value):
                ctx.problem(f"{name} -W registers a wordlist whose expansions run later, at completion time")
            ctx.scan_expansions(given.value)  # the wordlist is expanded (again) when it is used


def _single_quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _check_names(name: str, names: Sequence[str], ctx: _Context) -> None:
    for variable in names:
        if not _SAFE_NAME.fullmatch(variable):
            ctx.problem(
                f"{name} is given the variable name {_short(variable, 40)!r}, whose subscript is evaluated as arithmetic and can run commands"
            )


_READ = _Options(short_values="adinNptu")
_MAPFILE = _Options(short_values="dnOsuCc")


def _variable_builtin(name: str, words: list[_Word], ctx: _Context) -> None:
    """Builtins that take variable names: a name with a subscript can run commands,
    and some names make programs load code when they are set."""
    ctx.emit_words(name, words)
    if name == "read":
        i, seen = _scan_options(words, 1, _READ)
        _check_set_names(name, [w.value for w in words[i:]] + [v or "" for o, v in seen if o == "-a"], ctx)
    elif name == "printf":
        _, seen = _scan_options(words, 1, _Options(short_values="v"))
        _check_set_names(name, [v or "" for o, v in seen if o == "-v"], ctx)
    elif name in ("mapfile", "readarray"):
        i, seen = _scan_options(words, 1, _MAPFILE)
        if any(o == "-C" for o, _ in seen):
            ctx.problem(f"{name} -C runs a callback command line")
        _check_set_names(name, [w.value for w in words[i:]], ctx)
    elif name == "unset":
        i, _ = _scan_options(words, 1, _Options())
        _check_names(name, [w.value for w in words[i:]], ctx)
    elif name == "let":
        for word in words[1:]:
            if not _PURE_ARITH.fullmatch(word.value):
                ctx.problem(_arith_problem(word.value))
    elif name == "getopts":
        _check_set_names(name, [w.value for w in words[2:3]], ctx)
    elif name == "wait":
        _, seen = _scan_options(words, 1, _Options(short_values="p"))
        _check_set_names(name, [v or "" for o, v in seen if o == "-p"], ctx)
    else:
        _declaration(name, words, ctx)


def _check_set_names(name: str, names: Sequence[str], ctx: _Context) -> None:
    """``name`` stores run-time values in the variables ``names``."""
    _check_names(name, names, ctx)
    _check_assigned_names(name, names, ctx)


def _declaration(name: str, words: list[_Word], ctx: _Context) -> None:
    """declare, typeset, local, export, readonly.

    ``-i`` is a problem: every later assignment to an integer variable, in whatever
    form, is arithmetic, which runs the commands in an array subscript of the value
    (``declare -i n; n='a[$(rm x)]'``). So is ``-n``: assignments to a name reference
    write to the variable it names, which can be one that loads code (``PATH``).
    """
    for word in words[1:]:
        value = word.value
        if value[:1] in ("-", "+") and len(value) > 1:
            if word.expanded:
                ctx.problem(
                    f"the options of {name} are only known at run time ({_short(value)}), and -i or -n would change what later assignments do"
                )
            elif value[0] == "-" and "i" in value:
                ctx.problem(
                    f"{name} {value} gives a variable the integer attribute: every later assignment to it is arithmetic, which can run commands through an array subscript"
                )
            elif value[0] == "-" and "n" in value:
                ctx.problem(f"{name} {value} makes a name reference: later assignments to it write to another variable")
            continue
        variable, equals, assigned = value.partition("=")
        variable = variable.removesuffix("+")
        _check_names(name, [variable], ctx)
        if equals:
            _check_variable(variable.partition("[")[0], assigned, not word.expanded, ctx)


def _test(name: str, words: list[_Word], ctx: _Context) -> None:
    ctx.emit_words(name, words)
    _check_test_operands(name, words[1:], ctx)


def _check_test_operands(name: str, tokens: Sequence[_Word], ctx: _Context) -> None:
    """``-v NAME`` subscripts are arithmetic; so are the operands of -eq and friends inside [[ ]]."""
    for k, token in enumerate(tokens):
        if token.value == "-v" and k + 1 < len(tokens):
            _check_names(name, [tokens[k + 1].value], ctx)
        if name == "[[" and token.is_plain and token.value in _TEST_ARITH_OPERATORS:
            for operand in (tokens[k - 1] if k else None, tokens[k + 1] if k + 1 < len(tokens) else None):
                if operand is None:
                    continue
                if _SAFE_NUMBER.fullmatch(operand.value) or (
                    not operand.expanded and _PURE_ARITH.fullmatch(operand.value)
                ):
                    continue
                ctx.problem(_arith_problem(f"[[ {operand.value} {token.value} ]]"))


def _shell_state(name: str, words: list[_Word], ctx: _Context) -> None:
    """Builtins that can make a later command name run something else."""
    ctx.emit_words(name, words)
    options = "".join(w.value[1:] for w in words[1:] if w.value.startswith("-"))
    if name == "alias" and any("=" in w.value for w in words[1:]):
        ctx.problem("alias defines a command name that runs other commands")
    elif name == "hash" and "p" in options:
        ctx.problem("hash -p makes a command name run another program")
    elif name == "enable" and "f" in options:
        ctx.problem("enable -f loads a builtin from a shared library")


def _busybox(name: str, words: list[_Word], ctx: _Context) -> None:
    if len(words) > 1 and words[1].value.startswith("-"):
        ctx.emit_words(name, words)
    else:
        _wrapped(name, words, 1, ctx)


# Wrappers that run a shell reading its input when given no command (su, sudo -s, doas -s).
_PRIVILEGE_WRAPPERS = frozenset({"su", "sudo", "doas"})
_POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ksh", "zsh", "mksh", "ash", "yash", "posh", "rbash", "ksh93"})
_OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "pwsh", "powershell", "nu", "xonsh", "elvish"})
_SHELLS = _POSIX_SHELLS | _OTHER_SHELLS

_HANDLERS: dict[str, _Handler] = {
    "env": _env,
    "nohup": _wrapper(),
    "timeout": _wrapper(_Options(short_values="sk", long_values=frozenset({"--signal", "--kill-after"})), operands=1),
    "nice": _wrapper(_Options(short_values="n", long_values=frozenset({"--adjustment"}), numbers=True)),
    "time": _wrapper(
        _Options(short_values="fo", long_values=frozenset({"--format", "--output"})), files={"-o": ">", "--output": ">"}
    ),
    "command": _wrapper(no_command=frozenset({"-v", "-V"})),
    "exec": _wrapper(_Options(short_values="a")),
    "builtin": _wrapper(),
    "stdbuf": _wrapper(_Options(short_values="ioe", long_values=frozenset({"--input", "--output", "--error"}))),
    "ionice": _wrapper(
        _Options(short_values="cnpPu", long_values=frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"})),
        no_command=frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"}),
    ),
    "setsid": _wrapper(),
    "chrt": _wrapper(
        _Options(short_values="TPD", long_values=frozenset({"--sched-runtime", "--sched-period", "--sched-deadline"})),
        operands=1,
        no_command=frozenset({"-p", "--pid", "-m", "--max"}),
    ),
    "taskset": _wrapper(operands=1, no_command=frozenset({"-p", "--pid"})),
    "busybox": _busybox,
    "sudo": _sudo,
    "doas": _wrapper(_Options(short_values="Cu"), no_command=frozenset({"-C", "-L"}), visible=True),
    "su": _su,
    "xargs": _xargs,
    "watch": _watch,
    "find": _find,
    "eval": _eval,
    "source": _source,
    ".": _source,
    "trap": _trap,
    "compgen": _completion,
    "complete": _completion,
    "read": _variable_builtin,
    "printf": _variable_builtin,
    "mapfile": _variable_builtin,
    "readarray": _variable_builtin,
    "unset": _variable_builtin,
    "let": _variable_builtin,
    "getopts": _variable_builtin,
    "wait": _variable_builtin,
    "declare": _variable_builtin,
    "typeset": _variable_builtin,
    "local": _variable_builtin,
    "export": _variable_builtin,
    "readonly": _variable_builtin,
    "test": _test,
    "[": _test,
    "alias": _shell_state,
    "hash": _shell_state,
    "enable": _shell_state,
    **{shell: _shell for shell in _SHELLS},
}
