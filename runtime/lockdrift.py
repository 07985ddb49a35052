"""What a drift from the MCP lock file is, for both sides that handle one.

:mod:`runtime.mcpclient.lockcheck` finds drift (a server's live listing compared with
the lock file, :mod:`runtime.mcpclient.lock`) and logs it; :mod:`runtime.reload` turns
it into ``mcp_drift`` events. Both need the change record and the cap on how many
changes one report shows; they live here so that neither side imports the other for
them (this module imports nothing of toolrt).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

#: Changes a drift report (log, ``mcp_drift`` event) lists; the count says how many there were.
REPORTED = 100
_SHOWN = 120  # characters of a tool name in a report: the name is the server's, of any length


@dataclass(frozen=True)
class DriftChange:
    """One tool's difference between the lock file and the server's live listing."""

    tool: str
    change: Literal["added", "removed", "changed"]
    fields: tuple[str, ...] = ()  # changed: which of description, input_schema, output_schema, annotations
    hints: tuple[tuple[str, Any, Any], ...] = ()  # changed annotations: (name, locked value, live value)

    def __str__(self) -> str:
        name = self.tool if len(self.tool) <= _SHOWN else self.tool[:_SHOWN] + "..."
        if self.change == "added":
            return f"`{name}` is new"
        if self.change == "removed":
            return f"`{name}` is gone"
        text = f"`{name}` changed its {', '.join(self.fields)}"
        if self.hints:
            shown = ", ".join(f"{hint}: {_value(a)} -> {_value(b)}" for hint, a, b in self.hints)
            text += f" ({shown})"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The change as JSON-able data: ``tool``, ``change``, ``message``, and for a changed
        tool ``fields`` and ``annotations`` (``{hint: {"locked": .., "live": ..}}``)."""
        data: dict[str, Any] = {"tool": self.tool[:_SHOWN], "change": self.change, "message": str(self)}
        if self.change == "changed":
            data["fields"] = list(self.fields)
            data["annotations"] = {hint: {"locked": a, "live": b} for hint, a, b in self.hints}
        return data


def _value(value: Any) -> str:
    """An annotation value as JSON spells it (``true``, ``null``)."""
    return json.dumps(value, default=str)
