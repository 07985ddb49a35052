"""The engine of ``toolrt watch``: its own snapshot, and an event per reload attempt.

Its builds mount the config's McpServers the way the Runtime's do (same pool, same
lock file next to the config), so a watch shows the mounted tools and an ``mcp_drift``
event when a server lists tools that differ from the lock. A server that cannot be
reached mounts nothing and never fails a build.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runtime.config.cache import CompileCache
from runtime.config.compile import BuildResult, Mount, build_snapshot
from runtime.mcpclient import McpPool
from runtime.reload.events import ReloadEvent
from runtime.reload.mcpdrift import live_mount
from runtime.reload.watcher import DEFAULT_DEBOUNCE_MS, ConfigWatcher, Guard
from runtime.settings import Settings
from runtime.snapshot import Snapshot


@dataclass
class _SnapshotHolder:
    """The current snapshot of :func:`watch_events`: rebuilt with a compile cache,
    replaced only by a clean build (the way Runtime.reload does it)."""

    paths: Sequence[Path]
    settings: Settings
    mount: Mount | None = None
    cache: CompileCache = field(default_factory=CompileCache)
    snapshot: Snapshot | None = None

    def reload(self, guard: Guard | None = None) -> BuildResult:
        result = build_snapshot(self.paths, self.settings, self.cache, mount=self.mount)
        if guard is not None and guard(result) is not None:
            return result  # refused: not published
        if result.snapshot is not None:
            self.snapshot = result.snapshot
        return result

    def current(self) -> Snapshot | None:
        return self.snapshot


def watch_events(
    paths: Sequence[Path | str],
    settings: Settings | None = None,
    *,
    stop: threading.Event | None = None,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    extra_paths: Sequence[Path | str] = (),
    poll_s: float = 0.1,
    on_start: Callable[[ConfigWatcher], None] | None = None,
) -> Generator[ReloadEvent, None, None]:
    """Load the config, then yield an event per reload attempt until ``stop`` is set.

    The first event is ``loaded`` (or ``error`` with ``serving`` None when the initial
    config is broken); an ``mcp_drift`` event follows the attempt whose build found it.
    The folders in ``settings.pack_dirs`` are watched too. The generator checks ``stop``
    every ``poll_s`` seconds; closing it (or leaving the ``for`` loop) stops the watcher
    and closes the MCP sessions as well. ``on_start`` is handed the watcher before it
    starts (``toolrt watch`` prints its publish mode).
    """
    settings = settings or Settings()
    roots = [Path(p) for p in paths]
    pool = McpPool()  # started on first use: a config without McpServers never starts it
    mount, drift = live_mount(pool, roots)
    holder = _SnapshotHolder(roots, settings, mount)
    events: queue.Queue[ReloadEvent] = queue.Queue()
    packs = [p for p in settings.pack_dirs if Path(p).is_dir()]
    watcher = ConfigWatcher(
        roots,
        holder.reload,
        current=holder.current,
        on_event=events.put,
        debounce_ms=debounce_ms,
        extra_paths=[*extra_paths, *packs],
        settings=settings,
    )
    drift.attach(watcher)
    try:
        if on_start is not None:
            on_start(watcher)
        stop = stop or threading.Event()
        # Watch first, then load: an edit made during the initial load is then not lost.
        watcher.start()
        watcher.reload_now()
        while not stop.is_set():
            try:
                event = events.get(timeout=poll_s)
            except queue.Empty:
                continue
            yield event
    finally:
        watcher.stop()
        pool.close()  # ends the sessions and the stdio servers' process trees
