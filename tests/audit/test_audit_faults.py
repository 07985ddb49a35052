"""The audit store under faults: deleted, replaced or moved away mid-run, made immutable,
on a full disk. Records are never counted as written into a file nobody can open, a
broken store never takes the process down, and every failure is logged (rate-limited)
as well as counted."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from audit_helpers import record
from loguru import logger

from runtime.audit import AuditWriter, SqliteSink
from runtime.audit.sinks import AuditStoreError


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    seen: list[str] = []
    logger.enable("runtime")  # toolrt's records are off until an app turns them on
    handler = logger.add(lambda message: seen.append(str(message)), level="WARNING", format="{message}")
    yield seen
    logger.remove(handler)
    logger.disable("runtime")


def _rows(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT call_id FROM calls ORDER BY id")]


def _write(writer: AuditWriter, start: int, count: int) -> None:
    for index in range(start, start + count):
        writer.submit(record(index))
    assert writer.flush(30)


def _remove_database(path: Path) -> None:
    path.unlink()


def _rename_away(path: Path) -> None:
    path.rename(path.with_name("moved-away.sqlite3"))


def _replace_with_copy(path: Path) -> None:
    copy = path.with_name("copy.sqlite3")
    shutil.copyfile(path, copy)
    os.replace(copy, path)


def _remove_folder(path: Path) -> None:
    shutil.rmtree(path.parent)


def _rename_folder_away(path: Path) -> None:
    away = path.parent.with_name("audit-away")
    while away.exists():
        away = away.with_name(away.name + "-again")
    path.parent.rename(away)


@pytest.mark.parametrize(
    "fault", [_remove_database, _rename_away, _replace_with_copy, _remove_folder, _rename_folder_away]
)
@pytest.mark.parametrize("rounds", [1, 4])
def test_a_store_deleted_or_replaced_mid_run_is_made_again_with_a_warning(
    tmp_path: Path, warnings: list[str], fault: object, rounds: int
) -> None:
    path = tmp_path / "audit" / "audit.sqlite3"
    sink = SqliteSink(path)
    with AuditWriter(sink, flush_interval_s=0.01) as writer:
        _write(writer, 0, 5)
        for round_ in range(rounds):
            fault(path)  # type: ignore[operator]
            start = 100 * (round_ + 1)
            _write(writer, start, 7)
            assert _rows(path)[-7:] == [f"call-{i}" for i in range(start, start + 7)]
        assert writer.lost == 0 and writer.dropped == 0
    assert sink.recreated == rounds
    assert sum("deleted or replaced" in w for w in warnings) == rounds


def test_records_after_a_deletion_are_in_the_new_file_not_the_deleted_one(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    with AuditWriter(SqliteSink(path), flush_interval_s=0.01) as writer:
        _write(writer, 0, 3)
        path.unlink()
        _write(writer, 10, 500)
        assert writer.written == 503
    rows = _rows(path)
    assert len(rows) == 500 and rows[0] == "call-10"
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size >= 0


def _chattr(flag: str, *paths: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True)
    return done.returncode == 0


IMMUTABLE_CHILD = textwrap.dedent(
    """
    import subprocess, sys, time
    sys.path.insert(0, sys.argv[2])
    from loguru import logger
    logger.remove()
    warnings = []
    logger.add(lambda m: warnings.append(str(m)), level="WARNING", format="{message}")
    from audit_helpers import record
    from runtime.audit import AuditWriter, SqliteSink
    logger.enable("runtime")
    path = sys.argv[1]
    writer = AuditWriter(SqliteSink(path), flush_interval_s=0.01, retry_delay_s=0.0)
    for i in range(5):
        writer.submit(record(i))
    assert writer.flush(30)
    files = [path + s for s in ("", "-wal", "-shm")]
    subprocess.run(["chattr", sys.argv[3], *files], check=True)
    for i in range(5, 50):
        writer.submit(record(i))
        writer.flush(30)
    subprocess.run(["chattr", sys.argv[3].replace("+", "-"), *files], check=True)
    for i in range(50, 55):
        writer.submit(record(i))
    assert writer.flush(30)
    writer.close()
    print(writer.written, writer.lost, writer.failed_batches, len([w for w in warnings if "audit" in w]))
    """
)


@pytest.mark.parametrize("flag", ["+i", "+a"])
def test_an_immutable_database_never_kills_the_process_and_writes_resume_when_cleared(
    tmp_path: Path, flag: str
) -> None:
    probe = tmp_path / "probe"
    probe.write_text("x")
    if not _chattr(flag, probe):
        pytest.skip("chattr is not available here (needs root and a file system with inode flags)")
    _chattr(flag.replace("+", "-"), probe)
    path = tmp_path / "audit.sqlite3"
    helpers = Path(__file__).parent
    try:
        done = subprocess.run(
            [sys.executable, "-c", IMMUTABLE_CHILD, str(path), str(helpers), flag],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        _chattr(flag.replace("+", "-"), *(Path(f"{path}{s}") for s in ("", "-wal", "-shm")))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7 would be SIGBUS
    written, lost, failed, logged = map(int, done.stdout.split())
    assert written == 10 and lost == 45 and failed >= 45
    assert 1 <= logged <= 3  # logged, and rate-limited
    assert _rows(path) == [f"call-{i}" for i in (*range(5), *range(50, 55))]


def test_a_new_sink_on_an_immutable_store_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    SqliteSink(path).close()
    if not _chattr("+i", path):
        pytest.skip("chattr is not available here")
    try:
        with pytest.raises(AuditStoreError, match="immutable or append-only.*chattr -i"):
            SqliteSink(path)
    finally:
        _chattr("-i", path)


def test_failures_are_logged_at_most_once_per_interval_and_all_counted(tmp_path: Path, warnings: list[str]) -> None:
    class Broken:
        def write_batch(self, records: object) -> None:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    writer = AuditWriter(Broken(), flush_interval_s=0.01, retry_delay_s=0.0)  # type: ignore[arg-type]
    for index in range(40):
        writer.submit(record(index))
        writer.flush(30)
    writer.close()
    assert writer.lost == 40 and writer.failed_batches == 80
    audit_warnings = [w for w in warnings if "toolrt audit" in w]
    assert 1 <= len(audit_warnings) <= 2
    assert "No space left on device" in audit_warnings[0]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    try:
        with open(filler, "wb") as handle:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
    except OSError:
        pass  # the disk is full: that was the point
    return filler


def test_a_full_disk_loses_records_loudly_and_writes_resume_when_space_returns(
    small_disk: Path, warnings: list[str]
) -> None:
    path = small_disk / "audit.sqlite3"
    with AuditWriter(SqliteSink(path), flush_interval_s=0.01, retry_delay_s=0.0) as writer:
        _write(writer, 0, 5)
        filler = _fill(small_disk)
        for index in range(5, 205):
            writer.submit(record(index, args={"pad": "x" * 2000}))
        writer.flush(60)
        assert writer.lost > 0 and writer.failed_batches > 0
        assert any("toolrt audit" in w for w in warnings)
        filler.unlink()
        _write(writer, 1000, 5)
    rows = _rows(path)
    assert rows[:5] == [f"call-{i}" for i in range(5)] and rows[-5:] == [f"call-{i}" for i in range(1000, 1005)]
    assert writer.written == len(rows)


def test_batches_of_every_size_are_written_whole_with_a_few_statement_shapes(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    sink = SqliteSink(path)
    expected: list[str] = []
    for size in range(1, 300, 7):
        batch = [record(size * 1000 + i) for i in range(size)]
        sink.write_batch(batch)
        expected += [r.call_id or "" for r in batch]
    sink.close()
    assert _rows(path) == expected


def test_the_child_process_writer_starts_with_the_runtime_not_with_the_first_batch(tmp_path: Path) -> None:
    from runtime import Runtime
    from runtime.audit.remote import ProcessSink
    from runtime.settings import Settings

    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Include\nmetadata: {name: packs}\nspec: {packs: [builtin-tools]}\n"
    )
    runtime = Runtime(
        [config],
        workspace_root=tmp_path,
        settings=Settings(audit_writer="process", audit_store=tmp_path / "audit.sqlite3"),
    )
    try:
        assert runtime.audit is not None
        sink = runtime.audit.sink
        assert isinstance(sink, ProcessSink)
        assert sink.child_pid is not None  # running before any call was made
    finally:
        runtime.close_sync()
