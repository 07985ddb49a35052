"""``grep``: check the request, walk, hand the files to an engine, format the hits."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import closing

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.sandbox import Workspace
from runtime.workspace.search.common import (
    DEFAULT_LIMITS,
    SHOWN_NAMES,
    GrepEngine,
    GrepOutput,
    SearchLimits,
    check_int,
    clean,
    open_file,
    path_key,
    plural,
    quote,
    read_fd,
    read_file,
    where,
)
from runtime.workspace.search.engine_python import PythonEngine
from runtime.workspace.search.engine_rg import RipgrepEngine, ripgrep
from runtime.workspace.search.matcher import GlobMatcher, compile_matcher
from runtime.workspace.search.regex import compile_pattern
from runtime.workspace.search.results import Budget, Engine, FileHits, GrepRequest, SearchFile
from runtime.workspace.search.walker import Entry, Skipped, skipped_note, walk, walk_notices, walk_rules


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
    limits: SearchLimits = DEFAULT_LIMITS,
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
    ripgrep when it is there. The whole call has a time budget (``limits``, a
    :class:`SearchLimits`); past it the results so far are returned with a notice.
    """
    matcher = (
        None
        if glob is None
        else compile_matcher(glob, "glob", basename_without_slash=True, max_chars=limits.max_pattern_chars)
    )
    compiled = compile_pattern(pattern, bool(ignore_case), limits.max_pattern_chars)
    if output not in ("content", "files", "count"):
        raise WorkspaceError(f"output must be 'content', 'files' or 'count', not {output!r}")
    if engine not in ("auto", "rg", "python"):
        raise WorkspaceError(f"engine must be 'auto', 'rg' or 'python', not {engine!r}")
    context = check_int("context", context, 0, limits.max_context)
    limit = check_int("limit", limit, 1, limits.max_grep_limit)
    max_line_chars = check_int("max_line_chars", max_line_chars, 20, 100_000)
    chosen = _engine(engine)
    start = workspace.resolve(path)

    skipped = Skipped()
    request = GrepRequest(
        workspace=workspace,
        pattern=compiled,
        ignore_case=bool(ignore_case),
        output=output,
        context=context,
        limit=limit,
        max_line_chars=max_line_chars,
        deadline=time.monotonic() + limits.time_limit_s,
        limits=limits,
    )
    budget = Budget(request.limit)
    walked = walk(workspace, start, walk_rules(matcher, bool(include_ignored), limits), skipped, request.deadline)
    with closing(walked):
        files = _text_files(walked, matcher, skipped, limits, read_all=chosen.reads_whole_files)
        hits = chosen.search(request, files, budget, skipped)
    hits.sort(key=lambda h: path_key(h.rel))

    if request.wants_text:
        lines = _format_content(hits, request.limit, request.context)
    else:
        lines = _format_files(hits, request.limit, counts=output == "count")
    if not hits:
        searched = plural(skipped.searched, "file")
        lines.append(f"No matches for {quote(compiled.text)} in {where(start)} ({searched} searched).")
        if (note := skipped_note(skipped, bool(include_ignored))) is not None:
            lines.append(note)
    if skipped.large:
        names = ", ".join(skipped.large[:SHOWN_NAMES]) + (", ..." if len(skipped.large) > SHOWN_NAMES else "")
        lines.append(
            f"[not searched: {plural(len(skipped.large), 'file')} over {limits.max_file_bytes // (1024 * 1024)} MB ("
            f"{names}); read them in windows instead]"
        )
    lines.extend(walk_notices(skipped, "search", limits))
    return "\n".join(lines)


def _engine(engine: GrepEngine) -> Engine:
    rg = ripgrep() if engine in ("auto", "rg") else None
    if engine == "rg" and rg is None:
        raise WorkspaceError("ripgrep (rg) is not on PATH; use engine='auto' or engine='python'")
    return PythonEngine() if rg is None else RipgrepEngine(rg)


def _text_files(
    entries: Iterator[Entry], matcher: GlobMatcher | None, skipped: Skipped, limits: SearchLimits, *, read_all: bool
) -> Iterator[SearchFile]:
    """Each searchable file: the whole file, or its head and its open descriptor when ripgrep reads it."""
    for entry in entries:
        if entry.kind == "link":
            skipped.links += 1
            continue
        if entry.kind != "file" or (matcher is not None and not matcher.matches(entry.sub, entry.name)):
            continue
        if entry.size > limits.max_file_bytes:
            skipped.large.append(clean(entry.rel))
            continue
        fd = None if read_all else open_file(entry.dir_fd, entry.name)
        if read_all:
            data = read_file(entry.dir_fd, entry.name, limits.max_file_bytes)
        else:
            data = None if fd is None else read_fd(fd, limits.sniff_bytes)
        if data is None or b"\x00" in data[: limits.sniff_bytes]:
            if fd is not None:
                os.close(fd)
            if data is None:
                skipped.unreadable += 1
            else:
                skipped.binary += 1
            continue
        skipped.searched += 1
        yield SearchFile(entry.rel, data, fd)


def _format_content(hits: list[FileHits], limit: int, context: int) -> list[str]:
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
        path = clean(h.rel)
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
            f"[first {plural(shown_total, 'match', 'matches')} shown; {more:,} more in {plural(more_files, 'file')} — "
            "narrow the pattern or path]"
        )
    return lines


def _format_files(hits: list[FileHits], limit: int, *, counts: bool) -> list[str]:
    shown = hits[:limit]
    lines = [f"{clean(h.rel)}:{h.count}" if counts else clean(h.rel) for h in shown]
    rest = hits[limit:]
    if rest:
        extra = (
            f" with {plural(sum(h.count for h in rest), 'matching line')}"
            if counts
            else (" matches" if len(rest) == 1 else " match")
        )
        lines.append(
            f"[first {plural(len(shown), 'file')} shown; {plural(len(rest), 'more file')}{extra} — narrow the pattern "
            "or path]"
        )
    return lines
