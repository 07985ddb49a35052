"""At run time, each MCP server's live listing compared with the lock file.

The mount step (:class:`runtime.mcpclient.mount.Mounter`) hands every listing it gets
to a :class:`LockCheck`. A listing is compared when it differs from the one compared
last for that server, or when the lock changed (:class:`LockFile` reads it again once
``toolrt mcp lock`` rewrote it): so a drift is reported once per changed listing, not
at every build. A lock that changes between builds is compared with the listings
mounted now as soon as someone calls :meth:`LockCheck.recheck` (the config watcher does
when the lock file changes). A drift is logged
(:func:`runtime.mcpclient.lock.report_drift`), and the drift listener hears of every
comparison, matches included, so that a gauge falls back to 0 when a server matches its
lock again, is no longer declared, or the lock is gone. A server missing from the lock
is compared with an empty listing: every tool it lists is new to CI.

The check is the one owner of the drift state (:attr:`LockCheck.drifting`): which
servers drift now, and how.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from loguru import logger

from runtime.lockdrift import DriftChange
from runtime.mcpclient.lock import lock_path, read_lock, report_drift
from runtime.mcpclient.mount import ListedTool

Listings = Mapping[str, Sequence[ListedTool]]
#: Told of each listing compared with the lock: the server, and how it differs (empty: it matches).
DriftListener = Callable[[str, Sequence[DriftChange]], None]


class LockFile:
    """The lock of the config at ``paths``, read again whenever the file changes (its
    inode, size or modification time): call it for the current listings, or None."""

    def __init__(self, paths: Sequence[Path | str]) -> None:
        self.path: Path | None = lock_path(paths) if paths else None  # found once: the config does not move
        self._paths = [Path(p) for p in paths]
        self._seen: tuple[int, int, int] | None = None
        self._listings: dict[str, tuple[ListedTool, ...]] | None = None

    def __call__(self) -> Listings | None:
        if self.path is None:
            return None
        try:
            found = os.stat(self.path)
            seen: tuple[int, int, int] | None = (found.st_ino, found.st_size, found.st_mtime_ns)
        except OSError:
            seen = None
        if seen != self._seen:
            self._seen = seen
            self._listings = read_lock(self._paths) if seen is not None else None
        return self._listings


class LockCheck:
    """Compares live listings with ``lock`` (listings, or a :class:`LockFile`) and tells
    ``on_drift``. Thread-safe: builds run one at a time, but a :meth:`recheck` may come
    from another thread (the config watcher's); the listener is called under the check's
    lock, so that it hears of each server's comparisons in the order they were made."""

    def __init__(self, lock: Listings | Callable[[], Listings | None], on_drift: DriftListener | None = None) -> None:
        self._lock = lock
        self._on_drift = on_drift
        self._guard = threading.RLock()  # reentrant: a listener may start a build of its own
        self._current: Listings | None = None
        self._listed: dict[str, tuple[ListedTool, ...]] = {}  # the latest live listing, per declared server
        self._compared: dict[str, tuple[ListedTool, ...]] = {}  # the listing compared last, per server
        # Servers whose latest listing differs from the lock, and how. Replaced, never
        # changed in place, so that a reader on another thread sees one consistent state.
        self._drifting: Mapping[str, tuple[DriftChange, ...]] = {}

    @property
    def drifting(self) -> Mapping[str, tuple[DriftChange, ...]]:
        """The servers drifting from the lock now, and how (as of the latest comparison)."""
        return self._drifting

    def begin(self, servers: Collection[str]) -> None:
        """A build starts with ``servers`` declared (the reachable-looking ones)."""
        with self._guard:
            self._read()
            for gone in sorted(set(self._drifting) - set(servers)):
                self._tell(gone, ())  # no longer declared: it drifts no more
                self._compared.pop(gone, None)  # declared again, its listing is compared again
            for gone in set(self._listed) - set(servers):
                del self._listed[gone]

    def listed(self, server: str, tools: tuple[ListedTool, ...]) -> None:
        """``server`` listed ``tools``: compare them with the lock if they are new to it."""
        with self._guard:
            self._listed[server] = tools
            self._compare(server, tools)

    def recheck(self) -> None:
        """Read the lock again; if it changed, compare the latest listings with it now
        (no server is asked again, nothing is rebuilt)."""
        with self._guard:
            if self._read():
                for server, tools in sorted(self._listed.items()):
                    self._compare(server, tools)

    def _read(self) -> bool:
        """Take the lock as it is now; True when it changed."""
        lock = self._lock() if callable(self._lock) else self._lock
        if lock is self._current:
            return False
        self._current, self._compared = lock, {}  # a new lock: every listing is compared afresh
        if lock is None:
            for server in sorted(self._drifting):
                self._tell(server, ())  # no lock, no drift
        return True

    def _compare(self, server: str, tools: tuple[ListedTool, ...]) -> None:
        lock = self._current
        if lock is None or self._compared.get(server) == tools:
            return
        self._compared[server] = tools
        self._tell(server, report_drift(server, lock.get(server, ()), tools))

    def _tell(self, server: str, changes: Sequence[DriftChange]) -> None:
        if changes:
            self._drifting = {**self._drifting, server: tuple(changes)}
        elif server in self._drifting:
            self._drifting = {name: found for name, found in self._drifting.items() if name != server}
        if self._on_drift is None:
            return
        try:
            self._on_drift(server, changes)
        except Exception as err:  # noqa: BLE001 - a build never fails because of a listener
            logger.warning("the MCP lock drift listener raised {}: {}", type(err).__name__, err)
