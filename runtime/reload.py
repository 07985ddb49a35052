"""Hot reload: watch the config files and swap in a new snapshot when an edit is clean.

:class:`ConfigWatcher` runs ``watchfiles.watch`` in a daemon thread. A batch of
relevant changes (YAML files, and the ``..data`` symlink swaps of Kubernetes
ConfigMap volumes) is debounced into one call of the ``reload`` callable, which
builds a snapshot off the hot path and swaps it in only when the build is clean
(:meth:`runtime.runtime.Runtime.reload` does exactly that). Each attempt becomes a
:class:`ReloadEvent`: logged, counted, and handed to an optional callback.

:func:`watch_events` is the engine of ``toolrt watch``: it keeps its own snapshot and
yields the initial load and every reload attempt as events.

Publishing (what makes an edit go live): in the default *settle* mode a batch of
changes is published only from a stable view: every config file (and pack folder)
unchanged in inode, size, times and content for ``settle_ms`` after the last change
(setting ``reload_settle_ms``), and unchanged again after compiling, so that a file
written in steps, deleted and recreated, or a folder renamed away and back is never
compiled half-way. A reload that removes tools, Policy documents, deny or ask rules (or
changes one), or a tool's business rules is *held*: it goes live only once the view has
stayed the same for a second full window. In *marker* mode (setting ``reload_marker``)
nothing is published until a commit marker changes: a file a deploy step writes last,
or the ``..data`` symlink a Kubernetes ConfigMap volume swaps.

Event kinds (``ReloadEvent.event``):

- ``loaded``: a clean build while nothing was serving (the initial load, or the first
  clean build after an initial config that was broken);
- ``reloaded``: a clean build replaced the serving snapshot. A rebuild whose content
  is identical (a comment, key order, a touched file) yields the same version: it is
  still reported, with ``version == previous`` and no changed tools, so a consumer
  sees every attempt and learns that an earlier error is gone;
- ``error``: the build failed; ``serving`` is the version that keeps serving;
- ``held``: a clean build that removes or weakens something was held back for another
  settle window (``version`` is the held build, ``errors`` says what it removes).

The watcher never installs signal handlers and never configures logging: it only
emits ``loguru`` records (with structured extras) for the application to route.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import watchfiles
from loguru import logger

from runtime.config.cache import CompileCache
from runtime.config.compile import BuildResult, build_snapshot
from runtime.config.files import YAML_SUFFIXES
from runtime.config.view import Fingerprint, fingerprint, marker_signature
from runtime.settings import Settings
from runtime.snapshot import CompiledTool, Snapshot

EventKind = Literal["loaded", "reloaded", "error", "held"]
PublishMode = Literal["settle", "marker"]

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
_LOGGED_ERRORS = 10


@dataclass(frozen=True)
class ReloadEvent:
    """One load or reload attempt, in the shape ``toolrt watch`` prints.

    ``version`` is the version that was built (None when the build failed),
    ``previous`` the version serving before the attempt, ``serving`` the version
    serving after it, ``changed`` the sorted names of tools added, removed or changed,
    ``errors`` the build's errors (``file``, ``line``, ``col``, ``code``, ``message``),
    ``mode`` the publish mode of the watcher that made the attempt.
    """

    event: EventKind
    version: str | None
    previous: str | None
    changed: tuple[str, ...] = ()
    errors: tuple[Mapping[str, Any], ...] = ()
    serving: str | None = None
    duration_ms: float = 0.0
    mode: PublishMode | None = None  # the watcher's publish mode (settle or marker)

    @property
    def ok(self) -> bool:
        """True when the attempt produced a clean snapshot that now serves."""
        return self.event in ("loaded", "reloaded")

    def to_dict(self) -> dict[str, Any]:
        """The contract's keys, in order, plus ``duration_ms``."""
        return {
            "event": self.event,
            "version": self.version,
            "previous": self.previous,
            "changed": list(self.changed),
            "errors": [dict(e) for e in self.errors],
            "serving": self.serving,
            "duration_ms": self.duration_ms,
            **({"mode": self.mode} if self.mode is not None else {}),
        }

    def to_json(self) -> str:
        """One line of JSON (no newlines inside, whatever the messages hold)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_build(
        cls, result: BuildResult, previous: Snapshot | None, serving: Snapshot | None, duration_ms: float
    ) -> ReloadEvent:
        """The event for one build: ``previous`` served before it, ``serving`` after."""
        previous_version = previous.version if previous is not None else None
        serving_version = serving.version if serving is not None else None
        duration = round(duration_ms, 1)
        if result.snapshot is None:
            errors = tuple(
                {
                    "file": p.location.file,
                    "line": p.location.line,
                    "col": p.location.col,
                    "code": p.code,
                    "message": p.message,
                }
                for p in result.errors
            )
            return cls("error", None, previous_version, (), errors, serving_version, duration)
        kind: EventKind = "loaded" if previous is None else "reloaded"
        return cls(
            kind,
            result.snapshot.version,
            previous_version,
            tuple(diff_tools(previous, result.snapshot)),
            (),
            serving_version,
            duration,
        )


def diff_tools(old: Snapshot | None, new: Snapshot) -> list[str]:
    """Sorted names of the tools added, removed or changed between two snapshots.

    A tool counts as changed when any of its versions differs in its document
    (metadata and spec), resolved handler, output limits or redaction patterns.
    Policy edits change the snapshot version but no tool's own definition, so they do
    not list tools here. With no ``old`` snapshot every tool is new.
    """
    before: Mapping[str, Mapping[str, CompiledTool]] = old.tool_versions if old is not None else {}
    after = new.tool_versions
    return sorted(name for name in set(before) | set(after) if not _same_versions(before.get(name), after.get(name)))


def _same_versions(a: Mapping[str, CompiledTool] | None, b: Mapping[str, CompiledTool] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(_same_tool(a[v], b[v]) for v in a)


def _same_tool(a: CompiledTool, b: CompiledTool) -> bool:
    # Unchanged documents come back from the compile cache as the same model objects,
    # so the identity checks make comparing 1,000 unchanged tools cheap.
    return (
        (a.metadata is b.metadata or a.metadata == b.metadata)
        and (a.spec is b.spec or a.spec == b.spec)
        and a.output == b.output
        and a.handler == b.handler
        and _redaction_key(a) == _redaction_key(b)
    )


def _redaction_key(tool: CompiledTool) -> tuple[Any, ...]:
    # Compiled RE2 objects compare by identity: compare their pattern text instead.
    return tuple(
        (r.name, tuple((p.name, p.replacement, p.validator, getattr(p.regex, "pattern", None)) for p in r.patterns))
        for r in tool.redaction
    )


@dataclass(frozen=True)
class _Targets:
    """What to hand to watchfiles, and which changed paths matter."""

    watch: tuple[str, ...]  # existing directories (or files) to watch
    dirs: tuple[str, ...]  # config directories: YAML anywhere under them matters
    files: tuple[str, ...]  # config files given by name: only they (and ConfigMap entries beside them) matter


def _targets(paths: Sequence[Path]) -> _Targets:
    watch: dict[str, None] = {}
    dirs: list[str] = []
    files: list[str] = []
    for path in paths:
        absolute = os.path.abspath(path)
        if os.path.isfile(absolute):
            # Watch the folder, not the file: an editor that saves by rename replaces the
            # file's inode, and a watch on the old inode would go quiet.
            files.append(absolute)
            watch.setdefault(os.path.dirname(absolute), None)
            continue
        dirs.append(absolute)
        if os.path.isdir(absolute):
            watch.setdefault(absolute, None)
        elif os.path.isdir(os.path.dirname(absolute)):
            watch.setdefault(os.path.dirname(absolute), None)  # so that creating it is seen
        else:
            logger.bind(path=absolute).warning(
                "config path {} does not exist and neither does its parent: not watched", absolute
            )
    return _Targets(tuple(watch), tuple(dirs), tuple(files))


def _is_configmap_entry(name: str) -> bool:
    """``..data``, ``..data_tmp`` and the ``..2026_01_01_...`` folders of a ConfigMap volume."""
    return name.startswith("..") and len(name) > 2


class _ChangeFilter:
    """watchfiles filter: keep the changes a config load could see."""

    def __init__(self, targets: _Targets) -> None:
        self.dirs = targets.dirs
        self.files = frozenset(targets.files)
        self.file_dirs = frozenset(os.path.dirname(f) for f in targets.files)

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        if path in self.files or path in self.dirs:
            return True
        name = os.path.basename(path)
        if os.path.dirname(path) in self.file_dirs and _is_configmap_entry(name):
            return True  # a file given by name can be a symlink through ..data
        for root in self.dirs:
            if path.startswith(root + os.sep):
                return self._under_dir(change, path, path[len(root) + 1 :])
        return False

    @staticmethod
    def _under_dir(change: watchfiles.Change, path: str, relative: str) -> bool:
        parts = relative.split(os.sep)
        if any(_is_configmap_entry(p) for p in parts):
            return True
        if any(p.startswith(".") for p in parts):
            return False  # loading skips hidden entries: editor swap files, .git, ...
        name = parts[-1]
        if name.endswith(YAML_SUFFIXES):
            return True
        # A folder added, renamed or removed may carry YAML files with it; a removed
        # path cannot be checked, so an extension-less one is taken to be a folder.
        return "." not in name and (change == watchfiles.Change.deleted or os.path.isdir(path))


def weakenings(old: Snapshot | None, new: Snapshot) -> list[str]:
    """What ``new`` takes away from ``old``: removed tools and Policy documents, deny and
    ask rules removed or changed, tools whose business rules were removed or changed.

    These are what a file caught half-written or deleted looks like, and what would let
    a call through that was stopped before: such a reload is held back (see the module).
    """
    if old is None:
        return []
    found = [f"tool {name}" for name in sorted(set(old.tool_versions) - set(new.tool_versions))]
    found += [f"Policy {name}" for name in sorted({p.name for p in old.policies} - {p.name for p in new.policies})]
    kept = {_rule_key(rule) for rule in new.policy_rules}
    found += [
        f"{rule.effect.value} rule {rule.policy}/{rule.name}"
        for rule in old.policy_rules
        if rule.effect.value in ("deny", "ask") and _rule_key(rule) not in kept
    ]
    for name, versions in old.tool_versions.items():
        after = new.tool_versions.get(name, {})
        for version, tool in versions.items():
            other = after.get(version)
            if other is not None and not set(tool.spec.rules) <= set(other.spec.rules):
                found.append(f"business rules of tool {name}")
    return found


def _rule_key(rule: Any) -> tuple[Any, ...]:
    when = (
        rule.when.source
        if rule.when is not None and hasattr(rule.when, "source")
        else repr(rule.when)
        if rule.when is not None
        else None
    )
    commands = repr(rule.command_patterns) if rule.command_patterns is not None else None
    return (rule.policy, rule.name, rule.effect, rule.tool_globs, when, commands, rule.enforce, rule.on_error)


def _hashless(view: Fingerprint) -> Fingerprint:
    return tuple((*entry[:-1], "") if len(entry) == 7 else entry for entry in view)


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
        self.marker: Path | None = _marker_path(marker, [Path(p) for p in paths]) if marker else None
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
        self.last_error: ReloadEvent | None = None  # the latest failed attempt; None once one succeeds
        self.last_event: ReloadEvent | None = None

    @property
    def mode(self) -> PublishMode:
        """``settle`` (publish from a view stable for ``settle_ms``) or ``marker``."""
        return "marker" if self.marker is not None else "settle"

    def describe_mode(self) -> str:
        """One line naming the publish mode, for ``toolrt watch`` and logs."""
        if self.marker is not None:
            return f"publish: marker (reload when {self.marker} changes)"
        return f"publish: settle (files unchanged for {self.settle_ms} ms; removals wait {2 * self.settle_ms} ms)"

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
            thread.join(timeout)
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
        ``confirmed``, only if it weakens nothing (else a ``held`` event)."""
        with self._lock:
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
                    event = _held(result.snapshot, previous, tuple(verdict[1:]), duration, self.settle_ms)
                else:
                    event = ReloadEvent.from_build(result, previous, self._current(), duration)
            event = dataclasses.replace(event, mode=self.mode)
            self._count(event)
            _log(event, changes)
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
                if _hashless(view) == seen:
                    return view
                seen, since = fingerprint(self.paths), time.monotonic()

    def _stays(self, view: Fingerprint, stop: threading.Event) -> bool:
        """True when the files keep matching ``view`` for another settle window."""
        deadline = time.monotonic() + self.settle_ms / 1000
        expected = _hashless(view)
        step = self._poll_step()
        while time.monotonic() < deadline:
            if stop.wait(step) or fingerprint(self.paths) != expected:
                return False
        return fingerprint(self.paths, with_hash=True) == view

    # -- the watch thread -------------------------------------------------------

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if not self._watch(stop):
                    return
            except Exception as err:  # noqa: BLE001 - e.g. a watched folder vanished: wait, then watch again
                self.watch_errors += 1
                self._ready.clear()
                logger.bind(error=type(err).__name__).warning(
                    "config watcher failed ({}: {}); watching again in {} s", type(err).__name__, err, _RESTART_PAUSE_S
                )
                if stop.wait(_RESTART_PAUSE_S):
                    return
            self._changed((), stop)  # changes may have been missed while no watch was in place

    def _watch(self, stop: threading.Event) -> bool:
        """Watch until stopped (False) or until the folders to watch change (True)."""
        targets = _targets([*self.paths, *([self.marker] if self.marker is not None else [])])
        if not targets.watch:
            raise FileNotFoundError("no existing config path to watch")
        changes_seen = watchfiles.watch(
            *targets.watch,
            watch_filter=_ChangeFilter(targets),
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
                if changes:
                    self._changed(sorted({path for _, path in changes}), stop)
                    # A config folder removed (its watch is gone) or created (it was watched
                    # through its parent): watch the new set of folders.
                    if (
                        _targets([*self.paths, *([self.marker] if self.marker is not None else [])]).watch
                        != targets.watch
                    ):
                        return True
        finally:
            changes_seen.close()  # release the OS watches now, not when the generator is collected
        return False


def _marker_path(marker: Path | str, paths: Sequence[Path]) -> Path:
    """An absolute marker as given; a relative one in the first config folder (or the
    folder of the first config file)."""
    given = Path(marker)
    if given.is_absolute() or not paths:
        return given
    first = Path(os.path.abspath(paths[0]))
    base = first.parent if first.suffix in YAML_SUFFIXES else first
    return base / given


def _held(
    snapshot: Snapshot, previous: Snapshot | None, removed: tuple[str, ...], duration_ms: float, settle_ms: int
) -> ReloadEvent:
    previous_version = previous.version if previous is not None else None
    shown = ", ".join(removed[:_LOGGED_ERRORS]) + (
        f" and {len(removed) - _LOGGED_ERRORS} more" if len(removed) > _LOGGED_ERRORS else ""
    )
    message = f"held back: the new config removes or changes {shown}; it goes live if the files stay as they are for another {settle_ms} ms"
    error = {"file": "", "line": 0, "col": 0, "code": "reload-held", "message": message}
    return ReloadEvent(
        "held",
        snapshot.version,
        previous_version,
        tuple(diff_tools(previous, snapshot)),
        (error,),
        previous_version,
        round(duration_ms, 1),
    )


def _log(event: ReloadEvent, changes: Sequence[str]) -> None:
    extra = {
        "reload_event": event.event,
        "version": event.version,
        "previous": event.previous,
        "serving": event.serving,
        "changed": list(event.changed),
        "duration_ms": event.duration_ms,
        "paths": list(changes),
    }
    if event.event == "held":
        logger.bind(**extra, errors=[dict(e) for e in event.errors]).warning(
            "config reload {} -> {} {}", event.previous, event.version, event.errors[0]["message"]
        )
        return
    if event.ok:
        logger.bind(**extra).info(
            "config {}: {} -> {} ({} changed tools: {}) in {} ms",
            event.event,
            event.previous,
            event.version,
            len(event.changed),
            ", ".join(event.changed) or "none",
            event.duration_ms,
        )
        return
    lines = [f"{_where(e)}: {e['code']}: {e['message']}" for e in event.errors[:_LOGGED_ERRORS]]
    more = f"\n... and {len(event.errors) - _LOGGED_ERRORS} more" if len(event.errors) > _LOGGED_ERRORS else ""
    logger.bind(**extra, errors=[dict(e) for e in event.errors]).warning(
        "config reload failed with {} error(s), still serving {}:\n{}{}",
        len(event.errors),
        event.serving,
        "\n".join(lines),
        more,
    )


def _where(error: Mapping[str, Any]) -> str:
    """``file:line:col``, or just the file for a problem with the whole file (line 0)."""
    return f"{error['file']}:{error['line']}:{error['col']}" if error["line"] > 0 else str(error["file"])


@dataclass
class _SnapshotHolder:
    """The current snapshot of :func:`watch_events`: rebuilt with a compile cache,
    replaced only by a clean build (the way Runtime.reload does it)."""

    paths: Sequence[Path]
    settings: Settings
    cache: CompileCache = field(default_factory=CompileCache)
    snapshot: Snapshot | None = None

    def reload(self, guard: Guard | None = None) -> BuildResult:
        result = build_snapshot(self.paths, self.settings, self.cache)
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
    config is broken). The folders in ``settings.pack_dirs`` are watched too. The
    generator checks ``stop`` every ``poll_s`` seconds; closing it (or leaving the
    ``for`` loop) stops the watcher as well. ``on_start`` is handed the watcher before
    it starts (``toolrt watch`` prints its publish mode).
    """
    settings = settings or Settings()
    roots = [Path(p) for p in paths]
    holder = _SnapshotHolder(roots, settings)
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
    if on_start is not None:
        on_start(watcher)
    stop = stop or threading.Event()
    # Watch first, then load: an edit made during the initial load is then not lost.
    watcher.start()
    try:
        watcher.reload_now()
        while not stop.is_set():
            try:
                event = events.get(timeout=poll_s)
            except queue.Empty:
                continue
            yield event
    finally:
        watcher.stop()
