"""The audit writer's writes that keep the interpreter lock: every byte lands, in order, on a
real file and a real pipe; a slow append puts the appender back on ``os.write``; a pipe that
nobody reads any more is told apart from a full one."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.audit import gilio


@pytest.fixture
def appended(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    path = tmp_path / "frames"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    yield fd, path
    os.close(fd)


@pytest.mark.parametrize("size", [1, 4096, 65_537, 3_000_000])
def test_an_append_writes_every_byte_in_order(appended: tuple[int, Path], size: int) -> None:
    fd, path = appended
    appender = gilio.Appender(fd)
    chunks = [bytes([n % 251]) * size for n in range(3)]
    for chunk in chunks:
        appender.append(chunk)
    assert path.read_bytes() == b"".join(chunks)


def test_an_empty_append_writes_nothing(appended: tuple[int, Path]) -> None:
    fd, path = appended
    gilio.Appender(fd).append(b"")
    assert path.read_bytes() == b""


def test_appends_keep_the_lock_where_the_c_library_is_reachable(appended: tuple[int, Path]) -> None:
    fd, _path = appended
    assert gilio._write is not None  # a POSIX system: the test machines are
    assert gilio.Appender(fd).holds_lock


def test_a_slow_append_puts_the_appender_on_os_write_for_the_back_off(appended: tuple[int, Path]) -> None:
    fd, path = appended
    appender = gilio.Appender(fd, slow_s=-1.0, back_off_s=3600.0)  # every append counts as slow
    appender.append(b"first ")
    assert appender.slow_appends == 1 and not appender.holds_lock
    appender.append(b"second")  # by os.write now: it still lands
    assert appender.slow_appends == 1
    assert path.read_bytes() == b"first second"


def test_the_appender_keeps_the_lock_again_after_the_back_off(appended: tuple[int, Path]) -> None:
    fd, path = appended
    appender = gilio.Appender(fd, slow_s=-1.0, back_off_s=0.0)
    appender.append(b"a")
    assert appender.holds_lock  # a back-off of nothing is over at once
    appender.append(b"b")
    assert appender.slow_appends == 2 and path.read_bytes() == b"ab"


def test_without_the_c_library_every_append_is_os_write(
    appended: tuple[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gilio, "_write", None)
    fd, path = appended
    appender = gilio.Appender(fd)
    assert not appender.holds_lock
    appender.append(b"x" * 100_000)
    assert path.read_bytes() == b"x" * 100_000 and appender.slow_appends == 0


def test_an_append_that_fails_raises_what_os_write_raises(tmp_path: Path) -> None:
    path = tmp_path / "read-only"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as raised:
            gilio.Appender(fd).append(b"frame")
        assert raised.value.errno == errno.EBADF
    finally:
        os.close(fd)


def test_an_append_to_a_closed_descriptor_raises(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "gone", os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    with pytest.raises(OSError):
        gilio.Appender(fd).append(b"frame")


def test_appends_from_two_threads_each_land_whole(appended: tuple[int, Path]) -> None:
    fd, path = appended
    appender = gilio.Appender(fd)
    frames = {name: name.encode() * 1000 for name in ("a", "b")}

    def append_many(name: str) -> None:
        for _ in range(200):
            appender.append(frames[name])

    threads = [threading.Thread(target=append_many, args=(name,)) for name in frames]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    data = path.read_bytes()
    assert len(data) == 400 * 1000
    assert all(data[at : at + 1000] in frames.values() for at in range(0, len(data), 1000))


def _pipe() -> tuple[int, int]:
    read, write = os.pipe()
    os.set_blocking(write, False)
    return read, write


def test_a_poke_puts_one_byte_down_the_pipe() -> None:
    read, write = _pipe()
    try:
        assert gilio.poke(write)
        assert os.read(read, 10) == b"\x01"
    finally:
        os.close(read)
        os.close(write)


def test_a_poke_of_a_full_pipe_is_taken_as_delivered() -> None:
    read, write = _pipe()
    try:
        for chunk in (b"\0" * 65536, b"\0"):  # fill it, then to the last byte
            while True:
                try:
                    os.write(write, chunk)
                except BlockingIOError:
                    break
        assert gilio.poke(write)
    finally:
        os.close(read)
        os.close(write)


def test_a_poke_of_a_pipe_nobody_reads_says_so() -> None:
    read, write = _pipe()
    os.close(read)
    try:
        assert not gilio.poke(write)
    finally:
        os.close(write)


def test_a_poke_without_the_c_library_works_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gilio, "_write", None)
    read, write = _pipe()
    try:
        assert gilio.poke(write)
        assert os.read(read, 10) == b"\x01"
        os.close(read)
        read = -1
        assert not gilio.poke(write)
    finally:
        if read >= 0:
            os.close(read)
        os.close(write)


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_an_append_of_another_bytes_like_value_lands(appended: tuple[int, Path], kind: Any) -> None:
    fd, path = appended
    gilio.Appender(fd).append(kind(b"frame"))
    assert path.read_bytes() == b"frame"


def test_the_back_off_doubles_after_each_slow_append_up_to_its_bound(appended: tuple[int, Path]) -> None:
    fd, path = appended
    appender = gilio.Appender(fd, slow_s=-1.0, back_off_s=0.0, max_back_off_s=0.0)
    for _ in range(3):
        appender.append(b"x")
    assert appender.back_off_s == 0.0 and appender.slow_appends == 3
    appender = gilio.Appender(fd, slow_s=-1.0, back_off_s=1.0, max_back_off_s=3.0)
    appender.append(b"y")
    assert appender.back_off_s == 2.0 and not appender.holds_lock
    appender._held_from = 0.0  # (the back-off is over)
    appender.append(b"z")
    assert appender.back_off_s == 3.0
    assert path.read_bytes() == b"xxxyz"


def test_an_appender_told_not_to_hold_the_lock_never_does(appended: tuple[int, Path]) -> None:
    fd, path = appended
    appender = gilio.Appender(fd, hold=False)
    assert not appender.holds_lock
    appender.append(b"frame")
    assert path.read_bytes() == b"frame" and appender.slow_appends == 0


def test_a_folder_of_a_local_disk_is_local(tmp_path: Path) -> None:
    assert gilio.on_local_disk(tmp_path)
    assert gilio.on_local_disk(tmp_path / "not" / "made" / "yet")  # where it would be made


@pytest.mark.parametrize("path", ["/proc", "/proc/self", "/sys"])
def test_a_folder_of_a_filesystem_not_known_to_be_local_is_not(path: str) -> None:
    assert not gilio.on_local_disk(path)


def test_without_a_mount_table_nothing_counts_as_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = open

    def no_mountinfo(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == "/proc/self/mountinfo":
            raise FileNotFoundError(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_mountinfo)
    assert not gilio.on_local_disk(tmp_path)


def test_a_process_sink_on_a_local_disk_appends_holding_the_lock(tmp_path: Path) -> None:
    from runtime.audit.remote import ProcessSink

    sink = ProcessSink("sqlite", tmp_path / "audit.sqlite3")
    sink.start()
    try:
        assert sink._appender is not None and sink._appender.holds_lock
    finally:
        sink.close()
