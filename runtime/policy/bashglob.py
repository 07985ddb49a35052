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


_BRACE = re.compile(r"\{([^{}]*)\}")


def brace_variants(text: str, limit: int = 64) -> list[str]:
    """``text`` with its brace lists expanded (``{toolrt.d,x}/p`` gives both), so a brace
    list cannot hide one of toolrt's paths; the text itself when there is none."""
    variants = [text]
    for _ in range(8):
        grown: list[str] = []
        changed = False
        for variant in variants:
            match = next((m for m in _BRACE.finditer(variant) if "," in m.group(1)), None)
            if match is None:
                grown.append(variant)
                continue
            changed = True
            grown += [variant[: match.start()] + choice + variant[match.end() :] for choice in match.group(1).split(",")]
        variants = grown[:limit]
        if not changed:
            break
    return variants
