"""grep's regular expressions: checked with RE2 whatever the engine, refused with a hint."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import re2

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.search.common import clean, quote


@dataclass(frozen=True)
class Pattern:
    text: str
    line: Any  # RE2, searched within one line
    across: Any | None  # RE2 in multi-line mode, to find candidate lines fast; None when unsafe


_RE2_HINTS = (
    (
        "invalid perl operator: (?=",
        "look-ahead is not supported (RE2 and ripgrep match in linear time); match the text itself instead",
    ),
    (
        "invalid perl operator: (?!",
        "negative look-ahead is not supported (RE2 and ripgrep match in linear time); search for the text and "
        "filter the results instead",
    ),
    (
        "invalid perl operator: (?<",
        "look-behind is not supported (RE2 and ripgrep match in linear time); include the preceding text in the "
        "pattern instead",
    ),
    ("invalid perl operator: (?>", "atomic groups are not supported; use a plain group '(...)'"),
    (
        "bad repetition operator: ",
        "possessive or doubled quantifiers such as '++' or '**' are not supported; use one quantifier, or escape "
        "the characters with a backslash",
    ),
    (
        "invalid named capture group",
        "named groups are written '(?P<name>...)'; back-references to them are not supported",
    ),
)
_MULTILINE_OFF = re.compile(r"\(\?[A-Za-z]*-[A-Za-z]*m")
ESCAPE_HINT = (
    "to match special characters literally, escape them with a backslash "
    "(e.g. '\\(' '\\[' '\\.' '\\*' '\\+' '\\?' '\\{')"
)


def compile_pattern(pattern: object, ignore_case: bool, max_chars: int) -> Pattern:
    """Check ``pattern`` with RE2 (whatever the engine) and compile it, or refuse it with a hint."""
    if not isinstance(pattern, str):
        raise WorkspaceError(f"pattern must be a string, not {type(pattern).__name__}")
    shown = quote(pattern)
    if pattern == "":
        raise WorkspaceError("pattern is empty; give a regular expression, e.g. 'def main' or 'TODO|FIXME'")
    if len(pattern) > max_chars:
        raise WorkspaceError(
            f"pattern is too long ({len(pattern):,} characters; at most {max_chars:,}); search for a shorter, "
            "distinctive part"
        )
    if "\x00" in pattern:
        raise WorkspaceError("pattern contains a NUL character; remove it")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in pattern):
        raise WorkspaceError("pattern contains invalid text (lone surrogates); remove those characters")
    if "\n" in pattern or "\r" in pattern or _escapes_newline(pattern):
        raise WorkspaceError(
            f"pattern {shown} contains a line break; grep matches within single lines, so search for one line's text"
        )
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        line = re2.compile(pattern, options)
    except re2.error as err:
        raise WorkspaceError(_invalid_message(shown, err)) from None
    across = None
    # The multi-line prefilter finds every line a per-line search would, unless the pattern
    # pins text edges (\A, \z) or turns multi-line mode off again with (?-m).
    if "\\A" not in pattern and "\\z" not in pattern and not _MULTILINE_OFF.search(pattern):
        options.never_nl = True
        try:
            across = re2.compile("(?m)" + pattern, options)
        except re2.error:
            across = None
    return Pattern(pattern, line, across)


def _escapes_newline(pattern: str) -> bool:
    """Whether ``pattern`` holds the escape ``\\n`` (ripgrep refuses it outside multi-line mode)."""
    i = 0
    while i < len(pattern) - 1:
        if pattern[i] == "\\":
            if pattern[i + 1] == "n":
                return True
            i += 2
            continue
        i += 1
    return False


def _invalid_message(shown: str, err: Exception) -> str:
    raw = err.args[0] if err.args else str(err)
    detail = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    hint = next((text for needle, text in _RE2_HINTS if detail.startswith(needle)), None)
    if hint is None and detail.startswith("invalid escape sequence: \\") and detail[-1:].isdigit():
        hint = "back-references such as '\\1' are not supported (RE2 and ripgrep match in linear time)"
    return f"invalid regular expression {shown}: {clean(detail)}; {hint or ESCAPE_HINT}"
