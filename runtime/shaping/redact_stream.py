"""Redaction of output that arrives in chunks (command output, streamed as it comes).

A secret split across chunks is still seen whole: each scanner holds back a window of
bytes between chunks (see :data:`DEFAULT_WINDOW`).
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.shaping._unicode import to_utf8
from runtime.shaping.disguise import DISGUISED, Spans, redact_disguised
from runtime.shaping.redact_scan import _char_start, _scan, _Scanner

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


class _Lines:
    """One disguise pass (:mod:`runtime.shaping.disguise`) over a stream, whole lines at a
    time: a line's skeleton needs all of it, so the text after the last newline waits
    (up to ``window`` characters, the scanners' window; a longer line is cut there, and
    a secret disguised across the cut may be missed)."""

    __slots__ = ("spans", "inside", "window", "pending", "counts")

    def __init__(self, spans: Spans, *, inside: bool, window: int, counts: dict[str, int]) -> None:
        self.spans = spans
        self.inside = inside
        self.window = window
        self.pending = ""
        self.counts = counts

    def feed(self, text: str) -> str:
        text = self.pending + text if self.pending else text
        cut = text.rfind("\n") + 1
        if cut == 0 and len(text) <= self.window:
            self.pending = text
            return ""
        if cut == 0:
            cut = len(text)
        self.pending = text[cut:]
        return self._redact(text[:cut])

    def finish(self) -> str:
        text, self.pending = self.pending, ""
        return self._redact(text)

    def preview(self, more: str) -> str:
        return redact_disguised(self.pending + more, self.spans, inside=self.inside)[0]

    def _redact(self, text: str) -> str:
        text, hidden = redact_disguised(text, self.spans, inside=self.inside)
        if hidden:
            self.counts[DISGUISED] = self.counts.get(DISGUISED, 0) + hidden
        return text


class StreamRedactor:
    """Redacts output that arrives in chunks, across chunk boundaries.

    ``feed(chunk)`` returns the redacted text that is now safe to pass on (possibly
    ``""``: up to two windows are held back so that a secret split across chunks is
    still seen whole); ``finish()`` returns the rest. ``counts`` accumulates the
    matches by pattern name. Matches longer than the redactor's window (64 KiB by
    default) may be missed. Emitted text always ends on a character boundary.
    """

    __slots__ = ("counts", "_stages", "_finished", "_before", "_after")

    def __init__(self, scanners: Sequence[_Scanner], spans: Spans, window: int) -> None:
        # Handed the pieces of a Redactor (Redactor.stream), not the Redactor: this module stays below redact.
        self.counts: dict[str, int] = {}
        self._stages = tuple(_Stage(scanner, window, self.counts) for scanner in scanners)
        self._finished = False
        # The disguise passes of Redactor.redact, before and after the scanners, on whole
        # lines: what is emitted does not depend on where the chunks end.
        self._before = _Lines(spans, inside=True, window=window, counts=self.counts)
        self._after = _Lines(spans, inside=False, window=window, counts=self.counts)

    def feed(self, chunk: str) -> str:
        """Take the next chunk; return the redacted text that can be emitted now."""
        if self._finished:
            raise RuntimeError("feed() after finish(): start a new stream")
        if not self._stages:
            return chunk
        data = to_utf8(self._before.feed(chunk))
        for stage in self._stages:
            if not data:
                break  # nothing released: the later stages have nothing new either
            data = stage.feed(data)
        return self._after.feed(data.decode("utf-8")) if data else ""

    def preview(self) -> str:
        """The text still held back, redacted as if the output ended now; nothing is
        consumed (for a look at a running command's latest output)."""
        if self._finished or not self._stages:
            return ""
        data = to_utf8(self._before.preview(""))
        for stage in self._stages:
            data = stage.preview(data)
        return self._after.preview(data.decode("utf-8", "replace"))

    def finish(self) -> str:
        """End of output: return everything still held back, redacted."""
        if self._finished:
            return ""
        self._finished = True
        if not self._stages:
            return ""
        data = to_utf8(self._before.finish())
        for stage in self._stages:
            # Whatever an earlier stage still held goes through the later ones too.
            stage.pending += data
            data = stage.finish()
        return self._after.feed(data.decode("utf-8")) + self._after.finish()
