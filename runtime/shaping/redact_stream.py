"""Redaction of output that arrives in chunks (command output, streamed as it comes).

A secret split across chunks is still seen whole: each scanner holds back a window of
bytes between chunks (see :data:`DEFAULT_WINDOW`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.shaping._unicode import to_utf8
from runtime.shaping.redact_scan import _char_start, _scan, _Scanner

if TYPE_CHECKING:
    from runtime.shaping.redact import Redactor

DEFAULT_WINDOW = 64 * 1024
"""Bytes of output a :class:`StreamRedactor` holds back between chunks.

A secret split across chunks is redacted as long as its match is at most this long
(a 4 KB PEM private key is; so is every token pattern shipped). A match longer than
the window may be missed or only partly redacted. The stream emits text only once
twice this much is pending, so every byte is scanned at most about twice.
"""


class _Stage:
    """Streaming state of one scanner: the held-back bytes and one character of context."""

    __slots__ = ("scanner", "window", "pending", "context", "counts")

    def __init__(self, scanner: _Scanner, window: int, counts: dict[str, int]) -> None:
        self.scanner = scanner
        self.window = window
        self.pending = bytearray()
        self.context = b""  # the last character already emitted: \b and ^ need it
        self.counts = counts

    def feed(self, data: bytes) -> bytes:
        self.pending += data
        # Scan only once two windows are pending: each scan emits at least one window,
        # so every byte is scanned about twice instead of once per chunk.
        if len(self.pending) < 2 * self.window:
            return b""
        return self._process(final=False)

    def finish(self) -> bytes:
        return self._process(final=True)

    def preview(self, more: bytes) -> bytes:
        """What :meth:`finish` would return after ``more`` came in, without changing anything."""
        data = self.context + bytes(self.pending) + more
        out: list[bytes] = []
        _scan(self.scanner, data, len(self.context), None, out, {})
        return b"".join(out)

    def _process(self, *, final: bool) -> bytes:
        data = self.context + bytes(self.pending)
        start = len(self.context)
        # A match that starts before `limit` and is at most `window` long lies wholly in
        # `data`, so it is found exactly as in the whole text. Later starts wait.
        limit = None if final else max(start, _char_start(data, len(data) - self.window))
        out: list[bytes] = []
        boundary = _scan(self.scanner, data, start, limit, out, self.counts)
        self.pending = bytearray(data[boundary:])
        self.context = data[_char_start(data, boundary - 1) : boundary] if boundary > 0 else b""
        return b"".join(out)


class StreamRedactor:
    """Redacts output that arrives in chunks, across chunk boundaries.

    ``feed(chunk)`` returns the redacted text that is now safe to pass on (possibly
    ``""``: up to two windows are held back so that a secret split across chunks is
    still seen whole); ``finish()`` returns the rest. ``counts`` accumulates the
    matches by pattern name. Matches longer than the redactor's window (64 KiB by
    default) may be missed. Emitted text always ends on a character boundary.
    """

    __slots__ = ("counts", "_stages", "_finished")

    def __init__(self, redactor: Redactor) -> None:
        self.counts: dict[str, int] = {}
        self._stages = tuple(_Stage(scanner, redactor.window, self.counts) for scanner in redactor._scanners)
        self._finished = False

    def feed(self, chunk: str) -> str:
        """Take the next chunk; return the redacted text that can be emitted now."""
        if self._finished:
            raise RuntimeError("feed() after finish(): start a new stream")
        if not self._stages:
            return chunk
        data = to_utf8(chunk)
        for stage in self._stages:
            if not data:
                break  # nothing released: the later stages have nothing new either
            data = stage.feed(data)
        return data.decode("utf-8")

    def preview(self) -> str:
        """The text still held back, redacted as if the output ended now; nothing is
        consumed (for a look at a running command's latest output)."""
        if self._finished or not self._stages:
            return ""
        data = b""
        for stage in self._stages:
            data = stage.preview(data)
        return data.decode("utf-8", "replace")

    def finish(self) -> str:
        """End of output: return everything still held back, redacted."""
        if self._finished:
            return ""
        self._finished = True
        if not self._stages:
            return ""
        data = b""
        for stage in self._stages:
            # Whatever an earlier stage still held goes through the later ones too.
            stage.pending += data
            data = stage.finish()
        return data.decode("utf-8")
