"""atomic_write and the sweep of temporary files, on real files."""

from __future__ import annotations

import os
import resource
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.workspace import TEMP_PREFIX, atomic_write, sweep_stale_temp_files


@pytest.fixture
def dir_fd(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def _temps(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.startswith(TEMP_PREFIX)]


def test_atomic_write_creates_and_replaces_without_leaving_temp_files(tmp_path: Path, dir_fd: int) -> None:
    atomic_write(dir_fd, "f.txt", b"first\n", mode=None)
    inode = (tmp_path / "f.txt").stat().st_ino
    atomic_write(dir_fd, "f.txt", b"second\n", mode=None)
    assert (tmp_path / "f.txt").read_bytes() == b"second\n"
    assert (tmp_path / "f.txt").stat().st_ino != inode  # a new file was renamed into place
    assert _temps(tmp_path) == []


def test_a_new_file_gets_the_umask_default_and_an_existing_file_keeps_its_mode(tmp_path: Path, dir_fd: int) -> None:
    old_umask = os.umask(0o027)
    try:
        atomic_write(dir_fd, "new.txt", b"x", mode=None)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640
    (tmp_path / "tool.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(tmp_path / "tool.sh", 0o750)
    atomic_write(dir_fd, "tool.sh", b"#!/bin/sh\necho hi\n", mode=None)
    assert stat.S_IMODE((tmp_path / "tool.sh").stat().st_mode) == 0o750
    atomic_write(dir_fd, "tool.sh", b"#!/bin/sh\n", mode=0o600)
    assert stat.S_IMODE((tmp_path / "tool.sh").stat().st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_an_existing_files_owner_is_kept_when_allowed(tmp_path: Path, dir_fd: int) -> None:
    (tmp_path / "owned.txt").write_bytes(b"old")
    os.chown(tmp_path / "owned.txt", 4321, 4321)
    atomic_write(dir_fd, "owned.txt", b"new", mode=None)
    st = (tmp_path / "owned.txt").stat()
    assert (st.st_uid, st.st_gid) == (4321, 4321)


def test_a_failure_in_the_middle_of_writing_removes_the_temp_file_and_keeps_the_old_content(
    tmp_path: Path, dir_fd: int
) -> None:
    (tmp_path / "f.txt").write_bytes(b"old content\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, hard))  # writes past 256 KiB fail with EFBIG
    try:
        with pytest.raises(OSError):
            atomic_write(dir_fd, "f.txt", b"y" * (1024 * 1024), mode=None)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
    assert (tmp_path / "f.txt").read_bytes() == b"old content\n"
    assert _temps(tmp_path) == []


def test_a_directory_at_the_target_name_is_refused_before_any_temp_file_exists(tmp_path: Path, dir_fd: int) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        atomic_write(dir_fd, "d", b"x", mode=None)
    with pytest.raises(ValueError):
        atomic_write(dir_fd, "a/b", b"x", mode=None)
    assert _temps(tmp_path) == []


def test_hard_links_keep_the_old_content_because_a_new_inode_is_written(tmp_path: Path, dir_fd: int) -> None:
    (tmp_path / "f.txt").write_bytes(b"old")
    os.link(tmp_path / "f.txt", tmp_path / "hard.txt")
    atomic_write(dir_fd, "f.txt", b"new", mode=None)
    assert (tmp_path / "hard.txt").read_bytes() == b"old"


def test_sweep_removes_only_old_regular_files_with_the_temp_prefix(tmp_path: Path, dir_fd: int) -> None:
    old = time.time() - 3600
    for name in (f"{TEMP_PREFIX}1-aaaa", f"{TEMP_PREFIX}2-bbbb", "keep.txt", ".tmp-other"):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (old, old))
    (tmp_path / f"{TEMP_PREFIX}3-fresh").write_bytes(b"writer still busy")
    (tmp_path / f"{TEMP_PREFIX}dir").mkdir()
    os.utime(tmp_path / f"{TEMP_PREFIX}dir", (old, old))
    assert sweep_stale_temp_files(dir_fd, older_than_s=600) == 2
    assert sorted(os.listdir(tmp_path)) == sorted(
        [".tmp-other", f"{TEMP_PREFIX}3-fresh", f"{TEMP_PREFIX}dir", "keep.txt"]
    )
    assert sweep_stale_temp_files(dir_fd, older_than_s=0) == 1  # now the fresh one too, never the directory
