"""grep's ripgrep engine: ``rg`` run on the walker's files, its output checked again.

Fixed argv, no shell, ``--no-config``, ``--`` before the pattern, a time limit after
which it is killed; ripgrep's own filters play no part (it is given files, not
folders), and every path it reports must be one it was given and not denied.

ripgrep is not given the files' names: a name opens whatever is there when ripgrep
gets to it, so a folder or file swapped for a symbolic link after the walk would be
followed out of the workspace. It is given ``/dev/fd/N``, the descriptors the walker
opened without following a link (passed to the child), so it reads those very files.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.sandbox import Workspace
from runtime.workspace.search.common import clean, path_key, quote
from runtime.workspace.search.regex import ESCAPE_HINT, Pattern
from runtime.workspace.search.results import Budget, FileHits, GrepRequest, SearchFile, display_line
from runtime.workspace.search.walker import Skipped

_RG_ARGV_BYTES = 128 * 1024  # file names per ripgrep run; far below ARG_MAX


def _max_batch_files() -> int:
    # Each file of a batch is an open descriptor until its ripgrep run ends, and several
    # grep calls may run at once: stay well inside the process's descriptor limit.
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft // 16))


_MAX_BATCH_FILES = _max_batch_files()


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


def _run_rg(
    argv: list[str], cwd: str, deadline: float, fds: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[bytes] | None:
    """Run ripgrep (no shell) with ``fds`` passed on; None when the time budget ran out (the process is killed)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=remaining,
            check=False,
            env=_rg_env(),
            pass_fds=fds,
        )
    except subprocess.TimeoutExpired:  # run() has killed and reaped it
        return None
    except OSError as err:
        raise WorkspaceError(f"ripgrep could not be started ({err.strerror}); use engine='python'") from None


def _rg_check_pattern(rg: str, pattern: Pattern, ignore_case: bool, cwd: str) -> None:
    """Let ripgrep compile the pattern once, so its refusal is an error and not an empty result."""
    argv = [*_rg_base(rg, ignore_case), "--count", "--", pattern.text, os.devnull]
    done = _run_rg(argv, cwd, time.monotonic() + 10)
    if done is not None and done.returncode == 2:
        raise WorkspaceError(
            f"invalid regular expression {quote(pattern.text)} for ripgrep: {_rg_error(done.stderr)}; {ESCAPE_HINT}"
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
    return clean(gist)


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


class RipgrepEngine:
    """Runs ripgrep (the ``rg`` binary at ``rg``) on batches of the walker's files."""

    name = "rg"
    reads_whole_files = False

    def __init__(self, rg: str) -> None:
        self.rg = rg

    def search(
        self, request: GrepRequest, files: Iterator[SearchFile], budget: Budget, skipped: Skipped
    ) -> list[FileHits]:
        """The files with matches (see :class:`~runtime.workspace.search.results.Engine`)."""
        cwd = str(request.workspace.root)
        _rg_check_pattern(self.rg, request.pattern, request.ignore_case, cwd)
        results: list[FileHits] = []
        batch: dict[str, tuple[str, int]] = {}  # the name ripgrep is given -> (path, descriptor)
        batch_bytes = 0
        batch_files = 64  # small first, so a common pattern switches to counting early
        try:
            for rel, _head, fd in files:
                if fd is None:  # pragma: no cover - the walker opens every file it hands to this engine
                    continue
                batch[f"/dev/fd/{fd}"] = (rel, fd)
                batch_bytes += len(os.fsencode(rel)) + 1
                if len(batch) >= batch_files or batch_bytes >= _RG_ARGV_BYTES:
                    results.extend(self._batch(request, batch, budget, skipped))
                    _close(batch)
                    batch, batch_bytes = {}, 0
                    batch_files = min(batch_files * 2, _MAX_BATCH_FILES)
                if skipped.timed_out:
                    break
            results.extend(self._batch(request, batch, budget, skipped))
        finally:
            _close(batch)
        return results

    def _batch(
        self, request: GrepRequest, batch: dict[str, tuple[str, int]], budget: Budget, skipped: Skipped
    ) -> list[FileHits]:
        """Search the files of ``batch``: with line texts while the budget lasts, else counts only."""
        if not batch or skipped.timed_out:
            return []
        workspace = request.workspace
        by_name = {name: FileHits(rel) for name, (rel, _fd) in batch.items()}
        keep_text = request.wants_text and budget.remaining > 0
        argv = _rg_base(self.rg, request.ignore_case)
        if keep_text:
            argv += ["--json", *(["--context", str(request.context)] if request.context else [])]
        else:
            argv += ["--count", "--with-filename", "--null"]
        fds = tuple(fd for _rel, fd in batch.values())
        done = _run_rg([*argv, "--", request.pattern.text, *batch], str(workspace.root), request.deadline, fds)
        if done is None:
            skipped.timed_out = True
            return []
        if keep_text:
            _parse_rg_json(done.stdout, by_name, workspace, request.max_line_chars)
        else:
            _parse_rg_counts(done.stdout, by_name, workspace)
        hits = sorted((h for h in by_name.values() if h.count), key=lambda h: path_key(h.rel))
        if keep_text:
            budget.take(sum(h.count for h in hits))
        return hits


def _close(batch: dict[str, tuple[str, int]]) -> None:
    for _rel, fd in batch.values():
        os.close(fd)
    batch.clear()


def _accept(name: str | None, by_name: dict[str, FileHits], workspace: Workspace) -> FileHits | None:
    """The entry for a file ripgrep reported, if it was given to it and is not protected."""
    if name is None or (hits := by_name.get(name)) is None or workspace.denied_by(hits.rel) is not None:
        return None
    return hits


def _parse_rg_json(stdout: bytes, by_name: dict[str, FileHits], workspace: Workspace, max_chars: int) -> None:
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
        hits = _accept(_rg_text(data.get("path"), path=True), by_name, workspace)
        number = data.get("line_number")
        text = _rg_text(data.get("lines"), path=False)
        if hits is None or not isinstance(number, int) or text is None:
            continue
        shown = display_line(text[:-1] if text.endswith("\n") else text, number, max_chars)
        if kind == "match":
            hits.count += 1
            hits.matches[number] = shown
        else:
            hits.context[number] = shown


def _parse_rg_counts(stdout: bytes, by_name: dict[str, FileHits], workspace: Workspace) -> None:
    """Parse ``path NUL count LF`` records; split at NUL first, since a file name may hold a newline."""
    pieces = stdout.split(b"\x00")
    name = pieces[0]
    for piece in pieces[1:]:
        count, _, following = piece.partition(b"\n")
        hits = _accept(os.fsdecode(name), by_name, workspace)
        if hits is not None and count.isdigit():
            hits.count = int(count)
        name = following


def ripgrep() -> str | None:
    """The ``rg`` binary: on PATH, or beside this interpreter (the ``ripgrep`` extra
    installs it into the environment's bin folder, which need not be on PATH)."""
    return shutil.which("rg") or shutil.which("rg", path=os.path.dirname(sys.executable))
