"""The one walker under ``glob`` and both ``grep`` engines, so they look at the same files.

Directories are opened through descriptors with ``O_NOFOLLOW`` from the root down (a
link is never traversed, a directory swapped for one is skipped); deny globs, hidden
names, ``.gitignore`` and noise directories are applied here (see the package
docstring); what was left out is counted for the notices.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Literal

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.sandbox import Resolved, Workspace
from runtime.workspace.search.common import (
    DIR_FLAGS,
    NOISE_DIRS,
    SHOWN_NAMES,
    SearchLimits,
    changed,
    clean,
    join,
    plural,
    scandir_sorted,
)
from runtime.workspace.search.gitignore import IgnoreFile, gitignored, load_gitignore
from runtime.workspace.search.matcher import GlobMatcher


@dataclass
class Skipped:
    """What a walk left out, for the notices."""

    hidden: int = 0
    ignored: int = 0
    denied: int = 0
    links: int = 0
    binary: int = 0
    unreadable: int = 0
    large: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)
    too_deep: int = 0
    scanned: int = 0
    searched: int = 0
    capped: bool = False
    timed_out: bool = False


@dataclass(frozen=True)
class _WalkRules:
    limits: SearchLimits
    include_hidden: bool
    respect_gitignore: bool
    enter_noise: frozenset[str] | None  # noise directories that may be entered; None: all
    may_descend: Callable[[tuple[str, ...]], bool]


@dataclass(frozen=True)
class Entry:
    rel: str  # relative to the workspace root
    sub: str  # relative to the start directory
    name: str
    dir_fd: int  # the directory holding it, open while the entry is being handled
    kind: Literal["file", "dir", "link", "other"]
    size: int


def walk_rules(matcher: GlobMatcher | None, include_ignored: bool, limits: SearchLimits) -> _WalkRules:
    """What a walk enters and yields, for ``matcher`` (None: every file)."""
    if include_ignored:
        return _WalkRules(limits, True, False, None, matcher.may_descend if matcher else lambda _parts: True)
    return _WalkRules(
        limits=limits,
        include_hidden=bool(matcher and matcher.names_hidden),
        respect_gitignore=True,
        enter_noise=matcher.literal_names & NOISE_DIRS if matcher else frozenset(),
        may_descend=matcher.may_descend if matcher else lambda _parts: True,
    )


def walk(
    workspace: Workspace, start: Resolved, rules: _WalkRules, skipped: Skipped, deadline: float
) -> Generator[Entry, None, None]:
    """Every entry under ``start`` the rules let through, in path order (files of a start file: just it)."""
    if not start.is_dir:
        fd = workspace.open_parent_dir(start)
        try:
            try:
                st = os.stat(start.name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                skipped.unreadable += 1
                return
            if workspace.protected_inodes.holds(st):
                raise WorkspaceError(
                    f"{start.relative} is another name (a hard link) for one of toolrt's own files (config, audit "
                    "log, artifacts or state); it cannot be searched"
                )
            kind: Literal["file", "other"] = "file" if stat.S_ISREG(st.st_mode) else "other"
            yield Entry(start.relative, start.name, start.name, fd, kind, st.st_size)
        finally:
            os.close(fd)
        return
    fd, ignores = open_dir_chain(workspace, start.relative, rules.respect_gitignore)
    try:
        yield from _walk_dir(workspace, fd, start.relative, (), ignores, rules, skipped, deadline)
    finally:
        os.close(fd)


def _walk_dir(
    workspace: Workspace,
    fd: int,
    rel: str,
    parts: tuple[str, ...],
    ignores: tuple[IgnoreFile, ...],
    rules: _WalkRules,
    skipped: Skipped,
    deadline: float,
) -> Iterator[Entry]:
    if rules.respect_gitignore and (own := load_gitignore(workspace, fd, rel)) is not None:
        ignores = (*ignores, own)
    try:
        entries = scandir_sorted(fd)
    except OSError:
        skipped.unreadable += 1
        return
    for entry in entries:
        if skipped.timed_out or skipped.capped:
            return
        skipped.scanned += 1
        if skipped.scanned > rules.limits.walk_scan_cap:
            skipped.capped = True
            return
        if time.monotonic() > deadline:
            skipped.timed_out = True
            return
        name = entry.name
        child_rel = join(rel, name)
        child_parts = (*parts, name)
        if workspace.denied_by(child_rel) is not None:
            skipped.denied += 1
            continue
        if name.startswith(".") and not rules.include_hidden:
            skipped.hidden += 1
            continue
        try:
            is_link = entry.is_symlink()
            is_dir = not is_link and entry.is_dir(follow_symlinks=False)
        except OSError:
            skipped.unreadable += 1
            continue
        if ignores and gitignored(ignores, child_rel, is_dir):
            skipped.ignored += 1
            continue
        sub = "/".join(child_parts)
        if is_link:
            yield Entry(child_rel, sub, name, fd, "link", 0)
        elif is_dir:
            yield Entry(child_rel, sub, name, fd, "dir", 0)
            yield from _descend(workspace, fd, name, child_rel, child_parts, ignores, rules, skipped, deadline)
        else:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                skipped.unreadable += 1
                continue
            if workspace.protected_inodes.holds(st):
                continue  # a hard link to toolrt's own files: not the agent's to search
            yield Entry(child_rel, sub, name, fd, "file" if stat.S_ISREG(st.st_mode) else "other", st.st_size)


def _descend(
    workspace: Workspace,
    fd: int,
    name: str,
    rel: str,
    parts: tuple[str, ...],
    ignores: tuple[IgnoreFile, ...],
    rules: _WalkRules,
    skipped: Skipped,
    deadline: float,
) -> Iterator[Entry]:
    if rules.enter_noise is not None and name in NOISE_DIRS and name not in rules.enter_noise:
        skipped.noise.append(clean(rel) + "/")
        return
    if not rules.may_descend(parts):
        return
    if len(parts) > rules.limits.max_walk_depth:
        skipped.too_deep += 1
        return
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError:  # unreadable, or swapped for a link since the scan: not followed
        skipped.unreadable += 1
        return
    try:
        yield from _walk_dir(workspace, child, rel, parts, ignores, rules, skipped, deadline)
    finally:
        os.close(child)


def skipped_note(skipped: Skipped, include_ignored: bool) -> str | None:
    """What the walk left out, for an empty result: the usual reason nothing was found."""
    parts: list[str] = []
    if skipped.hidden:
        parts.append(plural(skipped.hidden, "hidden entry", "hidden entries"))
    if skipped.ignored:
        parts.append(f"{plural(skipped.ignored, 'entry', 'entries')} ignored by .gitignore")
    if skipped.noise:
        names = ", ".join(skipped.noise[:SHOWN_NAMES]) + (", ..." if len(skipped.noise) > SHOWN_NAMES else "")
        parts.append(
            f"{plural(len(skipped.noise), 'dependency/cache directory', 'dependency/cache directories')} ({names})"
        )
    if skipped.links:
        parts.append(f"{plural(skipped.links, 'symbolic link')} (not followed; search the target's own path)")
    if skipped.binary:
        parts.append(plural(skipped.binary, "binary file"))
    if skipped.denied:
        parts.append(f"{plural(skipped.denied, 'protected entry', 'protected entries')} (deny rules)")
    if not parts:
        return None
    hint = (
        "; pass include_ignored=true to include hidden, ignored and dependency/cache entries"
        if (skipped.hidden or skipped.ignored or skipped.noise) and not include_ignored
        else ""
    )
    return f"[skipped: {', '.join(parts)}{hint}]"


def walk_notices(skipped: Skipped, what: str, limits: SearchLimits) -> list[str]:
    notes: list[str] = []
    if skipped.timed_out:
        notes.append(
            f"[{what} stopped after {limits.time_limit_s:g} s: results are incomplete; narrow the path or pattern]"
        )
    if skipped.capped:
        notes.append(
            f"[{what} stopped after looking at {limits.walk_scan_cap:,} entries: results are incomplete; narrow the "
            "path or pattern]"
        )
    if skipped.too_deep:
        notes.append(
            f"[{plural(skipped.too_deep, 'directory', 'directories')} nested more than {limits.max_walk_depth} levels "
            "deep not entered]"
        )
    return notes


def open_dir_chain(workspace: Workspace, relative: str, load_ignores: bool) -> tuple[int, tuple[IgnoreFile, ...]]:
    """A descriptor of directory ``relative``, reached from the root without following links.

    With ``load_ignores``, also the ``.gitignore`` files of the directories above it
    (root first); the directory's own file is read by the walker.
    """
    fd = workspace.open_root()
    ignores: list[IgnoreFile] = []
    walked = "."
    try:
        for part in [] if relative == "." else relative.split("/"):
            if load_ignores and (rules := load_gitignore(workspace, fd, walked)) is not None:
                ignores.append(rules)
            walked = join(walked, part)
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except PermissionError:
                raise WorkspaceError(f"permission denied on directory {clean(walked)}") from None
            except OSError:
                raise changed(walked) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, tuple(ignores)
