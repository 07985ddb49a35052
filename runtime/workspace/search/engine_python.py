"""grep's Python engine: RE2 over the bytes of each file, one search per matching line."""

from __future__ import annotations

from collections.abc import Iterator

from runtime.workspace.search.regex import Pattern
from runtime.workspace.search.results import Budget, FileHits, GrepRequest, SearchFile, display_line
from runtime.workspace.search.walker import Skipped


def _python_hits(
    rel: str, data: bytes, pattern: Pattern, keep_text: bool, context: int, max_chars: int
) -> FileHits | None:
    """The matching lines of ``data`` (bytes, so offsets stay linear and invalid UTF-8 is left as is)."""
    spans = list(_matching_lines(data, pattern))
    if not spans:
        return None
    hits = FileHits(rel, count=len(spans))
    if not keep_text:
        return hits
    for number, start, end in spans:
        hits.matches[number] = display_line(data[start:end].decode("utf-8", "replace"), number, max_chars)
    if context:
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        for number in hits.matches:
            for near in range(max(1, number - context), min(len(lines), number + context) + 1):
                if near not in hits.matches and near not in hits.context:
                    hits.context[near] = display_line(lines[near - 1].decode("utf-8", "replace"), near, max_chars)
    return hits


def _matching_lines(data: bytes, pattern: Pattern) -> Iterator[tuple[int, int, int]]:
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


class PythonEngine:
    """Searches whole files handed over by the walker, in this process."""

    name = "python"
    reads_whole_files = True

    def search(
        self, request: GrepRequest, files: Iterator[SearchFile], budget: Budget, skipped: Skipped
    ) -> list[FileHits]:
        """The files with matches (see :class:`~runtime.workspace.search.results.Engine`)."""
        results: list[FileHits] = []
        for rel, data, _fd in files:
            keep_text = request.wants_text and budget.remaining > 0
            hits = _python_hits(rel, data, request.pattern, keep_text, request.context, request.max_line_chars)
            if hits is not None:
                results.append(hits)
                if keep_text:
                    budget.take(hits.count)
        return results
