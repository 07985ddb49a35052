"""What grep's engines share: the request, the engine protocol and per-file hits."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from runtime.workspace.sandbox import Workspace
from runtime.workspace.search.common import GrepOutput, SearchLimits, clean
from runtime.workspace.search.regex import Pattern
from runtime.workspace.search.walker import Skipped


@dataclass(frozen=True)
class GrepRequest:
    """One grep call with its arguments checked: what an engine needs to search.

    ``max_line_chars`` cuts shown lines; ``deadline`` is a ``time.monotonic()`` value
    past which the engine stops (and sets ``skipped.timed_out``).
    """

    workspace: Workspace
    pattern: Pattern
    ignore_case: bool
    output: GrepOutput
    context: int
    limit: int
    max_line_chars: int
    deadline: float
    limits: SearchLimits

    @property
    def wants_text(self) -> bool:
        """Whether matching lines are shown (else only files or counts)."""
        return self.output == "content"


@dataclass
class FileHits:
    """Matches in one file: ``count`` matching lines, the texts of those kept, context lines."""

    rel: str
    count: int = 0
    matches: dict[int, str] = field(default_factory=dict)
    context: dict[int, str] = field(default_factory=dict)


def display_line(text: str, number: int, max_chars: int) -> str:
    """A line as shown: line ending and BOM dropped, control characters replaced, cut at ``max_chars``."""
    if text.endswith("\r"):
        text = text[:-1]
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if len(text) > max_chars:
        return f"{clean(text[:max_chars])}… [line cut: {len(text):,} characters in all]"
    return clean(text)


@dataclass
class Budget:
    """How many match texts are still wanted; past it, only counts are collected."""

    remaining: int

    def take(self, count: int) -> None:
        self.remaining = max(0, self.remaining - count)


class Engine(Protocol):
    """A grep engine: searches the files the walker gives it, in path order.

    ``reads_whole_files``: the walker hands over whole files (else only their first
    bytes, for the binary check, and the engine reads the files itself).
    """

    name: str
    reads_whole_files: bool

    def search(
        self, request: GrepRequest, files: Iterator[tuple[str, bytes]], budget: Budget, skipped: Skipped
    ) -> list[FileHits]:
        """The files with matches, each with its count (and line texts while the budget lasts)."""
        ...
