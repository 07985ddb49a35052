"""What grep's engines share: the request, the engine protocol and per-file hits."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

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


class SearchFile(NamedTuple):
    """A file the walker hands to an engine: its path, its bytes (whole, or its head) and,
    for an engine that reads files itself, ``fd``: the very file the walker opened without
    following a link (the engine closes it), so a name swapped for a link since is never read."""

    rel: str
    data: bytes
    fd: int | None = None


class Engine(Protocol):
    """A grep engine: searches the files the walker gives it, in path order.

    ``reads_whole_files``: the walker hands over whole files (else only their first
    bytes, for the binary check, and an open descriptor the engine reads and closes).
    """

    name: str
    reads_whole_files: bool

    def search(
        self, request: GrepRequest, files: Iterator[SearchFile], budget: Budget, skipped: Skipped
    ) -> list[FileHits]:
        """The files with matches, each with its count (and line texts while the budget lasts)."""
        ...
