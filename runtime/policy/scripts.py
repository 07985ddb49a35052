"""What a sed script or an awk program given on a command line does to files and code.

``sed 'w out'`` writes ``out``, ``sed 'r /etc/passwd'`` reads a file, ``sed 's/a/id/e'``
runs a command; ``awk '{print > "f"}'`` writes ``f``, ``awk 'BEGIN{getline < "f"}'``
reads it, ``awk 'BEGIN{system("id")}'`` runs a command. The readers here list those
effects as ``(kind, path)`` pairs (kinds from :mod:`runtime.policy.program_table`):
a file read or written (with its name when the program spells it as a literal), code
run, or ``UNKNOWN_PATH`` for a file named only at run time (``print > $1``,
``getline < f``, an ``ARGV`` assignment), which can be anything, outside the workspace
too. Text either reader cannot read with certainty counts as code.
"""

from __future__ import annotations

import re

READ, WRITE, CODE = "read", "write", "code"
#: A file read or written whose name is only known when the program runs.
UNKNOWN_PATH = "unknown-path"

Effects = tuple[tuple[str, str | None], ...]
_UNREADABLE: Effects = ((CODE, None),)

# -- sed ------------------------------------------------------------------------------

_SED_NUMBER = re.compile(r"[0-9]+(?:~[0-9]+)?")
_SED_SIMPLE = frozenset("=dDgGhHnNpPxzF")
_SED_SUBST_FLAGS = frozenset("gpiImM0123456789")


class _Unreadable(Exception):
    """The script cannot be read with certainty."""


def sed_script(text: str) -> Effects:
    """The effects of a sed script: ``w``/``W``/``s///w`` write the file named up to the
    end of the line, ``r``/``R`` read it, ``e`` and ``s///e`` run commands."""
    try:
        return tuple(_SedReader(text).run())
    except _Unreadable:
        return _UNREADABLE


class _SedReader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.found: list[tuple[str, str | None]] = []

    def run(self) -> list[tuple[str, str | None]]:
        text = self.text
        while True:
            self._skip(" \t\n;")
            if self.pos >= len(text):
                return self.found
            self._address()
            self._skip(" \t")
            while self._peek() == "!":
                self.pos += 1
                self._skip(" \t")
            if self.pos >= len(text):
                raise _Unreadable
            self._command(text[self.pos])

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _skip(self, chars: str) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1

    def _line_rest(self) -> str:
        """The text up to the end of the line (a file name, a command)."""
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        rest, self.pos = self.text[self.pos : end], end
        return rest

    def _until(self, stops: str) -> None:
        while self.pos < len(self.text) and self.text[self.pos] not in stops:
            self.pos += 1

    def _delimited(self, delimiter: str, *, newline_ok: bool = False) -> None:
        """Skip text up to an unescaped ``delimiter`` (and past it)."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self.pos += 2
                continue
            if char == "\n" and not newline_ok:
                raise _Unreadable
            self.pos += 1
            if char == delimiter:
                return
        raise _Unreadable

    def _one_address(self) -> bool:
        char = self._peek()
        if char.isdigit():
            match = _SED_NUMBER.match(self.text, self.pos)
            if match is None:
                raise _Unreadable
            self.pos = match.end()
            return True
        if char == "$":
            self.pos += 1
            return True
        if char in ("/", "\\"):
            self.pos += 1
            if char == "\\":
                delimiter = self._peek()
                if not delimiter or delimiter in "\n\\":
                    raise _Unreadable
                self.pos += 1
            else:
                delimiter = "/"
            self._delimited(delimiter)
            self._skip("IM")
            return True
        return False

    def _address(self) -> None:
        if not self._one_address():
            return
        self._skip(" \t")
        if self._peek() != ",":
            return
        self.pos += 1
        self._skip(" \t")
        if self._peek() in ("+", "~"):
            self.pos += 1
            match = re.compile(r"[0-9]+").match(self.text, self.pos)
            if match is None:
                raise _Unreadable
            self.pos = match.end()
        elif not self._one_address():
            raise _Unreadable

    def _end_of_command(self) -> None:
        """After a command: only blanks, then ``;``, a newline, ``}``, ``#`` or the end."""
        self._skip(" \t")
        if self._peek() not in ("", ";", "\n", "}", "#"):
            raise _Unreadable

    def _command(self, letter: str) -> None:
        self.pos += 1
        if letter in "{}":
            return
        if letter == "#":
            self._line_rest()
        elif letter in ":btT":
            self._until(";\n")
        elif letter in "aic":
            # Text up to the end of the line; a backslash at the end continues it.
            while True:
                rest = self._line_rest()
                trailing = len(rest) - len(rest.rstrip("\\"))
                if trailing % 2 == 0 or self.pos >= len(self.text):
                    break
                self.pos += 1
        elif letter in "rRwW":
            name = self._line_rest().lstrip(" \t")
            if not name:
                raise _Unreadable
            self.found.append((READ if letter in "rR" else WRITE, name))
        elif letter == "e":
            self._line_rest()
            self.found.append((CODE, None))
        elif letter == "s":
            self._substitution()
        elif letter == "y":
            delimiter = self._peek()
            if not delimiter or delimiter in "\n\\":
                raise _Unreadable
            self.pos += 1
            self._delimited(delimiter)
            self._delimited(delimiter)
            self._end_of_command()
        elif letter in "lLqQ":
            self._skip(" \t")
            self._skip("0123456789")
            self._end_of_command()
        elif letter in _SED_SIMPLE:
            self._end_of_command()
        elif letter == "v":
            self._until(";\n}")
        else:
            raise _Unreadable

    def _substitution(self) -> None:
        delimiter = self._peek()
        if not delimiter or delimiter in "\n\\":
            raise _Unreadable
        self.pos += 1
        self._delimited(delimiter)
        self._delimited(delimiter, newline_ok=True)
        while True:
            char = self._peek()
            if char in _SED_SUBST_FLAGS and char:
                self.pos += 1
            elif char == "e":
                self.pos += 1
                self.found.append((CODE, None))
            elif char == "w":
                self.pos += 1
                name = self._line_rest().lstrip(" \t")
                if not name:
                    raise _Unreadable
                self.found.append((WRITE, name))
                return
            else:
                self._end_of_command()
                return


# -- awk ------------------------------------------------------------------------------

_AWK_TOKEN = re.compile(
    r"(?P<blank>[ \t\r]+|\\\r?\n)|(?P<newline>\n)|(?P<comment>#[^\n]*)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+)"
    r"|(?P<op>\|&|>>|>=|<=|==|!=|&&|\|\||\+\+|--|\+=|-=|\*=|/=|%=|\^=|\*\*=?|!~|[-+*/%^!<>=~?:,;(){}\[\]$|@])"
)
# Names after which a `/` starts a regular expression, not a division.
_AWK_KEYWORDS = frozenset(
    {"print", "printf", "return", "in", "case", "getline", "if", "while", "for", "do", "else", "delete", "exit"}
)
_AWK_STATEMENT_END = frozenset({";", "\n", "}", ""})
# What may follow a literal file name for it to be the whole target.
_AWK_TARGET_END = frozenset({")", ";", "\n", "}", "", "&&", "||", ">", "<", "==", "!=", ">=", "<=", "?", ":", ","})
# Names that give the program a way to read files not on its command line.
_AWK_FILE_LISTS = frozenset({"ARGV", "SYMTAB"})


def awk_program(text: str) -> Effects:
    """The effects of an awk program: ``system()``, pipes, ``@load``/``@include`` and
    indirect calls run code; ``print > "f"`` writes ``f``; ``getline < "f"`` reads it;
    a target that is not one literal string, or an ``ARGV`` that the program may set,
    is a file only known at run time."""
    tokens = _awk_tokens(text)
    if tokens is None:
        return _UNREADABLE
    found: list[tuple[str, str | None]] = []
    for k, (kind, value) in enumerate(tokens):
        following = _op(tokens, k + 1)
        if kind == "op" and value in ("|", "|&", "@"):
            return _UNREADABLE  # a pipe to or from a command, @load, @include, an indirect call
        if kind != "name":
            continue
        if value in ("system", "close") and following == "(":
            return _UNREADABLE
        if value in _AWK_FILE_LISTS:
            found.append((UNKNOWN_PATH, None))
        elif value in ("print", "printf"):
            target = _awk_print_target(tokens, k + 1)
            if target is not None:
                found.extend(((WRITE, target),) if target else ((WRITE, None), (UNKNOWN_PATH, None)))
        elif value == "getline":
            target = _awk_getline_target(tokens, k + 1)
            if target is not None:
                found.append((READ, target) if target else (UNKNOWN_PATH, None))
    return tuple(found)


def _awk_tokens(text: str) -> list[tuple[str, str]] | None:
    """The program's tokens as (kind, text); strings and regular expressions decoded
    only as far as needed. None when the text cannot be read."""
    tokens: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    while pos < end:
        char = text[pos]
        if char == '"':
            close = _awk_string_end(text, pos + 1, '"')
            if close < 0:
                return None
            tokens.append(("string", text[pos + 1 : close]))
            pos = close + 1
            continue
        if char == "/" and _regex_may_start(tokens):
            close = _awk_regex_end(text, pos + 1)
            if close < 0:
                return None
            tokens.append(("regex", text[pos + 1 : close]))
            pos = close + 1
            continue
        match = _AWK_TOKEN.match(text, pos)
        if match is None:
            return None
        kind = match.lastgroup or ""
        pos = match.end()
        if kind in ("blank", "comment"):
            continue
        tokens.append((kind, match.group()))
    return tokens


def _regex_may_start(tokens: list[tuple[str, str]]) -> bool:
    if not tokens:
        return True
    kind, value = tokens[-1]
    if kind in ("string", "regex", "number"):
        return False
    if kind == "name":
        return value in _AWK_KEYWORDS
    return value not in (")", "]", "$", "++", "--")


def _awk_string_end(text: str, pos: int, quote: str) -> int:
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == "\n":
            return -1
        if char == quote:
            return pos
        pos += 1
    return -1


def _awk_regex_end(text: str, pos: int) -> int:
    """The closing ``/`` of a regular expression (a ``/`` inside ``[...]`` does not close it)."""
    in_bracket = False
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == "\n":
            return -1
        if in_bracket:
            if char == "]":
                in_bracket = False
        elif char == "[":
            in_bracket = True
            if text[pos + 1 : pos + 2] == "^":
                pos += 1
            if text[pos + 1 : pos + 2] == "]":
                pos += 1
        elif char == "/":
            return pos
        pos += 1
    return -1


def _op(tokens: list[tuple[str, str]], k: int) -> str:
    """The operator (or newline) at ``tokens[k]``; "" for anything else, and past the end."""
    if k < len(tokens) and tokens[k][0] in ("op", "newline"):
        return tokens[k][1]
    return ""


def _literal_target(tokens: list[tuple[str, str]], k: int) -> str:
    """The file a redirection at ``tokens[k]`` names: the literal string, or "" when it
    is anything else (a variable, a concatenation, an expression, a string with escapes)."""
    if k < len(tokens) and tokens[k][0] == "string" and "\\" not in tokens[k][1] and tokens[k][1]:
        following = _op(tokens, k + 1)
        if following in _AWK_TARGET_END and (following or k + 1 >= len(tokens)):
            return tokens[k][1]
    return ""


def _awk_print_target(tokens: list[tuple[str, str]], k: int) -> str | None:
    """The target of the output redirection of the print statement starting at ``k``:
    None when it writes to standard output."""
    depth = 0
    while k < len(tokens):
        value = _op(tokens, k)
        if value in ("(", "["):
            depth += 1
        elif value in (")", "]"):
            depth -= 1
            if depth < 0:
                return None  # the end of an enclosing expression
        elif depth == 0 and value in (">", ">>"):
            return _literal_target(tokens, k + 1)
        elif depth == 0 and (
            value in (";", "}") or (value == "\n" and _op(tokens, k - 1) not in (",", "{", "&&", "||"))
        ):
            return None
        k += 1
    return None


def _awk_getline_target(tokens: list[tuple[str, str]], k: int) -> str | None:
    """The file ``getline [var] < FILE`` reads; None when it reads the usual input."""
    count = len(tokens)
    if _op(tokens, k) == "$":
        k += 1
        if k < count and tokens[k][0] in ("name", "number"):
            k += 1
        elif _op(tokens, k) == "(":
            return ""  # $(expression): be safe, the target is unclear
    elif k < count and tokens[k][0] == "name" and tokens[k][1] not in _AWK_KEYWORDS:
        k += 1
        if _op(tokens, k) == "[":
            depth = 0
            while k < count:
                if _op(tokens, k) == "[":
                    depth += 1
                elif _op(tokens, k) == "]":
                    depth -= 1
                    if depth == 0:
                        k += 1
                        break
                k += 1
    if _op(tokens, k) == "<":
        return _literal_target(tokens, k + 1)
    return None
