"""Bash's word expansions that can be done before a line runs: globs against the files
present now, and brace lists.

:class:`GlobExpander` reads a glob the way bash does (hidden names only when the pattern
starts with a dot, unless the line may turn ``dotglob`` on; sorted matches; the word
itself when nothing matches) and gives up, returning None, wherever it could guess
wrong: escapes, POSIX classes, ``globstar``, too many matches or entries. The caller
then treats the word as only known at run time.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

MAX_GLOB_MATCHES = 256
MAX_GLOB_ENTRIES = 20_000  # directory entries one line's globs may look at


class GlobExpander:
    """Expands the globs of one command line in ``cwd`` (relative to ``root``);
    ``loose``: the line may set ``dotglob``, ``nocaseglob`` and the like, so hidden names
    and any case match (the worst case)."""

    def __init__(self, root: Path | None, cwd: str, *, loose: bool) -> None:
        self.root = root
        self.cwd = cwd
        self.loose = loose
        self.entries_left = MAX_GLOB_ENTRIES

    def expand(self, pattern: str) -> list[str] | None:
        """The names bash would put in place of ``pattern`` (sorted), the pattern itself
        when nothing matches, or None when that cannot be known here."""
        root = self.root
        if root is None or "\\" in pattern or (self.loose and "**" in pattern):
            return None  # no files to look at; an escape; globstar's any-depth walk
        absolute = pattern.startswith("/")
        base = Path("/") if absolute else root / self.cwd
        parts = [p for p in pattern.split("/") if p]
        results: list[str] = []
        prefix = "/" if absolute else ""
        try:
            if not self._walk(base, parts, prefix, results):
                return None
        except OSError:
            return None
        if not results:
            return [pattern]
        return sorted(results)

    def _walk(self, folder: Path, parts: list[str], prefix: str, results: list[str]) -> bool:
        if not parts:
            results.append(prefix.rstrip("/") or prefix)
            return len(results) <= MAX_GLOB_MATCHES
        part, rest = parts[0], parts[1:]
        if not has_wildcard(part):
            target = folder / part
            if rest and not target.is_dir():
                return True
            if not rest and not os.path.lexists(target):
                return True
            return self._walk(target, rest, f"{prefix}{part}/", results)
        try:
            regex = glob_regex(part, self.loose)
        except CannotExpand:
            return False
        try:
            with os.scandir(folder) as entries:
                names = []
                for entry in entries:
                    self.entries_left -= 1
                    if self.entries_left < 0:
                        return False
                    names.append((entry.name, entry.is_dir(follow_symlinks=True)))
        except (FileNotFoundError, NotADirectoryError):
            return True
        for name, is_dir in sorted(names):
            if name.startswith(".") and not (part.startswith(".") or self.loose):
                continue
            if regex.fullmatch(name) is None:
                continue
            if rest and not is_dir:
                continue
            if not self._walk(folder / name, rest, f"{prefix}{name}/", results):
                return False
        return True


def has_wildcard(part: str) -> bool:
    return any(ch in part for ch in "*?[")


class CannotExpand(Exception):
    """A glob this module does not read exactly as bash does: left to run time."""


@functools.lru_cache(maxsize=1024)
def glob_regex(part: str, loose: bool) -> re.Pattern[str]:
    """One path component of a bash glob; ``loose``: case-insensitive (nocaseglob).

    Bracket expressions are read when they are plain character lists or ranges; POSIX
    classes (``[[:alpha:]]``), equivalence classes, a ``]`` as the first member or an
    escape inside raise :class:`CannotExpand`: the glob is then a run-time word."""
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            start = i + 2 if part[i + 1 : i + 2] in ("!", "^") else i + 1
            end = part.find("]", start)
            if end < 0:
                out.append(re.escape(ch))  # no closing bracket: a plain "["
            else:
                body = part[start:end]
                if not body or "[" in body or "\\" in body:
                    raise CannotExpand(part)
                members = "".join(re.escape(c) if c != "-" else "-" for c in body)
                out.append(("[^" if start == i + 2 else "[") + members + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL | (re.IGNORECASE if loose else 0))
    except re.error as err:
        raise CannotExpand(part) from err


_SEQUENCE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?")
BRACE_LIMIT = 4096


def brace_variants(text: str, limit: int = BRACE_LIMIT, active: bytes | None = None) -> list[str] | None:
    """``text`` with its brace expressions expanded as bash does: lists (nested, and
    ``{a,}{a,}``), and sequences (``{1..9}``, ``{a..z..2}``, ``{t..t}``). None when there
    would be more than ``limit`` variants: the caller must then assume the worst.

    ``active`` (one byte per character, as the shell splitter keeps it) marks the
    characters written unquoted and unescaped; without it, a backslash escapes the next
    character and quotes are not known."""
    if "{" not in text:
        return [text]
    try:
        return _expand_braces(text, limit, active)
    except _TooMany:
        return None


class _TooMany(Exception):
    pass


def _expand_braces(text: str, limit: int, active: bytes | None) -> list[str]:
    found = _brace_expression(text, active)
    if found is None:
        return [text]
    start, end, choices = found
    prefix = text[:start]
    tails = _expand_braces(text[end + 1 :], limit, None if active is None else active[end + 1 :])
    variants: list[str] = []
    for choice, offset in choices:
        chosen = None if active is None or offset < 0 else active[offset : offset + len(choice)]
        for middle in _expand_braces(choice, limit, chosen):
            for tail in tails:
                variants.append(prefix + middle + tail)
                if len(variants) > limit:
                    raise _TooMany
    return variants


def _brace_expression(text: str, active: bytes | None = None) -> tuple[int, int, list[tuple[str, int]]] | None:
    """The first brace expression of ``text``: its span and its choices, each with its
    offset in ``text`` (-1 for a sequence's, spelled out), or None. ``${...}``, escaped
    and quoted braces are not expressions."""
    k = 0
    while k < len(text):
        char = text[k]
        if active is None and char == "\\":
            k += 2
            continue
        if char == "{" and (active is None or active[k]):
            end, commas = _matching(text, k, active)
            if end is None:
                k += 1  # an unclosed brace is a plain character
                continue
            if text[k - 1 : k] == "$":
                k = end + 1
                continue
            inner = text[k + 1 : end]
            if commas:
                starts, ends = [0, *[c + 1 for c in commas]], [*commas, len(inner)]
                return k, end, [(inner[a:b], k + 1 + a) for a, b in zip(starts, ends, strict=True)]
            sequence = _sequence(inner) if active is None or all(active[k + 1 : end]) else None
            if sequence is not None:
                return k, end, [(item, -1) for item in sequence]
        k += 1
    return None


def _matching(text: str, start: int, active: bytes | None = None) -> tuple[int | None, list[int]]:
    """The index of the ``}`` closing the ``{`` at ``start`` and the offsets (within the
    braces) of its top-level commas."""
    depth = 0
    commas: list[int] = []
    k = start
    while k < len(text):
        char = text[k]
        if active is None and char == "\\":
            k += 2
            continue
        if active is not None and not active[k]:
            k += 1
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return k, commas
        elif char == "," and depth == 1:
            commas.append(k - start - 1)
        k += 1
    return None, commas


def _sequence(inner: str) -> list[str] | None:
    match = _SEQUENCE.fullmatch(inner)
    if match is None:
        return None
    if match.group(1) is not None:
        first, last, step = int(match.group(1)), int(match.group(2)), abs(int(match.group(3) or 1)) or 1
        width = (
            max(len(match.group(1)), len(match.group(2)))
            if re.match(r"-?0\d", match.group(1) + " ") or re.match(r"-?0\d", match.group(2) + " ")
            else 0
        )
        if abs(last - first) // step + 1 > BRACE_LIMIT:
            raise _TooMany
        numbers = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
        return [str(n).zfill(width) if width else str(n) for n in numbers]
    first_char, last_char = ord(match.group(4)), ord(match.group(5))
    step = abs(int(match.group(6) or 1)) or 1
    return [
        chr(c)
        for c in range(
            first_char, last_char + (1 if last_char >= first_char else -1), step if last_char >= first_char else -step
        )
    ]
