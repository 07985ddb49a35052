"""The hand-off file between an app and its audit writer child (``audit_writer=process``).

The app appends every frame (a 4-byte big-endian length, a kind letter, then a pickle)
to a file in a folder beside the store (``<store>.handoff/``, owner-only, one of the
files the agent's tools are kept from: the arguments in it are not redacted yet); the
child reads the file in order and stores what it reads. A
frame is in the kernel's page cache as soon as ``write()`` returns, so a SIGKILL of the
app loses only what it had not written yet, never what waits for the child: the
child, which outlives the app, reads the file to its end. A pipe would do the same
until it is full (64 KiB, a few hundred records), after which records wait in the
app's memory while the child catches up, and a crash loses them.

Layout: ``MAGIC`` (8 bytes), then the offset (8 bytes, big-endian) up to which the
child has stored the frames (it rewrites it after each batch), then frames. A file
that grows past :data:`ROTATE_BYTES` is ended with a ``next`` frame naming its
successor, and the child removes it once read. Each file is complete in itself (its
redaction profiles are sent again in the next).

Who holds a file: the app and the child each keep a shared ``flock`` on it while they
use it, taken before its name is published (a file is made under a temporary name,
locked, then renamed). When a child dies, the app starts another on the same file,
which goes on from the stored offset (after reading the file's redaction profiles
again). A file whose app (the pid in its name) is gone and that nobody holds was left
by a child that died too: the next child of the store takes it with an exclusive lock,
stores what was not stored yet and removes it (:func:`orphans`). A crash between
storing a batch and rewriting the offset stores that batch twice at most.
"""

from __future__ import annotations

import fcntl
import io
import os
import pickle
import secrets
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from types import BuiltinFunctionType, FunctionType
from typing import Any, BinaryIO

MAGIC = b"TRTAUDIT"
_OFFSET = struct.Struct(">Q")
HEADER_BYTES = len(MAGIC) + _OFFSET.size
_FRAME = struct.Struct(">I")
_HEAD = _FRAME.size + 1  # length and kind letter
#: A hand-off file longer than this is continued in a new one.
ROTATE_BYTES = 32 * 1024 * 1024
_FOLDER_SUFFIX = ".handoff"


class Unreadable(pickle.PicklingError):
    """A value whose class the writer child could not import (the app's own)."""


class _Pickler(pickle.Pickler):
    """Pickles only what the child can read back: builtin values, and objects of the
    standard library's and toolrt's classes. An object of a class of the app's own (a
    test's enum, a module the child's path lacks) would pickle here and fail to
    unpickle there, losing its whole batch: it raises :class:`Unreadable` instead, so
    the app can finish that batch itself."""

    def reducer_override(self, obj: Any) -> Any:
        # Called only for objects that are not exact builtin values (see pickle's docs).
        named = obj if isinstance(obj, type | FunctionType | BuiltinFunctionType) else type(obj)
        module = getattr(named, "__module__", None) or ""
        top = module.partition(".")[0]
        if top == "runtime" or top in sys.stdlib_module_names:
            return NotImplemented  # pickled the usual way
        raise Unreadable(f"{module}.{getattr(named, '__qualname__', named)} cannot be read by the audit process")


def pickled(value: Any) -> bytes:
    """``value`` pickled as the child can read it back. Raises :class:`Unreadable` (or
    another pickling error) for a value the child could not read back."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def frame(message: Any) -> bytes:
    """``message`` (a tuple whose first item is its kind) as one frame: the payload's
    length, the kind's first letter (so that a reader can skip to the profiles
    without unpickling batches), the pickle. Raises as :func:`pickled` does."""
    payload = pickled(message)
    return _FRAME.pack(len(payload)) + message[0][:1].encode("ascii") + payload


def folder_of(store: Path) -> Path:
    """The folder of the hand-off files of ``store``."""
    return store.with_name(store.name + _FOLDER_SUFFIX)


def files_of(store: Path) -> list[Path]:
    """The hand-off files of ``store`` (whole ones: not those still being made)."""
    try:
        return [path for path in folder_of(store).iterdir() if not path.name.startswith(".")]
    except FileNotFoundError:
        return []


def create(store: Path) -> tuple[int, Path]:
    """A new hand-off file for ``store``: (its descriptor, open for appending and
    holding a shared lock, and its path). Owner-only."""
    folder = folder_of(store)
    folder.mkdir(mode=0o700, exist_ok=True)
    token = secrets.token_hex(6)
    temporary = folder / f".{os.getpid()}-{token}.new"
    fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.write(fd, MAGIC + _OFFSET.pack(HEADER_BYTES))
        path = folder / f"{os.getpid()}-{token}"
        os.rename(temporary, path)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return fd, path


def append(fd: int, data: bytes) -> None:
    """Append ``data`` (whole frames) with as few writes as the kernel allows."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def orphans(store: Path) -> list[Reader]:
    """Readers, holding an exclusive lock each, of the hand-off files of ``store`` left
    behind: their app is gone and no child holds them. Oldest first."""
    found = []
    for path in sorted(files_of(store), key=_age):
        if _alive(path.name.split("-", 1)[0]):
            continue  # its app is running: the file is its child's
        reader = Reader.take(path)
        if reader is not None:
            found.append(reader)
    return found


def _alive(pid_text: str) -> bool:
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getppid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class Reader:
    """Reads the frames of one hand-off file in order, holding a lock on it: shared (the
    child of the app writing it) or exclusive (a file left behind, see :meth:`take`)."""

    def __init__(self, path: Path, *, exclusive: bool = False) -> None:
        self.path = path
        self.exclusive = exclusive
        self._fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
        except BaseException:
            os.close(self._fd)
            raise
        self._stream: BinaryIO = os.fdopen(os.dup(self._fd), "rb", buffering=1 << 16)
        head = self._stream.read(HEADER_BYTES)
        if len(head) < HEADER_BYTES or head[: len(MAGIC)] != MAGIC:
            self.offset = -1  # not a hand-off file (or cut before its header): nothing to read
            return
        self.offset = max(HEADER_BYTES, _OFFSET.unpack(head[len(MAGIC) :])[0])

    @classmethod
    def take(cls, path: Path) -> Reader | None:
        """An exclusive reader of ``path``, or None when it is gone or someone holds it."""
        try:
            return cls(path, exclusive=True)
        except (BlockingIOError, FileNotFoundError):
            return None

    def follow(self, name: str) -> Reader | None:
        """The reader of the file a ``next`` frame names, locked as this one is; None when
        it is gone or another child holds it (that child finishes it)."""
        path = self.path.parent / name
        if self.exclusive:
            return Reader.take(path)
        try:
            return Reader(path)
        except FileNotFoundError:
            return None

    def profiles(self) -> Iterator[Any]:
        """The redaction-profile messages before the stored offset (a child that goes on
        where another stopped needs them for the batches after it)."""
        if not self.valid:
            return
        stream, position = self._stream, HEADER_BYTES
        while position < self.offset:
            stream.seek(position)
            head = stream.read(_HEAD)
            if len(head) < _HEAD:
                return
            size = _FRAME.unpack(head[: _FRAME.size])[0]
            if head[-1:] == b"r":
                payload = stream.read(size)
                try:
                    yield pickle.loads(payload)  # noqa: S301 - see frames()
                except Exception:  # noqa: BLE001, S112 - a damaged frame: the batches that need it are refused
                    pass
            position += _HEAD + size

    @property
    def valid(self) -> bool:
        """False when the file has no hand-off header."""
        return self.offset >= 0

    def frames(self) -> Iterator[tuple[int, Any]]:
        """The whole frames from the current position: (the offset after it, the message).
        Stops before a frame not yet written in full (read again later)."""
        if not self.valid:
            return
        stream = self._stream
        position = self.offset
        while True:
            stream.seek(position)
            header = stream.read(_HEAD)
            if len(header) < _HEAD:
                return
            size = _FRAME.unpack(header[: _FRAME.size])[0]
            payload = stream.read(size)
            if len(payload) < size:
                return
            position += _HEAD + size
            try:
                message = pickle.loads(payload)  # noqa: S301 - written by the app that started us, owner-only file
            except Exception:  # noqa: BLE001 - a damaged frame: skip it, keep the rest
                message = ("damaged",)
            yield position, message

    def done(self, offset: int) -> None:
        """Record that every frame before ``offset`` is stored."""
        self.offset = offset
        os.pwrite(self._fd, _OFFSET.pack(offset), len(MAGIC))

    def remove(self) -> None:
        """Delete the file (every frame in it is stored) and let go of it."""
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        """Let go of the file (it stays for a later child if not removed)."""
        self._stream.close()
        os.close(self._fd)
