"""The artifact store's files, ids and records, shared by its writer, reader and retention.

Layout: one directory, three files per artifact, all named by its id::

    art_<24 hex>.txt    the text, UTF-8
    art_<24 hex>.idx    byte offset of every 4,096th character (only when not ASCII)
    art_<24 hex>.json   id, call, tool, sizes, SHA-256, stride: written last, so it is
                        the commit record; an artifact without it does not exist

The commit record keeps the owner as a salted SHA-256 of the session id (so the
directory, which other processes share, never lists the sessions).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import ToolrtError

INDEX_STRIDE = 4096
"""Characters between two entries of an artifact's offset index."""

PREFIX = "art_"
HEX = frozenset("0123456789abcdef")
TEMP_PREFIX = ".tmp-"
DEFAULT_SESSION = "default"
"""The session id of calls made without a session (``Session().id``)."""

BIG_ENDIAN = array("Q", [1]).tobytes()[0] == 0  # the index is little-endian on disk


class ArtifactError(ToolrtError):
    """An artifact id that is invalid or unknown, a bad read request, or a failed save."""


class ArtifactSaveError(ArtifactError, OSError):
    """An artifact could not be saved (disk full, too large, no permission).

    Also an :class:`OSError`: it is an I/O failure, and code that streams output to
    a writer and handles I/O errors (falling back to head and tail) handles it too.
    """


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """A saved artifact: its id, file, size in characters and bytes, and SHA-256 of the UTF-8 text."""

    id: str
    path: Path
    chars: int
    bytes: int
    sha256: str


@dataclass(frozen=True, slots=True)
class ArtifactPage:
    """Part of an artifact. ``next_offset`` is where to go on reading, None at the end."""

    text: str
    offset: int
    next_offset: int | None
    total_chars: int
    # About the page, not the page: left out of comparisons.
    tool: str = field(default="", compare=False)  # the tool whose output this is
    untrusted: bool = field(default=False, compare=False)  # that tool is `trust: untrusted`: mark its text when shown
    after: str = field(default="", compare=False)  # up to `look_ahead` characters that follow the page (not part of it)


def check_artifact_id(artifact_id: object) -> str:
    """``artifact_id`` if it is a well-formed id, else :class:`ArtifactError` saying why.

    Ids come from the model, so anything that is not exactly ``art_`` + 24 lowercase
    hex digits is rejected before it is used in a path.
    """
    if not isinstance(artifact_id, str):
        raise ArtifactError(f"artifact id must be a string, not {type(artifact_id).__name__}.")
    shown = repr(artifact_id[:60]) + ("..." if len(artifact_id) > 60 else "")
    if "\x00" in artifact_id:
        raise ArtifactError(
            f"invalid artifact id {shown}: it contains a NUL byte. Use the id from the truncation notice, e.g. "
            "art_0123456789abcdef01234567."
        )
    if "/" in artifact_id or "\\" in artifact_id or ".." in artifact_id:
        raise ArtifactError(
            f"invalid artifact id {shown}: it contains a path separator or `..`; an artifact id is a name, not a "
            "path. Use the id from the truncation notice, e.g. art_0123456789abcdef01234567."
        )
    token = artifact_id[len(PREFIX) :]
    if not artifact_id.startswith(PREFIX) or len(token) != 24 or not HEX.issuperset(token):
        raise ArtifactError(
            f"invalid artifact id {shown}: expected `art_` followed by 24 lowercase hex digits, e.g. "
            "art_0123456789abcdef01234567."
        )
    return artifact_id


def is_artifact_id(name: str) -> bool:
    """Whether a file name's stem is an artifact id (the retention scan's test: it never raises)."""
    return name.startswith(PREFIX) and len(name) == len(PREFIX) + 24 and HEX.issuperset(name[len(PREFIX) :])


def fsync_dir(path: Path) -> None:
    """Flush the directory ``path`` to disk, where the system allows it."""
    # Makes the renames durable: without it a crash can lose a rename that was done.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported here (e.g. some network file systems): best effort
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def unlink(path: str | Path) -> None:
    """Remove ``path``; already gone is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def owner_record(session: str) -> str:
    """``<salt>:<SHA-256 of salt + session id>``: checks a session without naming it."""
    salt = secrets.token_hex(16)
    return f"{salt}:{owner_digest(salt, session)}"


def owner_digest(salt: str, session: str) -> str:
    """The hex SHA-256 of ``salt`` and ``session`` that an owner record holds."""
    return hashlib.sha256(f"{salt}\x00{session}".encode("utf-8", "surrogatepass")).hexdigest()


def owned_by(record: object, session: object) -> bool:
    """Whether the owner ``record`` of a commit record names ``session`` (False when either is malformed)."""
    if not isinstance(record, str) or not isinstance(session, str):
        return False
    salt, colon, digest = record.partition(":")
    if not colon or not salt or len(digest) != 64 or not HEX.issuperset(digest):
        return False  # also keeps compare_digest, which refuses non-ASCII text, from raising
    return hmac.compare_digest(owner_digest(salt, session), digest)


def artifact_paths(root: Path, artifact_id: str) -> tuple[Path, Path, Path]:
    """The text, index and commit-record files of ``artifact_id`` under ``root``."""
    base = root / artifact_id
    return base.with_suffix(".txt"), base.with_suffix(".idx"), base.with_suffix(".json")


def mkstemp(root: Path, suffix: str) -> tuple[int, str]:
    """A new temporary file in ``root`` (mode 0600): its descriptor and path."""
    try:
        return tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=suffix, dir=root)  # mode 0600
    except OSError as err:
        raise ArtifactSaveError(
            f"cannot create a file in the artifact directory {root}: {err.strerror or err}"
        ) from err


def write_temp(root: Path, suffix: str, data: bytes) -> Path:
    """A temporary file in ``root`` holding ``data``, flushed to disk."""
    fd, temp = mkstemp(root, suffix)
    try:
        with open(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError:
        unlink(temp)
        raise
    return Path(temp)
