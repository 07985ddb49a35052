"""Syntax: lists, pipelines, redirections, here-documents and compound commands.

:class:`Parser` reads a command line and hands each simple command it finds (its words
and assignment prefixes) to the judge it is given; it never imports the command
handlers. Nested text is split by a parser one level deeper, sharing the sink.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runtime.policy.shell.expansions import shape
from runtime.policy.shell.record import PRIVILEGE_WRAPPERS, Abort, Chain, Context, Judge, Sink, is_shell_name
from runtime.policy.shell.substitutions import Expander
from runtime.policy.shell.variables import check_assigned_names, check_test_operands
from runtime.policy.shell.words import Word, basename, is_assignment, literal_word, short

# Redirection targets that are not files anyone cares about.
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_FD = re.compile(r"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")
_SKIPPED_KEYWORDS = frozenset(
    {"if", "then", "elif", "else", "fi", "while", "until", "do", "done", "!", "{", "}", "esac"}
)


# Keywords of compound commands (besides the skipped ones): a line with them has no gates.
_LOOPS = frozenset({"for", "select", "while", "until"})
_COMPOUND = frozenset({"for", "select", "case", "function", "coproc", "until", "while", "if"})


@dataclass(slots=True)
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool
    feeds_shell: bool = False


class Parser(Expander):
    """Reads one piece of shell text: every simple command goes to ``judge``."""

    def __init__(self, text: str, sink: Sink, depth: int, judge: Judge) -> None:
        super().__init__(text, sink, depth)
        self.judge = judge
        self.lines = _Nested(sink, judge)  # how handlers split nested text
        self.heredocs: list[_Heredoc] = []
        self.herestrings: list[Word] = []  # the <<< words of the commands being read
        self.cd = -1  # the index of the command just read when it is a plain top-level cd

    def _child(self, text: str) -> Parser:
        return Parser(text, self.sink, self.depth + 1, self.judge)

    def _context(self) -> Context:
        return Context(self.sink, self.depth, self.lines, self.judge)

    def _newline(self) -> None:
        self.pos += 1
        if self.heredocs:
            self._read_heredocs()

    # -- lists and commands --------------------------------------------------

    def _list(self, closer: str) -> str:
        """Commands up to ``closer``: "" (end of text), ")" (consumed), or "case".

        For "case" the list ends after ``;;`` / ``;&`` / ``;;&`` (returning ";;") or
        before an ``esac`` in command position (returning "esac").
        """
        # The line's own top level: which cd later commands wait for (CommandLine.gates).
        chain = Chain(self.sink) if self.depth == 0 and not closer else None
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
                if chain is not None:
                    chain.newline()
            elif char == "#":
                self._comment()
            elif char == ")":
                self.pos += 1
                if closer == ")":
                    return ""
                self.sink.problem("a ')' has no matching '('")
            elif char == ";":
                self.pos += 1
                if chain is not None:
                    chain.end()
                if self._take(";") or self._take("&"):
                    self._take("&")
                    if closer == "case":
                        return ";;"
                    self.sink.problem("';;' appears outside a case statement")
            elif char == "|":
                self.pos += 1
                if self._take("|"):
                    if chain is not None:
                        chain.or_()
                else:
                    self._take("&")
                    if chain is not None:
                        chain.pipe()
            elif char == "&" and self._peek2() != ">":
                self.pos += 1
                if self._take("&"):
                    if chain is not None:
                        chain.and_()
                elif chain is not None:
                    chain.end()
            else:
                self.cd = -1
                if self._command(closer):
                    return "esac"
                if chain is not None:
                    chain.command(self.cd)

    def _command(self, closer: str) -> bool:
        """One simple command, with any keywords before it; True if it stopped before ``esac``."""
        words: list[Word] = []
        assignments: list[Word] = []
        heredocs_before, herestrings_before = len(self.heredocs), len(self.herestrings)
        header = ""  # "for-name", "for-in", "for-list" or "for-arith" while reading a for/select header
        after_time = False
        posix_break = -1  # len(words) at the first "&>", which ends the command in POSIX sh
        plain = True  # no keyword, subshell or arithmetic command before the words
        while True:
            self._blanks()
            char = self._peek()
            if not char or char in "\n;|)#" or (char == "&" and self._peek2() != ">"):
                break
            at_start = not words and not assignments and not header
            if char == "(":
                plain = False
                if header == "for-name" and self._arith_command():
                    header = "for-arith"
                elif at_start:
                    if not self._arith_command():
                        self.pos += 1
                        with self._nested():
                            self._list(")")
                elif len(words) == 1 and not assignments and not header and self._function_parens():
                    self.sink.problem(
                        f"a function ({short(words[0].value)}) is defined: its body runs later under that name"
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
                    check_assigned_names("a redirection", [word.value[1:-1]], self._context())
                self._redirection()  # "2>file": the number is the redirected descriptor
                continue
            if header:
                if header == "for-name":
                    check_assigned_names("a for/select loop", [word.value], self._context())
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
                if keyword in _COMPOUND or keyword in _SKIPPED_KEYWORDS and keyword != "!":
                    self.sink.structured = True  # loops and branches: the list's order is not the run's
                    self.sink.loops = self.sink.loops or keyword in _LOOPS
                if keyword == "esac" and closer == "case":
                    self.pos = start
                    return True
                if keyword in _SKIPPED_KEYWORDS:
                    plain = False
                    continue
                if keyword == "time":
                    plain = False
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
            if not words and is_assignment(word):
                assignments.append(word)
                continue
            words.append(word)
        herestrings = self.herestrings[herestrings_before:]
        del self.herestrings[herestrings_before:]
        if header:
            return False
        ctx = self._context()
        feeds_shell = (herestrings or len(self.heredocs) > heredocs_before) and self._feeds_shell(words)
        if feeds_shell:
            for heredoc in self.heredocs[heredocs_before:]:
                heredoc.feeds_shell = True  # its body is split when it is read, after this line
        self.judge(words, assignments, ctx)
        commands = self.sink.commands
        if (
            plain
            and self.depth == 0
            and not assignments
            and posix_break < 0
            and words[:1] == [literal_word("cd")]
            and commands
            and commands[-1][:1] == ("cd",)
        ):
            self.cd = len(commands) - 1
        if 0 <= posix_break < len(words):
            # bash reads "a &>f b" as "a b" with a redirection; sh (dash) runs "a &" and then "b >f".
            ctx.problem(
                "'&>' is a redirection in bash but ends the command in sh, where the words after its target run as a "
                "command"
            )
            self.judge(words[posix_break:], [], ctx)
        if feeds_shell:
            for herestring in herestrings:
                ctx.problem(
                    f"a here-string ({short(herestring.value, 20)}) feeds its text to a shell, which runs it as a "
                    "script"
                )
                self._sub_parse(herestring.value)
        return False

    def _feeds_shell(self, words: list[Word]) -> bool:
        """Whether the input redirected into this command may be read by a shell as a script.

        True when a word is a shell's name (``bash``, ``sudo sh``, ``env bash -s`` ...), or
        the command is ``su``, ``sudo`` or ``doas``, which start a shell reading its input
        when given no command (``su``, ``sudo -s``, ``doas -s``). A command with no words
        carries the redirections of a compound command (``{ bash; } <<< x``, ``done <<< x``,
        ``(sh) <<< x``), whose commands have already been listed: then it is True when any
        command listed so far is a shell.
        """
        if words:
            return any(is_shell_name(w) for w in words) or (
                not words[0].expanded and basename(words[0].value) in PRIVILEGE_WRAPPERS
            )
        return self.sink.started_shell()

    @staticmethod
    def _for_header(state: str, word: Word) -> str:
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
            f"a function ({short(name.value if name else '?')}) is defined: its body runs later under that name"
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
                f"a here-document ({operator}{short(target.value, 20)}) feeds text to a command, and that text is not "
                "checked"
            )
            self.heredocs.append(_Heredoc(target.value, operator == "<<-", not target.quoted and not target.expanded))
        elif operator == "<<<":
            self.herestrings.append(target)  # text, not a file; split if a shell reads it (see _command)
        elif operator in (">&", "<&") and (target.value == "-" or target.value.isdigit()):
            pass  # duplicates or closes a descriptor (2>&1, >&-): no file
        elif target.value not in _HARMLESS_TARGETS:
            self.sink.add(("<" if operator in ("<", "<&") else ">", target.value), "l" + shape(target))
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
        tokens: list[Word] = []
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
                tokens.append(literal_word(char * 2))
                continue
            if char in "()<>":
                self.pos += 1
                tokens.append(literal_word(char))
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
        ctx = self._context()
        check_test_operands("[[", tokens, ctx)
        ctx.emit(["[[", *(t.value for t in tokens), "]]"], "l" + "".join(shape(t) for t in tokens) + "l")


@dataclass(frozen=True, slots=True)
class _Nested:
    """The :class:`~runtime.policy.shell.record.Lines` handlers split nested text with."""

    sink: Sink
    judge: Judge

    def split(self, text: str, depth: int) -> None:
        try:
            Parser(text, self.sink, depth, self.judge).parse()
        except Abort:
            pass

    def expansions(self, text: str, depth: int) -> None:
        try:
            Parser(text, self.sink, depth, self.judge)._expansions()
        except Abort:
            pass

    def words(self, text: str, depth: int) -> list[Word] | None:
        try:
            return Parser(text, self.sink, depth, self.judge).lone_words()
        except Abort:
            return None
