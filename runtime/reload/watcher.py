"""The config watcher: a daemon thread that publishes a new snapshot from a stable view
of the config files (see :mod:`runtime.reload` for the publish modes and event kinds)."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import watchfiles
from loguru import logger

from runtime.config.compile import BuildResult
from runtime.config.view import Fingerprint, fingerprint, marker_signature
from runtime.reload.events import PublishMode, ReloadEvent, held_event, log_event, weakenings
from runtime.reload.targets import ChangeFilter, WatchTargets, hashless, marker_path, watch_identity, watch_targets
from runtime.settings import Settings
from runtime.snapshot import Snapshot

# Quiet period before a batch of changes is reloaded. Editors and ConfigMap updates
# write a burst of events within a few milliseconds; 50 ms groups them while keeping
# write-to-serving latency (quiet period + build) well under 300 ms.
DEFAULT_DEBOUNCE_MS = 50
# A steady stream of writes still reloads at least this often.
DEFAULT_MAX_WAIT_MS = 500
# How often the watch loop comes back to Python with no changes (how the watcher learns
# it is set up). The Rust side checks the stop event every debounce step regardless.
_IDLE_WAKE_MS = 200
_RESTART_PAUSE_S = 1.0


def _accepts_guard(reload: Callable[..., Any]) -> bool:
    try:
        return "guard" in inspect.signature(reload).parameters
    except (TypeError, ValueError):
        return False


Guard = Callable[[BuildResult], str | None]


class ConfigWatcher:
    """Watches config paths in a daemon thread and reloads on relevant changes.

    ``reload`` builds and swaps (only when clean) and returns the :class:`BuildResult`;
    when it takes a ``guard`` keyword (as :meth:`runtime.runtime.Runtime.reload` does),
    the guard is called with the build before the swap and may refuse it: that is how
    the watcher re-checks the files after compiling and holds back removals.
    ``current`` returns the snapshot serving now. Every attempt, whether triggered by a
    file change or by :meth:`reload_now`, runs under one lock, becomes a
    :class:`ReloadEvent`, is logged and counted, and goes to ``on_event`` (whose
    exceptions are swallowed and counted in ``callback_errors``).

    ``settle_ms`` is the settle window (default: the ``reload_settle_ms`` setting);
    ``marker`` turns on marker mode (default: the ``reload_marker`` setting), see the module.
    ``extra_paths`` are watched like config directories: pass the folders of included
    packs (e.g. ``settings.pack_dirs``). Changes made before :meth:`start` returns are
    not seen; call :meth:`reload_now` to catch up if that matters.
    """

    def __init__(
        self,
        paths: Sequence[Path | str],
        reload: Callable[..., BuildResult],
        *,
        current: Callable[[], Snapshot | None],
        on_event: Callable[[ReloadEvent], None] | None = None,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
        extra_paths: Sequence[Path | str] = (),
        settle_ms: int | None = None,
        marker: Path | str | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.paths = [Path(p) for p in (*paths, *extra_paths)]
        self.debounce_ms = max(1, int(debounce_ms))
        self.max_wait_ms = max(self.debounce_ms, int(max_wait_ms))
        if settle_ms is None or marker is None:
            settings = settings or Settings()
            settle_ms = settings.reload_settle_ms if settle_ms is None else settle_ms
            marker = settings.reload_marker if marker is None else marker
        self.settle_ms = max(1, int(settle_ms))
        self.marker: Path | None = marker_path(marker, [Path(p) for p in paths]) if marker else None
        self._reload = reload
        self._guarded = _accepts_guard(reload)
        self._current = current
        self._on_event = on_event
        self._lock = threading.RLock()  # RLock: a callback may call reload_now()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._view: Fingerprint | None = None  # the view of the watcher's last attempt
        self._marker_seen = marker_signature(self.marker) if self.marker is not None else None
        self.reloads_ok = 0
        self.reloads_failed = 0
        self.reloads_held = 0
        self.reloads_discarded = 0  # builds thrown away because the files changed while compiling
        self.callback_errors = 0
        self.watch_errors = 0
        # Diagnostics (and the tests' positive signals): file system changes the filter
        # dropped, and how often the watch loop came back with nothing left to handle.
        # A change seen before an idle wake has been handled (or dropped) by then.
        self.changes_ignored = 0
        self.idle_wakes = 0
        self.last_error: ReloadEvent | None = None  # the latest failed attempt; None once one succeeds
        self.last_event: ReloadEvent | None = None
        self._attempting: int | None = None  # the thread running an attempt (see notify)
        self._notes: list[ReloadEvent] = []  # events its build raised, delivered after its own
        self._files: dict[str, Callable[[], None]] = {}  # watch_file: path -> what its change calls

    @property
    def mode(self) -> PublishMode:
        """``settle`` (publish from a view stable for ``settle_ms``) or ``marker``."""
        return "marker" if self.marker is not None else "settle"

    def describe_mode(self) -> str:
        """One line naming the publish mode, for ``toolrt watch`` and logs."""
        if self.marker is not None:
            return f"publish: marker (reload when {self.marker} changes)"
        return f"publish: settle (files unchanged for {self.settle_ms} ms; removals wait {2 * self.settle_ms} ms)"

    def watch_file(self, path: Path | str, on_change: Callable[[], None]) -> None:
        """Call ``on_change`` (on the watch thread) whenever the file at ``path`` changes,
        is created or removed: a file beside the config that is not config (the MCP lock
        file, whose change makes the drift check read it again). Its change is no reload
        attempt, in either publish mode. Its folder is watched; it may be registered
        before or after :meth:`start`."""
        self._files[os.path.abspath(path)] = on_change

    # -- lifecycle ------------------------------------------------------------

    def start(self, wait_s: float | None = 5.0) -> ConfigWatcher:
        """Start the watch thread; wait up to ``wait_s`` until changes are being seen."""
        with self._lock:
            if self._thread is not None:
                return self
            # A fresh event per start: a thread that outlived stop()'s join keeps its own, set one.
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(self._stop,), name="toolrt-config-watcher", daemon=True
            )
            self._thread.start()
        if wait_s:
            self._ready.wait(wait_s)
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop watching and join the thread. Safe to call more than once."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            try:
                thread.join(timeout)
            except RuntimeError:
                # start() was interrupted (Ctrl-C) before the thread began: nothing to join,
                # and a thread that begins after all finds its stop event already set.
                pass
        self._thread = None
        self._ready.clear()

    @property
    def running(self) -> bool:
        """True while the watch thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def ready(self) -> bool:
        """True once the watch thread is receiving file system events."""
        return self._ready.is_set()

    def __enter__(self) -> ConfigWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> dict[str, int]:
        """Counters for metrics."""
        return {
            "reloads_ok": self.reloads_ok,
            "reloads_failed": self.reloads_failed,
            "reloads_held": self.reloads_held,
            "reloads_discarded": self.reloads_discarded,
            "callback_errors": self.callback_errors,
            "watch_errors": self.watch_errors,
        }

    # -- attempts ---------------------------------------------------------------

    def reload_now(self) -> ReloadEvent:
        """Run one reload attempt now (serialized with the watcher's own attempts).

        An explicit call is the application's decision: it is neither settled nor held."""
        event = self._attempt(())
        assert event is not None  # noqa: S101 - no guard, so never discarded
        return event

    def _attempt(
        self, changes: Sequence[str], view: Fingerprint | None = None, *, confirmed: bool = False
    ) -> ReloadEvent | None:
        """One build. With a ``view`` (the watcher's own attempts) the build is published
        only if the files still match it afterwards (else None: discarded) and, unless
        ``confirmed``, only if it weakens nothing (else a ``held`` event). Events the build
        raised (:meth:`notify`) are delivered after the attempt's own."""
        with self._turn():
            return self._build(changes, view, confirmed=confirmed)

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """One attempt or watched-file callback at a time; the events it raises
        (:meth:`notify`) are delivered once it is done, when no lock of its own is held."""
        with self._lock:
            outer, self._attempting = self._attempting, threading.get_ident()
            try:
                yield
            finally:
                self._attempting = outer
                notes, self._notes = self._notes, []
                for note in notes:
                    self._deliver(self._filled(note))

    def notify(self, event: ReloadEvent) -> None:
        """Hand ``event``, one that is not an attempt's (``mcp_drift``), to ``on_event``.

        Raised by a build this watcher runs, it is delivered right after that attempt's
        event (published, held or discarded alike); from any other thread, at once (it
        never waits for an attempt: that attempt may be waiting for the caller's build).
        ``serving`` and ``mode`` are filled in."""
        if self._attempting == threading.get_ident():
            self._notes.append(event)
        else:
            self._deliver(self._filled(event))

    def _filled(self, event: ReloadEvent) -> ReloadEvent:
        current = self._current()
        return dataclasses.replace(event, serving=current.version if current is not None else None, mode=self.mode)

    def _build(self, changes: Sequence[str], view: Fingerprint | None, *, confirmed: bool) -> ReloadEvent | None:
        previous = self._current()
        started = time.perf_counter()
        verdict: list[str] = []

        def guard(result: BuildResult) -> str | None:
            if view is not None and fingerprint(self.paths, with_hash=True) != view:
                verdict.append("changed")
                return "changed"
            if view is not None and not confirmed and self.marker is None and result.snapshot is not None:
                removed = weakenings(self._current(), result.snapshot)
                if removed:
                    verdict.append("held")
                    verdict.extend(removed)
                    return "held"
            return None

        try:
            result = self._reload(guard=guard) if self._guarded and view is not None else self._reload()
        except Exception as err:  # noqa: BLE001 - a crashing reload must not end the watcher
            event = self._crashed(err, previous, (time.perf_counter() - started) * 1000)
        else:
            duration = (time.perf_counter() - started) * 1000
            if verdict[:1] == ["changed"]:
                self.reloads_discarded += 1
                logger.bind(paths=list(changes)).debug(
                    "config changed while compiling: build discarded, waiting for a stable view"
                )
                return None
            if verdict[:1] == ["held"] and result.snapshot is not None:
                event = held_event(result.snapshot, previous, tuple(verdict[1:]), duration, self.settle_ms)
            else:
                event = ReloadEvent.from_build(result, previous, self._current(), duration)
        event = dataclasses.replace(event, mode=self.mode)
        self._count(event)
        log_event(event, changes)
        self._deliver(event)
        return event

    def _crashed(self, err: Exception, previous: Snapshot | None, duration_ms: float) -> ReloadEvent:
        version = previous.version if previous is not None else None
        error = {"file": "", "line": 0, "col": 0, "code": "reload-crashed", "message": f"{type(err).__name__}: {err}"}
        return ReloadEvent("error", None, version, (), (error,), version, round(duration_ms, 1))

    def _count(self, event: ReloadEvent) -> None:
        self.last_event = event
        if event.ok:
            self.reloads_ok += 1
            self.last_error = None
        elif event.event == "held":
            self.reloads_held += 1
        else:
            self.reloads_failed += 1
            self.last_error = event

    def _deliver(self, event: ReloadEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception as err:  # noqa: BLE001 - the application's callback must not end the watcher
            self.callback_errors += 1
            logger.bind(reload_event=event.event).warning(
                "config reload callback raised {}: {}", type(err).__name__, err
            )

    # -- publishing from a stable view -------------------------------------------

    def _changed(self, changes: Sequence[str], stop: threading.Event) -> None:
        """Files changed: publish by the active mode."""
        if self.marker is not None:
            self._publish_on_marker(changes, stop)
        else:
            self._publish_settled(changes, stop)

    def _publish_settled(self, changes: Sequence[str], stop: threading.Event) -> None:
        while not stop.is_set():
            view = self._stable_view(stop)
            if view is None:
                return
            if view == self._view:
                return  # the same files as the last attempt: nothing new to build
            event = self._attempt(changes, view)
            if event is None:
                continue  # changed while compiling: settle again
            if event.event == "held":
                if not self._stays(view, stop):
                    continue  # a removal that did not last: settle on what came next
                event = self._attempt(changes, view, confirmed=True)
                if event is None:
                    continue
            self._view = view
            return

    def _publish_on_marker(self, changes: Sequence[str], stop: threading.Event) -> None:
        assert self.marker is not None  # noqa: S101 - only called in marker mode
        while not stop.is_set():
            signature = marker_signature(self.marker)
            if signature is None or signature == self._marker_seen:
                if changes:
                    logger.bind(paths=list(changes), marker=str(self.marker)).debug(
                        "config changed without a new commit marker: not published"
                    )
                return
            view = fingerprint(self.paths, with_hash=True)
            event = self._attempt(changes, view)
            if event is None or marker_signature(self.marker) != signature:
                continue  # the files or the marker moved while compiling: build the newest commit
            self._marker_seen = signature
            self._view = view
            return

    def _poll_step(self) -> float:
        return max(0.005, min(0.1, self.settle_ms / 8000))

    def _stable_view(self, stop: threading.Event) -> Fingerprint | None:
        """Wait until the config files stay unchanged for the settle window; return the
        view (with content hashes) they settled on, or None when stopped."""
        window = self.settle_ms / 1000
        step = self._poll_step()
        seen = fingerprint(self.paths)
        since = time.monotonic()
        while True:
            if stop.wait(min(step, max(0.0, since + window - time.monotonic())) or 0.001):
                return None
            now = fingerprint(self.paths)
            if now != seen:
                seen, since = now, time.monotonic()
                continue
            if time.monotonic() - since >= window:
                view = fingerprint(self.paths, with_hash=True)
                if hashless(view) == seen:
                    return view
                seen, since = fingerprint(self.paths), time.monotonic()

    def _stays(self, view: Fingerprint, stop: threading.Event) -> bool:
        """True when the files keep matching ``view`` for another settle window."""
        deadline = time.monotonic() + self.settle_ms / 1000
        expected = hashless(view)
        step = self._poll_step()
        while time.monotonic() < deadline:
            if stop.wait(step) or fingerprint(self.paths) != expected:
                return False
        return fingerprint(self.paths, with_hash=True) == view

    # -- the watch thread -------------------------------------------------------

    def _ignored(self, path: str) -> None:
        self.changes_ignored += 1

    def _run(self, stop: threading.Event) -> None:
        catch_up = False  # the first watch needs none: the Runtime was built from the files
        while not stop.is_set():
            try:
                if not self._watch(stop, catch_up=catch_up):
                    return
            except Exception as err:  # noqa: BLE001 - e.g. a watched folder vanished: wait, then watch again
                self.watch_errors += 1
                self._ready.clear()
                logger.bind(error=type(err).__name__).warning(
                    "config watcher failed ({}: {}); watching again in {} s", type(err).__name__, err, _RESTART_PAUSE_S
                )
                if stop.wait(_RESTART_PAUSE_S):
                    return
            catch_up = True  # changes may have been missed while no watch was in place

    def _targets(self) -> WatchTargets:
        targets = watch_targets([*self.paths, *([self.marker] if self.marker is not None else [])])
        folders = [os.path.dirname(path) for path in list(self._files)]
        watch = tuple(dict.fromkeys([*targets.watch, *(f for f in folders if os.path.isdir(f))]))
        return dataclasses.replace(targets, watch=watch)

    def _files_changed(self, paths: Sequence[str]) -> None:
        """Call what :meth:`watch_file` registered for ``paths`` (all of them when empty)."""
        for path in paths or list(self._files):
            on_change = self._files.get(path)
            if on_change is None:
                continue
            try:
                with self._turn():  # the lock check's events reach the listener after its lock is released
                    on_change()
            except Exception as err:  # noqa: BLE001 - the application's callback must not end the watcher
                self.callback_errors += 1
                logger.bind(path=path).warning("watched file callback raised {}: {}", type(err).__name__, err)

    def _watch(self, stop: threading.Event, *, catch_up: bool) -> bool:
        """Watch until stopped (False) or until the folders to watch change (True).

        With ``catch_up``, the files are looked at once the new watches are in place: a
        change made after the last look and before the watches existed (a folder deleted
        and created again, then written) is seen by no watch, only by that look."""
        targets = self._targets()
        if not targets.watch:
            raise FileNotFoundError("no existing config path to watch")
        identity = watch_identity(targets.watch)  # before the watches: a swap after it is caught below
        changes_seen = watchfiles.watch(
            *targets.watch,
            watch_filter=ChangeFilter(targets, on_ignored=self._ignored, files=self._files),
            debounce=self.max_wait_ms,
            step=self.debounce_ms,
            stop_event=stop,
            rust_timeout=_IDLE_WAKE_MS,
            yield_on_timeout=True,  # the first (empty) yield says the watches are in place
            raise_interrupt=False,  # never turn signals into exceptions in a library thread
        )
        try:
            for changes in changes_seen:
                self._ready.set()
                if stop.is_set():
                    return False
                if catch_up:
                    catch_up = False
                    self._files_changed(())
                    self._changed((), stop)
                elif not changes:
                    self.idle_wakes += 1
                    continue
                else:
                    paths = {path for _, path in changes}
                    self._files_changed(sorted(paths & self._files.keys()))
                    config = sorted(paths - self._files.keys())
                    if config:
                        self._changed(config, stop)
                    if any(change == watchfiles.Change.deleted and path in targets.watch for change, path in changes):
                        return True  # a watched folder itself went: its watch is dead, whatever is there now
                # A config folder removed (its watch is gone), created (it was watched
                # through its parent) or removed and created again before this look (the
                # watch is on the old folder; a file system may give the new one the old
                # inode, hence the check above): watch the new set of folders.
                if self._targets().watch != targets.watch or watch_identity(targets.watch) != identity:
                    return True
        finally:
            changes_seen.close()  # release the OS watches now, not when the generator is collected
        return False
