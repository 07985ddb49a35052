"""An audit sink that does its work in a child process, on another core.

Redacting, encoding and storing a record costs about as much CPU as running the
call it describes, and a writer *thread* spends that CPU under the same interpreter
lock as the calls. :class:`ProcessSink` keeps only the cheap part in this process:
each batch is pickled (call items as plain tuples, about a microsecond per record)
and appended to a hand-off file beside the store (:mod:`runtime.audit.handoff`); a
child process (``python -m runtime.audit.child``) reads it, redacts the arguments,
encodes them and stores the batch with the real sink (:class:`SqliteSink` or :class:`JsonlSink`).

The child is started with the sink (:meth:`ProcessSink.start`; the Runtime does it
when it is built), in its own session (a Ctrl-C meant for the app does not cut it
short). A byte down its stdin wakes it for each batch; when stdin closes (on
:meth:`close`, or when this process dies) it stores the rest of the file and exits.
What was appended is never lost with this process: it is in the file, which the
child (or, if the child died too, the next one) finishes. If the child dies, the next
batch starts a new one. Redaction profiles travel as pattern sources, once per
redactor and file.

Protocol: frames of a 4-byte big-endian length and a pickle, in the file; one line
``ack <seq> <stored> <error>`` back on the child's stdout per batch and per sync.
"""

from __future__ import annotations

import operator
import os
import pickle
import select
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from runtime.audit import gilio, handoff
from runtime.audit.child import _columns as columns_to_items
from runtime.audit.jsonl import JsonlSink
from runtime.audit.prepared import Prepared
from runtime.audit.record import AuditRecord, Encoded
from runtime.audit.rows import rows_of
from runtime.audit.sinks import SqliteSink
from runtime.execution.own_python import own_module_argv, own_module_env

_MAX_RESTARTS = 3  # within _RESTART_WINDOW_S; then batches fail (and are counted) instead
_RESTART_WINDOW_S = 60.0
# A batch reads the child's acks, and asks the kernel whether the child still runs, at most
# this often (seconds): each is a system call that lets go of the interpreter lock (see
# runtime.audit.gilio). A child that died is noticed at once anyway: its wake-up pipe breaks.
_LOOK_EVERY_S = 0.25
#: The writer thread's batch size when a child stores the records: a batch costs this
#: process one wake-up of the writer thread, whatever its size.
BATCH_SIZE = 1024
# Redactors a process sink remembers (their keys and profiles); one snapshot has one.
_KEPT_REDACTORS = 64


def redactor_specs(
    redactor: Any,
) -> tuple[
    tuple[str, tuple[tuple[str, str, str, str | None, bool, bool, tuple[str, ...], bool], ...], str | None], ...
]:
    """A Redactor's profiles as plain data: (profile, ((name, regex, replacement,
    validator, case_insensitive, keep, shields, value_only), ...), secret_keys)."""
    specs = []
    for profile in redactor.profiles:
        patterns = []
        for pattern in profile.patterns:
            source = pattern.regex.pattern
            patterns.append(
                (
                    pattern.name,
                    source.decode() if isinstance(source, bytes) else source,
                    pattern.replacement,
                    pattern.validator.value if pattern.validator is not None else None,
                    not pattern.regex.options.case_sensitive,
                    pattern.keep,
                    tuple(sorted(pattern.shields)),
                    pattern.value_only,
                )
            )
        specs.append((profile.name, tuple(patterns), profile.secret_keys))
    return tuple(specs)


class ProcessSink:
    """A :class:`~runtime.audit.sinks.Sink` that stores through a child process.

    ``kind`` is ``"sqlite"`` or ``"jsonl"``. The store is opened here once (so a
    path that cannot be written fails now, not in the child), unless ``prepared``: the
    caller's own sink of that store made it and has just written to it. Batches go to a
    hand-off file beside the store (:mod:`runtime.audit.handoff`), which the child reads."""

    def __init__(
        self,
        kind: str,
        path: str | os.PathLike[str],
        *,
        ack_timeout_s: float = 10.0,
        prepared: bool = False,
        untrusted: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        if kind not in ("sqlite", "jsonl"):
            raise ValueError(f"unknown audit sink kind {kind!r}")
        self.kind = kind
        self.path = Path(path)
        if not prepared:
            (SqliteSink(self.path) if kind == "sqlite" else JsonlSink(self.path)).close()
        self.ack_timeout_s = ack_timeout_s
        self.untrusted = tuple(untrusted)  # folders an agent may write to: kept off the child's import path
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        # id(redactor) -> (redactor, key, the frame sending its profiles), the last
        # _KEPT_REDACTORS seen; a kept redactor keeps its id unique. Keys are never reused:
        # a redactor seen again after it was let go gets a new key, and its profiles are
        # sent again. A prepared batch carries the redactors and frames it names.
        self._redactors: dict[int, tuple[Any, int, bytes]] = {}
        self._last_key = 0
        self._sending: set[int] = set()  # keys whose profiles the frames being made send
        self._keys_lock = threading.Lock()  # (the calling thread's prepare() makes keys too)
        self._sent: set[int] = set()  # keys whose profiles the current hand-off file holds
        self._fd: int | None = None  # the hand-off file, appended to (and held)
        self._appender: gilio.Appender | None = None
        self._local_disk: bool | None = None  # whether the hand-off folder is on a local disk (gilio)
        self._looked_at = 0.0  # monotonic time of the last look at the child's acks and exit
        self.handoff_path: Path | None = None
        self._size = 0
        self._seq = 0
        self._acked = 0
        self._ack_buffer = b""
        self._restarts: list[float] = []
        self.stored = 0  # records the child reported stored
        self.child_errors = 0
        self.last_error: str | None = None

    def start(self) -> None:
        """Start the child now rather than with the first batch: records handed over
        while it starts (a new interpreter and its imports: seconds on a busy machine)
        wait in the hand-off file, where a crash of the app does not lose them (the
        Runtime starts it when it is built)."""
        with self._lock:
            self._ensure_child()

    @property
    def batch_size(self) -> int:
        """The batch size the writer thread should use for this sink (see :data:`BATCH_SIZE`)."""
        return BATCH_SIZE

    #: The writer's calling thread encodes call items for this sink (:meth:`prepare`).
    prepares = True

    @property
    def child_pid(self) -> int | None:
        """The pid of the running child, if any."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # -- the Sink protocol -------------------------------------------------------

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        """Append ``records`` to the hand-off file and wake the child. Raises OSError
        if the file cannot be written (disk full) or no child can be started."""
        self.write_items(records)

    def write_items(self, items: Sequence[Any]) -> None:
        """Append call items (:func:`~runtime.audit.record.call_item`) as they are, or
        records, to the hand-off file and wake the child: what the writer thread hands
        over. Raises as :meth:`write_batch` does."""
        if not items:
            return
        with self._lock:
            now = time.monotonic()
            look = now - self._looked_at >= _LOOK_EVERY_S or self._proc is None
            if look:
                self._ensure_child()
            self._sending.clear()  # (what a failed append meant to send)
            frames = self._frames(items) if Prepared not in set(map(type, items)) else self._mixed_frames(items)
            self._append(b"".join(frames))
            if look:
                self._looked_at = now
                self._read_acks(block=False)

    def prepare(self, items: Sequence[Any]) -> Prepared | None:
        """``items`` encoded as the child reads them (a ``columns`` frame's columns,
        pickled), for the writer's calling thread (see :meth:`AuditWriter.submit`); None
        for a batch that is not the usual kind (the writer thread sends it the careful
        way). Takes no lock that is held across a system call."""
        if not items or not _TUPLES.issuperset(map(type, items)):
            return None
        profiles: dict[int, tuple[Any, bytes]] = {}

        def key_of(redactor: Any) -> int | None:
            known = self._known(redactor)
            if known is None:
                return None
            profiles[known[1]] = (known[0], known[2])
            return known[1]

        try:
            columns = self._columns(items, key_of)
            if columns is None:
                return None
            payload = handoff.pickled(columns)
        except Exception:  # noqa: BLE001 - a value that does not pickle, a redactor of the app's own: the careful way
            return None
        named = tuple((key, redactor, frame) for key, (redactor, frame) in sorted(profiles.items()))
        return Prepared(payload, named, len(items))

    def items_of(self, prepared: Prepared) -> list[tuple[Any, ...]]:
        """The call items ``prepared`` was made from, as the child reads them back (for a
        thread that takes the writing back from the child)."""
        known = {key: redactor for key, redactor, _frame in prepared.profiles}
        return columns_to_items(pickle.loads(prepared.payload), known)  # noqa: S301 - our own bytes

    def sync(self, timeout: float | None = None) -> bool:
        """Wait until the child has stored every batch handed to it so far."""
        with self._lock:
            if self._proc is None:  # never started, closed, or no child could be started again
                return self._acked >= self._seq
            try:
                self._ensure_child()
                self._seq += 1
                target = self._seq
                self._append(_frame(("sync", target)))
            except OSError:
                return False
            deadline = time.monotonic() + (self.ack_timeout_s if timeout is None else timeout)
            while self._acked < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._read_acks(block=True, timeout=remaining):
                    return False
            return True

    def close(self) -> None:
        """Tell the child no more comes, and wait for it to store what it has and exit."""
        with self._lock:
            self._stop_child()
            self._release()

    # -- internals ----------------------------------------------------------------

    def _ensure_child(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._stop_child()
            self._start_child()

    def _append(self, data: bytes) -> None:
        appender = self._appender
        if appender is None:
            raise BrokenPipeError("no audit hand-off file")
        appender.append(data)
        self._sent |= self._sending
        self._sending.clear()
        self._size += len(data)
        if not self._wake():  # the child is gone: another reads on from what it stored, this batch too
            try:
                self._ensure_child()
                self._wake()
            except OSError:
                self._looked_at = 0.0  # (the batch is in the file) the next batch tries again, and fails if it must
        if self._size > handoff.ROTATE_BYTES:
            self._rotate()

    def _wake(self) -> bool:
        """One byte down the child's pipe: something new is in the file. A full pipe
        has enough wake-ups in it already. False when the pipe is closed: the child is gone."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            return True
        return gilio.poke(proc.stdin.fileno())

    def _rotate(self) -> None:
        """Go on in a new hand-off file; the child removes this one once read."""
        fd, path = handoff.create(self.path)
        self._append_raw(_frame(("next", path.name)))
        self._release()
        self._fd, self.handoff_path, self._size = fd, path, handoff.HEADER_BYTES
        self._appender = self._appender_of(fd)
        self._sent.clear()  # each file holds the redaction profiles its batches need
        self._wake()

    def _appender_of(self, fd: int) -> gilio.Appender:
        if self._local_disk is None:  # (the folder stays where it is: looked up once)
            self._local_disk = gilio.on_local_disk(handoff.folder_of(self.path))
        return gilio.Appender(fd, hold=self._local_disk)

    def _append_raw(self, data: bytes) -> None:
        if self._fd is not None:
            handoff.append(self._fd, data)

    def _release(self) -> None:
        fd, self._fd, self._appender = self._fd, None, None
        if fd is not None:
            os.close(fd)  # drops our lock: the file is the child's, or a later child's to finish

    def _frames(self, items: Sequence[Any]) -> list[bytes]:
        """The frames for a batch (call items, :func:`~runtime.audit.record.call_item`, or
        records), any redaction profiles first. This runs under the interpreter lock the
        calls use, so a batch of call items goes as plain values, the cheapest thing to
        pickle: a ``columns`` frame (:meth:`_columns`) or an ``items`` frame of tuples; a
        batch holding an application's record goes as a ``batch`` frame of records. When
        something will not go (a value that does not pickle, a mapping that cannot be
        read), the batch is finished here instead (:func:`~runtime.audit.rows.rows_of`,
        which never raises) and sent as stored."""
        frames: list[bytes] = []
        seq = self._seq + 1
        try:
            if _TUPLES.issuperset(map(type, items)):  # (in C: this runs for every batch)
                columns = self._columns(items, lambda redactor: self._redactor_key(redactor, frames))
                if columns is not None:
                    message: tuple[Any, ...] = ("columns", seq, columns)
                else:
                    message = ("items", seq, self._plain_items_one_by_one(items, frames))
            else:
                message = ("batch", seq, self._record_rows(items, frames))
            payload = _frame(message)
        except Exception:  # noqa: BLE001 - an odd object somewhere: finish the batch here
            payload = _frame(("batch", seq, [_stored(row) for row in rows_of(items)]))
        self._seq = seq
        frames.append(payload)
        return frames

    def _mixed_frames(self, entries: Sequence[Any]) -> list[bytes]:
        """The frames for a batch holding prepared batches (:meth:`prepare`), in order:
        each is sent as it is, after the redaction profiles it names that this hand-off
        file does not hold yet; the items between them as :meth:`_frames` sends them."""
        frames: list[bytes] = []
        run: list[Any] = []
        for entry in entries:
            if type(entry) is not Prepared:
                run.append(entry)
                continue
            if run:
                frames += self._frames(run)
                run = []
            for key, _redactor, profile in entry.profiles:
                self._send_profile(key, profile, frames)
            self._seq += 1
            frames.append(_frame(("encoded", self._seq, entry.payload)))
        if run:
            frames += self._frames(run)
        return frames

    def _columns(self, items: Sequence[tuple[Any, ...]], key_of: Callable[[Any], int | None]) -> list[list[Any]] | None:
        """The usual batch of call items (every metadata a read-only view of a dict, or a
        dict) as twelve columns: the items' first ten values, their metadata as dicts, their
        redactors' keys. Made in C, with no Python step per item, and pickled as twelve
        lists (not a tuple per item, which the pickler would also remember). The status
        goes as the item holds it (a result's enum is pickled once per batch, and the
        child reads its text from the metadata exactly as the thread does,
        ``rows._resolved``). None for another batch (:meth:`_plain_items_one_by_one`)."""
        metadatas = list(map(_METADATA_OF, items))
        if not _AS_DICT.issuperset(map(type, metadatas)):
            return None
        # The metadata is a read-only view of the result's: a dict pickles, a view does not.
        # The view's copy() is its dict's (a third of what dict(view) costs, which reads key
        # by key through the view); a view of any other mapping goes the careful way.
        try:
            copies = list(map(_COPY, metadatas))
        except Exception:  # noqa: BLE001 - a mapping of the app's own behind a view
            return None
        if not _DICTS.issuperset(map(type, copies)):
            return None
        redactors = list(map(_REDACTOR_OF, items))
        distinct = dict(zip(map(id, redactors), redactors, strict=True))  # the calls mostly share one
        keys = {ident: key_of(redactor) for ident, redactor in distinct.items()}
        columns = [list(map(getter, items)) for getter in _FIRST_TEN]
        columns.append(copies)
        columns.append(list(map(keys.__getitem__, map(id, redactors))))
        return columns

    def _plain_items_one_by_one(self, items: Sequence[tuple[Any, ...]], frames: list[bytes]) -> list[tuple[Any, ...]]:
        """The tuples of an ``items`` frame, for a batch :meth:`_columns` does not take (an
        item without metadata; metadata of another type raises: the batch is finished
        here): an item's first ten values, its metadata as a dict, its redactor's key."""
        plain = []
        last: Any = _NO_REDACTOR
        key: int | None = None
        for item in items:
            redactor = item[11]
            if redactor is not last:  # the calls of a batch mostly share one redactor
                last, key = redactor, self._redactor_key(redactor, frames)
            metadata, status = item[10], item[8]
            if metadata is not None and type(metadata) is not MappingProxyType and type(metadata) is not dict:
                # A mapping of the app's own may read differently through get() than as a copy.
                raise TypeError("metadata of an odd type: finished here")
            if isinstance(status, Enum):  # its text, as the rows would read it (rows._resolved)
                text = metadata.get("status") if metadata is not None else None
                status = text if text is not None else status.value
            # The metadata is a read-only view of the result's: a dict pickles, a view does not.
            metadata = dict(metadata) if metadata is not None else None
            plain.append((*item[:8], status, item[9], metadata, key))
        return plain

    def _record_rows(self, items: Sequence[Any], frames: list[bytes]) -> list[tuple[Any, ...]]:
        rows = []
        for item in items:
            record = AuditRecord.from_call(item) if type(item) is tuple else item
            key = self._redactor_key(record.redactor, frames)
            metadata = record.metadata
            rows.append(_row(record, record.args, dict(metadata) if metadata is not None else None, key))
        return rows

    def _redactor_key(self, redactor: Any, frames: list[bytes]) -> int | None:
        """``redactor``'s key, its profiles added to ``frames`` if this file lacks them."""
        known = self._known(redactor)
        if known is None:
            return None
        self._send_profile(known[1], known[2], frames)
        return known[1]

    def _known(self, redactor: Any) -> tuple[Any, int, bytes] | None:
        """(``redactor``, the key that names it to the child, the frame that sends its
        profiles), made on first sight; None for no redactor. Raises for a redactor whose
        profiles cannot be read or sent (an app's own object): its batch is finished here."""
        if redactor is None:
            return None
        with self._keys_lock:
            known = self._redactors.get(id(redactor))
            if known is None or known[0] is not redactor:
                profile = _frame(("redactor", self._last_key + 1, redactor_specs(redactor)))
                self._last_key += 1
                known = (redactor, self._last_key, profile)
                self._redactors[id(redactor)] = known
                if len(self._redactors) > _KEPT_REDACTORS:  # (a config reloaded with new profiles, many times)
                    del self._redactors[next(iter(self._redactors))]
            return known

    def _send_profile(self, key: int, profile: bytes, frames: list[bytes]) -> None:
        """Add the frame ``profile`` (key's profiles) to ``frames`` unless this file holds
        it; the file counts as holding it once the frames are appended (:meth:`_append`)."""
        if key not in self._sent and key not in self._sending:
            frames.append(profile)
            self._sending.add(key)

    def _start_child(self) -> None:
        now = time.monotonic()
        self._restarts = [t for t in self._restarts if now - t < _RESTART_WINDOW_S]
        if len(self._restarts) >= _MAX_RESTARTS:
            raise OSError(
                f"the audit process keeps exiting ({len(self._restarts)} starts in {_RESTART_WINDOW_S:g} s);"
                f" last error: {self.last_error}"
            )
        self._restarts.append(now)
        if self._fd is None:
            self._fd, self.handoff_path = handoff.create(self.path)
            self._appender = self._appender_of(self._fd)
            self._size = handoff.HEADER_BYTES
            self._sent.clear()
        # else a child died: the new one goes on in the same file, from what it had stored.
        self._proc = subprocess.Popen(  # noqa: S603 - our own module, fixed argv
            own_module_argv("runtime.audit.child", self.kind, str(self.path), str(self.handoff_path)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,  # a Ctrl-C for the app must not cut the audit short
            env=own_module_env(os.environ, self.untrusted),  # (not the app's folder first on its path)
        )
        assert self._proc.stdout is not None and self._proc.stdin is not None  # noqa: S101 - PIPE above
        os.set_blocking(self._proc.stdout.fileno(), False)
        os.set_blocking(self._proc.stdin.fileno(), False)

    def _stop_child(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # end of input: the child stores the rest of the file and exits
        except OSError:
            pass
        try:
            proc.wait(self.ack_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()  # what it had not stored stays in the hand-off file for the next child
            proc.wait()
        self._drain_acks(proc)
        if proc.stdout is not None:
            proc.stdout.close()

    def _read_acks(self, *, block: bool, timeout: float = 0.0) -> bool:
        """Read the acks waiting (waiting up to ``timeout`` for one when ``block``);
        False when nothing came."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            return False
        fd = proc.stdout.fileno()
        if block:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return False
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        if not chunk:
            return False
        self._take_acks(chunk)
        return True

    def _drain_acks(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdout is None:
            return
        try:
            os.set_blocking(proc.stdout.fileno(), True)
            self._take_acks(proc.stdout.read() or b"")
        except (OSError, ValueError):
            pass

    def _take_acks(self, chunk: bytes) -> None:
        lines = (self._ack_buffer + chunk).split(b"\n")
        self._ack_buffer = lines.pop()
        for line in lines:
            parts = line.decode("utf-8", "replace").split(" ", 3)
            if len(parts) < 3 or parts[0] != "ack":
                continue
            self._acked = max(self._acked, int(parts[1]))
            self.stored += int(parts[2])
            if len(parts) == 4 and parts[3]:
                self.child_errors += 1
                self.last_error = parts[3]


_NO_REDACTOR = object()
_METADATA_OF, _REDACTOR_OF = operator.itemgetter(10), operator.itemgetter(11)
_FIRST_TEN = tuple(operator.itemgetter(at) for at in range(10))
_AS_DICT = frozenset({MappingProxyType, dict})
_TUPLES = frozenset({tuple})
_DICTS = frozenset({dict})
_COPY = operator.methodcaller("copy")


def _stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as stored (:func:`~runtime.audit.rows.rows_of`) as the fields the child
    rebuilds a record from: arguments already encoded and redacted, nothing to resolve."""
    args = row[8]
    return (*row[:8], Encoded(args) if args is not None else None, *row[9:], None, None)


# The fields the child rebuilds a record from, in the order AuditRecord takes them.
_STORED = tuple(f.name for f in fields(AuditRecord) if f.name not in ("metadata", "redactor"))


_STORED_VALUES = operator.attrgetter(*_STORED)
_ARGS_AT, _STATUS_AT = _STORED.index("args"), _STORED.index("status")


def _row(record: AuditRecord, args: Any, metadata: dict[str, Any] | None, key: int | None) -> tuple[Any, ...]:
    """What travels to the child for ``record``: its stored fields (``args`` as given,
    the status as text), then the metadata to resolve and the redactor key."""
    values = list(_STORED_VALUES(record))
    values[_ARGS_AT] = args
    status = values[_STATUS_AT]
    if isinstance(status, Enum):  # its text, as the record's resolve() reads it: the metadata's first
        text = metadata.get("status") if metadata is not None else None
        values[_STATUS_AT] = text if text is not None else status.value
    return (*values, metadata, key)


_frame = handoff.frame
