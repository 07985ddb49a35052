"""Problems found while loading config: what is wrong, where, and how to fix it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    error = "error"
    warning = "warning"


@dataclass(frozen=True, slots=True)
class Location:
    """A 1-based line and column in a file; line 0 means "the file as a whole"."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding. ``code`` is stable (tests and suppressions rely on it)."""

    location: Location
    code: str
    message: str
    severity: Severity = Severity.error

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.error

    def __str__(self) -> str:
        return f"{self.location}: {self.severity.value}[{self.code}]: {self.message}"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.location.file, self.location.line, self.location.col, self.code)


def sorted_problems(problems: Iterable[Problem]) -> tuple[Problem, ...]:
    """Problems in file/line/column order, without duplicates."""
    return tuple(sorted(set(problems), key=Problem.sort_key))
