"""The one path-glob dialect of toolrt: deny globs, search globs and grant patterns.

A glob is matched against a whole path (``src/app/main.py``), always from its start:
there is no floating match, so ``*.py`` matches ``a.py`` but not ``src/a.py``
(write ``**/*.py`` for any depth). The meaning is git's (``.gitignore``), made exact:

* ``/`` separates components; empty and ``.`` components are dropped (``a//./b`` is ``a/b``);
* ``*`` matches any run of characters within one component, ``?`` one character;
  neither ever matches ``/``. A leading ``.`` is not special: ``*`` matches ``.env``;
* ``**`` as a whole component matches **zero or more whole components**: ``**/.env``
  matches ``.env`` and ``a/b/.env``; ``a/**/b`` matches ``a/b`` and ``a/x/y/b``;
  ``.env/**`` matches ``.env`` itself and everything below it. A ``**`` that is not
  a whole component (``a**b``, ``src/**.py``) is a plain ``*``, as in git;
* ``[abc]``, ``[a-z]``, ``[!a-z]`` and ``[^a-z]`` are character classes (a ``]``
  right after the opening ``[`` or ``[!`` is literal); a class never matches ``/``;
  a ``[`` without its ``]`` is literal;
* ``\\`` makes the next character literal (``a\\*b`` matches the name ``a*b``);
* ``{a,b}`` is an alternation (nested too, at most 256 alternatives); braces
  without a top-level comma are literal. ``.gitignore`` files are read without it
  (``braces=False``), as git does;
* every other character is literal, regex metacharacters included: ``(``, ``+``,
  ``$``, ``|``, ``^`` outside a class, ``.``;
* a **trailing** ``/`` means the directory and everything in it: ``build/`` is
  ``build/**``;
* a **leading** ``/`` anchors at the start, where every pattern is anchored anyway:
  for paths relative to a base (deny globs, search, ``.gitignore``; ``relative=True``)
  ``/build`` is ``build``. For text that may be absolute (grant patterns;
  ``relative=False``) it is kept and matches only a leading ``/``: ``/etc/*``
  matches ``/etc/passwd``, not ``etc/passwd``.

Case is significant unless a caller asks otherwise (deny globs are matched
case-insensitively). Globs compile to RE2 (linear time whatever the pattern and the
path), once: the workspace compiles its deny globs when it is built into the
snapshot; search and grant patterns are compiled on first use and remembered.

Command lines are not paths: ``runtime.policy.bashglob`` is bash's own glob (``*``
matching ``/`` in a word, ``extglob``, dot-file rules) for judging command lines, and
stays separate on purpose.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import re2

from runtime.workspace.errors import GlobError

MAX_ALTERNATIVES = 256
"""Brace alternatives one glob may expand to."""

MAX_PATTERN_CHARS = 4096

_ANY_COMPONENTS = "(?:[^/]*/)*"  # zero or more whole components, each followed by "/"
_BELOW = "(?:/.*)?"  # nothing, or "/" and anything below


@dataclass(frozen=True)
class Glob:
    """One compiled glob. ``alternatives`` holds the components of each brace
    alternative, as matched (``**`` collapsed, a trailing ``/`` spelled ``**``)."""

    pattern: str
    source: str
    alternatives: tuple[tuple[str, ...], ...]
    regex: Any

    def matches(self, path: str) -> bool:
        """Whether the whole of ``path`` matches."""
        return self.regex.fullmatch(path) is not None


class GlobSet:
    """Several globs compiled into one regex, for "does any of them match" in one step.

    With ``below=True`` a glob also matches everything below what it matches (a deny
    glob that matches a directory protects its contents). :meth:`first` says which
    glob matched, trying the path's shortest prefix first.
    """

    def __init__(
        self, patterns: Iterable[str], *, case_sensitive: bool = True, relative: bool = True, below: bool = False
    ) -> None:
        compiled = [compile_glob(p, case_sensitive=case_sensitive, relative=relative) for p in dict.fromkeys(patterns)]
        self.globs: tuple[Glob, ...] = tuple(compiled)
        self.below = below
        suffix = _BELOW if below else ""
        source = "|".join(f"(?:{g.source}){suffix}" for g in compiled)
        self._any = _compile(source, case_sensitive=case_sensitive, what="glob set") if compiled else None

    def __bool__(self) -> bool:
        return bool(self.globs)

    def matches(self, path: str) -> bool:
        """Whether any glob matches ``path`` (or, with ``below``, a directory above it)."""
        return self._any is not None and self._any.fullmatch(path) is not None

    def first(self, path: str) -> str | None:
        """The glob matching ``path`` (with ``below``: its shortest matching prefix first), else None."""
        if not self.matches(path):
            return None
        parts = path.split("/")
        ends = range(1, len(parts) + 1) if self.below else (len(parts),)
        for end in ends:
            prefix = "/".join(parts[:end])
            for glob in self.globs:
                if glob.matches(prefix):
                    return glob.pattern
        return self.globs[0].pattern  # unreachable: the combined regex matched one of them


def compile_glob(pattern: str, *, case_sensitive: bool = True, relative: bool = True, braces: bool = True) -> Glob:
    """Compile ``pattern`` (the dialect above) or raise :class:`GlobError` saying what is wrong.

    Compiled globs are remembered (they are immutable), so a pattern the model sends
    again and again is compiled once.
    """
    if not isinstance(pattern, str):
        raise GlobError(f"a glob must be a string, not {type(pattern).__name__}")
    return _compiled(pattern, case_sensitive, relative, braces)


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str, case_sensitive: bool, relative: bool, braces: bool) -> Glob:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GlobError(f"glob is too long ({len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,})")
    if "\x00" in pattern:
        raise GlobError("glob contains a NUL character")
    texts = expand_braces(pattern) if braces else [pattern]
    alternatives = tuple(dict.fromkeys(components(text, relative=relative) for text in texts))
    source = "|".join(f"(?:{translate(parts)})" for parts in alternatives)
    regex = _compile(source, case_sensitive=case_sensitive, what=repr(pattern))
    return Glob(pattern, source, alternatives, regex)


def components(pattern: str, *, relative: bool = True) -> tuple[str, ...]:
    """The components of one brace-free glob: empty and ``.`` ones dropped, runs of
    ``**`` collapsed, a trailing ``/`` spelled ``**``; an absolute pattern that is not
    ``relative`` keeps a leading empty component (it matches the leading ``/``)."""
    absolute = pattern.startswith("/") and not relative
    parts: list[str] = [""] if absolute else []
    for part in pattern.split("/"):
        if part in ("", ".") or (part == "**" and parts[-1:] == ["**"]):
            continue
        parts.append(part)
    if pattern.endswith("/") and parts[-1:] != ["**"]:
        parts.append("**")
    return tuple(parts)


def translate(parts: tuple[str, ...]) -> str:
    """RE2 source matching exactly the paths ``parts`` (see :func:`components`) describes."""
    if not parts:
        return ""
    if parts == ("**",):
        return ".*"
    out: list[str] = []
    last = len(parts) - 1
    for index, part in enumerate(parts):
        if part == "**":
            # Leading or inner: zero or more components, each with its "/".
            # Trailing: nothing more, or "/" and anything (the directory itself too).
            out.append(_BELOW if index == last else _ANY_COMPONENTS)
        elif index == last or (index + 1 == last and parts[last] == "**"):
            out.append(component(part))
        else:
            out.append(component(part) + "/")
    return "".join(out)


def component(part: str) -> str:
    """RE2 source for one component: ``*``, ``?``, classes and ``\\`` escapes; the rest literal."""
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            while i + 1 < len(part) and part[i + 1] == "*":
                i += 1  # "a**b" is "a*b" (as in git)
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (end := class_end(part, i)) != -1:
            out.append(_translate_class(part[i + 1 : end]))
            i = end
        elif ch == "\\" and i + 1 < len(part):
            i += 1
            out.append(re2.escape(part[i]))
        else:
            out.append(re2.escape(ch))
        i += 1
    return "".join(out)


def has_wildcard(part: str) -> bool:
    """Whether a component holds anything but literal characters."""
    return any(ch in part for ch in "*?[\\")


def class_end(part: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (a leading ``!``/``^``
    and then ``]`` are literal), or -1."""
    j = start + 1
    if part[j : j + 1] in ("!", "^"):
        j += 1
    if part[j : j + 1] == "]":
        j += 1
    return part.find("]", j)


def _translate_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    chars: list[str] = []
    for index, ch in enumerate(body):
        if ch == "-" and 0 < index < len(body) - 1:
            chars.append("-")  # a range such as a-z
        elif ch in "\\]^[-":
            chars.append("\\" + ch)
        else:
            chars.append(ch)
    inner = "".join(chars)
    # A class never matches "/": wildcards stay within one component.
    return f"[^/{inner}]" if negate else f"[{inner}]"


def expand_braces(pattern: str, limit: int = MAX_ALTERNATIVES) -> list[str]:
    """Shell-style brace expansion (``{a,b}``, nested too) in written order; braces
    without a top-level comma stay literal. More than ``limit`` alternatives is a
    :class:`GlobError`."""
    out: list[str] = []
    pending = [pattern]
    while pending:
        text = pending.pop()
        group = _first_brace_group(text)
        if group is None:
            out.append(text)
            if len(out) > limit:
                raise GlobError(f"glob expands to more than {limit} alternatives; use fewer {{a,b}} groups")
            continue
        start, end, choices = group
        # Reversed onto the stack, so alternatives come out in written order.
        pending.extend(text[:start] + choice + text[end + 1 :] for choice in reversed(choices))
        if len(pending) > 4 * limit:
            raise GlobError(f"glob expands to more than {limit} alternatives; use fewer {{a,b}} groups")
    return list(dict.fromkeys(out))


def _first_brace_group(text: str) -> tuple[int, int, list[str]] | None:
    """Start, end and choices of the first ``{...}`` holding a top-level comma, else None."""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            found = _brace_group_at(text, i)
            if found is not None:
                return found
        i += 1
    return None


def _brace_group_at(text: str, start: int) -> tuple[int, int, list[str]] | None:
    depth = 0
    commas: list[int] = []
    j = start
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if not commas:
                    return None
                bounds = [start, *commas, j]
                return start, j, [text[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]
        elif ch == "," and depth == 1:
            commas.append(j)
        j += 1
    return None


def _compile(source: str, *, case_sensitive: bool, what: str) -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise write to the app's stderr
    options.case_sensitive = case_sensitive
    options.dot_nl = True  # file names may hold newlines
    try:
        return re2.compile(source, options)
    except re2.error:
        raise GlobError(
            f"{what} is not a valid glob (check its [...] character classes, e.g. a range like 'z-a')"
        ) from None
