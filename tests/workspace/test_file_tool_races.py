"""The file tools through a real Runtime against hostile targets: special files, /proc
paths, hard links and a thread swapping a folder for a link to outside while calls run.

None of these got through when written; they pin the guarantees of the README's
"Workspace tools" section at the Runtime's level (the example's tools and policies).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.records import Call, Session, Status, ToolResult
from runtime.settings import Settings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding-agent"
_LIBC = ctypes.CDLL(None, use_errno=True)
OUTSIDE = "OUTSIDE-CONTENT-7f3a"


def exchange(a: Path, b: Path) -> None:
    if _LIBC.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Place:
    def __init__(self, base: Path) -> None:
        self.config = base / "config"
        shutil.copytree(EXAMPLE, self.config, ignore=shutil.ignore_patterns("workspace", "app.py"))
        self.ws = base / "ws"
        shutil.copytree(EXAMPLE / "workspace", self.ws)
        self.outside = base / "outside"
        self.outside.mkdir()
        (self.outside / "f.txt").write_text(OUTSIDE + "\n")
        (self.ws / "d").mkdir()
        (self.ws / "d" / "f.txt").write_text("inside\n")
        os.symlink(self.outside, self.ws / "d_swap")
        self.runtime = Runtime(
            [self.config],
            settings=Settings(state_dir=base / "state", workspace_root=self.ws, hot_reload=False),
            workspace_root=self.ws,
        )

    def call(self, tool: str, args: dict[str, object], mode: str = "accept_edits") -> ToolResult:
        (result,) = self.runtime.run_turn_sync([Call("c1", tool, args)], Session(id="s", mode=mode))
        return result


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    made = Place(tmp_path)
    try:
        yield made
    finally:
        made.runtime.close_sync()


READERS = [
    ("file_read", lambda p: {"path": p}),
    ("grep", lambda p: {"pattern": "OUTSIDE|inside|KEY", "path": p}),
    ("glob", lambda p: {"pattern": "**", "path": p}),
    ("list_dir", lambda p: {"path": p}),
]

PROC_PATHS = [
    "/proc/self/root/etc/passwd",
    "/proc/self/cwd/.env",
    "/proc/self/environ",
    "/proc/1/root/etc/passwd",
    "/proc/self/fd/0",
    "/dev/stdin",
    "/dev/zero",
    "/proc/self/root",
    "../../../../proc/self/environ",
]


@pytest.mark.parametrize("path", PROC_PATHS)
@pytest.mark.parametrize(("tool", "args"), READERS, ids=[r[0] for r in READERS])
def test_proc_and_device_paths_are_refused(place: Place, tool: str, args: object, path: str) -> None:
    result = place.call(tool, args(path))  # type: ignore[operator]
    assert result.is_error, result.content
    assert "root:" not in result.content and "PATH=" not in result.content


@pytest.mark.parametrize("path", PROC_PATHS[:5])
def test_proc_paths_cannot_be_written_or_deleted(place: Place, path: str) -> None:
    assert place.call("file_edit", {"path": path, "mode": "replace", "content": "x"}).is_error
    assert place.call("file_delete", {"path": path}).is_error


def test_a_link_into_proc_is_not_followed(place: Place) -> None:
    os.symlink("/proc/self/root/etc/passwd", place.ws / "pw")
    os.symlink("/proc/self/environ", place.ws / "env_link")
    for name in ("pw", "env_link"):
        for tool, args in READERS:
            result = place.call(tool, args(name))
            assert "root:" not in result.content and "PATH=" not in result.content, (tool, name)


@pytest.mark.parametrize(("tool", "args"), READERS, ids=[r[0] for r in READERS])
def test_a_fifo_does_not_hang_a_reader(place: Place, tool: str, args: object) -> None:
    os.mkfifo(place.ws / "d" / "pipe")
    result = place.call(tool, args("d/pipe" if tool == "file_read" else "d"))  # type: ignore[operator]
    assert result.status is not Status.timeout, result.content


def test_a_fifo_is_not_written_or_deleted(place: Place) -> None:
    os.mkfifo(place.ws / "d" / "pipe")
    edit = place.call("file_edit", {"path": "d/pipe", "mode": "append", "content": "x"})
    assert edit.is_error and edit.status is not Status.timeout
    assert place.call("file_delete", {"path": "d/pipe"}).is_error


def test_a_hard_link_to_a_file_outside_is_not_modified_by_an_edit(place: Place) -> None:
    try:
        os.link(place.outside / "f.txt", place.ws / "d" / "hard.txt")
    except OSError as err:  # pragma: no cover - another file system
        pytest.skip(f"no hard link across these folders: {err}")
    result = place.call("file_edit", {"path": "d/hard.txt", "mode": "append", "content": "more\n"})
    assert result.status is Status.ok, result.content
    assert (place.outside / "f.txt").read_text() == OUTSIDE + "\n"  # the shared inode is left alone


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        *READERS,
        ("file_edit", lambda p: {"path": p + "/f.txt", "mode": "append", "content": "x\n"}),
        ("file_delete", lambda p: {"path": p + "/f.txt"}),
    ],
    ids=["file_read", "grep", "glob", "list_dir", "file_edit", "file_delete"],
)
def test_calls_racing_a_folder_swap_never_reach_outside(place: Place, tool: str, args: object) -> None:
    stop = threading.Event()
    swaps = 0

    def racer() -> None:
        nonlocal swaps
        while not stop.is_set():
            exchange(place.ws / "d", place.ws / "d_swap")
            swaps += 1

    thread = threading.Thread(target=racer, daemon=True)
    thread.start()
    results = []
    try:
        for _ in range(15):
            path = "d/f.txt" if tool == "file_read" else "d"
            results.append(place.call(tool, args(path)))  # type: ignore[operator]
    finally:
        stop.set()
        thread.join()
    assert swaps > 0
    assert all(OUTSIDE not in r.content for r in results)
    assert (place.outside / "f.txt").read_text() == OUTSIDE + "\n"
    assert sorted(os.listdir(place.outside)) == ["f.txt"]
