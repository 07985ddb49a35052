"""Command patterns compiled once per snapshot, and command lines split once per text.

A rule's ``commands`` patterns (see :func:`runtime.policy.shell.command_matches` for
the language) are compiled into :class:`CommandPatterns` when the snapshot is built:
patterns are indexed by their first word, literal words compare as strings and only
glob words use a regex, so judging a command costs a dict lookup and a few string
comparisons. :func:`split_cached` remembers recent command lines: agents send the
same lines again and again, and a split is immutable.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runtime.policy.placed import LITERAL, UNKNOWN, PlacedCommand
from runtime.policy.shell import CommandLine, split_command_line

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class _Pattern:
    words: tuple[str | re.Pattern[str], ...]  # a literal word, or a compiled glob
    rest: bool  # a final lone "*": any number of further items
    spelled: tuple[int, ...]  # per word: how many leading characters it spells out (no wildcard)

    def matches(self, argv: Sequence[str]) -> bool:
        if len(argv) < len(self.words) or (not self.rest and len(argv) != len(self.words)):
            return False
        for item, word in zip(argv, self.words, strict=False):
            if isinstance(word, str):
                if item != word:
                    return False
            elif word.match(item) is None:
                return False
        return True

    def covers(self, argv: Sequence[str], guards: Mapping[int, int]) -> bool:
        """Whether an allow rule with this pattern covers ``argv``: it matches, and each
        guarded item is matched by a word that spells out what the guard asks for (see
        :class:`runtime.policy.placed.PlacedCommand`); the final ``*`` covers none."""
        if not self.matches(argv):
            return False
        fixed = len(self.words)
        for index, need in guards.items():
            if index >= fixed or need == UNKNOWN:
                return False
            spelled = self.spelled[index]
            if need == LITERAL:
                if not isinstance(self.words[index], str):
                    return False
            elif spelled < need:
                return False
        return True


class CommandPatterns:
    """One rule's command patterns, ready to match commands (argv tuples)."""

    __slots__ = ("sources", "_by_first", "_any_first")

    def __init__(self, patterns: Sequence[str]) -> None:
        self.sources = tuple(patterns)
        self._by_first: dict[str, list[_Pattern]] = {}
        self._any_first: list[_Pattern] = []
        for source in patterns:
            words = source.split()
            if not words:
                continue  # a blank pattern matches nothing
            rest = words[-1] == "*"
            fixed = words[:-1] if rest else words
            compiled = _Pattern(tuple(_word(w) for w in fixed), rest, tuple(_spelled(w) for w in fixed))
            if fixed and isinstance(compiled.words[0], str):
                self._by_first.setdefault(fixed[0], []).append(compiled)
            else:
                self._any_first.append(compiled)

    def covers(self, command: PlacedCommand) -> bool:
        """Whether any of the patterns covers ``command`` for an allow rule: matches it and
        spells out every guarded item (write and code options, paths outside the
        workspace); a command with an item only known at run time is never covered."""
        argv, guards = command.argv, command.guards
        if not guards:
            return self.matches(argv)
        candidates = self._by_first.get(argv[0]) if argv else None
        for pattern in (*(candidates or ()), *self._any_first):
            if pattern.covers(argv, guards):
                return True
        return False

    def matches(self, argv: Sequence[str]) -> bool:
        """Whether any of the patterns matches the command ``argv``."""
        candidates = self._by_first.get(argv[0]) if argv else None
        if candidates is not None:
            for pattern in candidates:
                if pattern.matches(argv):
                    return True
        if self._any_first:
            return any(pattern.matches(argv) for pattern in self._any_first)
        return False


def _spelled(word: str) -> int:
    """How many leading characters of a pattern word are literal."""
    match = re.search(r"[*?\[]", word)
    return len(word) if match is None else match.start()


def _word(word: str) -> str | re.Pattern[str]:
    if _GLOB_CHARS.isdisjoint(word):
        return word
    return re.compile(fnmatch.translate(word))  # exactly fnmatchcase's meaning


@functools.lru_cache(maxsize=4096)
def split_cached(line: str) -> CommandLine:
    """:func:`~runtime.policy.shell.split_command_line`, remembered for recent lines."""
    return split_command_line(line)
