"""MCP lock drift as a metric and a reload event: the drift listener of the lock check
(:mod:`runtime.mcpclient.lockcheck`) that the Runtime and ``toolrt watch`` both use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.mcpclient.lockcheck import Listings, LockCheck, LockFile
from runtime.mcpclient.mount import Mounter
from runtime.reload.events import drift_event

if TYPE_CHECKING:
    from runtime.lockdrift import DriftChange
    from runtime.mcpclient.pool import McpPool
    from runtime.metrics import Metrics
    from runtime.reload.watcher import ConfigWatcher


class DriftReporter:
    """Told of each MCP listing compared with the lock (by :attr:`check`, which it makes
    and which keeps the drift state): it sets the drift metrics of ``metrics`` (when
    given) and, when the listing differs, hands an ``mcp_drift`` event to :attr:`watcher`
    (once one watches). The log is the lock check's own."""

    def __init__(self, lock: Listings | Callable[[], Listings | None], metrics: Metrics | None = None) -> None:
        self.metrics = metrics
        self.watcher: ConfigWatcher | None = None
        self.check = LockCheck(lock, self)
        self._lock_file = lock.path if isinstance(lock, LockFile) else None

    def __call__(self, server: str, changes: Sequence[DriftChange]) -> None:
        if self.metrics is not None:
            self.metrics.record_mcp_drift(server, len(changes))
        watcher = self.watcher
        if changes and watcher is not None:
            watcher.notify(drift_event(server, [change.to_dict() for change in changes]))

    def attach(self, watcher: ConfigWatcher) -> ConfigWatcher:
        """Report to ``watcher`` from now on, and have it re-check the lock whenever the
        lock file changes; its listener first hears of the drift known already (found
        before anyone listened, e.g. by the Runtime's first build)."""
        self.watcher = watcher
        if self._lock_file is not None:
            watcher.watch_file(self._lock_file, self.check.recheck)
        for server, changes in sorted(self.check.drifting.items()):
            watcher.notify(drift_event(server, [change.to_dict() for change in changes]))
        return watcher


def live_mount(
    pool: McpPool, paths: Sequence[Path | str], metrics: Metrics | None = None
) -> tuple[Mounter, DriftReporter]:
    """The mount step of a serving build: the tools ``pool``'s servers list, each listing
    compared with the lock of the config at ``paths`` (read again when it changes); and
    the reporter of its drift (:meth:`DriftReporter.attach` a watcher once one watches)."""
    reporter = DriftReporter(LockFile(paths), metrics)
    return Mounter(pool, reporter.check), reporter
