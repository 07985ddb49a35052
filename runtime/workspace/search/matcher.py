"""Globs of the search tools (``glob``'s pattern, ``grep``'s ``glob`` filter), compiled
once per call in the one dialect of :mod:`runtime.workspace.globs`, plus what the walker
needs from them: which directories can hold a match, and which hidden or noise names a
pattern spells out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.workspace.errors import GlobError, WorkspaceError
from runtime.workspace.globs import MAX_ALTERNATIVES, compile_glob, expand_braces, has_wildcard
from runtime.workspace.search.common import is_unsafe, matchable, quote


@dataclass(frozen=True)
class Alternative:
    prefix: tuple[str, ...]  # leading literal components
    length: int | None  # number of components, None when "**" makes it unbounded


@dataclass(frozen=True)
class GlobMatcher:
    """A glob compiled to one RE2 regex over paths relative to the start directory.

    ``basename_only``: the glob has no ``/`` and is matched against file names
    (grep's ``glob`` filter, as in ripgrep). ``names_hidden``: some component starts
    with ``.``, so hidden entries are looked at. ``literal_names``: components without
    wildcards, which may name noise directories to enter.
    """

    regex: Any
    basename_only: bool
    alternatives: tuple[Alternative, ...]
    names_hidden: bool
    literal_names: frozenset[str]

    def matches(self, sub: str, name: str) -> bool:
        return self.regex.fullmatch(matchable(name if self.basename_only else sub)) is not None

    def may_descend(self, parts: tuple[str, ...]) -> bool:
        """Whether a directory at ``parts`` (below the start) can hold a match."""
        if self.basename_only:
            return True
        for alt in self.alternatives:
            if alt.length is not None and len(parts) >= alt.length:
                continue
            if all(a == b for a, b in zip(parts, alt.prefix, strict=False)):
                return True
        return False


def compile_matcher(pattern: object, what: str, *, basename_without_slash: bool, max_chars: int) -> GlobMatcher:
    """Compile a glob (``*``, ``?``, ``[...]``, ``**``, ``{a,b}``) or refuse it saying why."""
    if not isinstance(pattern, str):
        raise WorkspaceError(f"{what} must be a string, not {type(pattern).__name__}")
    shown = quote(pattern)
    if not pattern.strip():
        raise WorkspaceError(f"{what} is empty; give a glob such as '**/*.py'")
    if len(pattern) > max_chars:
        raise WorkspaceError(f"{what} is too long ({len(pattern):,} characters; at most {max_chars:,})")
    if any(is_unsafe(ch) for ch in pattern):
        raise WorkspaceError(f"{what} {shown} contains control characters or invalid text; remove them")
    try:
        texts = expand_braces(pattern)
    except GlobError:
        raise WorkspaceError(
            f"{what} expands to more than {MAX_ALTERNATIVES} alternatives; use fewer {{a,b}} groups"
        ) from None
    for alt in texts:
        if alt.startswith("/"):
            raise WorkspaceError(
                f"{what} {shown} is absolute; patterns are relative to path, so pass the directory as path and a "
                "relative pattern (e.g. '**/*.py')"
            )
        if alt == "~" or alt.startswith("~/"):
            raise WorkspaceError(
                f"{what} {shown} starts with '~', but home directories are not available; patterns are relative to path"
            )
        parts = [part for part in alt.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise WorkspaceError(
                f"{what} {shown} contains '..'; patterns cannot leave path: pass a higher directory as path instead"
            )
        if not parts:
            raise WorkspaceError(f"{what} {shown} names no files; give a glob such as '**/*.py'")
    try:
        compiled = compile_glob(pattern)
    except GlobError:
        raise WorkspaceError(
            f"{what} {shown} is not a valid glob (check its [...] character classes, e.g. a range like 'z-a')"
        ) from None
    part_lists = compiled.alternatives
    basename_only = basename_without_slash and all(len(parts) == 1 and parts[0] != "**" for parts in part_lists)
    literal = [part for parts in part_lists for part in parts if not has_wildcard(part)]
    return GlobMatcher(
        regex=compiled.regex,
        basename_only=basename_only,
        alternatives=tuple(_alternative(parts) for parts in part_lists),
        names_hidden=any(part.startswith(".") for parts in part_lists for part in parts),
        literal_names=frozenset(literal),
    )


def _alternative(parts: tuple[str, ...]) -> Alternative:
    prefix: list[str] = []
    for part in parts[:-1]:
        if has_wildcard(part):
            break
        prefix.append(part)
    return Alternative(tuple(prefix), None if "**" in parts else len(parts))
