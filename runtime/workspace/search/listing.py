"""``list_dir``: a directory as a tree, a few levels deep, links shown but never entered."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from runtime.workspace.sandbox import Workspace
from runtime.workspace.search.common import (
    DEFAULT_LIMITS,
    DIR_FLAGS,
    NOISE_DIRS,
    SHOWN_NAMES,
    SearchLimits,
    check_int,
    clean,
    human_size,
    join,
    plural,
    resolve_dir,
    scandir_sorted,
)
from runtime.workspace.search.walker import open_dir_chain


@dataclass
class _Node:
    label: str
    level: int
    children: list[_Node] = field(default_factory=list)


@dataclass
class _ListStats:
    limits: SearchLimits
    total: int = 0
    hidden: int = 0
    denied: int = 0
    noise: list[str] = field(default_factory=list)
    unreadable: int = 0
    capped: bool = False
    timed_out: bool = False


def list_dir(
    workspace: Workspace,
    path: str = ".",
    *,
    depth: int = 1,
    limit: int = 500,
    show_hidden: bool = False,
    limits: SearchLimits = DEFAULT_LIMITS,
) -> str:
    """List directory ``path`` as a tree ``depth`` levels deep (1 to 5).

    Directories come first with a trailing ``/``, then files with their size, each group
    sorted by name. Symbolic links are shown, never entered: ``name -> target`` for a
    target inside the workspace, ``name -> (outside the workspace)`` otherwise, without
    the outside target. Entries matching the deny globs are left out and counted; so
    are hidden names unless ``show_hidden``. Dependency and cache directories
    (:data:`NOISE_DIRS`) are listed but not expanded. At most ``limit`` entries are
    shown, shallow levels first, with a notice giving the total. ``limits`` bounds the
    call (:class:`SearchLimits`).
    """
    check_int("depth", depth, 1, limits.list_max_depth)
    check_int("limit", limit, 1, limits.max_list_limit)
    start = resolve_dir(workspace, path, "list_dir")
    stats = _ListStats(limits)
    deadline = time.monotonic() + limits.time_limit_s
    fd, _ = open_dir_chain(workspace, start.relative, load_ignores=False)
    try:
        roots = _scan_level(workspace, fd, start.relative, 1, depth, bool(show_hidden), stats, deadline)
    finally:
        os.close(fd)

    selected = _select_breadth_first(roots, limit)
    header = "./" if start.relative == "." else clean(start.relative) + "/"
    lines = [header]
    _render(roots, selected, lines)
    if not roots:
        lines.append("  (empty)")
    lines.extend(_list_notices(stats, len(selected)))
    return "\n".join(lines)


def _scan_level(
    workspace: Workspace,
    fd: int,
    rel: str,
    level: int,
    depth: int,
    show_hidden: bool,
    stats: _ListStats,
    deadline: float,
) -> list[_Node]:
    """The entries of directory ``fd`` (directories first), expanded down to ``depth``."""
    try:
        entries = scandir_sorted(fd)
    except OSError:
        stats.unreadable += 1
        return []
    dirs: list[_Node] = []
    files: list[_Node] = []
    for entry in entries:
        if stats.total >= stats.limits.list_scan_cap:
            stats.capped = True
            break
        if time.monotonic() > deadline:
            stats.timed_out = True
            break
        name = entry.name
        child_rel = join(rel, name)
        if workspace.denied_by(child_rel) is not None:
            stats.denied += 1
            continue
        if not show_hidden and name.startswith("."):
            stats.hidden += 1
            continue
        try:
            is_link = entry.is_symlink()
            is_dir = not is_link and entry.is_dir(follow_symlinks=False)
        except OSError:
            stats.unreadable += 1
            continue
        if is_link:
            target = _link_target(workspace, child_rel)
            if target is None:  # the link leads to a protected path: as hidden as the path itself
                stats.denied += 1
                continue
            stats.total += 1
            files.append(_Node(f"{clean(name)} -> {target}", level))
        elif is_dir:
            stats.total += 1
            dirs.append(_dir_node(workspace, fd, name, child_rel, level, depth, show_hidden, stats, deadline))
        else:
            stats.total += 1
            files.append(_Node(f"{clean(name)}  {_file_note(entry)}", level))
    return dirs + files


def _dir_node(
    workspace: Workspace,
    fd: int,
    name: str,
    rel: str,
    level: int,
    depth: int,
    show_hidden: bool,
    stats: _ListStats,
    deadline: float,
) -> _Node:
    node = _Node(clean(name) + "/", level)
    if level >= depth:
        return node
    if name in NOISE_DIRS:
        # Listing thousands of installed packages would crowd out the project itself.
        node.label += "  (not expanded)"
        stats.noise.append(clean(rel) + "/")
        return node
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError:
        node.label += "  (unreadable)"
        stats.unreadable += 1
        return node
    try:
        node.children = _scan_level(workspace, child, rel, level + 1, depth, show_hidden, stats, deadline)
    finally:
        os.close(child)
    return node


def _file_note(entry: os.DirEntry[str]) -> str:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return "(unreadable)"
    if stat.S_ISREG(st.st_mode):
        return human_size(st.st_size)
    if stat.S_ISFIFO(st.st_mode):
        return "(fifo)"
    if stat.S_ISSOCK(st.st_mode):
        return "(socket)"
    return "(device or special file)"


def _link_target(workspace: Workspace, rel: str) -> str | None:
    """How to show the target of link ``rel``; None if the target is protected.

    Judged by realpath containment; the text of a target outside the workspace is
    never shown.
    """
    real = Path(os.path.realpath(os.path.join(workspace.root, rel)))
    if not real.is_relative_to(workspace.root):
        return "(outside the workspace)"
    target = real.relative_to(workspace.root).as_posix()
    if workspace.denied_by(target) is not None:
        return None
    try:
        st = os.lstat(real)
    except OSError:
        return "(broken link)"
    if stat.S_ISLNK(st.st_mode):  # realpath gives up on a loop and returns a link
        return "(broken link: a loop)"
    return clean(target) + ("/" if stat.S_ISDIR(st.st_mode) else "")


def _select_breadth_first(roots: list[_Node], limit: int) -> set[int]:
    """Ids of the nodes to show: whole levels first, so a cap keeps the overview."""
    selected: set[int] = set()
    level = roots
    while level and len(selected) < limit:
        following: list[_Node] = []
        for node in level:
            if len(selected) >= limit:
                break
            selected.add(id(node))
            following.extend(node.children)
        level = following
    return selected


def _render(nodes: list[_Node], selected: set[int], lines: list[str]) -> None:
    for node in nodes:
        if id(node) not in selected:
            continue
        lines.append("  " * node.level + node.label)
        _render(node.children, selected, lines)


def _list_notices(stats: _ListStats, shown: int) -> list[str]:
    notes: list[str] = []
    if shown < stats.total or stats.capped:
        total = f"more than {stats.limits.list_scan_cap:,}" if stats.capped else f"{stats.total:,}"
        notes.append(f"[showing {shown:,} of {total} entries; narrow the path or lower depth]")
    if stats.hidden:
        notes.append(
            f"[{plural(stats.hidden, 'hidden entry', 'hidden entries')} not shown (names starting with '.'); pass "
            "show_hidden=true to list them]"
        )
    if stats.denied:
        notes.append(f"[{plural(stats.denied, 'protected entry', 'protected entries')} not shown (deny rules)]")
    if stats.noise:
        names = ", ".join(stats.noise[:SHOWN_NAMES]) + (", ..." if len(stats.noise) > SHOWN_NAMES else "")
        notes.append(f"[not expanded: {names} (dependency or cache directories); list one directly to see inside]")
    if stats.unreadable:
        notes.append(f"[{plural(stats.unreadable, 'entry', 'entries')} could not be read (permissions)]")
    if stats.timed_out:
        notes.append(
            f"[listing stopped after {stats.limits.time_limit_s:g} s: it is incomplete; narrow the path or lower depth]"
        )
    return notes
