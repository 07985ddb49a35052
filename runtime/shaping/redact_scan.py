"""The scanning machinery under :class:`runtime.shaping.redact.Redactor`.

How the pattern that matched is known: not by capture groups (one wrapping group per
pattern, told apart by group offsets, was the first design; RE2 then runs its
submatch engine on every candidate, ~13-16 us each, against 3.5 us for the DFA alone,
and a log with an order id on every fifth line has thousands of candidates). The scan
is non-capturing; the winner is settled on the candidate's span afterwards (see
:meth:`_Scanner.identify`), exactly as the capturing alternation would have.

The text is scanned as UTF-8 bytes, encoded once: google-re2's ``str`` interface
re-encodes the whole text on every ``search`` call, which would make a scan with
many candidates quadratic.
"""

from __future__ import annotations

import functools
import re
import re._parser as sre_parser
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from runtime.shaping._unicode import to_utf8
from runtime.shaping.compiled import CompiledPattern
from runtime.shaping.secret_checks import value_span
from runtime.shaping.validators import VALIDATORS

try:  # google-re2's matcher below its Python wrapper (see _Regex)
    from re2 import _re2 as _low

    _UNANCHORED = _low.RE2.Anchor.UNANCHORED
    _ANCHOR_START = _low.RE2.Anchor.ANCHOR_START
    _ANCHOR_BOTH = _low.RE2.Anchor.ANCHOR_BOTH
except (ImportError, AttributeError):  # pragma: no cover - other google-re2 layouts
    _low = None


# The DFA of a big alternation (many profiles) can outgrow RE2's default budget of
# 8 MiB, and RE2 then falls back to its much slower NFA. The shipped 20 patterns fit
# either way; the headroom is for larger configs. Memory is only used as the DFA
# grows, and one compiled alternation is shared by every tool that uses the same
# profiles (see _compile).
_MAX_MEM = 64 << 20


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise write to the app's stderr
    options.max_mem = _MAX_MEM
    # Capture groups are never needed (patterns are told apart without them, see
    # _Scanner.identify) and make RE2 run its slow submatch engine on every match:
    # measured 13-16 us per candidate with groups, 3.5 us without.
    options.never_capture = True
    return options


@functools.lru_cache(maxsize=1024)
def _compile(source: str) -> Any:
    # Cached by source: tools sharing the same profiles share one RE2 object (and its
    # DFA cache) instead of each holding a copy.
    return re2.compile(source, _options())


@functools.lru_cache(maxsize=256)
def _compile_set(sources: tuple[str, ...]) -> Any:
    patterns = re2.Set.FullMatchSet(_options())
    for source in sources:
        # One optional character on each side: the slice handed to the set carries the
        # characters around the candidate, so \b, ^ and $ at its edges see them (a
        # set cannot be given a position inside a longer text).
        patterns.Add(f"(?s:.)?(?:{source})(?s:.)?")
    patterns.Compile()
    return patterns


class _Regex:
    """A compiled pattern applied to UTF-8 bytes at a position, with the text around as context.

    Calls google-re2's matcher directly when it can: the public wrapper spends ~3 us
    per call building a generator and a match object, more than the match itself
    costs on a short candidate, and a log full of look-alike numbers has thousands.
    """

    __slots__ = ("_public", "_match")

    def __init__(self, regex: Any) -> None:
        self._public = regex
        low = getattr(regex, "_regexp", None)
        self._match: Any = low.Match if _low is not None and low is not None and hasattr(low, "Match") else None

    def search(self, data: bytes, pos: int) -> tuple[int, int] | None:
        """The span of the leftmost match at or after ``pos``, or None."""
        if self._match is not None:
            span = self._match(_UNANCHORED, data, pos, len(data))[0]
            return None if span[0] < 0 else span
        found = self._public.search(data, pos)
        return None if found is None else found.span()

    def match_end(self, data: bytes, pos: int) -> int | None:
        """Where a match starting exactly at ``pos`` ends, or None."""
        if self._match is not None:
            end = self._match(_ANCHOR_START, data, pos, len(data))[0][1]
            return None if end < 0 else end
        found = self._public.match(data, pos)
        return None if found is None else found.end()

    def spans(self, data: bytes, pos: int, end: int) -> bool:
        """True when a match covers exactly ``data[pos:end]`` (context: the whole ``data``)."""
        if self._match is not None:
            return self._match(_ANCHOR_BOTH, data, pos, end)[0][0] >= 0
        return self._public.fullmatch(data, pos, end) is not None


_NO_SHIELDS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Entry:
    """One pattern of a scanner."""

    name: str
    replacement: bytes | None  # None: a look-alike to keep as it is
    validator: Callable[[str], bool] | None
    shields: frozenset[str]  # a look-alike's: patterns whose matches starting inside it are kept
    value_only: bool  # <name> <separator> <value>: only the value is replaced
    alone: _Regex  # the pattern by itself: to confirm which pattern matched, and to retry
    # Redacts its whole match whatever it holds (no validator, not a look-alike, not value_only):
    # naming it wrongly could change a label, never leave text unredacted (see _Scanner.identify).
    plain: bool


def _pattern_source(pattern: CompiledPattern) -> str:
    source: str = pattern.regex.pattern
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    # compile_re2 applies case-insensitivity as an option, not inline; inside the
    # alternation it must become an inline flag scoped to the pattern's own group.
    return source if pattern.regex.options.case_sensitive else f"(?i){source}"


class _Scanner:
    """One RE2 alternation of several patterns, and how to tell which one matched.

    The alternation is non-capturing: RE2 answers "where is the leftmost match" with
    its DFA alone. Which pattern it was is then settled on the candidate only: an
    ``RE2::Set`` of all patterns lists those that match that exact span, and the
    first of them (in pattern order) that also matches in place, with the real text
    around it, is the one the alternation chose (leftmost-first: an earlier pattern
    matching at that position would have been chosen instead).
    """

    __slots__ = ("finder", "entries", "_sources", "_set", "_set_match", "_later")

    def __init__(self, patterns: Sequence[CompiledPattern]) -> None:
        sources = tuple(_pattern_source(p) for p in patterns)
        self._sources = sources
        self.finder = _Regex(_compile("|".join(f"(?:{source})" for source in sources)))
        self.entries = tuple(
            _Entry(
                name=pattern.name,
                replacement=None if pattern.keep else to_utf8(pattern.replacement),
                validator=VALIDATORS.get(pattern.validator) if pattern.validator is not None else None,
                alone=_Regex(_compile(source)),
                shields=pattern.shields if pattern.keep else frozenset(),
                value_only=pattern.value_only and not pattern.keep,
                plain=not pattern.keep and pattern.validator is None and not pattern.value_only,
            )
            for pattern, source in zip(patterns, sources, strict=True)
        )
        try:
            self._set: Any = _compile_set(sources) if len(sources) > 1 else None
        except re2.error:
            self._set = None  # too big for a set: identify() tries the patterns in order
        # The set's matcher below the public wrapper when there is one (bytes in, a list of indexes out).
        low_set = getattr(self._set, "_set", None)
        self._set_match: Any = (
            low_set.Match if low_set is not None and hasattr(low_set, "Match") else getattr(self._set, "Match", None)
        )
        # The alternation of the patterns after each one: where a candidate rejected by
        # its validator may still match (built when first needed, then kept).
        self._later: dict[int, _Regex | None] = {}
        for index, entry in enumerate(self.entries):
            if entry.validator is not None:
                self._later_finder(index)

    def _later_finder(self, index: int) -> _Regex | None:
        if index not in self._later:
            rest = self._sources[index + 1 :]
            self._later[index] = _Regex(_compile("|".join(f"(?:{source})" for source in rest))) if rest else None
        return self._later[index]

    def identify(self, data: bytes, begin: int, end: int, after: int = -1) -> int:
        """The first pattern after index ``after`` that matches exactly ``data[begin:end]`` in place.

        Called only for a span that some pattern after ``after`` matches exactly in
        place (a match of the alternation, or of the patterns after ``after``). The set
        is given the span with one character of real context on each side, which its
        patterns may consume or not: every pattern matching the span in place is in its
        answer, and so may some matching only part of the slice. When one pattern after
        ``after`` is in the answer it is therefore the one, and needs no confirmation
        unless its verdict could leave text unredacted (a look-alike, a validator,
        value_only): those are confirmed in place, so that nothing but a real match of
        theirs is ever kept."""
        entries = self.entries
        if self._set is not None:
            # One character of context each side (ASCII tested inline: the usual case).
            lo = begin - 1 if begin > 0 else begin
            if lo < begin and data[lo] >= 0x80:
                lo = _char_start(data, lo)
            hi = end
            if end < len(data):
                hi = end + 1 if data[end] < 0x80 else end + _char_len(data[end])
            found = self._set_match(data[lo:hi])
            if found:
                if len(found) == 1:
                    index = found[0]
                    if index > after and (entries[index].plain or entries[index].alone.spans(data, begin, end)):
                        return index
                else:
                    for index in sorted(found):
                        if index > after and entries[index].alone.spans(data, begin, end):
                            return index
        for index in range(after + 1, len(entries)):  # no set (or a bug in it): the slow, sure way
            if entries[index].alone.spans(data, begin, end):
                return index
        raise AssertionError("a match of the alternation matched none of its patterns")

    def token_at(self, data: bytes, begin: int) -> bool:
        """Whether a pattern other than a look-alike or a ``value_only`` one matches at ``begin``."""
        end = self.finder.match_end(data, begin)
        if end is None:
            return False
        accepted = self.accept(data, begin, end)
        return accepted is not None and accepted[0].replacement is not None and not accepted[0].value_only

    def accept(self, data: bytes, begin: int, end: int) -> tuple[_Entry, int] | None:
        """The pattern to redact this candidate with and where its match ends; or None.

        A candidate rejected by its pattern's validator (or empty, which would redact
        nothing) is offered to the later patterns at the same position; earlier ones
        cannot match there (leftmost-first).
        """
        index = self.identify(data, begin, end)
        while True:
            entry = self.entries[index]
            if end > begin and (entry.validator is None or _valid(entry.validator, data[begin:end])):
                return entry, end
            later = self._later_finder(index)
            stop = later.match_end(data, begin) if later is not None else None
            if stop is None:
                return None
            index, end = self.identify(data, begin, stop, after=index), stop


def _value_bytes(data: bytes, begin: int, stop: int) -> tuple[int, int] | None:
    """The byte span of the value inside the ``<name> <separator> <value>`` match ``data[begin:stop]``."""
    candidate = data[begin:stop].decode("utf-8", "replace")
    span = value_span(candidate)
    if span is None:
        return None
    return begin + len(to_utf8(candidate[: span[0]])), begin + len(to_utf8(candidate[: span[1]]))


def _build_scanners(patterns: Sequence[CompiledPattern]) -> tuple[_Scanner, ...]:
    """As few alternations as possible; normally exactly one.

    Patterns that cannot share one alternation (beyond RE2's program size limit)
    start another one; the scanners then run one after the other.
    """
    scanners: list[_Scanner] = []
    pending: list[CompiledPattern] = list(patterns)
    while pending:
        count = len(pending)
        while True:
            try:
                scanners.append(_Scanner(pending[:count]))
                break
            except re2.error:
                if count == 1:
                    raise  # a pattern that compiled alone always compiles alone again
                count = max(1, count // 2)
        pending = pending[count:]
    return tuple(scanners)


def _char_len(lead: int) -> int:
    """Bytes of the UTF-8 character whose first byte is ``lead``."""
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _char_start(data: bytes | bytearray, index: int) -> int:
    """The start of the UTF-8 character containing byte ``index`` (or ``index`` itself)."""
    while 0 < index < len(data) and data[index] & 0xC0 == 0x80:
        index -= 1
    return index


def _scan(
    scanner: _Scanner,
    data: bytes,
    start: int,
    limit: int | None,
    out: list[bytes],
    counts: dict[str, int],
    found: list[tuple[int, int, bytes]] | None = None,
    first: tuple[int, int] | None = None,
) -> int:
    """Redact ``data[start:]`` into ``out``; return where the output stops.

    ``first``, when given, is the finder's answer for ``start`` (already searched by
    the caller: it is not searched again).

    ``found`` (when given) receives the span of ``data`` (in bytes) of each match that
    was replaced, key included where only the value is replaced, with its replacement.

    Only matches that begin before ``limit`` (None: anywhere) are redacted. Output is
    produced up to the end of the last redacted match or ``limit``, whichever is
    later, and always ends on a character boundary. Text before ``start`` is context
    only (so ``\\b`` and ``^`` see the character before it), never output.
    """
    end = len(data) if limit is None else limit
    emitted = pos = start
    shield_begin, shield_end, shielded = -1, -1, _NO_SHIELDS  # a look-alike's span, and which patterns it protects
    search = scanner.finder.search
    span: tuple[int, int] | None
    while pos <= len(data):
        if first is not None:
            span, first = first, None
        else:
            span = search(data, pos)
        if span is None or span[0] >= end:
            break
        begin = span[0]
        accepted = scanner.accept(data, begin, span[1])
        if accepted is None:
            # Nothing to redact here: go on from the next character (not from the end
            # of the rejected candidate, which may contain a real match).
            pos = begin + _char_len(data[begin]) if begin < len(data) else begin + 1
            continue
        entry, stop = accepted
        step = begin + 1 if begin >= len(data) or data[begin] < 0x80 else begin + _char_len(data[begin])
        if entry.replacement is None:
            # A look-alike: the patterns it shields may not start inside it; every other
            # pattern still may (a token in http://TOKEN@host is still a token).
            shield_begin, shield_end, shielded = begin, max(shield_end, stop), entry.shields
            pos = step
            continue
        if begin < shield_end and entry.name in shielded:
            pos = step
            continue
        if entry.value_only:
            value = _value_bytes(data, begin, stop)
            if value is not None:
                start, stop = value
                if scanner.token_at(data, start):
                    # A known token opens the value: leave it to its own pattern (and name),
                    # which the next search finds right there.
                    out.append(data[emitted:start])
                    emitted = pos = start
                    continue
                begin = start
        out.append(data[emitted:begin])
        out.append(entry.replacement)
        counts[entry.name] = counts.get(entry.name, 0) + 1
        if found is not None:
            found.append((span[0], stop, entry.replacement))  # the whole match: a value needs its key
        emitted = pos = stop
    boundary = max(end, emitted)
    if limit is not None and shield_end > boundary and start < shield_begin and emitted <= shield_begin:
        # A look-alike runs past the limit: the next round scans it again whole, so that
        # what it shields beyond the limit is still seen inside it.
        boundary = shield_begin
    out.append(data[emitted:boundary])
    return boundary


def _is_anchored(source: str) -> bool:
    """Whether ``source`` uses ``^``, ``$``, ``\\A`` or ``\\z`` outside a character class."""
    in_class = False
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            if not in_class and source[index + 1 : index + 2] in ("A", "z"):
                return True
            index += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
            if source[index + 1 : index + 2] == "^":
                index += 1  # a negated class, not an anchor
            if source[index + 1 : index + 2] == "]":
                index += 1  # a literal ] first in the class
        elif char in "^$":
            return True
        index += 1
    return False


_LEADING_FLAGS = re.compile(r"\(\?([a-zA-Z]+)\)")


def _is_edge_anchored(source: str) -> bool:
    """Whether ``source`` is anchored to the start or end of the whole text: ``\\A``,
    ``\\z``, or ``^``/``$`` without multi-line mode set for the whole pattern by its
    leading flags (``(?m)``). A pattern anchored only to line edges matches a string the
    same whether it stands alone or between newlines."""
    if not _is_anchored(source):
        return False
    if "\\A" in source or "\\z" in source or "-" in "".join(_flag_groups(source)):
        return True
    rest, multiline = source, False
    while (found := _LEADING_FLAGS.match(rest)) is not None:
        multiline = multiline or "m" in found.group(1)
        rest = rest[found.end() :]
    return not multiline


def _flag_groups(source: str) -> list[str]:
    """The flag letters of every ``(?flags)`` and ``(?flags:`` group in ``source``."""
    return re.findall(r"\(\?([a-zA-Z-]+)[:)]", source)


_POSIX_CLASS = re.compile(r"\[:\^?[a-z]+:\]")  # [:alpha:], [:^digit:] (inside a bracket expression)


def _shortest_match(source: str) -> int:
    """A lower bound on the characters any match of ``source`` spans (at least 1).

    Python's regex parser measures it; for the few RE2 forms it cannot read, 1 (no
    text is then skipped for this pattern). Character classes, repetitions and
    alternations mean the same in both dialects, which is all the width depends on.
    """
    if _POSIX_CLASS.search(source):
        return 1  # RE2's POSIX classes ([[:digit:]]) read as something else by Python's parser
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like
            low = sre_parser.parse(source).getwidth()[0]
    except Exception:  # noqa: BLE001 - RE2-only syntax: assume the shortest possible
        return 1
    return max(1, int(low))


def _valid(validator: Callable[[str], bool], candidate: bytes) -> bool:
    try:
        return bool(validator(candidate.decode("utf-8", "replace")))
    except Exception:  # noqa: BLE001 - a failing check must not fail the call; redact to be safe
        return True
