"""What every search tool shares: the limits, the noise directories, and small helpers
for text shown to the model and for descriptors that never follow links."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Literal

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


@dataclass(frozen=True)
class SearchLimits:
    """The limits of ``list_dir``, ``glob`` and ``grep``, passed to each call
    (:data:`DEFAULT_LIMITS` unless the caller gives others)."""

    time_limit_s: float = 30.0
    """Wall-clock budget of one call; a walk or search still running then stops with a notice."""
    max_file_bytes: int = 10 * 1024 * 1024
    """Files larger than this are not searched by grep (the output names them)."""
    sniff_bytes: int = 8192
    """A NUL byte in this many leading bytes makes a file binary: grep skips it (as ripgrep does)."""
    list_max_depth: int = 5
    max_list_limit: int = 10_000
    max_glob_limit: int = 10_000
    max_grep_limit: int = 2_000
    max_context: int = 10
    max_pattern_chars: int = 1_000
    walk_scan_cap: int = 200_000
    """Directory entries looked at by one glob or grep."""
    list_scan_cap: int = 100_000
    """Entries collected by one list_dir."""
    max_walk_depth: int = 100
    """Nesting below the start directory; deeper is not entered."""


DEFAULT_LIMITS = SearchLimits()

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO that slipped past the type check must not hang the read.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
SHOWN_NAMES = 3  # how many skipped large files or noise directories a notice names


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an int within [low, high], else a refusal naming the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkspaceError(f"{name} must be a whole number from {low} to {high:,}, not {value!r}")
    if not low <= value <= high:
        raise WorkspaceError(f"{name} must be from {low} to {high:,} (got {value:,})")
    return value


def clean(text: str) -> str:
    """``text`` safe for one output line: control characters, line separators and lone surrogates become U+FFFD.

    Tabs stay. File names can hold newlines and undecodable bytes (surrogate escapes);
    neither may break the line-oriented output.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch == "\t" or ch.isprintable() or not is_unsafe(ch) else "\ufffd" for ch in text)


def is_unsafe(ch: str) -> bool:
    code = ord(ch)
    return code < 32 or 127 <= code < 160 or code in (0x2028, 0x2029) or 0xD800 <= code <= 0xDFFF


def quote(text: str, max_chars: int = 120) -> str:
    """``text`` quoted for a message, cleaned and shortened."""
    shown = clean(text)
    if len(shown) > max_chars:
        shown = shown[: max_chars - 1] + "…"
    return f"'{shown}'"


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def matchable(path: str) -> str:
    """``path`` as RE2 can take it: undecodable bytes of a file name (surrogate escapes) become U+FFFD."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return path


def join(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"


def path_key(rel: str) -> list[str]:
    """Sort key of a relative path: component by component, so files stay under their directory."""
    return rel.split("/")


def where(resolved: Resolved) -> str:
    if resolved.relative == ".":
        return "the workspace"
    return clean(resolved.relative) + ("/" if resolved.is_dir else "")


def resolve_dir(workspace: Workspace, path: str, tool: str) -> Resolved:
    """Resolve ``path`` and insist on a directory (``tool`` names the caller in the message)."""
    resolved = workspace.resolve(path)
    if not resolved.is_dir:
        parent = resolved.relative.rsplit("/", 1)[0] if "/" in resolved.relative else "."
        raise WorkspaceError(
            f"{clean(resolved.relative)} is a file, not a directory; {tool} needs a directory (e.g. its parent '"
            f"{clean(parent)}')"
        )
    return resolved


def changed(rel: str) -> WorkspaceError:
    return WorkspaceError(
        f"{clean(rel)} changed while in use (it is no longer a directory inside the workspace); try again"
    )


def scandir_sorted(fd: int) -> list[os.DirEntry[str]]:
    # A writer's temporary file (file_edit's, or one a crash left) is never shown:
    # it is not the agent's file, and it is gone or swept soon.
    with os.scandir(fd) as entries:
        return sorted(
            (entry for entry in entries if not entry.name.startswith(TEMP_PREFIX)), key=lambda entry: entry.name
        )


def open_file(dir_fd: int, name: str) -> int | None:
    """A descriptor of regular file ``name`` in ``dir_fd`` (no link followed), or None if it is not one."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read_fd(fd: int, max_bytes: int) -> bytes | None:
    """Up to ``max_bytes`` of the file open at ``fd`` from its start, or None if unreadable.

    ``pread`` leaves the descriptor's offset alone: ripgrep may be handed the same open file.
    """
    chunks: list[bytes] = []
    offset = 0
    try:
        while offset < max_bytes:
            chunk = os.pread(fd, min(max_bytes - offset, 1 << 20), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
    except OSError:
        return None
    return b"".join(chunks)


def read_file(dir_fd: int, name: str, max_bytes: int) -> bytes | None:
    """Up to ``max_bytes`` of regular file ``name`` in ``dir_fd`` (no link followed), or None if unreadable."""
    fd = open_file(dir_fd, name)
    if fd is None:
        return None
    try:
        return read_fd(fd, max_bytes)
    finally:
        os.close(fd)
