"""Compiling a CEL expression with a budget and evaluating it, as the CEL budget tests
(cost units, time limit, configured budget) all do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from runtime.policy.cel import fast_available, get_engine
from runtime.policy.celbudget import DEFAULT_COST_LIMIT, DEFAULT_TIME_LIMIT_MS

VARIABLES = ("args", "tool", "session", "call")
ENGINES = ["portable", pytest.param("fast", marks=pytest.mark.skipif(not fast_available(), reason="no fast extra"))]
# For tests about the cost budget: a time limit no evaluation reaches keeps them apart
# from the time budget on a slow machine.
NO_TIME_LIMIT_MS = 60_000


def compiled(
    engine_name: str,
    source: str,
    data: Mapping[str, Any],
    cost_limit: int = DEFAULT_COST_LIMIT,
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    *,
    translated: bool = True,
    variables: tuple[str, ...] = VARIABLES,
) -> tuple[Any, Any]:
    """``source`` compiled on ``engine_name`` with the budget, and the activation of ``data``."""
    engine = get_engine(engine_name, translated=translated)
    program = engine.compile(source, variables, cost_limit, time_limit_ms)
    return program, engine.activation(data, variables)


def evaluate(
    engine_name: str,
    source: str,
    data: Mapping[str, Any],
    cost_limit: int = DEFAULT_COST_LIMIT,
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    *,
    translated: bool = True,
    variables: tuple[str, ...] = VARIABLES,
) -> Any:
    """The outcome of ``source`` over ``data`` (``{"args": ...}``) within the budget."""
    program, activation = compiled(
        engine_name, source, data, cost_limit, time_limit_ms, translated=translated, variables=variables
    )
    return program.evaluate(activation)
