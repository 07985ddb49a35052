"""``glob``: files whose path matches a glob, from the shared walker."""

from __future__ import annotations

import time
from contextlib import closing

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.sandbox import Workspace
from runtime.workspace.search.common import (
    DEFAULT_LIMITS,
    SearchLimits,
    check_int,
    clean,
    plural,
    quote,
    resolve_dir,
    where,
)
from runtime.workspace.search.matcher import compile_matcher
from runtime.workspace.search.walker import Skipped, skipped_note, walk, walk_notices, walk_rules


def glob(
    workspace: Workspace,
    pattern: str,
    path: str = ".",
    *,
    limit: int = 1000,
    include_ignored: bool = False,
    limits: SearchLimits = DEFAULT_LIMITS,
) -> str:
    """Files under directory ``path`` whose path relative to it matches glob ``pattern``.

    The glob dialect is :mod:`runtime.workspace.globs`: ``*``, ``?`` and ``[...]``
    match within one path component, ``**`` zero or more directories, ``{a,b}`` either
    alternative; ``\\`` escapes. Results are
    workspace-relative paths of files (and of links to files inside the workspace),
    sorted by path: deterministic, and a capped list always cuts at the same place.
    Directories are not listed (use :func:`list_dir`). Hidden, ``.gitignore``d and
    dependency/cache entries are skipped unless the pattern names them or
    ``include_ignored`` is set (see the module docstring); absolute patterns and ``..``
    are refused. At most ``limit`` paths are shown, with a notice giving the total.
    """
    check_int("limit", limit, 1, limits.max_glob_limit)
    matcher = compile_matcher(pattern, "pattern", basename_without_slash=False, max_chars=limits.max_pattern_chars)
    start = resolve_dir(workspace, path, "glob")
    skipped = Skipped()
    deadline = time.monotonic() + limits.time_limit_s
    found: list[str] = []
    dirs_matched = 0
    with closing(
        walk(workspace, start, walk_rules(matcher, bool(include_ignored), limits), skipped, deadline)
    ) as entries:
        for entry in entries:
            if not matcher.matches(entry.sub, entry.name):
                continue
            if entry.kind == "dir":
                dirs_matched += 1
            elif entry.kind == "file" or (entry.kind == "link" and _link_to_file_inside(workspace, entry.rel)):
                found.append(entry.rel)

    lines = [clean(rel) for rel in found[:limit]]
    if len(found) > limit:
        lines.append(f"[showing {limit:,} of {len(found):,} files; narrow the pattern or path]")
    if not found:
        lines.append(f"No files match {quote(pattern)} under {where(start)}.")
        if dirs_matched:
            lines.append(
                f"[{plural(dirs_matched, 'directory', 'directories')} match; glob lists files: add '/**' to the "
                "pattern to list what they hold]"
            )
        if (note := skipped_note(skipped, bool(include_ignored))) is not None:
            lines.append(note)
    lines.extend(walk_notices(skipped, "glob", limits))
    return "\n".join(lines)


def _link_to_file_inside(workspace: Workspace, rel: str) -> bool:
    """Whether link ``rel`` resolves to a regular file inside the workspace that may be used."""
    try:
        return workspace.resolve(rel).is_file
    except WorkspaceError:  # outside, protected, dangling or a loop: not listed
        return False
