"""A bounded spool on local disk for audit batches that could not reach their store yet.

Each batch is one file ``<time_ns>-<pid>-<n>-<batch id>.json`` holding the batch id
and its rows, written to a temporary name, fsynced and renamed, so a crash leaves
either the whole batch or none of it. File names sort in the order the batches were
spooled (per process; across processes, by time). Several processes may share one
spool folder: :meth:`Spool.replaying` holds an exclusive ``flock`` while one of them
sends the folder's batches on, and the store skips a batch id it already has, so a
batch sent twice (a crash between the send and the unlink) is stored once.

The folder holds at most ``max_bytes``; a batch that does not fit is not written,
and :meth:`Spool.add` says so, for the caller to count and log: never lost silently.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_SUFFIX = ".json"


class Spool:
    """Batches waiting on disk in ``folder`` (created owner-only), at most ``max_bytes`` in all."""

    def __init__(self, folder: str | os.PathLike[str], max_bytes: int) -> None:
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self._counter = itertools.count(1)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _files(self) -> list[Path]:
        try:
            names = sorted(
                entry.name for entry in os.scandir(self.folder) if entry.name.endswith(_SUFFIX) and entry.is_file()
            )
        except FileNotFoundError:
            return []
        return [self.folder / name for name in names]

    def pending(self) -> int:
        """How many batches wait."""
        return len(self._files())

    def size(self) -> int:
        """Bytes waiting."""
        total = 0
        for path in self._files():
            try:
                total += path.stat().st_size
            except FileNotFoundError:
                continue
        return total

    def add(self, batch_id: str, rows: list[tuple[Any, ...]]) -> bool:
        """Write one batch durably; False when it would pass ``max_bytes`` (nothing written)."""
        data = json.dumps({"batch": batch_id, "rows": rows}, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
        if self.size() + len(data) > self.max_bytes:
            return False
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid():07d}-{next(self._counter):09d}-{batch_id}"
        temporary = self.folder / f".{name}.tmp"
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(temporary, self.folder / f"{name}{_SUFFIX}")
        _sync_dir(self.folder)
        return True

    @contextmanager
    def replaying(self) -> Iterator[Iterator[tuple[Path, str, list[tuple[Any, ...]]]] | None]:
        """The waiting batches, oldest first, as (file, batch id, rows), while this
        process alone replays them; None when another process is replaying now.
        Call :meth:`done` with each file once its batch is stored."""
        lock_path = self.folder / ".replay.lock"
        descriptor = os.open(lock_path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None
                return
            yield self._batches()
        finally:
            os.close(descriptor)  # closing drops the lock

    def _batches(self) -> Iterator[tuple[Path, str, list[tuple[Any, ...]]]]:
        for path in self._files():
            try:
                data = json.loads(path.read_bytes().decode("utf-8", "surrogatepass"))
                yield path, str(data["batch"]), [tuple(row) for row in data["rows"]]
            except FileNotFoundError:
                continue
            except (ValueError, KeyError, TypeError):
                # Not a batch of ours (a damaged file): set aside, never replayed or lost.
                path.rename(path.with_suffix(".damaged"))

    def done(self, path: Path) -> None:
        """Forget a batch that is now stored."""
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _sync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
