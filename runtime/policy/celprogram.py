"""What an engine compiles to and what it answers: :class:`CelEngine`, :class:`CelProgram`, :class:`Outcome`.

Its own module so that the engines (:mod:`runtime.policy.celfast`, :mod:`runtime.policy.celportable`) and the
registry that picks one and puts closures in front of it (:mod:`runtime.policy.cel`, which re-exports these names)
do not import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.policy.celbudget import DEFAULT_COST_LIMIT, DEFAULT_TIME_LIMIT_MS


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of evaluating an expression: ``value`` or ``error``, never both."""

    value: Any = None
    error: str | None = None

    @property
    def is_true(self) -> bool:
        """True only for a boolean true result (errors and non-booleans are not true)."""
        return self.error is None and self.value is True


class CelProgram(Protocol):
    source: str

    def evaluate(self, activation: Any) -> Outcome: ...


class CelEngine(Protocol):
    name: str
    checks_types: bool

    def compile(
        self,
        source: str,
        variables: tuple[str, ...],
        cost_limit: int = DEFAULT_COST_LIMIT,
        time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    ) -> CelProgram: ...

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any: ...
