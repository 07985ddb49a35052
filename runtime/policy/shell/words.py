"""Words and quoting: one shell word after quote removal, and the limits every layer shares.

The lowest layer of :mod:`runtime.policy.shell`: it imports nothing of the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Longer lines are not split: the result is an empty, uncertain CommandLine.
MAX_LINE_LENGTH = 100_000
#: How deeply substitutions, subshells, ``sh -c`` scripts and wrappers may nest.
MAX_DEPTH = 16
#: The argv item standing for the arguments ``xargs`` reads from its input.
XARGS_INPUT = "<xargs input>"
#: The characters of :attr:`CommandLine.shapes`.
LITERAL, GLOB, RUNTIME = "l", "g", "r"
TOO_DEEP = f"the command line nests commands more than {MAX_DEPTH} levels deep"
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")


@dataclass(slots=True)
class Word:
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


class WordBuilder:
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

    def build(self) -> Word:
        return Word(self.text(), bytes(self.mask), self.quoted, self.expanded, self.split)


def literal_word(text: str) -> Word:
    return Word(text, b"\x01" * len(text))


def runtime_word(text: str) -> Word:
    """A word whose real value is only known when the command runs."""
    return Word(text, b"\x00" * len(text), quoted=True, expanded=True, split=True)


def is_assignment(word: Word) -> bool:
    """``NAME=value`` (or ``NAME[sub]=``, ``NAME+=``) written with an unquoted name."""
    match = ASSIGNMENT.match(word.value)
    if match is None:
        return False
    name_end, equals = match.end(1), match.end() - 1
    return 0 not in word.plain[:name_end] and word.plain[equals] == 1


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


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


def decode_ansi_c(body: str) -> str:
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
