"""Reading words: characters, blanks, quotes, backquotes, process substitutions and
array literals, for the parser built on it.

:class:`Scanner` is the base of the parser's classes. What it cannot read itself it
leaves to the layers above, through methods they define: ``$``-forms
(:mod:`~runtime.policy.shell.substitutions`), lists of commands and nested parsers
(:mod:`~runtime.policy.shell.syntax`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from runtime.policy.shell.expansions import PURE_ARITH, arith_problem
from runtime.policy.shell.record import Abort, Context, Sink
from runtime.policy.shell.words import MAX_DEPTH, TOO_DEEP, Word, WordBuilder, decode_ansi_c

_PLAIN_RUN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
_DQUOTE_RUN = re.compile(r'[^"\\$`]+')
_BLANKS = re.compile(r"[ \t]+")
_ARRAY_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_BACKQUOTE_SPECIAL = re.compile(r"[\\`]")
_ANSI_C_END = re.compile(r"[\\']")


class Scanner:
    """Reads one piece of shell text, putting commands and problems into a sink.

    Nested texts (backquotes, ``sh -c`` scripts, ``eval`` arguments ...) get their own
    parser one level deeper, sharing the sink.
    """

    def __init__(self, text: str, sink: Sink, depth: int) -> None:
        if depth > MAX_DEPTH:
            sink.problem(TOO_DEEP)
            raise Abort
        self.text = text
        self.end = len(text)
        self.pos = 0
        self.sink = sink
        self.depth = depth

    def parse(self) -> None:
        """Read the whole text as a command line."""
        self._list("")

    # -- what the layers above provide ------------------------------------------

    def _list(self, closer: str) -> str:
        """Commands up to ``closer`` (the syntax layer)."""
        raise NotImplementedError

    def _child(self, text: str) -> Scanner:
        """A parser for nested ``text``, one level deeper, sharing the sink (the syntax layer)."""
        raise NotImplementedError

    def _context(self) -> Context:
        """The context the commands read here are judged in (the syntax layer)."""
        raise NotImplementedError

    def _dollar(self, builder: WordBuilder, *, quoted: bool) -> None:
        """A ``$``-form (the substitutions layer)."""
        raise NotImplementedError

    def _newline(self) -> None:
        """Step over a newline (the syntax layer also reads here-document bodies there)."""
        self.pos += 1

    # -- low-level reading ------------------------------------------------

    def _fail(self, problem: str) -> NoReturn:
        self.sink.problem(problem)
        raise Abort

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
            self._fail(TOO_DEEP)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def _sub_parse(self, text: str) -> None:
        """Split ``text`` as a command line of its own, one level deeper."""
        try:
            self._child(text).parse()
        except Abort:
            pass  # recorded; the enclosing text goes on, its extent is known

    def _sub_expansions(self, text: str) -> None:
        """Run the substitutions in ``text``, which is otherwise data."""
        try:
            self._child(text)._expansions()
        except Abort:
            pass

    def _expansions(self) -> None:
        """Run the substitutions in this text (the substitutions layer)."""
        raise NotImplementedError

    # -- words -----------------------------------------------------------------

    def _word(self) -> Word | None:
        """The next word, or None when the current character cannot start one."""
        builder = WordBuilder()
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

    def _regex_word(self) -> Word | None:
        """The right side of ``=~``, where ( ) | < > & belong to the word."""
        builder = WordBuilder()
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

    def _double_quoted(self, builder: WordBuilder) -> None:
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

    def _ansi_c(self, builder: WordBuilder) -> None:
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
        builder.add_quoted(decode_ansi_c(text[body_start : match.start()]))
        self.pos = match.end()

    def _backquote(self, builder: WordBuilder, *, quoted: bool) -> None:
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

    def _process_substitution(self, builder: WordBuilder) -> None:
        start = self.pos
        self.pos += 1
        self._take("(")
        with self._nested():
            self._list(")")
        builder.add_expansion(self.text[start : self.pos], splits=False)

    def _array_literal(self, builder: WordBuilder) -> None:
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
                if subscript is not None and not PURE_ARITH.fullmatch(subscript.group(1)):
                    self.sink.problem(arith_problem(subscript.group(1)))
        source = self.text[start : self.pos]
        if expanded:
            builder.add_expansion(source, splits=False)
        else:
            builder.add_quoted(source)

    def lone_words(self) -> list[Word] | None:
        """The text as the words of one command, or None if it holds more than that."""
        words: list[Word] = []
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
