"""What a handler gets besides its arguments: :class:`ToolContext`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.records import Session

if TYPE_CHECKING:
    from runtime.shaping.artifacts import ArtifactStore


@dataclass(frozen=True)
class ToolContext:
    """Passed to every python handler that accepts a second parameter.

    ``progress()`` says "still working": it resets the idle timeout. ``cancelled`` is
    set when the call is being stopped (timeout, interrupted turn); long-running sync
    handlers should check it and return early, since a thread cannot be killed.
    """

    workspace_root: Path
    session: Session
    call_id: str
    request_id: str
    trace_id: str | None
    tool: str
    snapshot_version: str
    artifacts: ArtifactStore | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    _on_progress: Callable[[str | None], None] | None = field(default=None, repr=False)

    @property
    def session_id(self) -> str:
        return self.session.id

    def progress(self, message: str | None = None) -> None:
        """Report progress; resets the idle timer. Safe to call from any thread."""
        if self._on_progress is not None:
            self._on_progress(message)
