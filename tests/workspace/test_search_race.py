"""grep's engines read the files the walker checked, not whatever their names lead to later.

The walker opens directories and files without following links. ripgrep used to be given
the files' names, so a folder (or the file itself) swapped for a symbolic link between
the walk and ripgrep's run was followed out of the workspace or onto a protected file:
the model read a file outside, or `.env`, as a search hit (or its match count, a
bit-by-bit side channel). It is now given the descriptors the walker opened.

The swaps are made at the worst moment on purpose (after the walk handed the file over,
before ripgrep runs), and also by a thread swapping in a loop while searches run.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from ws_helpers import Tree

from runtime.workspace import Workspace, WorkspaceError
from runtime.workspace.search import grep
from runtime.workspace.search.common import DEFAULT_LIMITS
from runtime.workspace.search.engine_python import PythonEngine
from runtime.workspace.search.engine_rg import RipgrepEngine, ripgrep
from runtime.workspace.search.grep import _text_files
from runtime.workspace.search.regex import compile_pattern
from runtime.workspace.search.results import Budget, FileHits, GrepRequest, SearchFile
from runtime.workspace.search.walker import Skipped, walk, walk_rules

_LIBC = ctypes.CDLL(None, use_errno=True)
RG = ripgrep()
ENGINES = ["python", *(["rg"] if RG else [])]
OUTSIDE_TEXT = "NEEDLE outside the workspace"
ENV_TEXT = "NEEDLE=env-secret-value"


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two directory entries (Linux renameat2 RENAME_EXCHANGE)."""
    if _LIBC.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@pytest.fixture
def place(plain: Tree) -> Tree:
    """``d`` a real folder of plain files; ``d_swap`` a link to the outside folder; ``.env`` a secret."""
    (plain.root / "d").mkdir()
    for i in range(5):
        (plain.root / "d" / f"f{i}.txt").write_text(f"NEEDLE inside {i}\n")
    (plain.outside / "f0.txt").write_text(OUTSIDE_TEXT + "\n")
    (plain.outside / "f1.txt").write_text(OUTSIDE_TEXT + "\nNEEDLE 2\nNEEDLE 3\n")
    (plain.root / ".env").write_text(ENV_TEXT + "\n")
    os.symlink(plain.outside, plain.root / "d_swap")
    try:
        exchange(plain.root / "d", plain.root / "d_swap")
        exchange(plain.root / "d", plain.root / "d_swap")
    except OSError as err:  # pragma: no cover - filesystems without RENAME_EXCHANGE
        pytest.skip(f"renameat2(RENAME_EXCHANGE) unsupported here: {err}")
    return plain


def _engine(name: str) -> PythonEngine | RipgrepEngine:
    assert name == "python" or RG is not None
    return PythonEngine() if name == "python" else RipgrepEngine(RG or "rg")


def _search_with_swap(ws: Workspace, engine_name: str, output: str, swap: Callable[[], None]) -> list[FileHits]:
    """Run one engine over the walk of ``d``, calling ``swap`` after the walk handed over its files."""
    engine = _engine(engine_name)
    request = GrepRequest(
        workspace=ws,
        pattern=compile_pattern("NEEDLE", False, 1000),
        ignore_case=False,
        output=output,  # type: ignore[arg-type]
        context=1,
        limit=200,
        max_line_chars=500,
        deadline=time.monotonic() + 60,
        limits=DEFAULT_LIMITS,
    )
    skipped = Skipped()
    walked = walk(ws, ws.resolve("d"), walk_rules(None, False, DEFAULT_LIMITS), skipped, float("inf"))

    def then_swap(files: Iterator[SearchFile]) -> Iterator[SearchFile]:
        yield from files
        swap()  # the walk is over; the engine has not read yet

    with closing(walked):
        files = _text_files(walked, None, skipped, DEFAULT_LIMITS, read_all=engine.reads_whole_files)
        return engine.search(request, then_swap(files), Budget(200), skipped)


def _shown(hits: list[FileHits]) -> str:
    return "\n".join(f"{h.rel}:{h.count}:" + "|".join(h.matches.values()) + "|".join(h.context.values()) for h in hits)


@pytest.mark.parametrize("output", ["content", "files", "count"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_folder_swapped_for_a_link_after_the_walk_is_not_read_through(place: Tree, engine: str, output: str) -> None:
    hits = _search_with_swap(place.ws, engine, output, lambda: exchange(place.root / "d", place.root / "d_swap"))
    shown = _shown(hits)
    assert "outside" not in shown
    assert sorted(h.rel for h in hits) == [f"d/f{i}.txt" for i in range(5)]
    assert all(h.count == 1 for h in hits), shown  # f1.txt outside has 3 matching lines


def _replace_with_link(place: Tree, name: str, target: Path) -> None:
    os.unlink(place.root / "d" / name)
    os.symlink(target, place.root / "d" / name)


SWAPPED_FILES = {
    "a file outside": lambda place: place.outside / "f1.txt",
    "the workspace's .env": lambda place: place.root / ".env",
    "/etc/passwd": lambda _place: Path("/etc/passwd"),
    "a relative link to .env": lambda _place: Path("../.env"),
}


@pytest.mark.parametrize("target", sorted(SWAPPED_FILES))
@pytest.mark.parametrize("output", ["content", "files", "count"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(
    place: Tree, engine: str, output: str, target: str
) -> None:
    link_target = SWAPPED_FILES[target](place)
    hits = _search_with_swap(place.ws, engine, output, lambda: _replace_with_link(place, "f1.txt", link_target))
    shown = _shown(hits)
    assert "outside" not in shown and "env-secret" not in shown and "root:" not in shown
    assert {h.rel: h.count for h in hits}.get("d/f1.txt", 1) == 1  # the file the walk opened, or nothing


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_replaced_by_other_content_after_the_walk_is_searched_as_opened(place: Tree, engine: str) -> None:
    """Renaming another file over the walked one does not change what the open descriptor reads."""

    def swap() -> None:
        (place.root / "d" / "new").write_text("no match\n")
        os.replace(place.root / "d" / "new", place.root / "d" / "f2.txt")

    hits = _search_with_swap(place.ws, engine, "content", swap)
    assert [h.rel for h in hits] == [f"d/f{i}.txt" for i in range(5)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fifo_swapped_in_after_the_walk_does_not_hang_the_search(place: Tree, engine: str) -> None:
    def swap() -> None:
        os.unlink(place.root / "d" / "f3.txt")
        os.mkfifo(place.root / "d" / "f3.txt")

    hits = _search_with_swap(place.ws, engine, "content", swap)
    assert "d/f0.txt" in [h.rel for h in hits]


@pytest.mark.parametrize("output", ["content", "files", "count"])
@pytest.mark.parametrize("engine", ENGINES)
def test_searches_racing_a_swapping_thread_never_show_what_lies_outside(place: Tree, engine: str, output: str) -> None:
    stop = threading.Event()
    swaps = 0

    def racer() -> None:
        nonlocal swaps
        while not stop.is_set():
            exchange(place.root / "d", place.root / "d_swap")
            swaps += 1

    thread = threading.Thread(target=racer, daemon=True)
    thread.start()
    seen: list[str] = []
    try:
        for _ in range(40):
            try:
                text = grep(place.ws, "NEEDLE", ".", output=output, engine=engine)  # type: ignore[arg-type]
            except WorkspaceError:
                continue  # "changed while in use": refused, never followed
            seen.append(text)
    finally:
        stop.set()
        thread.join()
    assert swaps > 0
    for text in seen:
        assert "outside" not in text
        assert "d_swap/f1.txt:3" not in text and "d/f1.txt:3" not in text  # the outside file's count


def test_ripgrep_batches_stay_within_the_descriptor_limit() -> None:
    from runtime.workspace.search import engine_rg

    assert 16 <= engine_rg._MAX_BATCH_FILES <= 4096
