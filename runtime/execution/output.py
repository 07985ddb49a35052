"""Collecting streamed output with bounded memory.

Output is redacted as it arrives (so no secret is ever stored), kept in memory while
it is small, and spilled to an artifact once it passes the tool's limit; after that
only the head and a tail window stay in memory, so a command printing a gigabyte
costs a few hundred kilobytes of RAM. The artifact itself stops growing at
``max_saved_chars`` (a command printing for its whole time limit must not fill the
disk); the total is still counted and the tail still kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class _Writer(Protocol):
    def write(self, chunk: str) -> None: ...

    def close(self) -> Any: ...

    def abort(self) -> None: ...


class _StreamRedactor(Protocol):
    counts: dict[str, int]

    def feed(self, chunk: str) -> str: ...

    def preview(self) -> str: ...

    def finish(self) -> str: ...


@dataclass
class CollectedOutput:
    """The whole text (``text``) if it stayed small, else head, tail and the artifact."""

    text: str | None
    head: str
    tail: str
    total_chars: int
    artifact: Any = None  # an ArtifactRef when spilled
    redactions: dict[str, int] = field(default_factory=dict)
    spill_error: str | None = None
    saved_chars: int | None = None  # set when the artifact holds only the first saved_chars characters

    @property
    def spilled(self) -> bool:
        return self.text is None


class OutputCollector:
    def __init__(
        self,
        *,
        limit_chars: int,
        tail_chars: int,
        redactor: _StreamRedactor | None,
        open_writer: Callable[[], _Writer] | None,
        max_saved_chars: int | None = None,
    ) -> None:
        self._limit = limit_chars
        self._max_saved = max_saved_chars
        self._saved = 0
        self._tail_chars = max(tail_chars, 1)
        self._redactor = redactor
        self._open_writer = open_writer
        self._parts: list[str] = []
        self._size = 0
        self._total = 0
        self._writer: _Writer | None = None
        self._head = ""
        self._tail = ""
        self._spill_error: str | None = None

    def feed(self, raw: str) -> None:
        """Take raw output text (not yet redacted)."""
        self._store(self._redactor.feed(raw) if self._redactor is not None else raw)

    def _store(self, text: str) -> None:
        if not text:
            return
        self._total += len(text)
        if self._writer is None and self._spill_error is None and self._size + len(text) <= self._limit:
            self._parts.append(text)
            self._size += len(text)
            return
        if self._writer is None and self._spill_error is None:
            self._start_spill()
        if len(self._head) < self._limit:
            self._head += text[: self._limit - len(self._head)]
        if self._writer is not None:
            try:
                self._write(text)
            except OSError as err:
                self._spill_error = f"the full output could not be saved: {err}"
                self._writer.abort()
                self._writer = None
        self._tail = (self._tail + text)[-self._tail_chars :]

    def _start_spill(self) -> None:
        held = "".join(self._parts)
        self._parts = []
        self._head = held[: self._limit]
        self._tail = held[-self._tail_chars :]
        if self._open_writer is None:
            self._spill_error = "no artifact store is configured"
            return
        try:
            self._writer = self._open_writer()
            self._write(held)
        except OSError as err:
            self._spill_error = f"the full output could not be saved: {err}"
            if self._writer is not None:
                self._writer.abort()
            self._writer = None

    def _write(self, text: str) -> None:
        if self._writer is None:  # pragma: no cover - callers check
            return
        if self._max_saved is not None:
            text = text[: max(self._max_saved - self._saved, 0)]
        if text:
            self._writer.write(text)
            self._saved += len(text)

    def peek(self, chars: int) -> tuple[str, int]:
        """The last ``chars`` characters collected so far (redacted), and the total so far.

        Includes what the redactor still holds back (redacted as if the output ended
        here), so a running command's latest lines show before it ends."""
        held = self._redactor.preview() if self._redactor is not None else ""
        if self._writer is None and self._spill_error is None:
            return ("".join(self._parts) + held)[-chars:], self._total + len(held)
        return (self._tail + held)[-chars:], self._total + len(held)

    def finish(self) -> CollectedOutput:
        if self._redactor is not None:
            self._store(self._redactor.finish())
        counts = dict(self._redactor.counts) if self._redactor is not None else {}
        if self._writer is None and self._spill_error is None:
            return CollectedOutput("".join(self._parts), "", "", self._total, None, counts)
        artifact = None
        if self._writer is not None:
            try:
                artifact = self._writer.close()
            except OSError as err:
                self._spill_error = f"the full output could not be saved: {err}"
        cut = self._saved if artifact is not None and self._saved < self._total else None
        return CollectedOutput(None, self._head, self._tail, self._total, artifact, counts, self._spill_error, cut)

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
