"""Read-only listing and search in the workspace: ``list_dir``, ``glob`` and ``grep``.

Each tool is a plain function over a :class:`~runtime.workspace.sandbox.Workspace`
that returns text for the model. Bad input is refused with a
:class:`~runtime.workspace.errors.WorkspaceError` (and nothing else); every path
argument goes through :meth:`Workspace.resolve`; output names files only by their
workspace-relative path; every list is capped, with a notice that says how much was
left out and how to narrow the request. Results are sorted by path (component by
component, in code-point order), so the same tree gives the same text.

What ``glob`` and ``grep`` look at comes from one walker, shared by both grep engines
so that they search exactly the same files:

* directories are opened through descriptors with ``O_NOFOLLOW`` from the root down:
  a symbolic link is never traversed, and a directory swapped for a link during the
  walk is skipped rather than followed;
* entries matching the deny globs are left out and denied directories not entered;
* hidden names (starting with ``.``) are skipped unless the pattern names one
  (``.github/**``, ``**/.eslintrc*``);
* ``.gitignore`` files inside the workspace are honoured (git's syntax: the deepest
  file decides, its last matching line wins). Nothing above the root is read, nor
  global excludes, and it does not matter whether a ``.git`` directory exists: a
  workspace is often a subdirectory or an export of a checkout;
* dependency and cache directories (:data:`NOISE_DIRS`) are not entered unless the
  pattern names them;
* ``include_ignored=True`` lifts the last three rules; the deny globs always apply;
* the ``path`` argument itself is always searched (as in ripgrep): only the deny
  globs apply to it, so ``grep(..., path="build")`` searches an ignored directory.

``grep`` runs ripgrep when ``rg`` is on PATH and a Python engine otherwise. Ripgrep is
given the walker's file list (fixed argv, no shell, ``--no-config``, ``--`` before
the pattern, a time limit after which it is killed); ripgrep's own filters (ignore
files, hidden files, globs) therefore play no part, and every path it reports is
checked again against the list and the deny globs. The Python engine matches with
RE2 (``google-re2``), which, like ripgrep's regex engine, is linear-time and has no
look-around or back-references, so a pattern means the same in both. Every pattern
is checked with RE2 first, whatever the engine. Known difference: ``\\w``, ``\\d``,
``\\s`` and ``\\b`` are Unicode-aware in ripgrep and ASCII-only in RE2.

Symbolic links: ``list_dir`` shows them (``name -> target`` for a target inside the
workspace, never the target of one outside); ``glob`` lists a link to a file inside
the workspace; ``grep`` does not follow links (ripgrep's default), a target inside
the workspace is searched under its own path.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import re2

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.sandbox import TEMP_PREFIX, Resolved, Workspace

GrepOutput = Literal["content", "files", "count"]
GrepEngine = Literal["auto", "rg", "python"]

NOISE_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
"""Dependency, cache and VCS directories: listed, but not entered unless asked for."""

TIME_LIMIT_S = 30.0
"""Wall-clock budget of one call; a walk or search still running then stops with a notice."""

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Files larger than this are not searched by grep (the output names them)."""

SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes makes a file binary: grep skips it (as ripgrep does)."""

LIST_MAX_DEPTH = 5
MAX_LIST_LIMIT = 10_000
MAX_GLOB_LIMIT = 10_000
MAX_GREP_LIMIT = 2_000
MAX_CONTEXT = 10
MAX_PATTERN_CHARS = 1_000
WALK_SCAN_CAP = 200_000  # directory entries looked at by one glob or grep
LIST_SCAN_CAP = 100_000  # entries collected by one list_dir
MAX_WALK_DEPTH = 100  # nesting below the start directory; deeper is not entered

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO that slipped past the type check must not hang the read.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_BRACE_ALTERNATIVES = 256
_MAX_GITIGNORE_BYTES = 1 << 20
_MAX_GITIGNORE_RULES = 10_000
_RG_ARGV_BYTES = 128 * 1024  # file names per ripgrep run; far below ARG_MAX
_SHOWN_NAMES = 3  # how many skipped large files or noise directories a notice names


# -- small helpers ---------------------------------------------------------------------


def _check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an int within [low, high], else a refusal naming the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkspaceError(f"{name} must be a whole number from {low} to {high:,}, not {value!r}")
    if not low <= value <= high:
        raise WorkspaceError(f"{name} must be from {low} to {high:,} (got {value:,})")
    return value


def _clean(text: str) -> str:
    """``text`` safe for one output line: control characters, line separators and lone surrogates become U+FFFD.

    Tabs stay. File names can hold newlines and undecodable bytes (surrogate escapes);
    neither may break the line-oriented output.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch == "\t" or ch.isprintable() or not _is_unsafe(ch) else "\ufffd" for ch in text)


def _is_unsafe(ch: str) -> bool:
    code = ord(ch)
    return code < 32 or 127 <= code < 160 or code in (0x2028, 0x2029) or 0xD800 <= code <= 0xDFFF


def _quote(text: str, max_chars: int = 120) -> str:
    """``text`` quoted for a message, cleaned and shortened."""
    shown = _clean(text)
    if len(shown) > max_chars:
        shown = shown[: max_chars - 1] + "…"
    return f"'{shown}'"


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def _matchable(path: str) -> str:
    """``path`` as RE2 can take it: undecodable bytes of a file name (surrogate escapes) become U+FFFD."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return path


def _join(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"


def _path_key(rel: str) -> list[str]:
    """Sort key of a relative path: component by component, so files stay under their directory."""
    return rel.split("/")


def _where(resolved: Resolved) -> str:
    if resolved.relative == ".":
        return "the workspace"
    return _clean(resolved.relative) + ("/" if resolved.is_dir else "")


def _resolve_dir(workspace: Workspace, path: str, tool: str) -> Resolved:
    """Resolve ``path`` and insist on a directory (``tool`` names the caller in the message)."""
    resolved = workspace.resolve(path)
    if not resolved.is_dir:
        parent = resolved.relative.rsplit("/", 1)[0] if "/" in resolved.relative else "."
        raise WorkspaceError(
            f"{_clean(resolved.relative)} is a file, not a directory; {tool} needs a directory (e.g. its parent '{_clean(parent)}')"
        )
    return resolved


def _changed(rel: str) -> WorkspaceError:
    return WorkspaceError(
        f"{_clean(rel)} changed while in use (it is no longer a directory inside the workspace); try again"
    )


def _open_dir_chain(workspace: Workspace, relative: str, load_ignores: bool) -> tuple[int, tuple[_IgnoreFile, ...]]:
    """A descriptor of directory ``relative``, reached from the root without following links.

    With ``load_ignores``, also the ``.gitignore`` files of the directories above it
    (root first); the directory's own file is read by the walker.
    """
    fd = workspace.open_root()
    ignores: list[_IgnoreFile] = []
    walked = "."
    try:
        for part in [] if relative == "." else relative.split("/"):
            if load_ignores and (rules := _load_gitignore(workspace, fd, walked)) is not None:
                ignores.append(rules)
            walked = _join(walked, part)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except PermissionError:
                raise WorkspaceError(f"permission denied on directory {_clean(walked)}") from None
            except OSError:
                raise _changed(walked) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, tuple(ignores)


def _scandir_sorted(fd: int) -> list[os.DirEntry[str]]:
    # A writer's temporary file (file_edit's, or one a crash left) is never shown:
    # it is not the agent's file, and it is gone or swept soon.
    with os.scandir(fd) as entries:
        return sorted(
            (entry for entry in entries if not entry.name.startswith(TEMP_PREFIX)), key=lambda entry: entry.name
        )


def _read_file(dir_fd: int, name: str, max_bytes: int) -> bytes | None:
    """Up to ``max_bytes`` of regular file ``name`` in ``dir_fd`` (no link followed), or None if unreadable."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        remaining = max_bytes
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


# -- list_dir --------------------------------------------------------------------------


@dataclass
class _Node:
    label: str
    level: int
    children: list[_Node] = field(default_factory=list)


@dataclass
class _ListStats:
    total: int = 0
    hidden: int = 0
    denied: int = 0
    noise: list[str] = field(default_factory=list)
    unreadable: int = 0
    capped: bool = False
    timed_out: bool = False


def list_dir(
    workspace: Workspace, path: str = ".", *, depth: int = 1, limit: int = 500, show_hidden: bool = False
) -> str:
    """List directory ``path`` as a tree ``depth`` levels deep (1 to 5).

    Directories come first with a trailing ``/``, then files with their size, each group
    sorted by name. Symbolic links are shown, never entered: ``name -> target`` for a
    target inside the workspace, ``name -> (outside the workspace)`` otherwise, without
    the outside target. Entries matching the deny globs are left out and counted; so
    are hidden names unless ``show_hidden``. Dependency and cache directories
    (:data:`NOISE_DIRS`) are listed but not expanded. At most ``limit`` entries are
    shown, shallow levels first, with a notice giving the total.
    """
    _check_int("depth", depth, 1, LIST_MAX_DEPTH)
    _check_int("limit", limit, 1, MAX_LIST_LIMIT)
    start = _resolve_dir(workspace, path, "list_dir")
    stats = _ListStats()
    deadline = time.monotonic() + TIME_LIMIT_S
    fd, _ = _open_dir_chain(workspace, start.relative, load_ignores=False)
    try:
        roots = _scan_level(workspace, fd, start.relative, 1, depth, bool(show_hidden), stats, deadline)
    finally:
        os.close(fd)

    selected = _select_breadth_first(roots, limit)
    header = "./" if start.relative == "." else _clean(start.relative) + "/"
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
        entries = _scandir_sorted(fd)
    except OSError:
        stats.unreadable += 1
        return []
    dirs: list[_Node] = []
    files: list[_Node] = []
    for entry in entries:
        if stats.total >= LIST_SCAN_CAP:
            stats.capped = True
            break
        if time.monotonic() > deadline:
            stats.timed_out = True
            break
        name = entry.name
        child_rel = _join(rel, name)
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
            files.append(_Node(f"{_clean(name)} -> {target}", level))
        elif is_dir:
            stats.total += 1
            dirs.append(_dir_node(workspace, fd, name, child_rel, level, depth, show_hidden, stats, deadline))
        else:
            stats.total += 1
            files.append(_Node(f"{_clean(name)}  {_file_note(entry)}", level))
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
    node = _Node(_clean(name) + "/", level)
    if level >= depth:
        return node
    if name in NOISE_DIRS:
        # Listing thousands of installed packages would crowd out the project itself.
        node.label += "  (not expanded)"
        stats.noise.append(_clean(rel) + "/")
        return node
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
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
        return _human_size(st.st_size)
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
    return _clean(target) + ("/" if stat.S_ISDIR(st.st_mode) else "")


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
        total = f"more than {LIST_SCAN_CAP:,}" if stats.capped else f"{stats.total:,}"
        notes.append(f"[showing {shown:,} of {total} entries; narrow the path or lower depth]")
    if stats.hidden:
        notes.append(
            f"[{_plural(stats.hidden, 'hidden entry', 'hidden entries')} not shown (names starting with '.'); pass show_hidden=true to list them]"
        )
    if stats.denied:
        notes.append(f"[{_plural(stats.denied, 'protected entry', 'protected entries')} not shown (deny rules)]")
    if stats.noise:
        names = ", ".join(stats.noise[:_SHOWN_NAMES]) + (", ..." if len(stats.noise) > _SHOWN_NAMES else "")
        notes.append(f"[not expanded: {names} (dependency or cache directories); list one directly to see inside]")
    if stats.unreadable:
        notes.append(f"[{_plural(stats.unreadable, 'entry', 'entries')} could not be read (permissions)]")
    if stats.timed_out:
        notes.append(f"[listing stopped after {TIME_LIMIT_S:g} s: it is incomplete; narrow the path or lower depth]")
    return notes


# -- glob patterns ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Alternative:
    prefix: tuple[str, ...]  # leading literal components
    length: int | None  # number of components, None when "**" makes it unbounded


@dataclass(frozen=True)
class _GlobMatcher:
    """A glob compiled to one RE2 regex over paths relative to the start directory.

    ``basename_only``: the glob has no ``/`` and is matched against file names
    (grep's ``glob`` filter, as in ripgrep). ``names_hidden``: some component starts
    with ``.``, so hidden entries are looked at. ``literal_names``: components without
    wildcards, which may name noise directories to enter.
    """

    regex: Any
    basename_only: bool
    alternatives: tuple[_Alternative, ...]
    names_hidden: bool
    literal_names: frozenset[str]

    def matches(self, sub: str, name: str) -> bool:
        return self.regex.fullmatch(_matchable(name if self.basename_only else sub)) is not None

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


def _compile_glob(pattern: object, what: str, *, basename_without_slash: bool) -> _GlobMatcher:
    """Compile a glob (``*``, ``?``, ``[...]``, ``**``, ``{a,b}``) or refuse it saying why."""
    if not isinstance(pattern, str):
        raise WorkspaceError(f"{what} must be a string, not {type(pattern).__name__}")
    shown = _quote(pattern)
    if not pattern.strip():
        raise WorkspaceError(f"{what} is empty; give a glob such as '**/*.py'")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError(f"{what} is too long ({len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,})")
    if any(_is_unsafe(ch) for ch in pattern):
        raise WorkspaceError(f"{what} {shown} contains control characters or invalid text; remove them")
    alternatives = _expand_braces(pattern, what)
    part_lists: list[list[str]] = []
    for alt in alternatives:
        if alt.startswith("/"):
            raise WorkspaceError(
                f"{what} {shown} is absolute; patterns are relative to path, so pass the directory as path and a relative pattern (e.g. '**/*.py')"
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
        part_lists.append(parts)
    basename_only = basename_without_slash and all(len(parts) == 1 and parts[0] != "**" for parts in part_lists)
    source = "|".join(f"(?:{_translate_parts(parts)})" for parts in part_lists)
    regex = _compile_re2(source, case_sensitive=True, dot_nl=True)
    if regex is None:
        raise WorkspaceError(
            f"{what} {shown} is not a valid glob (check its [...] character classes, e.g. a range like 'z-a')"
        )
    literal = [part for parts in part_lists for part in parts if not _has_wildcard(part)]
    return _GlobMatcher(
        regex=regex,
        basename_only=basename_only,
        alternatives=tuple(_alternative(parts) for parts in part_lists),
        names_hidden=any(part.startswith(".") for parts in part_lists for part in parts),
        literal_names=frozenset(literal),
    )


def _alternative(parts: list[str]) -> _Alternative:
    prefix: list[str] = []
    for part in parts[:-1]:
        if _has_wildcard(part):
            break
        prefix.append(part)
    return _Alternative(tuple(prefix), None if "**" in parts else len(parts))


def _has_wildcard(part: str) -> bool:
    return any(ch in part for ch in "*?[\\")


def _compile_re2(source: str, *, case_sensitive: bool, dot_nl: bool = False) -> Any | None:
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise write to the app's stderr
    options.case_sensitive = case_sensitive
    options.dot_nl = dot_nl
    try:
        return re2.compile(source, options)
    except re2.error:
        return None


def _expand_braces(pattern: str, what: str) -> list[str]:
    """Shell-style brace expansion (``{a,b}``, nested too); braces without a comma stay literal."""
    out: list[str] = []
    pending = [pattern]
    while pending:
        text = pending.pop()
        group = _first_brace_group(text)
        if group is None:
            out.append(text)
            if len(out) > _MAX_BRACE_ALTERNATIVES:
                raise WorkspaceError(
                    f"{what} expands to more than {_MAX_BRACE_ALTERNATIVES} alternatives; use fewer {{a,b}} groups"
                )
            continue
        start, end, choices = group
        # Reversed onto the stack, so alternatives come out in written order.
        pending.extend(text[:start] + choice + text[end + 1 :] for choice in reversed(choices))
        if len(pending) > 4 * _MAX_BRACE_ALTERNATIVES:
            raise WorkspaceError(
                f"{what} expands to more than {_MAX_BRACE_ALTERNATIVES} alternatives; use fewer {{a,b}} groups"
            )
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


def _translate_parts(parts: list[str]) -> str:
    """RE2 source for path components: ``**`` spans directories, other wildcards stay in one."""
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
        else:
            out.append(_translate_component(part) + ("" if last else "/"))
    return "".join(out)


def _translate_component(part: str) -> str:
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
        elif ch == "[" and (end := _class_end(part, i)) != -1:
            out.append(_translate_class(part[i + 1 : end]))
            i = end
        elif ch == "\\" and i + 1 < len(part):
            i += 1
            out.append(re2.escape(part[i]))
        else:
            out.append(re2.escape(ch))
        i += 1
    return "".join(out)


def _class_end(part: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (a leading ``!``/``^`` and ``]`` are literal), or -1."""
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


# -- .gitignore ------------------------------------------------------------------------


@dataclass(frozen=True)
class _IgnoreRule:
    regex: Any
    negated: bool
    dir_only: bool


@dataclass(frozen=True)
class _IgnoreFile:
    base: str  # workspace-relative directory holding the .gitignore ("." for the root)
    rules: tuple[_IgnoreRule, ...]


def _load_gitignore(workspace: Workspace, dir_fd: int, rel: str) -> _IgnoreFile | None:
    if workspace.denied_by(_join(rel, ".gitignore")) is not None:
        return None
    data = _read_file(dir_fd, ".gitignore", _MAX_GITIGNORE_BYTES)
    if not data:
        return None
    rules = _parse_gitignore(data.decode("utf-8", "replace"))
    return _IgnoreFile(rel, rules) if rules else None


def _parse_gitignore(text: str) -> tuple[_IgnoreRule, ...]:
    """The rules of one ``.gitignore`` (git's syntax); lines that do not compile are skipped, as git does."""
    rules: list[_IgnoreRule] = []
    for raw in text.split("\n")[:_MAX_GITIGNORE_RULES]:
        line = raw.rstrip("\r")
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        # A slash at the start or in the middle anchors the pattern to the file's directory.
        if "/" in line:
            line = line.lstrip("/")
        else:
            line = "**/" + line
        parts = [part for part in line.split("/") if part]
        regex = _compile_re2(_translate_parts(parts), case_sensitive=True, dot_nl=True)
        if regex is not None:
            rules.append(_IgnoreRule(regex, negated, dir_only))
    return tuple(rules)


def _gitignored(ignores: tuple[_IgnoreFile, ...], rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` is ignored: the deepest file with a matching rule decides, its last match wins."""
    for ignore in reversed(ignores):
        sub = rel if ignore.base == "." else rel[len(ignore.base) + 1 :]
        for rule in reversed(ignore.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(_matchable(sub)) is not None:
                return not rule.negated
    return False


# -- the walker ------------------------------------------------------------------------


@dataclass
class _Skipped:
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
    include_hidden: bool
    respect_gitignore: bool
    enter_noise: frozenset[str] | None  # noise directories that may be entered; None: all
    may_descend: Callable[[tuple[str, ...]], bool]


@dataclass(frozen=True)
class _Entry:
    rel: str  # relative to the workspace root
    sub: str  # relative to the start directory
    name: str
    dir_fd: int  # the directory holding it, open while the entry is being handled
    kind: Literal["file", "dir", "link", "other"]
    size: int


def _walk_rules(matcher: _GlobMatcher | None, include_ignored: bool) -> _WalkRules:
    if include_ignored:
        return _WalkRules(True, False, None, matcher.may_descend if matcher else lambda _parts: True)
    return _WalkRules(
        include_hidden=bool(matcher and matcher.names_hidden),
        respect_gitignore=True,
        enter_noise=matcher.literal_names & NOISE_DIRS if matcher else frozenset(),
        may_descend=matcher.may_descend if matcher else lambda _parts: True,
    )


def _walk(
    workspace: Workspace, start: Resolved, rules: _WalkRules, skipped: _Skipped, deadline: float
) -> Generator[_Entry, None, None]:
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
                    f"{start.relative} is another name (a hard link) for one of toolrt's own files (config, audit log, artifacts or state); it cannot be searched"
                )
            kind: Literal["file", "other"] = "file" if stat.S_ISREG(st.st_mode) else "other"
            yield _Entry(start.relative, start.name, start.name, fd, kind, st.st_size)
        finally:
            os.close(fd)
        return
    fd, ignores = _open_dir_chain(workspace, start.relative, rules.respect_gitignore)
    try:
        yield from _walk_dir(workspace, fd, start.relative, (), ignores, rules, skipped, deadline)
    finally:
        os.close(fd)


def _walk_dir(
    workspace: Workspace,
    fd: int,
    rel: str,
    parts: tuple[str, ...],
    ignores: tuple[_IgnoreFile, ...],
    rules: _WalkRules,
    skipped: _Skipped,
    deadline: float,
) -> Iterator[_Entry]:
    if rules.respect_gitignore and (own := _load_gitignore(workspace, fd, rel)) is not None:
        ignores = (*ignores, own)
    try:
        entries = _scandir_sorted(fd)
    except OSError:
        skipped.unreadable += 1
        return
    for entry in entries:
        if skipped.timed_out or skipped.capped:
            return
        skipped.scanned += 1
        if skipped.scanned > WALK_SCAN_CAP:
            skipped.capped = True
            return
        if time.monotonic() > deadline:
            skipped.timed_out = True
            return
        name = entry.name
        child_rel = _join(rel, name)
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
        if ignores and _gitignored(ignores, child_rel, is_dir):
            skipped.ignored += 1
            continue
        sub = "/".join(child_parts)
        if is_link:
            yield _Entry(child_rel, sub, name, fd, "link", 0)
        elif is_dir:
            yield _Entry(child_rel, sub, name, fd, "dir", 0)
            yield from _descend(workspace, fd, name, child_rel, child_parts, ignores, rules, skipped, deadline)
        else:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                skipped.unreadable += 1
                continue
            if workspace.protected_inodes.holds(st):
                continue  # a hard link to toolrt's own files: not the agent's to search
            yield _Entry(child_rel, sub, name, fd, "file" if stat.S_ISREG(st.st_mode) else "other", st.st_size)


def _descend(
    workspace: Workspace,
    fd: int,
    name: str,
    rel: str,
    parts: tuple[str, ...],
    ignores: tuple[_IgnoreFile, ...],
    rules: _WalkRules,
    skipped: _Skipped,
    deadline: float,
) -> Iterator[_Entry]:
    if rules.enter_noise is not None and name in NOISE_DIRS and name not in rules.enter_noise:
        skipped.noise.append(_clean(rel) + "/")
        return
    if not rules.may_descend(parts):
        return
    if len(parts) > MAX_WALK_DEPTH:
        skipped.too_deep += 1
        return
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError:  # unreadable, or swapped for a link since the scan: not followed
        skipped.unreadable += 1
        return
    try:
        yield from _walk_dir(workspace, child, rel, parts, ignores, rules, skipped, deadline)
    finally:
        os.close(child)


def _skipped_note(skipped: _Skipped, include_ignored: bool) -> str | None:
    """What the walk left out, for an empty result: the usual reason nothing was found."""
    parts: list[str] = []
    if skipped.hidden:
        parts.append(_plural(skipped.hidden, "hidden entry", "hidden entries"))
    if skipped.ignored:
        parts.append(f"{_plural(skipped.ignored, 'entry', 'entries')} ignored by .gitignore")
    if skipped.noise:
        names = ", ".join(skipped.noise[:_SHOWN_NAMES]) + (", ..." if len(skipped.noise) > _SHOWN_NAMES else "")
        parts.append(
            f"{_plural(len(skipped.noise), 'dependency/cache directory', 'dependency/cache directories')} ({names})"
        )
    if skipped.links:
        parts.append(f"{_plural(skipped.links, 'symbolic link')} (not followed; search the target's own path)")
    if skipped.binary:
        parts.append(_plural(skipped.binary, "binary file"))
    if skipped.denied:
        parts.append(f"{_plural(skipped.denied, 'protected entry', 'protected entries')} (deny rules)")
    if not parts:
        return None
    hint = (
        "; pass include_ignored=true to include hidden, ignored and dependency/cache entries"
        if (skipped.hidden or skipped.ignored or skipped.noise) and not include_ignored
        else ""
    )
    return f"[skipped: {', '.join(parts)}{hint}]"


def _walk_notices(skipped: _Skipped, what: str) -> list[str]:
    notes: list[str] = []
    if skipped.timed_out:
        notes.append(f"[{what} stopped after {TIME_LIMIT_S:g} s: results are incomplete; narrow the path or pattern]")
    if skipped.capped:
        notes.append(
            f"[{what} stopped after looking at {WALK_SCAN_CAP:,} entries: results are incomplete; narrow the path or pattern]"
        )
    if skipped.too_deep:
        notes.append(
            f"[{_plural(skipped.too_deep, 'directory', 'directories')} nested more than {MAX_WALK_DEPTH} levels deep not entered]"
        )
    return notes


# -- glob ------------------------------------------------------------------------------


def glob(
    workspace: Workspace, pattern: str, path: str = ".", *, limit: int = 1000, include_ignored: bool = False
) -> str:
    """Files under directory ``path`` whose path relative to it matches glob ``pattern``.

    ``*``, ``?`` and ``[...]`` match within one path component, ``**`` any number of
    directories, ``{a,b}`` either alternative; ``\\`` escapes. Results are
    workspace-relative paths of files (and of links to files inside the workspace),
    sorted by path: deterministic, and a capped list always cuts at the same place.
    Directories are not listed (use :func:`list_dir`). Hidden, ``.gitignore``d and
    dependency/cache entries are skipped unless the pattern names them or
    ``include_ignored`` is set (see the module docstring); absolute patterns and ``..``
    are refused. At most ``limit`` paths are shown, with a notice giving the total.
    """
    _check_int("limit", limit, 1, MAX_GLOB_LIMIT)
    matcher = _compile_glob(pattern, "pattern", basename_without_slash=False)
    start = _resolve_dir(workspace, path, "glob")
    skipped = _Skipped()
    deadline = time.monotonic() + TIME_LIMIT_S
    found: list[str] = []
    dirs_matched = 0
    with closing(_walk(workspace, start, _walk_rules(matcher, bool(include_ignored)), skipped, deadline)) as entries:
        for entry in entries:
            if not matcher.matches(entry.sub, entry.name):
                continue
            if entry.kind == "dir":
                dirs_matched += 1
            elif entry.kind == "file" or (entry.kind == "link" and _link_to_file_inside(workspace, entry.rel)):
                found.append(entry.rel)

    lines = [_clean(rel) for rel in found[:limit]]
    if len(found) > limit:
        lines.append(f"[showing {limit:,} of {len(found):,} files; narrow the pattern or path]")
    if not found:
        lines.append(f"No files match {_quote(pattern)} under {_where(start)}.")
        if dirs_matched:
            lines.append(
                f"[{_plural(dirs_matched, 'directory', 'directories')} match; glob lists files: add '/**' to the pattern to list what they hold]"
            )
        if (note := _skipped_note(skipped, bool(include_ignored))) is not None:
            lines.append(note)
    lines.extend(_walk_notices(skipped, "glob"))
    return "\n".join(lines)


def _link_to_file_inside(workspace: Workspace, rel: str) -> bool:
    """Whether link ``rel`` resolves to a regular file inside the workspace that may be used."""
    try:
        return workspace.resolve(rel).is_file
    except WorkspaceError:  # outside, protected, dangling or a loop: not listed
        return False


# -- grep: patterns --------------------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
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
        "negative look-ahead is not supported (RE2 and ripgrep match in linear time); search for the text and filter the results instead",
    ),
    (
        "invalid perl operator: (?<",
        "look-behind is not supported (RE2 and ripgrep match in linear time); include the preceding text in the pattern instead",
    ),
    ("invalid perl operator: (?>", "atomic groups are not supported; use a plain group '(...)'"),
    (
        "bad repetition operator: ",
        "possessive or doubled quantifiers such as '++' or '**' are not supported; use one quantifier, or escape the characters with a backslash",
    ),
    (
        "invalid named capture group",
        "named groups are written '(?P<name>...)'; back-references to them are not supported",
    ),
)
_MULTILINE_OFF = re.compile(r"\(\?[A-Za-z]*-[A-Za-z]*m")
_ESCAPE_HINT = "to match special characters literally, escape them with a backslash (e.g. '\\(' '\\[' '\\.' '\\*' '\\+' '\\?' '\\{')"


def _compile_pattern(pattern: object, ignore_case: bool) -> _Pattern:
    """Check ``pattern`` with RE2 (whatever the engine) and compile it, or refuse it with a hint."""
    if not isinstance(pattern, str):
        raise WorkspaceError(f"pattern must be a string, not {type(pattern).__name__}")
    shown = _quote(pattern)
    if pattern == "":
        raise WorkspaceError("pattern is empty; give a regular expression, e.g. 'def main' or 'TODO|FIXME'")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError(
            f"pattern is too long ({len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,}); search for a shorter, distinctive part"
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
    return _Pattern(pattern, line, across)


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
    return f"invalid regular expression {shown}: {_clean(detail)}; {hint or _ESCAPE_HINT}"


# -- grep: results ---------------------------------------------------------------------


@dataclass
class _FileHits:
    """Matches in one file: ``count`` matching lines, the texts of those kept, context lines."""

    rel: str
    count: int = 0
    matches: dict[int, str] = field(default_factory=dict)
    context: dict[int, str] = field(default_factory=dict)


def _display_line(text: str, number: int, max_chars: int) -> str:
    """A line as shown: line ending and BOM dropped, control characters replaced, cut at ``max_chars``."""
    if text.endswith("\r"):
        text = text[:-1]
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if len(text) > max_chars:
        return f"{_clean(text[:max_chars])}… [line cut: {len(text):,} characters in all]"
    return _clean(text)


@dataclass
class _Budget:
    """How many match texts are still wanted; past it, only counts are collected."""

    remaining: int

    def take(self, count: int) -> None:
        self.remaining = max(0, self.remaining - count)


# -- grep: the Python engine -----------------------------------------------------------


def _python_hits(
    rel: str, data: bytes, pattern: _Pattern, keep_text: bool, context: int, max_chars: int
) -> _FileHits | None:
    """The matching lines of ``data`` (bytes, so offsets stay linear and invalid UTF-8 is left as is)."""
    spans = list(_matching_lines(data, pattern))
    if not spans:
        return None
    hits = _FileHits(rel, count=len(spans))
    if not keep_text:
        return hits
    for number, start, end in spans:
        hits.matches[number] = _display_line(data[start:end].decode("utf-8", "replace"), number, max_chars)
    if context:
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        for number in hits.matches:
            for near in range(max(1, number - context), min(len(lines), number + context) + 1):
                if near not in hits.matches and near not in hits.context:
                    hits.context[near] = _display_line(lines[near - 1].decode("utf-8", "replace"), near, max_chars)
    return hits


def _matching_lines(data: bytes, pattern: _Pattern) -> Iterator[tuple[int, int, int]]:
    """(line number, start, end) of each line the pattern matches (end excludes the newline)."""
    if not data:
        return
    size = len(data)
    if pattern.across is None:
        start = 0
        for number, line in enumerate(data.split(b"\n"), 1):
            if start >= size:
                break  # the empty "line" after a final newline
            if pattern.line.search(line) is not None:
                yield number, start, start + len(line)
            start += len(line) + 1
        return
    # Jump from candidate to candidate with the multi-line regex: one search per
    # matching line, not one per line. RE2's never_nl keeps matches inside one line,
    # and in multi-line mode a match inside a line means the line alone matches
    # (^, $ and \b see a newline where the line has its edge); a match that still
    # spans a newline is confirmed against the line alone.
    pos = 0
    number = 1
    counted = 0
    while pos <= size:
        found = pattern.across.search(data, pos)
        if found is None:
            return
        at, end = found.span()
        if at >= size and data.endswith(b"\n"):
            return  # nothing after the final newline: no line there
        line_start = data.rfind(b"\n", 0, at) + 1
        line_end = data.find(b"\n", at)
        if line_end == -1:
            line_end = size
        number += data.count(b"\n", counted, line_start)
        counted = line_start
        if end <= line_end or pattern.line.search(data[line_start:line_end]) is not None:
            yield number, line_start, line_end
        pos = line_end + 1


def _python_search(
    files: Iterator[tuple[str, bytes]],
    pattern: _Pattern,
    output: GrepOutput,
    budget: _Budget,
    context: int,
    max_chars: int,
) -> list[_FileHits]:
    results: list[_FileHits] = []
    for rel, data in files:
        keep_text = output == "content" and budget.remaining > 0
        hits = _python_hits(rel, data, pattern, keep_text, context, max_chars)
        if hits is not None:
            results.append(hits)
            if keep_text:
                budget.take(hits.count)
    return results


# -- grep: the ripgrep engine ----------------------------------------------------------


def _rg_base(rg: str, ignore_case: bool) -> list[str]:
    # --text: binary files are already left out by the walker (NUL in the first 8 KiB, as in
    # the Python engine), so ripgrep must not apply its own, different rule.
    # --encoding none: no BOM sniffing or transcoding; both engines see the bytes.
    # --threads 1: results in argv order, which is path order.
    return [
        rg,
        "--no-config",
        "--text",
        "--encoding",
        "none",
        "--threads",
        "1",
        "--ignore-case" if ignore_case else "--case-sensitive",
    ]


def _rg_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "RIPGREP_CONFIG_PATH"}


def _run_rg(argv: list[str], cwd: str, deadline: float) -> subprocess.CompletedProcess[bytes] | None:
    """Run ripgrep (no shell); None when the time budget ran out (the process is killed)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    try:
        return subprocess.run(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=remaining, check=False, env=_rg_env()
        )
    except subprocess.TimeoutExpired:  # run() has killed and reaped it
        return None
    except OSError as err:
        raise WorkspaceError(f"ripgrep could not be started ({err.strerror}); use engine='python'") from None


def _rg_check_pattern(rg: str, pattern: _Pattern, ignore_case: bool, cwd: str) -> None:
    """Let ripgrep compile the pattern once, so its refusal is an error and not an empty result."""
    argv = [*_rg_base(rg, ignore_case), "--count", "--", pattern.text, os.devnull]
    done = _run_rg(argv, cwd, time.monotonic() + 10)
    if done is not None and done.returncode == 2:
        raise WorkspaceError(
            f"invalid regular expression {_quote(pattern.text)} for ripgrep: {_rg_error(done.stderr)}; {_ESCAPE_HINT}"
        )


def _rg_error(stderr: bytes) -> str:
    """The gist of ripgrep's message (its own advice names flags this tool does not have)."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    lines = [
        line
        for line in lines
        if not line.startswith(("Consider", "When multiline", "and look-around", "new line characters"))
    ]
    gist = next(
        (line for line in lines if line.startswith("error:")), lines[0] if lines else "ripgrep refused the pattern"
    )
    return _clean(gist)


def _rg_text(value: object, *, path: bool) -> str | None:
    """Text of a ripgrep JSON ``{"text": ...}`` or ``{"bytes": base64}`` value."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("text"), str):
        return str(value["text"])
    if isinstance(value.get("bytes"), str):
        raw = base64.b64decode(value["bytes"])
        return os.fsdecode(raw) if path else raw.decode("utf-8", "replace")
    return None


def _rg_search(
    rg: str,
    workspace: Workspace,
    files: Iterator[tuple[str, bytes]],
    pattern: _Pattern,
    ignore_case: bool,
    output: GrepOutput,
    budget: _Budget,
    context: int,
    max_chars: int,
    skipped: _Skipped,
    deadline: float,
) -> list[_FileHits]:
    cwd = str(workspace.root)
    _rg_check_pattern(rg, pattern, ignore_case, cwd)
    results: list[_FileHits] = []
    batch: list[str] = []
    batch_bytes = 0
    batch_files = 64  # small first, so a common pattern switches to counting early

    def flush() -> None:
        nonlocal batch, batch_bytes
        if batch and not skipped.timed_out:
            results.extend(
                _rg_batch(
                    rg, workspace, batch, pattern, ignore_case, output, budget, context, max_chars, skipped, deadline
                )
            )
        batch, batch_bytes = [], 0

    for rel, _head in files:
        batch.append(rel)
        batch_bytes += len(os.fsencode(rel)) + 1
        if len(batch) >= batch_files or batch_bytes >= _RG_ARGV_BYTES:
            flush()
            batch_files = min(batch_files * 2, 4096)
        if skipped.timed_out:
            break
    flush()
    return results


def _rg_batch(
    rg: str,
    workspace: Workspace,
    batch: list[str],
    pattern: _Pattern,
    ignore_case: bool,
    output: GrepOutput,
    budget: _Budget,
    context: int,
    max_chars: int,
    skipped: _Skipped,
    deadline: float,
) -> list[_FileHits]:
    """Search the files of ``batch``: with line texts while the budget lasts, else counts only."""
    by_rel = {rel: _FileHits(rel) for rel in batch}
    keep_text = output == "content" and budget.remaining > 0
    argv = _rg_base(rg, ignore_case)
    if keep_text:
        argv += ["--json", *(["--context", str(context)] if context else [])]
    else:
        argv += ["--count", "--with-filename", "--null"]
    done = _run_rg([*argv, "--", pattern.text, *batch], str(workspace.root), deadline)
    if done is None:
        skipped.timed_out = True
        return []
    if keep_text:
        _parse_rg_json(done.stdout, by_rel, workspace, max_chars)
    else:
        _parse_rg_counts(done.stdout, by_rel, workspace)
    hits = sorted((h for h in by_rel.values() if h.count), key=lambda h: _path_key(h.rel))
    if keep_text:
        budget.take(sum(h.count for h in hits))
    return hits


def _accept(rel: str | None, by_rel: dict[str, _FileHits], workspace: Workspace) -> _FileHits | None:
    """The entry for a path ripgrep reported, if it was given to it and is not protected."""
    if rel is None or rel not in by_rel or workspace.denied_by(rel) is not None:
        return None
    return by_rel[rel]


def _parse_rg_json(stdout: bytes, by_rel: dict[str, _FileHits], workspace: Workspace, max_chars: int) -> None:
    for raw in stdout.split(b"\n"):
        if not raw:
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        if kind not in ("match", "context"):
            continue
        data = event.get("data") or {}
        hits = _accept(_rg_text(data.get("path"), path=True), by_rel, workspace)
        number = data.get("line_number")
        text = _rg_text(data.get("lines"), path=False)
        if hits is None or not isinstance(number, int) or text is None:
            continue
        shown = _display_line(text[:-1] if text.endswith("\n") else text, number, max_chars)
        if kind == "match":
            hits.count += 1
            hits.matches[number] = shown
        else:
            hits.context[number] = shown


def _parse_rg_counts(stdout: bytes, by_rel: dict[str, _FileHits], workspace: Workspace) -> None:
    """Parse ``path NUL count LF`` records; split at NUL first, since a file name may hold a newline."""
    pieces = stdout.split(b"\x00")
    name = pieces[0]
    for piece in pieces[1:]:
        count, _, following = piece.partition(b"\n")
        hits = _accept(os.fsdecode(name), by_rel, workspace)
        if hits is not None and count.isdigit():
            hits.count = int(count)
        name = following


# -- grep ------------------------------------------------------------------------------


def ripgrep() -> str | None:
    """The ``rg`` binary: on PATH, or beside this interpreter (the ``ripgrep`` extra
    installs it into the environment's bin folder, which need not be on PATH)."""
    return shutil.which("rg") or shutil.which("rg", path=os.path.dirname(sys.executable))


def grep(
    workspace: Workspace,
    pattern: str,
    path: str = ".",
    *,
    glob: str | None = None,
    ignore_case: bool = False,
    output: GrepOutput = "content",
    context: int = 0,
    limit: int = 200,
    max_line_chars: int = 500,
    include_ignored: bool = False,
    engine: GrepEngine = "auto",
) -> str:
    """Search text files under ``path`` (a file or a directory) for regex ``pattern``.

    ``pattern`` is RE2 syntax (ripgrep's is nearly the same): no look-around or
    back-references; it matches within single lines. ``glob`` keeps only some files:
    without ``/`` it matches file names (``*.py``, ``*.{ts,tsx}``), with ``/`` paths
    relative to ``path`` (``src/**/*.py``). ``output``: ``content`` gives
    ``path:line:text`` lines (``context`` lines around each as ``path-line-text``, groups
    separated by ``--``), ``files`` one path per line, ``count`` ``path:count`` (matching
    lines). ``limit`` caps matches (content) or files (files, count); lines longer than
    ``max_line_chars`` are cut with a marker. Binary files (NUL in the first 8 KiB) and
    files over 10 MiB are skipped, the latter named in a notice. Hidden, ``.gitignore``d
    and dependency/cache entries are skipped unless ``include_ignored`` (see the module
    docstring); symbolic links are not followed. Results are sorted by path, then line,
    whichever engine ran: ``rg`` (ripgrep, when on PATH) or ``python``; ``auto`` picks
    ripgrep when it is there. The whole call has a :data:`TIME_LIMIT_S` budget; past it
    the results so far are returned with a notice.
    """
    matcher = None if glob is None else _compile_glob(glob, "glob", basename_without_slash=True)
    compiled = _compile_pattern(pattern, bool(ignore_case))
    if output not in ("content", "files", "count"):
        raise WorkspaceError(f"output must be 'content', 'files' or 'count', not {output!r}")
    if engine not in ("auto", "rg", "python"):
        raise WorkspaceError(f"engine must be 'auto', 'rg' or 'python', not {engine!r}")
    context = _check_int("context", context, 0, MAX_CONTEXT)
    limit = _check_int("limit", limit, 1, MAX_GREP_LIMIT)
    max_line_chars = _check_int("max_line_chars", max_line_chars, 20, 100_000)
    rg = ripgrep() if engine in ("auto", "rg") else None
    if engine == "rg" and rg is None:
        raise WorkspaceError("ripgrep (rg) is not on PATH; use engine='auto' or engine='python'")
    start = workspace.resolve(path)

    skipped = _Skipped()
    deadline = time.monotonic() + TIME_LIMIT_S
    budget = _Budget(limit)
    walk = _walk(workspace, start, _walk_rules(matcher, bool(include_ignored)), skipped, deadline)
    with closing(walk):
        files = _text_files(walk, matcher, skipped, read_all=rg is None)
        if rg is None:
            hits = _python_search(files, compiled, output, budget, context, max_line_chars)
        else:
            hits = _rg_search(
                rg,
                workspace,
                files,
                compiled,
                bool(ignore_case),
                output,
                budget,
                context,
                max_line_chars,
                skipped,
                deadline,
            )
    hits.sort(key=lambda h: _path_key(h.rel))

    if output == "content":
        lines = _format_content(hits, limit, context)
    else:
        lines = _format_files(hits, limit, counts=output == "count")
    if not hits:
        searched = _plural(skipped.searched, "file")
        lines.append(f"No matches for {_quote(compiled.text)} in {_where(start)} ({searched} searched).")
        if (note := _skipped_note(skipped, bool(include_ignored))) is not None:
            lines.append(note)
    if skipped.large:
        names = ", ".join(skipped.large[:_SHOWN_NAMES]) + (", ..." if len(skipped.large) > _SHOWN_NAMES else "")
        lines.append(
            f"[not searched: {_plural(len(skipped.large), 'file')} over {MAX_FILE_BYTES // (1024 * 1024)} MB ({names}); read them in windows instead]"
        )
    lines.extend(_walk_notices(skipped, "search"))
    return "\n".join(lines)


def _text_files(
    entries: Iterator[_Entry], matcher: _GlobMatcher | None, skipped: _Skipped, *, read_all: bool
) -> Iterator[tuple[str, bytes]]:
    """(relative path, bytes) of each searchable file: the whole file, or its head when ripgrep reads it."""
    for entry in entries:
        if entry.kind == "link":
            skipped.links += 1
            continue
        if entry.kind != "file" or (matcher is not None and not matcher.matches(entry.sub, entry.name)):
            continue
        if entry.size > MAX_FILE_BYTES:
            skipped.large.append(_clean(entry.rel))
            continue
        data = _read_file(entry.dir_fd, entry.name, MAX_FILE_BYTES if read_all else SNIFF_BYTES)
        if data is None:
            skipped.unreadable += 1
            continue
        if b"\x00" in data[:SNIFF_BYTES]:
            skipped.binary += 1
            continue
        skipped.searched += 1
        yield entry.rel, data


def _format_content(hits: list[_FileHits], limit: int, context: int) -> list[str]:
    lines: list[str] = []
    shown_total = 0
    more = 0
    more_files = 0
    for h in hits:
        numbers = sorted(h.matches)[: max(0, limit - shown_total)]
        shown_total += len(numbers)
        if h.count > len(numbers):
            more += h.count - len(numbers)
            more_files += 1
        if not numbers:
            continue
        path = _clean(h.rel)
        if not context:
            lines.extend(f"{path}:{n}:{h.matches[n]}" for n in numbers)
            continue
        wanted = sorted(
            {
                k
                for n in numbers
                for k in range(max(1, n - context), n + context + 1)
                if k in h.matches or k in h.context
            }
        )
        previous = None
        for k in wanted:
            if previous is None or k != previous + 1:
                if lines:
                    lines.append("--")
            sep = ":" if k in h.matches else "-"
            lines.append(f"{path}{sep}{k}{sep}{h.matches.get(k, h.context.get(k, ''))}")
            previous = k
    if more:
        lines.append(
            f"[first {_plural(shown_total, 'match', 'matches')} shown; {more:,} more in {_plural(more_files, 'file')} — narrow the pattern or path]"
        )
    return lines


def _format_files(hits: list[_FileHits], limit: int, *, counts: bool) -> list[str]:
    shown = hits[:limit]
    lines = [f"{_clean(h.rel)}:{h.count}" if counts else _clean(h.rel) for h in shown]
    rest = hits[limit:]
    if rest:
        extra = (
            f" with {_plural(sum(h.count for h in rest), 'matching line')}"
            if counts
            else (" matches" if len(rest) == 1 else " match")
        )
        lines.append(
            f"[first {_plural(len(shown), 'file')} shown; {_plural(len(rest), 'more file')}{extra} — narrow the pattern or path]"
        )
    return lines
