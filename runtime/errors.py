"""The one error tree of toolrt, grouped by who must act.

::

    ToolrtError                   base of everything toolrt raises on purpose
    ├── ConfigError               the operator: config that cannot become a snapshot.
    │                             Raised only while building a snapshot; carries every
    │                             problem found (file:line:col, code, message).
    ├── CelCompileError           a CEL expression that does not compile (line:col in
    │                             the expression); turned into a ConfigError problem.
    ├── UsageError                the person at the command line: bad flags or paths.
    ├── LimitStoreError           the operator: the shared store of a fleet (Redis) is
    │                             unreachable or failing; limits then fail closed.
    └── ToolError                 raised BY a handler to fail a call on purpose; its
        │                         message is what the model reads ("ticket not found").
        └── TransientError        a failure worth retrying (read-only or idempotent
                                  tools only, with backoff).

Errors the *model* must act on (bad arguments, unknown tools, denials, timeouts) are
never raised at the embedding app: the pipeline turns them into error results.
Anything else that escapes is a bug in toolrt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.config.problems import Problem


class ToolrtError(Exception):
    """Base class of every error toolrt raises on purpose."""


class ConfigError(ToolrtError):
    """Config that cannot be compiled into a snapshot. ``problems`` lists every finding."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        errors = [p for p in self.problems if p.is_error]
        head = f"{len(errors)} config error(s)"
        lines = "\n".join(str(p) for p in errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{head}:\n{lines}{more}" if lines else head)


class CelCompileError(ToolrtError):
    """A CEL expression that does not compile; ``line``/``col`` are 1-based within it."""

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


class UsageError(ToolrtError):
    """Bad command-line usage (unknown flag, missing path)."""


class ToolError(ToolrtError):
    """Raised by a handler to fail the call with a message for the model.

    Unlike any other exception, it means "nothing was changed", so even a write tool
    reports a plain error rather than "result unknown".
    """


class TransientError(ToolError):
    """A failure that may go away on retry (a busy service, a dropped connection)."""


class LimitStoreError(ToolrtError):
    """The shared store of limits, grants or jobs (Redis) cannot be used: unreachable,
    too slow, out of memory. ``store`` names it (a URL without its password)."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(f"limit store {store}: {message}")
        self.store = store
