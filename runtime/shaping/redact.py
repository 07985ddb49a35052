"""Stage 06, step 2: remove secrets and personal data from a tool's output.

A :class:`Redactor` is built once per set of profiles (at snapshot build time) and
shared by every call of the tools that use that set. All patterns of all its
profiles are joined into **one** RE2 alternation, so one linear-time scan of the text
finds every candidate, whatever the number of patterns (Python ``re`` would need one
backtracking pass per pattern and is ~50x slower here; see FACTS.md).

Semantics are those of applying the alternation left to right: at each position the
leftmost match wins and, among matches starting there, the pattern listed first (in
profile order, then pattern order). A candidate of a pattern with a ``validator``
that fails its checksum is kept as is; the later patterns are then tried at the same
position (an 18-digit number that is not a card number may still be a resident ID),
and the scan goes on from the next character.

The text is scanned as UTF-8 bytes, encoded once: google-re2's ``str`` interface
re-encodes the whole text on every ``search`` call, which would make a scan with
many candidates quadratic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from runtime.shaping._unicode import to_utf8
from runtime.shaping.validators import VALIDATORS
from runtime.snapshot import CompiledPattern, CompiledRedaction

DEFAULT_WINDOW = 64 * 1024
"""Bytes of output a :class:`StreamRedactor` holds back between chunks.

A secret split across chunks is redacted as long as its match is at most this long
(a 4 KB PEM private key is; so is every token pattern shipped). A match longer than
the window may be missed or only partly redacted. The stream emits text only once
twice this much is pending, so every byte is scanned at most about twice.
"""

# The DFA of a big alternation needs more than RE2's default 8 MiB to stay in its fast
# path (when the budget runs out RE2 falls back to a much slower NFA). Memory is only
# used as the DFA grows, and one compiled alternation is shared by every tool that
# uses the same profiles (see _compile_combined).
_MAX_MEM = 64 << 20


@dataclass(frozen=True, slots=True)
class _Entry:
    """One pattern inside a combined alternation."""

    name: str
    group: int  # the capture group that wraps this pattern in the alternation
    replacement: bytes
    validator: Callable[[str], bool] | None
    regex: Any  # the pattern alone, to retry at a position where a validator said no


@dataclass(frozen=True, slots=True)
class _Scanner:
    """One compiled alternation and the patterns in it, in order."""

    regex: Any
    entries: tuple[_Entry, ...]


def _pattern_source(pattern: CompiledPattern) -> str:
    source: str = pattern.regex.pattern
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    # compile_re2 applies case-insensitivity as an option, not inline; inside the
    # alternation it must become an inline flag scoped to the pattern's own group.
    return source if pattern.regex.options.case_sensitive else f"(?i){source}"


@functools.lru_cache(maxsize=256)
def _compile_combined(source: str) -> Any:
    # Cached by source: tools sharing the same profiles share one RE2 object (and
    # its DFA cache) instead of each holding a copy.
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _MAX_MEM
    return re2.compile(source, options)


def _build_scanners(patterns: Sequence[CompiledPattern]) -> tuple[_Scanner, ...]:
    """As few alternations as possible; normally exactly one.

    Patterns that cannot share one alternation (two patterns defining the same named
    group, or an alternation beyond RE2's size limit) start another one; the scanners
    then run one after the other.
    """
    scanners: list[_Scanner] = []
    pending: list[CompiledPattern] = list(patterns)
    while pending:
        count = len(pending)
        while True:
            try:
                scanners.append(_scanner(pending[:count]))
                break
            except re2.error:
                if count == 1:
                    raise  # a pattern that compiled alone always compiles alone again
                count = max(1, count // 2)
        pending = pending[count:]
    return tuple(scanners)


def _scanner(patterns: Sequence[CompiledPattern]) -> _Scanner:
    entries: list[_Entry] = []
    sources: list[str] = []
    group = 1
    for pattern in patterns:
        entries.append(
            _Entry(
                name=pattern.name,
                group=group,
                replacement=to_utf8(pattern.replacement),
                validator=VALIDATORS.get(pattern.validator) if pattern.validator is not None else None,
                regex=pattern.regex,
            )
        )
        sources.append(f"({_pattern_source(pattern)})")
        # The wrapping group, then the pattern's own groups: the next wrapper follows.
        group += 1 + int(pattern.regex.groups)
    return _Scanner(_compile_combined("|".join(sources)), tuple(entries))


def _char_len(lead: int) -> int:
    """Bytes of the UTF-8 character whose first byte is ``lead``."""
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _char_start(data: bytes | bytearray, index: int) -> int:
    """The start of the UTF-8 character containing byte ``index`` (or ``index`` itself)."""
    while 0 < index < len(data) and data[index] & 0xC0 == 0x80:
        index -= 1
    return index


def _scan(scanner: _Scanner, data: bytes, start: int, limit: int | None, out: list[bytes], counts: dict[str, int]) -> int:
    """Redact ``data[start:]`` into ``out``; return where the output stops.

    Only matches that begin before ``limit`` (None: anywhere) are redacted. Output is
    produced up to the end of the last redacted match or ``limit``, whichever is
    later, and always ends on a character boundary. Text before ``start`` is context
    only (so ``\\b`` and ``^`` see the character before it), never output.
    """
    end = len(data) if limit is None else limit
    emitted = pos = start
    search = scanner.regex.search
    while pos <= len(data):
        match = search(data, pos)
        if match is None:
            break
        begin = match.start()
        if begin >= end:
            break
        entry = _accept(scanner, match, data, begin)
        if entry is None:
            pos = begin + _char_len(data[begin]) if begin < len(data) else begin + 1
            continue
        stop = entry[1]
        out.append(data[emitted:begin])
        out.append(entry[0].replacement)
        counts[entry[0].name] = counts.get(entry[0].name, 0) + 1
        emitted = pos = stop
    boundary = max(end, emitted)
    out.append(data[emitted:boundary])
    return boundary


def _accept(scanner: _Scanner, match: Any, data: bytes, begin: int) -> tuple[_Entry, int] | None:
    """The pattern to redact this candidate with, and where its match ends; or None."""
    entries = scanner.entries
    index = _matched_entry(entries, match)
    entry = entries[index]
    stop = match.end()
    if stop > begin and (entry.validator is None or _valid(entry.validator, data[begin:stop])):
        return entry, stop
    # Rejected (checksum failed, or an empty match, which would redact nothing): a
    # later pattern may still match here. Earlier ones cannot (leftmost-first).
    for later in entries[index + 1 :]:
        other = later.regex.match(data, begin)
        if other is None or other.end() <= begin:
            continue
        if later.validator is None or _valid(later.validator, data[begin : other.end()]):
            return later, other.end()
    return None


def _matched_entry(entries: tuple[_Entry, ...], match: Any) -> int:
    """Which pattern of the alternation matched: the one whose wrapping group took part."""
    for index, entry in enumerate(entries):
        if match.start(entry.group) != -1:
            return index
    raise AssertionError("a match of the alternation matched none of its patterns")


def _valid(validator: Callable[[str], bool], candidate: bytes) -> bool:
    try:
        return bool(validator(candidate.decode("utf-8", "replace")))
    except Exception:  # noqa: BLE001 - a failing check must not fail the call; redact to be safe
        return True


class Redactor:
    """Every pattern of some redaction profiles, compiled into one RE2 scan.

    Build it once (at snapshot build time) and share it: it is immutable and
    thread-safe. ``Redactor(())`` is a no-op that costs nothing per call.
    """

    __slots__ = ("names", "_scanners", "_window")

    def __init__(self, profiles: Sequence[CompiledRedaction], *, window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ValueError("window must be at least 1 byte")
        patterns = [pattern for profile in profiles for pattern in profile.patterns]
        self.names: tuple[str, ...] = tuple(profile.name for profile in profiles)
        self._scanners = _build_scanners(patterns)
        self._window = window

    @property
    def enabled(self) -> bool:
        """False for a redactor without patterns (every method returns its input)."""
        return bool(self._scanners)

    @property
    def window(self) -> int:
        """Bytes held back by :meth:`stream` (see :data:`DEFAULT_WINDOW`)."""
        return self._window

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """``text`` with every match replaced, and how many matches of each pattern.

        Counts are keyed by pattern name and never include the matched values.
        """
        if not self._scanners or not text:
            return text, {}
        counts: dict[str, int] = {}
        data = to_utf8(text)
        changed = False
        for scanner in self._scanners:
            if scanner.regex.search(data) is None:
                continue  # the common case: nothing to redact, no copy made
            out: list[bytes] = []
            _scan(scanner, data, 0, None, out, counts)
            data = b"".join(out)
            changed = True
        if not changed:
            return text, counts
        return data.decode("utf-8"), counts

    def redact_value(self, value: Any) -> tuple[Any, dict[str, int]]:
        """JSON-like data (dicts, lists, strings) with every string redacted.

        For a result's structured content: a secret in a field must not reach a
        client that reads the structured form instead of the text. Keys are redacted
        too. Other values are returned as they are.
        """
        counts: dict[str, int] = {}
        if not self._scanners:
            return value, counts
        return self._redact_value(value, counts, 0), counts

    def _redact_value(self, value: Any, counts: dict[str, int], depth: int) -> Any:
        if isinstance(value, str):
            text, found = self.redact(value)
            for name, number in found.items():
                counts[name] = counts.get(name, 0) + number
            return text
        if depth > 200:  # serialize() already cut deeper data; this only guards the stack
            return value
        if isinstance(value, dict):
            return {self._redact_value(k, counts, depth + 1): self._redact_value(v, counts, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._redact_value(item, counts, depth + 1) for item in value]
        return value

    def stream(self) -> StreamRedactor:
        """A redactor for output that arrives in chunks (see :class:`StreamRedactor`)."""
        return StreamRedactor(self)


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
