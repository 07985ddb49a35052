"""Text that can always be written as UTF-8.

A Python ``str`` may hold lone surrogates (``"\\ud800"``: from ``surrogateescape``
decoding, JSON ``"\\ud800"`` escapes, Windows file names). They cannot be encoded as
UTF-8, so RE2, files and provider APIs all reject them. Shaping replaces each one
with U+FFFD, one character for one character, so every character offset computed
before the replacement stays valid after it.
"""

from __future__ import annotations

# str.translate with a table of the 2,048 surrogate code points: C speed, no regex,
# and a 1:1 replacement (character counts do not change).
_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), 0xFFFD)


def clean(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same length)."""
    if text.isascii():  # known to the string object itself: no scan, no encoding
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES)
    return text


def to_utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates become U+FFFD instead of raising."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES).encode("utf-8")
