"""Reading ``$``-forms: parameters (``$x``, ``${...}``), command substitutions,
arithmetic (``$((...))``, ``$[...]``, ``((...))``) and the substitutions in text that
is otherwise data. Forms that can run commands through a variable's value set a problem.
"""

from __future__ import annotations

import re

from runtime.policy.shell.expansions import PURE_ARITH, arith_problem
from runtime.policy.shell.scanner import Scanner
from runtime.policy.shell.variables import check_assigned_names
from runtime.policy.shell.words import MAX_DEPTH, WordBuilder, short

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPANSION_START = re.compile(r"[\\$`]")
_ARITH_SPECIAL = re.compile(r"[\\'\"()]")
_DQUOTE_END = re.compile(r'[\\"]')
_PARAM_HEAD = re.compile(r"([!#]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])")


class Expander(Scanner):
    """The parser's reading of ``$``-forms and arithmetic."""

    def _dollar(self, builder: WordBuilder, *, quoted: bool) -> None:
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
        if PURE_ARITH.fullmatch(body):
            return
        self.sink.problem(arith_problem(body))
        self._sub_expansions(body)

    def _parameter(self, *, quoted: bool) -> None:
        """``${...}``: nested substitutions run; forms that can run commands set a problem."""
        self.pos += 1  # the "{"
        with self._nested():
            head = _PARAM_HEAD.match(self.text, self.pos)
            if head is None:
                self.sink.problem(
                    f"a parameter expansion is malformed ({short(self.text[self.pos - 2 : self.pos + 20])})"
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
                f"an indirect expansion ({short(shown)}) reads a variable named at run time, which can run commands "
                "through an array subscript"
            )
        if subscript and subscript not in ("@", "*") and not PURE_ARITH.fullmatch(subscript):
            self.sink.problem(arith_problem(subscript))
        if not prefix and rest.startswith((":=", "=")):
            check_assigned_names(f"an expansion ({short(shown)})", [name], self._context())
        if rest.startswith("@") and "P" in rest[1:2]:
            self.sink.problem(f"a prompt expansion ({short(shown)}) runs the command substitutions held in a variable")
        if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+"):
            offsets = rest[1:]
            if not PURE_ARITH.fullmatch(offsets):
                self.sink.problem(arith_problem(offsets))

    def _expansion_text(self, stop: str, *, quoted: bool) -> str:
        """Raw text up to an unquoted ``stop`` (not consumed), running nested substitutions."""
        start = self.pos
        opening = "[" if stop == "]" else "{"
        depth = 0
        scratch = WordBuilder()
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
        scratch = WordBuilder()
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
