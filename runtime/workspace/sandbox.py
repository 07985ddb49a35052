"""The one resolver every path argument of the workspace tools goes through.

A path from the model is untrusted text. :meth:`Workspace.resolve` turns it into a
:class:`Resolved` location inside the workspace root or refuses it with a
:class:`~runtime.workspace.errors.WorkspaceError`:

* paths are relative to the root; an absolute path is accepted only when it lies
  under the root (spelled either as given at construction or fully resolved);
* empty or blank paths, NUL and other control characters, names over 255 bytes and
  paths over 4,096 bytes are refused; ``~`` is not expanded (it is refused as a first
  component, because the model almost certainly meant a home directory);
* ``..`` may not climb above the root, even when a later component would come back;
* symbolic links are followed (chains too, kernel semantics for ``link/..``) and the
  *resolved* path must lie inside the resolved root, compared component by component
  (``/ws-evil`` is not inside ``/ws``); a dangling link is judged by where it points;
  a link loop is refused;
* deny globs (:data:`DEFAULT_DENY`) are matched against the resolved relative path
  *and* the path as given, and a path is denied when it or any directory above it
  matches (so ``.git/**`` also protects ``.git`` itself).

Checking a path and then opening it by name would leave a window in which a
directory on the way is swapped for a symbolic link to somewhere else. So the tools
never open workspace files by absolute path: :meth:`Workspace.open_parent_dir` walks
from the root one component at a time with ``O_NOFOLLOW | O_DIRECTORY`` and returns a
directory descriptor; the final component is then opened, created or renamed
relative to that descriptor with ``O_NOFOLLOW``. A swap made after the check makes
the operation fail instead of escaping.

A plain path (no link, no ``..``: :func:`~runtime.workspace.nolinks.plain_relative`) is
looked up or opened in one ``openat2`` call that refuses a link anywhere on the way;
whatever that call cannot settle takes the way described above, which words refusals.

Out of scope: hard links to files outside (a read would follow one; writes replace
the directory entry and never modify the shared inode), bind mounts inside the root,
and changes to the directories *above* the root.
"""

from __future__ import annotations

import difflib
import errno
import functools
import os
import posixpath
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from runtime.workspace.errors import WorkspaceError
from runtime.workspace.globs import GlobSet
from runtime.workspace.hardlinks import NO_PROTECTED_INODES, ProtectedInodes
from runtime.workspace.nolinks import O_PATH, open_no_links, plain_relative

DEFAULT_DENY: tuple[str, ...] = (
    "**/.git/**",  # repository internals: hooks there run code, config holds remotes
    "**/.env",  # dotenv secrets...
    "**/.env.*",  # ...and their variants (.env.local, .env.production; templates too)
    "**/*.pem",  # certificates and private keys
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/id_rsa*",  # ssh keys
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/.netrc",  # stored credentials
    "**/.pgpass",
    "**/.git-credentials",
    "**/.npmrc",  # package registry tokens
    "**/.pypirc",
    "**/.docker/config.json",
    "**/.kube/**",  # cluster credentials
    "**/.aws/**",  # cloud credentials
    "**/.azure/**",
    "**/.config/gcloud/**",
    "**/.terraformrc",  # infrastructure state and tokens
    "**/*.tfstate",
    "**/*.tfstate.*",
    "**/.vault-token",
)
"""Globs refused by default, matched case-insensitively against workspace-relative paths.

The dialect is :mod:`runtime.workspace.globs` (``**`` is zero or more whole components,
so ``.git/**`` matches ``.git`` itself too). A path is denied when it or any directory
above it matches.
"""

MAX_PATH_BYTES = 4096  # Linux PATH_MAX
MAX_NAME_BYTES = 255  # Linux NAME_MAX

TEMP_PREFIX = ".toolrt-tmp-"
"""Prefix of the temporary files of atomic writes; such names cannot be written directly."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_SHOWN_CHARS = 160
_DENIED_REMEMBERED = 4096


@dataclass(frozen=True)
class Resolved:
    """A path inside the workspace, as found when it was resolved.

    ``location`` is the fully resolved path (for locks and cache keys; never show it
    to the model; ``absolute`` is the same as a :class:`Path`), ``relative`` its POSIX
    form relative to the root (``"."`` for the root itself), ``given`` the text the
    model sent.
    """

    given: str
    location: str
    relative: str
    exists: bool
    is_dir: bool
    is_file: bool

    @functools.cached_property
    def absolute(self) -> Path:
        """``location`` as a :class:`Path`."""
        return Path(self.location)

    @property
    def name(self) -> str:
        """The final component (``"."`` for the root)."""
        return self.relative.rsplit("/", 1)[-1]

    @property
    def parent_parts(self) -> tuple[str, ...]:
        """The directories between the root and the final component."""
        if self.relative == ".":
            return ()
        return tuple(self.relative.split("/")[:-1])


class Workspace:
    """A directory tree the tools may use, and the resolver for paths into it.

    ``root`` must be an existing directory; it is resolved once, here, so a later swap
    of the root's own path does not move the workspace. ``deny_globs`` replaces
    :data:`DEFAULT_DENY` (pass ``()`` to deny nothing).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        deny_globs: Sequence[str] = DEFAULT_DENY,
        protected_inodes: ProtectedInodes = NO_PROTECTED_INODES,
    ) -> None:
        given = os.path.abspath(os.fspath(root))
        real = os.path.realpath(given, strict=True)
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace root is not a directory: {given}")
        self.root = Path(real)
        self._root_str = real
        # Absolute paths may use the root as configured too (e.g. /tmp/ws when /tmp is a link).
        self._root_spellings = tuple(dict.fromkeys([PurePosixPath(real).parts, PurePosixPath(given).parts]))
        self.deny_globs = tuple(deny_globs)
        self.protected_inodes = protected_inodes  # toolrt's own files, found under other names (hard links)
        # Compiled once, here (the workspace is built into the snapshot): one regex for all globs.
        self._deny = GlobSet(self.deny_globs, case_sensitive=False, below=True)
        self._denied: dict[str, str | None] = {}  # verdicts by relative path: a pure function of the text

    def __repr__(self) -> str:
        return f"Workspace({self._root_str!r})"

    # -- resolving -----------------------------------------------------------------

    def resolve(self, path: str, *, for_write: bool = False, must_exist: bool = True) -> Resolved:
        """Resolve ``path`` (relative to the root, or absolute inside it) or refuse it.

        ``must_exist`` refuses a missing target (with close names as suggestions);
        ``for_write`` also refuses directories, non-regular files, the root itself and
        reserved temporary-file names.
        """
        if (fast := self._resolve_plain(path, for_write)) is not None:
            return fast
        if not isinstance(path, str):
            raise WorkspaceError(f"path must be a string, not {type(path).__name__}")
        shown = _show(path)
        if not path.strip():
            raise WorkspaceError(
                "path is empty (or blank); give a path relative to the workspace root, e.g. 'src/main.py'"
            )
        if "\x00" in path:
            raise WorkspaceError(f"path {shown} contains a NUL byte; remove it")
        bad = next((ch for ch in path if ord(ch) < 32 or ord(ch) == 127), None)
        if bad is not None:
            raise WorkspaceError(
                f"path {shown} contains the control character U+{ord(bad):04X}; file names here may not contain "
                "control characters"
            )
        try:
            encoded = os.fsencode(path)
        except UnicodeEncodeError:
            raise WorkspaceError(
                f"path {shown} contains characters that cannot be used in a file name (lone surrogates)"
            ) from None
        if len(encoded) > MAX_PATH_BYTES:
            raise WorkspaceError(
                f"path is too long ({len(encoded):,} bytes; at most {MAX_PATH_BYTES:,}); use a shorter path"
            )
        parts = [part for part in path.split("/") if part not in ("", ".")]
        for part in parts:
            if len(os.fsencode(part)) > MAX_NAME_BYTES:
                raise WorkspaceError(
                    f"a name in path {shown} is too long ({len(os.fsencode(part))} bytes; at most {MAX_NAME_BYTES} "
                    "per name)"
                )
        if parts and parts[0] == "~":
            raise WorkspaceError(
                f"path {shown} starts with '~', but home directories are not available: paths are relative to the "
                "workspace root"
            )

        if path.startswith("/"):
            parts = self._strip_root(path, shown)
        depth = 0
        for part in parts:
            depth += -1 if part == ".." else 1
            if depth < 0:
                raise WorkspaceError(
                    f"path {shown} goes above the workspace root with '..'; use a path inside the workspace"
                )

        try:
            real = os.path.realpath(os.path.join(self._root_str, *parts))
        except OSError as err:  # e.g. ENAMETOOLONG once links are expanded
            raise WorkspaceError(
                f"path {shown} cannot be resolved ({os.strerror(err.errno or errno.EINVAL)})"
            ) from None
        real_path = Path(real)
        if _unresolved(real_path, self.root):
            # realpath gives up at a link loop and returns the rest of the path as it
            # was, `..` and further links included: nothing about it can be trusted.
            raise WorkspaceError(f"path {shown} has too many levels of symbolic links (a link loop?)")
        if not real_path.is_relative_to(self.root):
            raise WorkspaceError(
                f"path {shown} leads outside the workspace through a symbolic link; only files inside the workspace "
                "can be used"
            )
        relative = real_path.relative_to(self.root).as_posix()

        exists = is_dir = is_file = False
        try:
            st = os.lstat(real)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise WorkspaceError(f"path {shown} has too many levels of symbolic links (a link loop?)") from None
            if err.errno == errno.EACCES:
                raise WorkspaceError(f"permission denied while looking up {shown}") from None
            raise WorkspaceError(
                f"path {shown} cannot be resolved ({os.strerror(err.errno or errno.EINVAL)})"
            ) from None
        else:
            if stat.S_ISLNK(st.st_mode):
                # realpath gives up on a loop and returns the link itself.
                raise WorkspaceError(f"path {shown} has too many levels of symbolic links (a link loop?)")
            exists = True
            is_dir = stat.S_ISDIR(st.st_mode)
            is_file = stat.S_ISREG(st.st_mode)

        as_given = posixpath.normpath("/".join(parts)) if parts else "."
        for candidate in dict.fromkeys([relative, as_given]):
            glob = self.denied_by(candidate)
            if glob is not None:
                raise WorkspaceError(
                    f"path {shown} is protected (it matches the deny rule '{glob}'); the workspace tools cannot read "
                    "or change it"
                )

        if not exists:
            self._refuse_file_as_directory(shown, real_path)
        if path.endswith(("/", "/.")) and exists and not is_dir:
            raise WorkspaceError(
                f"path {shown} ends with '/' but {relative} is a file, not a directory; drop the trailing slash"
            )
        if must_exist and not exists:
            raise WorkspaceError(self._not_found(shown, real_path))
        if for_write:
            if relative == ".":
                raise WorkspaceError("the workspace root is a directory; give the path of a file inside it")
            if path.endswith(("/", "/.")):
                raise WorkspaceError(f"path {shown} ends with '/', so it names a directory; give a file path")
            if is_dir:
                raise WorkspaceError(f"{relative} is a directory; give the path of a file")
            if exists and not is_file:
                raise WorkspaceError(f"{relative} is not a regular file (device, socket or FIFO); it cannot be written")
            if real_path.name.startswith(TEMP_PREFIX):
                raise WorkspaceError(
                    f"names starting with '{TEMP_PREFIX}' are reserved for temporary files; choose another name"
                )
        return Resolved(given=path, location=real, relative=relative, exists=exists, is_dir=is_dir, is_file=is_file)

    def denied_by(self, relative: str) -> str | None:
        """The first deny glob matching ``relative`` or a directory above it, else None."""
        if not self._deny or relative in ("", "."):
            return None
        try:
            return self._denied[relative]
        except KeyError:
            pass
        verdict = self._deny.first(_matchable(relative))
        if len(self._denied) >= _DENIED_REMEMBERED:
            self._denied.clear()
        self._denied[relative] = verdict
        return verdict

    def open_file(self, path: str) -> tuple[Resolved, int, os.stat_result]:
        """Resolve ``path`` (as :meth:`resolve`) and open it for reading (as
        :meth:`open_for_read`): the resolved path, a descriptor and its ``fstat``.
        A directory is refused (the caller closes the descriptor).

        The usual path (no symbolic link, no ``..``, nothing unusual in the text) is
        opened in one system call that refuses any link on the way, so it costs no
        walk; anything else, and every refusal, goes the long way and reads the same.
        """
        fast = self._open_plain(path)
        if fast is None:
            resolved = self.resolve(path)
            if not resolved.is_dir:
                fd = self.open_for_read(resolved)
                return resolved, fd, os.fstat(fd)
        else:
            resolved, fd, st = fast
            if not resolved.is_dir:
                return fast
            os.close(fd)
        raise WorkspaceError(f"{resolved.relative} is a directory, not a file; list it to see what it contains")

    def _plain(self, path: str) -> str | None:
        """The relative path of a plain ``path`` (see :func:`plain_relative`) that no deny glob matches."""
        relative = plain_relative(path)
        if relative is None or self.denied_by(relative) is not None:
            return None
        return relative

    def _open_plain(self, path: str) -> tuple[Resolved, int, os.stat_result] | None:
        relative = self._plain(path)
        if relative is None:
            return None
        location = f"{self._root_str}/{relative}"
        fd = open_no_links(os.fsencode(location), _READ_FLAGS)
        if fd < 0:
            return None  # a link on the way, missing, unreadable, or no openat2: the long way words it
        try:
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        self._refuse_protected(fd, st, relative)  # closes fd when it refuses
        is_dir = stat.S_ISDIR(st.st_mode)
        resolved = Resolved(path, location, relative, True, is_dir, stat.S_ISREG(st.st_mode))
        return resolved, fd, st

    def _resolve_plain(self, path: str, for_write: bool) -> Resolved | None:
        """:meth:`resolve` of an existing plain path in one ``openat2`` lookup; None
        when the long way must decide (links, missing, anything it would refuse)."""
        relative = self._plain(path)
        if relative is None:
            return None
        location = f"{self._root_str}/{relative}"
        fd = open_no_links(os.fsencode(location), O_PATH | os.O_NOFOLLOW)
        if fd < 0:
            return None
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        is_dir, is_file = stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)
        if stat.S_ISLNK(st.st_mode) or (
            for_write and (not is_file or location.rsplit("/", 1)[1].startswith(TEMP_PREFIX))
        ):
            return None
        return Resolved(path, location, relative, True, is_dir, is_file)

    def _strip_root(self, path: str, shown: str) -> list[str]:
        """The components of absolute ``path`` after the root, or a refusal.

        Compared by components without normalising ``..`` away, so ``/ws/../ws-evil``
        is refused here or by the depth check, never accepted by string prefix.
        """
        parts = [part for part in path.split("/") if part not in ("", ".")]
        for spelling in self._root_spellings:
            inner = spelling[1:]  # without the leading "/"
            if tuple(parts[: len(inner)]) == inner:
                return parts[len(inner) :]
        raise WorkspaceError(
            f"absolute path {shown} is outside the workspace; use a path relative to the workspace root (e.g. "
            "'src/main.py')"
        )

    def _refuse_file_as_directory(self, shown: str, real_path: Path) -> None:
        """Refuse a missing path whose nearest existing ancestor is a file, not a directory."""
        ancestor = real_path.parent
        while ancestor != self.root and not os.path.lexists(ancestor):
            ancestor = ancestor.parent
        if ancestor != self.root and not os.path.isdir(ancestor):
            raise WorkspaceError(
                f"path {shown} goes through {ancestor.relative_to(self.root).as_posix()}, which is a file, not a "
                "directory"
            )

    def _not_found(self, shown: str, real_path: Path) -> str:
        parent = real_path.parent
        relative_parent = parent.relative_to(self.root).as_posix() if parent != self.root else "."
        try:
            # Listed through descriptors, like everything else: a directory swapped for a
            # link meanwhile must not leak names from outside into the suggestions.
            fd = self.open_root()
            parts = [] if relative_parent == "." else relative_parent.split("/")
            for index, part in enumerate(parts):
                fd = self._step(fd, part, "/".join(parts[: index + 1]), create=False)
            try:
                names = os.listdir(fd)
            finally:
                os.close(fd)
        except (OSError, WorkspaceError):
            where = f"directory {relative_parent} does not exist" if relative_parent != "." else "it does not exist"
            return f"{shown} not found: {where}"
        names = [
            n
            for n in names[:5000]
            if self.denied_by(posixpath.join(relative_parent, n) if relative_parent != "." else n) is None
        ]
        close = difflib.get_close_matches(real_path.name, names, n=3, cutoff=0.6)
        if close:
            shown_close = ", ".join(posixpath.join(relative_parent, n) if relative_parent != "." else n for n in close)
            return f"{shown} not found; did you mean: {shown_close}?"
        where = f"in directory {relative_parent}" if relative_parent != "." else "in the workspace root"
        return f"{shown} not found {where}; check the spelling or list the directory"

    # -- opening without following links --------------------------------------------

    def open_root(self) -> int:
        """A descriptor of the root directory (the caller closes it)."""
        return os.open(self._root_str, _DIR_FLAGS)

    def open_parent_dir(self, resolved: Resolved, *, create: bool = False) -> int:
        """A descriptor of the directory holding ``resolved``, reached without following links.

        Walks from the root one component at a time with ``O_NOFOLLOW | O_DIRECTORY``,
        so a directory swapped for a symbolic link after :meth:`resolve` makes this fail
        instead of leading elsewhere. ``create`` makes missing directories (mode 0777
        less the umask). The caller closes the descriptor.
        """
        if resolved.relative == ".":
            raise WorkspaceError("the workspace root is a directory; give the path of a file inside it")
        fd = self.open_root()
        walked: list[str] = []
        for part in resolved.parent_parts:
            walked.append(part)
            fd = self._step(fd, part, "/".join(walked), create)  # closes the previous fd
        return fd

    def _step(self, fd: int, part: str, walked: str, create: bool) -> int:
        """Open directory ``part`` under ``fd`` without following links; ``fd`` is closed in every case."""
        try:
            return self._open_dir(fd, part, walked, create)
        finally:
            os.close(fd)

    def _open_dir(self, fd: int, part: str, walked: str, create: bool) -> int:
        try:
            try:
                return os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise WorkspaceError(
                        f"directory {walked} does not exist (it may have just been removed); create it first"
                    ) from None
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made by someone else meanwhile: open it like any other
                return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as err:
            # O_NOFOLLOW | O_DIRECTORY on a link fails with ENOTDIR or ELOOP: look at what it is.
            if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST):
                try:
                    is_link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
                except OSError:
                    is_link = True  # gone again: it is changing under us either way
                if is_link:
                    raise WorkspaceError(
                        f"{walked} is no longer a directory inside the workspace (it changed while in use and is now "
                        "a symbolic link); nothing was written, try again"
                    ) from None
                raise WorkspaceError(f"{walked} is a file, not a directory; nothing was written") from None
            if err.errno == errno.EACCES:
                raise WorkspaceError(f"permission denied on directory {walked}") from None
            raise

    def open_for_read(self, resolved: Resolved) -> int:
        """A read-only descriptor of ``resolved``, opened without following links.

        Refuses a final component that became a symbolic link after :meth:`resolve`,
        and a hard link to one of toolrt's own files. The descriptor may be a directory
        or special file: check with ``fstat``.
        """
        if resolved.relative == ".":
            return self.open_root()
        parent = self.open_parent_dir(resolved)
        try:
            fd = os.open(resolved.name, _READ_FLAGS, dir_fd=parent)
            self.refuse_protected(fd, resolved.relative)
            return fd
        except FileNotFoundError:
            raise WorkspaceError(f"{resolved.relative} not found (it may have just been removed)") from None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise WorkspaceError(
                    f"{resolved.relative} changed while in use (it is now a symbolic link); try again"
                ) from None
            if err.errno == errno.EACCES:
                raise WorkspaceError(f"permission denied: {resolved.relative} is not readable") from None
            raise
        finally:
            os.close(parent)

    def refuse_protected(self, fd: int, shown: str) -> None:
        """Close ``fd`` and refuse when it is one of toolrt's own files under another
        name (a hard link): the path checks cannot see that."""
        self._refuse_protected(fd, os.fstat(fd), shown)

    def _refuse_protected(self, fd: int, st: os.stat_result, shown: str) -> None:
        if self.protected_inodes.holds(st):
            os.close(fd)
            raise WorkspaceError(
                f"{shown} is another name (a hard link) for one of toolrt's own files (config, audit log, artifacts "
                "or state); it cannot be used"
            )


def _unresolved(real: Path, root: Path) -> bool:
    """Whether ``real`` (from ``os.path.realpath``) still holds ``..`` or a symbolic link.

    realpath stops at a link loop, appends the rest of the path unresolved and then
    normalises it lexically: ``loop/../link_out/x`` comes back as ``link_out/x`` with
    ``link_out`` never followed, so every component must be checked again."""
    if ".." in real.parts:
        return True
    if not real.is_relative_to(root):
        return False  # outside anyway: the containment check refuses it
    prefix = root  # resolved once at construction: only the components below it can be links
    for part in real.relative_to(root).parts:
        prefix = prefix / part
        if os.path.islink(prefix):
            return True
        if not os.path.lexists(prefix):
            return False  # the rest does not exist yet: nothing further to follow
    return False


def _show(path: str) -> str:
    """``path`` quoted for a message: control characters escaped, long paths shortened."""
    text = path if path.isprintable() else repr(path)[1:-1]
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS // 2] + "…" + text[-_SHOWN_CHARS // 4 :]
    return f"'{text}'"


def _matchable(path: str) -> str:
    """``path`` as RE2 can take it: undecodable bytes of a file name (surrogate escapes) become U+FFFD."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return path
