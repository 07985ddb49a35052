"""A tool's declared output (``output_schema``), compiled once into the snapshot.

Every successful result of such a tool is checked in the shape stage, on the data the
handler returned (before redaction, which may rewrite a value the schema constrains):
a result that is not an object matching the schema becomes an error result, so the
model never reads data the tool promised not to return. MCP clients get the schema as
the tool's ``outputSchema``; the MCP server checks the ``structuredContent`` it sends
against it once more (see :func:`runtime.adapters.mcp.render_result`), because
redaction or truncation may have changed or dropped the data since.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runtime.validation.arguments import ArgumentProblem, ArgumentValidator

MAX_PROBLEMS = 5  # the first few are enough to fix a tool; a huge result may have thousands


class OutputCheck:
    """The compiled ``output_schema`` of one tool."""

    __slots__ = ("schema", "_validator")

    def __init__(self, schema: Mapping[str, Any], engine: str = "auto") -> None:
        self.schema: Mapping[str, Any] = MappingProxyType(copy.deepcopy(dict(schema)))
        self._validator = ArgumentValidator(schema, engine)

    def problems(self, data: Any) -> tuple[ArgumentProblem, ...]:
        """What keeps ``data`` (the JSON form of a result) from matching; empty when it matches."""
        if not isinstance(data, Mapping):
            return (ArgumentProblem("", f"the result is {_kind(data)}, not a JSON object"),)
        return self._validator.validate(data)[:MAX_PROBLEMS]

    def listing(self) -> dict[str, Any]:
        """The schema as MCP's ``outputSchema`` (a copy the caller may keep)."""
        return copy.deepcopy(dict(self.schema))


def mismatch_text(tool: str, problems: tuple[ArgumentProblem, ...]) -> str:
    """The error a model reads when ``tool`` returned something its output_schema rules out."""
    where = "; ".join(f"{p.pointer or '(the result)'}: {p.message}" for p in problems)
    return (
        f"`{tool}` returned a result that does not match its declared output_schema ({where}). "
        "The result is withheld. This is a fault of the tool, not of the call: report it to the operator "
        "rather than retrying with other arguments."
    )


def _kind(data: Any) -> str:
    if data is None:
        return "text or nothing"
    if isinstance(data, list):
        return "a JSON array"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, int | float):
        return "a number"
    return "text"
