"""Check-then-use races: a directory swapped for a symlink to outside after the path was checked.

The swap uses renameat2(RENAME_EXCHANGE), so the directory entry is at every instant
either the real directory or the link: the writers race the swap itself, not a
moment where the name is missing.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from ws_helpers import Tree

from runtime.workspace import FileReader, WorkspaceError, atomic_write

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_LIBC = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two directory entries (Linux renameat2)."""
    if _LIBC.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@pytest.fixture
def swappable(plain: Tree) -> Tree:
    """``d`` is a real directory; ``d_swap`` a symlink to the outside directory holding a secret."""
    (plain.root / "d").mkdir()
    (plain.root / "d" / "secret.txt").write_text("inside\n")
    (plain.root / "d" / "f.txt").write_text("start\n")
    (plain.outside / "secret.txt").write_text("TOP SECRET\n")
    os.symlink(plain.outside, plain.root / "d_swap")
    try:
        exchange(plain.root / "d", plain.root / "d_swap")
        exchange(plain.root / "d", plain.root / "d_swap")
    except OSError as err:  # pragma: no cover - filesystems without RENAME_EXCHANGE
        pytest.skip(f"renameat2(RENAME_EXCHANGE) unsupported here: {err}")
    return plain


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(swappable: Tree) -> None:
    tree = swappable
    for_write = tree.ws.resolve("d/f.txt", for_write=True)
    for_read = tree.ws.resolve("d/secret.txt")
    exchange(tree.root / "d", tree.root / "d_swap")  # now d -> outside
    # Opening the checked paths by name would now land outside: the hazard is real...
    assert Path(os.path.realpath(for_write.absolute)).is_relative_to(tree.outside)
    assert Path(for_read.absolute).read_text() == "TOP SECRET\n"
    # ...but the descriptor walk refuses the swapped-in link, for writing and reading.
    with pytest.raises(WorkspaceError, match="no longer a directory inside the workspace"):
        tree.ws.open_parent_dir(for_write)
    with pytest.raises(WorkspaceError, match="no longer a directory inside the workspace"):
        tree.ws.open_for_read(for_read)
    assert sorted(os.listdir(tree.outside)) == ["secret.txt"]


def test_a_swap_after_the_directory_was_opened_still_writes_inside(swappable: Tree) -> None:
    tree = swappable
    resolved = tree.ws.resolve("d/f.txt", for_write=True)
    dir_fd = tree.ws.open_parent_dir(resolved)
    try:
        exchange(tree.root / "d", tree.root / "d_swap")
        atomic_write(dir_fd, resolved.name, b"written\n", mode=None)
    finally:
        os.close(dir_fd)
    assert sorted(os.listdir(tree.outside)) == ["secret.txt"]
    assert (tree.root / "d_swap" / "f.txt").read_text() == "written\n"  # the real directory, renamed


def test_a_file_swapped_for_a_symlink_is_replaced_not_followed(swappable: Tree) -> None:
    tree = swappable
    target = tree.root / "d" / "f.txt"
    resolved = tree.ws.resolve("d/f.txt", for_write=True)
    target.unlink()
    os.symlink(tree.outside / "secret.txt", target)
    with pytest.raises(WorkspaceError, match="now a symbolic link"):
        tree.ws.open_for_read(resolved)
    dir_fd = tree.ws.open_parent_dir(resolved)
    try:
        atomic_write(dir_fd, resolved.name, b"replaced\n", mode=None)
    finally:
        os.close(dir_fd)
    assert (tree.outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert not target.is_symlink() and target.read_text() == "replaced\n"


def test_writes_and_reads_racing_a_swapping_thread_never_reach_outside(swappable: Tree) -> None:
    tree = swappable
    reader = FileReader(tree.ws, cache=None)
    stop = threading.Event()
    swaps = Counter[str]()
    outcomes = Counter[str]()
    leaked: list[str] = []

    def swapper() -> None:
        while not stop.is_set():
            exchange(tree.root / "d", tree.root / "d_swap")
            swaps["done"] += 1

    def both_seen() -> bool:
        return outcomes["written"] > 0 and outcomes["refused by the check"] + outcomes["caught after the check"] > 0

    # At least 300 edits each, and on until a write and a refusal have both been seen:
    # how often the swap lands between check and use depends on the machine's load.
    deadline = time.monotonic() + 120

    def writer(worker: int) -> None:
        k = 0
        while k < 300 or (not both_seen() and time.monotonic() < deadline):
            k += 1
            try:
                tree.editor.edit("d/f.txt", "replace", content=f"w{worker}-{k}\n")
                outcomes["written"] += 1
            except WorkspaceError as err:
                outcomes["caught after the check" if "while in use" in str(err) else "refused by the check"] += 1

    def read_loop() -> None:
        for _ in range(300):
            try:
                text = reader.read("d/secret.txt").text
            except WorkspaceError:
                outcomes["read refused"] += 1
                continue
            outcomes["read"] += 1
            if "TOP SECRET" in text:
                leaked.append(text)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads as finely as the GIL allows
    try:
        swapping = threading.Thread(target=swapper)
        workers = [threading.Thread(target=writer, args=(i,)) for i in range(2)] + [threading.Thread(target=read_loop)]
        swapping.start()
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        stop.set()
        swapping.join()
    finally:
        sys.setswitchinterval(old_interval)

    if (tree.root / "d").is_symlink():
        exchange(tree.root / "d", tree.root / "d_swap")
    assert sorted(os.listdir(tree.outside)) == ["secret.txt"], "a write landed outside the workspace"
    assert (tree.outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert leaked == [], "a read returned a file from outside the workspace"
    assert swaps["done"] > 100
    assert outcomes["written"] > 0 and outcomes["refused by the check"] + outcomes["caught after the check"] > 0, (
        outcomes
    )
    assert (tree.root / "d" / "f.txt").read_text().startswith("w")
    assert not [name for name in os.listdir(tree.root / "d") if name.startswith(".toolrt-tmp-")]
