"""The JSON-lines audit sink: one chained JSON object per line, shared safely by processes.

Each batch is written under an exclusive ``flock`` on the log: the writer reads the
chain's head (the ``.head`` file beside the log, see :mod:`runtime.audit.chain`),
links every record of the batch to the one before, appends the lines with one
``write()`` on an ``O_APPEND`` descriptor, fsyncs, and only then rewrites the head.
So processes appending together neither interleave lines nor fork the chain, and
the head is never ahead of what is on disk (with ``fsync``).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runtime.audit.chain import GENESIS, Head, chained_line, head_line, head_path, link_hash, parse_head, parse_line
from runtime.audit.record import AuditRecord, row_json
from runtime.audit.rows import rows_of

_BLOCK = 64 * 1024  # read backwards in blocks this size when looking for the last link
_LONGEST_LINE = 16 * 1024 * 1024  # a longer "line" is no record of ours (none comes near)


class JsonlSink:
    """Audit records as chained JSON lines appended to a file, shared safely by processes.

    Each batch is one ``write()`` of whole lines on an ``O_APPEND`` descriptor under
    an exclusive ``flock``, followed by ``fsync``. The descriptor is opened on first
    use, again after a fork and again when the path names another file (rotated or
    replaced). ``fsync=False`` leaves flushing to the OS (faster; a power loss may
    then lose more than the last batch, and leave the head out of step with the log).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.head_path = head_path(self.path)
        self.fsync = fsync
        self._fd: int | None = None
        self._pid = 0
        self._guard = threading.Lock()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        """Append one line per record, linked into the chain, with a single write; then fsync."""
        if records:
            self.write_rows(rows_of(records))

    def write_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Append rows made by :func:`~runtime.audit.rows.rows_of` (what :meth:`write_batch`
        does after encoding its records): one line each, linked into the chain; then fsync."""
        if not rows:
            return
        # "replace": a lone surrogate becomes "?" so that every line stays valid UTF-8.
        # The bodies are encoded before the lock is taken; only the hashing is under it.
        bodies = [row_json(row).encode("utf-8", "replace") for row in rows]
        with self._guard:
            fd = self._locked_descriptor()
            try:
                self._append(fd, bodies)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _append(self, fd: int, bodies: list[bytes]) -> None:
        size = os.fstat(fd).st_size
        # A line cut short by a crash (or anything else without a newline at the end)
        # is closed first, so that the new records start lines of their own.
        parts = [] if size == 0 or os.pread(fd, 1, size - 1) == b"\n" else [b"\n"]
        head = self._read_head()
        if head is None:
            head = _rebuilt_head(fd, size)
        seq, prev = head.seq, head.hash
        for body in bodies:
            seq += 1
            digest = link_hash(prev, seq, body)
            parts.append(chained_line(body, seq, prev, digest))
            prev = digest
        view = memoryview(b"".join(parts))
        while view:
            # A regular file takes the whole buffer in one write unless the disk
            # is full or a signal interrupts; only then is the batch split.
            written = os.write(fd, view)
            view = view[written:]
        if self.fsync:
            os.fsync(fd)
        self._write_head(Head(seq, prev, head.before))

    def _read_head(self) -> Head | None:
        try:
            with self.head_path.open("rb") as handle:
                return parse_head(handle.read(4096))
        except FileNotFoundError:
            return None

    def _write_head(self, head: Head) -> None:
        # Opened for every batch rather than kept: a head file that was replaced is
        # written, not the one that was there before.
        fd = os.open(self.head_path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            data = head_line(head)
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _locked_descriptor(self) -> int:
        """The log's descriptor, holding the exclusive lock, for the file the path names now."""
        while True:
            fd = self._descriptor()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            held = os.fstat(fd)
            if current is not None and (current.st_ino, current.st_dev) == (held.st_ino, held.st_dev):
                return fd
            # The path names another file now (or none): lock and append to that one.
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._fd = None

    def _descriptor(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            self._pid = os.getpid()
        return self._fd

    def close(self) -> None:
        """Close the file (the next write reopens it)."""
        with self._guard:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"


def _rebuilt_head(fd: int, size: int) -> Head:
    """The head for a log without a head file: the chain starts here, after every line
    already in the file, or, when the file holds linked lines (its head file was
    removed), goes on from the last of them with the head marked as rebuilt."""
    end, carry, newlines = size, b"", 0
    while end > 0:
        start = max(0, end - _BLOCK)
        block = os.pread(fd, end - start, start)
        newlines += block.count(b"\n")
        lines = (block + carry).split(b"\n")
        carry = lines.pop(0) if start > 0 else b""
        for line in reversed(lines):
            link = parse_line(line)
            if link is not None:
                return Head(link.seq, link.hash, None)
        if len(carry) > _LONGEST_LINE:
            carry = b""
        end = start
    ends_clean = size == 0 or os.pread(fd, 1, size - 1) == b"\n"
    return Head(0, GENESIS, newlines + (0 if ends_clean else 1))
