"""Writing an artifact: streamed to a temporary file, committed by renames (see artifact_format)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import time
from array import array
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol

from runtime.shaping._unicode import clean, to_utf8
from runtime.shaping.artifact_format import (
    BIG_ENDIAN,
    DEFAULT_SESSION,
    INDEX_STRIDE,
    PREFIX,
    ArtifactError,
    ArtifactRef,
    ArtifactSaveError,
    artifact_paths,
    fsync_dir,
    mkstemp,
    owner_record,
    unlink,
    write_temp,
)


class ArtifactHome(Protocol):
    """What a writer needs of its store: the directory, the size limit and retention."""

    root: Path
    max_bytes: int

    def enforce_retention(self, *, keep: str | None = None) -> int: ...


class ArtifactWriter:
    """Streams one artifact to disk: ``write(chunk)`` any number of times, then ``close()``.

    Nothing is visible until :meth:`close` commits it; :meth:`abort` (or leaving a
    ``with`` block with an exception) discards it. The whole text is never held in
    memory: only the offset index (8 bytes per 4,096 characters) is.
    """

    def __init__(
        self, store: ArtifactHome, *, call_id: str, tool: str, session: str = DEFAULT_SESSION, untrusted: bool = False
    ) -> None:
        self.id = PREFIX + secrets.token_hex(12)  # 96 random bits: not guessable from any other id
        self._store = store
        self._call_id = call_id
        self._tool = tool
        self._owner = owner_record(session)
        self._untrusted = untrusted
        fd, temp = mkstemp(store.root, ".txt")
        self._temp = Path(temp)
        self._file: BinaryIO | None = open(fd, "wb")  # closed by close() or abort()
        self._hash = hashlib.sha256()
        self._chars = 0
        self._bytes = 0
        self._offsets = array("Q", [0])  # byte offset of character k * INDEX_STRIDE
        self._done = False

    @property
    def chars(self) -> int:
        """Characters written so far."""
        return self._chars

    def write(self, chunk: str) -> None:
        """Append ``chunk``. Raises :class:`ArtifactError` past the store's ``max_bytes``."""
        if self._file is None:
            raise ArtifactError("this artifact is already closed or aborted.")
        if not chunk:
            return
        chunk = clean(chunk)
        if chunk.isascii():
            # One character, one byte: the index points follow by arithmetic.
            data = chunk.encode("ascii")
            point = len(self._offsets) * INDEX_STRIDE
            while point < self._chars + len(chunk):
                self._offsets.append(self._bytes + point - self._chars)
                point += INDEX_STRIDE
            self._emit(data)
            self._chars += len(chunk)
            return
        base = self._chars
        start = 0
        while True:
            point = len(self._offsets) * INDEX_STRIDE - base  # the next index point, within chunk
            if point >= len(chunk):
                break
            self._emit(to_utf8(chunk[start:point]))
            self._offsets.append(self._bytes)  # the byte where character base + point starts
            start = point
        self._emit(to_utf8(chunk[start:]))
        self._chars = base + len(chunk)

    def _emit(self, data: bytes) -> None:
        if self._file is None:
            raise ArtifactError("this artifact is already closed or aborted.")
        if self._bytes + len(data) > self._store.max_bytes:
            self.abort()
            raise ArtifactSaveError(
                f"the output is larger than the artifact store's limit of {self._store.max_bytes:,} bytes; it was not "
                "kept."
            )
        try:
            self._file.write(data)
        except OSError as err:
            self.abort()
            raise ArtifactSaveError(f"could not write the artifact: {err.strerror or err}") from err
        self._hash.update(data)
        self._bytes += len(data)

    def close(self) -> ArtifactRef:
        """Commit the artifact (fsync, rename, fsync directory) and apply retention."""
        if self._file is None:
            raise ArtifactError("this artifact is already closed or aborted.")
        store = self._store
        text_path, index_path, meta_path = artifact_paths(store.root, self.id)
        temps: list[Path] = [self._temp]
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            if self._bytes != self._chars:
                index = array("Q", self._offsets)
                if BIG_ENDIAN:
                    index.byteswap()
                temps.append(write_temp(store.root, ".idx", index.tobytes()))
                os.replace(temps[-1], index_path)
            os.replace(self._temp, text_path)
            digest = self._hash.hexdigest()
            meta = {
                "id": self.id,
                "call_id": self._call_id,
                "tool": self._tool,
                "owner": self._owner,
                "chars": self._chars,
                "bytes": self._bytes,
                "sha256": digest,
                "stride": INDEX_STRIDE,
                "created": time.time(),
                "untrusted": self._untrusted,
            }
            temps.append(write_temp(store.root, ".json", json.dumps(meta, ensure_ascii=False).encode("utf-8")))
            os.replace(temps[-1], meta_path)  # the commit point
            fsync_dir(store.root)
        except OSError as err:
            self.abort()
            for path in (*temps, text_path, index_path):
                unlink(path)
            raise ArtifactSaveError(f"could not save the artifact: {err.strerror or err}") from err
        self._done = True
        try:
            store.enforce_retention(keep=self.id)
        except OSError:
            pass  # retention is housekeeping: the artifact itself is saved
        return ArtifactRef(self.id, text_path, self._chars, self._bytes, digest)

    def abort(self) -> None:
        """Discard everything written. Safe to call more than once, and after a failure."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if not self._done:
            unlink(self._temp)

    def __enter__(self) -> ArtifactWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if kind is not None or self._file is not None:
            self.abort()  # an exception, or the block ended without close(): keep nothing
