"""Stage 06, step 2: remove secrets and personal data from a tool's output.

A :class:`Redactor` is built once per set of profiles (at snapshot build time) and
shared by every call of the tools that use that set. All patterns of all its
profiles are joined into **one** RE2 alternation, so one linear-time scan of the text
finds every candidate, whatever the number of patterns (Python ``re`` is 30-160x
slower on the same patterns: ``tests/benchmarks/bench_redaction.py``).

Semantics are those of applying the alternation left to right: at each position the
leftmost match wins and, among matches starting there, the pattern listed first (in
profile order, then pattern order). A candidate of a pattern with a ``validator``
that fails its checksum is kept as is; the later patterns are then tried at the same
position (an 18-digit number that is not a card number may still be a resident ID),
and the scan goes on from the next character (so a card number glued to a preceding
number is still found, which ``re.sub`` would skip).

The scanning machinery is in :mod:`runtime.shaping.redact_scan`, streaming in
:mod:`runtime.shaping.redact_stream`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runtime.shaping._unicode import to_utf8
from runtime.shaping.compiled import CompiledRedaction
from runtime.shaping.disguise import DISGUISED, has_disguise, redact_disguised
from runtime.shaping.redact_scan import (
    _build_scanners,
    _compile,
    _is_anchored,
    _is_edge_anchored,
    _pattern_source,
    _scan,
    _shortest_match,
)
from runtime.shaping.redact_stream import DEFAULT_WINDOW, StreamRedactor
from runtime.shaping.secret_checks import is_reference

__all__ = ["DEFAULT_WINDOW", "SECRET_FIELD", "SECRET_FIELD_MARK", "Redactor", "StreamRedactor"]

_MAX_VALUE_DEPTH = 200  # redact_value() nesting limit
_MAX_KEY_VERDICTS = 4096  # is_secret_key() answers kept

SECRET_FIELD = "secret_field"
"""The name counted for a value redacted because of its key (see :meth:`Redactor.redact_value`)."""
SECRET_FIELD_MARK = f"[REDACTED:{SECRET_FIELD}]"
_MARKS = re.compile(r"\[REDACTED:[^\]]*\]")


class Redactor:
    """Every pattern of some redaction profiles, compiled into one RE2 scan.

    Build it once (at snapshot build time) and share it: it is immutable and
    thread-safe. ``Redactor(())`` is a no-op that costs nothing per call.
    """

    __slots__ = (
        "names",
        "profiles",
        "anchored",
        "edge_anchored",
        "_scanners",
        "_one",
        "_window",
        "_shortest",
        "_secret_key",
        "_key_verdicts",
    )

    def __init__(self, profiles: Sequence[CompiledRedaction], *, window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ValueError("window must be at least 1 byte")
        patterns = [pattern for profile in profiles for pattern in profile.patterns]
        self.names: tuple[str, ...] = tuple(profile.name for profile in profiles)
        self.profiles: tuple[CompiledRedaction, ...] = tuple(profiles)
        self._scanners = _build_scanners(patterns)
        self._one = self._scanners[0] if len(self._scanners) == 1 else None
        self._window = window
        # Text shorter than the shortest possible match cannot hold one: most argument
        # values and short outputs ("ok") skip the scan and its fixed cost (~3 us).
        self._shortest = min((_shortest_match(_pattern_source(p)) for p in patterns), default=1)
        # Some pattern looks at the start or end of the text (^, $, \A, \z outside a class).
        self.anchored = any(_is_anchored(_pattern_source(p)) for p in patterns)
        # Some pattern looks at the very start or end of the text, not only of its lines:
        # it may match a string alone but not inside a longer text (see edge_anchored).
        self.edge_anchored = any(_is_edge_anchored(_pattern_source(p)) for p in patterns)
        keys = [profile.secret_keys for profile in profiles if profile.secret_keys]
        # Whole keys, any case: one RE2 program for the keys of every profile.
        self._secret_key: Any = _compile("(?i)" + "|".join(f"(?:{source})" for source in keys)) if keys else None
        self._key_verdicts: dict[str, bool] = {}  # the same few keys come back in every result

    @property
    def enabled(self) -> bool:
        """False for a redactor without patterns (every method returns its input)."""
        return bool(self._scanners) or self._secret_key is not None

    def is_secret_key(self, key: str) -> bool:
        """Whether the value under ``key`` in structured data is a secret by its name
        (the profiles' ``secret_keys``, matched against the whole key, any case)."""
        if self._secret_key is None:
            return False
        verdict = self._key_verdicts.get(key)
        if verdict is None:
            verdict = self._secret_key.fullmatch(to_utf8(key)) is not None
            if len(self._key_verdicts) >= _MAX_KEY_VERDICTS:
                self._key_verdicts.clear()  # bounded: keys chosen by a tool or a model
            self._key_verdicts[key] = verdict
        return verdict

    @property
    def window(self) -> int:
        """Bytes held back by :meth:`stream` (see :data:`DEFAULT_WINDOW`)."""
        return self._window

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """``text`` with every match replaced, and how many matches of each pattern.

        Counts are keyed by pattern name and never include the matched values. Lines
        holding a disguise (colour codes, invisible characters, ``\n``-style escapes,
        full-width letters) are also matched with it taken out (:mod:`.disguise`).
        """
        if len(text) < self._shortest or not self._scanners:
            return text, {}
        data = to_utf8(text)
        if not has_disguise(text, data):  # the common case: one check, then plain redaction's own fast path
            return self._redact_plain(text, data)
        # Disguised letters first: a pattern matching only the plain part of a token
        # (`xoxb-...` up to a `\u0041`) would otherwise leave the rest in place; then
        # what only a separator escape hid (`\nAKIA...`: no word boundary before it).
        text, hidden = redact_disguised(text, self.spans, inside=True)
        text, counts = self._redact_plain(text)
        text, more = redact_disguised(text, self.spans)
        hidden += more
        if hidden:
            counts[DISGUISED] = counts.get(DISGUISED, 0) + hidden
        return text, counts

    def _redact_plain(self, text: str, data: bytes | None = None) -> tuple[str, dict[str, int]]:
        if data is None:
            data = to_utf8(text)
        one = self._one
        if one is not None:
            # The common case, one alternation: a text without a candidate (most outputs)
            # costs one scan in C and nothing else; the first candidate found is not
            # searched for again.
            first = one.finder.search(data, 0)
            if first is None:
                return text, {}
            counts: dict[str, int] = {}
            out: list[bytes] = []
            _scan(one, data, 0, None, out, counts, first=first)
            if len(out) == 1:  # a candidate, kept (a look-alike, or refused by its validator)
                return text, counts
            return b"".join(out).decode("utf-8"), counts
        counts = {}
        changed = False
        for scanner in self._scanners:
            out = []
            _scan(scanner, data, 0, None, out, counts)
            if len(out) > 1:  # one piece: the text as it was (more, at worst, rejoin it unchanged)
                data = b"".join(out)
                changed = True
        if not changed:  # the common case: nothing redacted, the text itself comes back
            return text, counts
        return data.decode("utf-8"), counts

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where :meth:`redact` finds something to replace in ``text``: ``(start, end,
        replacement)`` in characters, in order, overlapping spans merged. A span covers
        the whole match, also where only a value is replaced (``password=...``): the
        value is a secret only beside its key.

        Every scanner runs on ``text`` itself (``redact`` runs each on the previous
        one's output), so a span may be found that ``redact`` leaves to an earlier
        replacement: callers use spans to keep secrets whole, where more is safer."""
        if not self._scanners or len(text) < self._shortest:
            return []
        data = to_utf8(text)
        found: list[tuple[int, int, bytes]] = []
        for scanner in self._scanners:
            _scan(scanner, data, 0, None, [], {}, found)
        merged: list[tuple[int, int, bytes]] = []
        for begin, end, replacement in sorted(found):
            if merged and begin < merged[-1][1]:
                first = merged[-1]
                merged[-1] = (first[0], max(first[1], end), first[2])
            else:
                merged.append((begin, end, replacement))
        spans: list[tuple[int, int, str]] = []
        chars = done = 0  # characters in data[:done]
        for begin, end, replacement in merged:
            chars += len(data[done:begin].decode("utf-8", "replace"))
            start = chars
            chars += len(data[begin:end].decode("utf-8", "replace"))
            done = end
            spans.append((start, chars, replacement.decode("utf-8", "replace")))
        return spans

    def has_candidate(self, text: str) -> bool:
        """Whether any pattern matches somewhere in ``text`` (validators not consulted).

        One scan, for prefilters: False means :meth:`redact` would change nothing (text
        holding a disguise character is a candidate: its skeleton may hold a secret)."""
        if not self._scanners or len(text) < self._shortest:
            return False
        data = to_utf8(text)
        if has_disguise(text, data):
            return True
        if self._one is not None:
            return self._one.finder.search(data, 0) is not None
        return any(scanner.finder.search(data, 0) is not None for scanner in self._scanners)

    def redact_value(self, value: Any) -> tuple[Any, dict[str, int]]:
        """JSON-like data (dicts, lists, strings) with every string redacted, and every
        value under a secret-looking key (:meth:`is_secret_key`) replaced whole.

        For a result's structured content and audited arguments: a secret in a field
        must not reach a client that reads the structured form instead of the text,
        and ``{"password": "pw"}`` holds a secret whatever ``pw`` looks like. Keys are
        redacted too. Under a secret key, null, booleans, empty strings and references
        (``${VAR}``, ``<placeholder>``) are kept; numbers and text become
        ``[REDACTED:secret_field]`` (inside lists and objects too). Other values are
        returned as they are.
        """
        counts: dict[str, int] = {}
        if not self.enabled:
            return value, counts
        return self._redact_value(value, counts, 0), counts

    def _hide(self, value: Any, counts: dict[str, int], depth: int) -> Any:
        """A value under a secret key: its text and numbers replaced, its shape kept."""
        if value is None or isinstance(value, bool) or (isinstance(value, str) and is_reference(value, quoted=True)):
            return self._redact_value(value, counts, depth)
        if isinstance(value, str) and self._scanners:
            # A known token keeps its own name when nothing but it is in the value.
            text, found = self.redact(value)
            if found and not _MARKS.sub("", text).strip(" \t\r\n\"'"):
                for name, number in found.items():
                    counts[name] = counts.get(name, 0) + number
                return text
        if isinstance(value, str | int | float | bytes):
            counts[SECRET_FIELD] = counts.get(SECRET_FIELD, 0) + 1
            return SECRET_FIELD_MARK
        if depth > _MAX_VALUE_DEPTH:
            return f"<omitted: nested deeper than {_MAX_VALUE_DEPTH} levels>"
        if isinstance(value, dict):
            return {
                self._redact_value(k, counts, depth + 1): self._hide(v, counts, depth + 1) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._hide(item, counts, depth + 1) for item in value]
        counts[SECRET_FIELD] = counts.get(SECRET_FIELD, 0) + 1
        return SECRET_FIELD_MARK

    def _redact_value(self, value: Any, counts: dict[str, int], depth: int) -> Any:
        if isinstance(value, str):
            if len(value) < self._shortest or not self._scanners:
                return value
            text, found = self.redact(value)
            for name, number in found.items():
                counts[name] = counts.get(name, 0) + number
            return text
        if depth > _MAX_VALUE_DEPTH:
            # serialize() already cuts data at 64 levels; deeper data from elsewhere is
            # dropped rather than passed on unredacted (or overflowing the stack).
            return f"<omitted: nested deeper than {_MAX_VALUE_DEPTH} levels>"
        if isinstance(value, dict):
            if self._secret_key is None:
                return {
                    self._redact_value(k, counts, depth + 1): self._redact_value(v, counts, depth + 1)
                    for k, v in value.items()
                }
            secret = self.is_secret_key
            return {
                self._redact_value(k, counts, depth + 1): (
                    self._hide(v, counts, depth + 1)
                    if isinstance(k, str) and secret(k)
                    else self._redact_value(v, counts, depth + 1)
                )
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._redact_value(item, counts, depth + 1) for item in value]
        return value

    def stream(self) -> StreamRedactor:
        """A redactor for output that arrives in chunks (see :class:`StreamRedactor`)."""
        return StreamRedactor(self._scanners, self.spans, self.window)
