"""The embedding API: :class:`Runtime` holds the current snapshot and runs turns."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import sqlite3
import threading
import uuid
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from loguru import logger

from runtime.audit import AuditWriter, JsonlSink, Sink, SqliteSink
from runtime.audit.auto import AutoSink, cpus
from runtime.audit.location import inside, store_path, workspace_dir
from runtime.audit.location import own_paths as audit_paths
from runtime.audit.record import call_item
from runtime.audit.remote import ProcessSink
from runtime.config.cache import CompileCache
from runtime.config.compile import BuildResult, build_snapshot
from runtime.config.files import builtin_pack_dirs, handler_paths
from runtime.config.problems import Location, Problem
from runtime.errors import ConfigError, ToolrtError
from runtime.execution.jobs import JobRegistry
from runtime.execution.proclimit import pids_v1_base
from runtime.execution.reaper import cgroup_base, sweep_stale_cgroups
from runtime.execution.sandbox import covered_paths, sandbox_available
from runtime.fleet import setup as fleet
from runtime.fleet.ending import SessionEnds
from runtime.loopthread import LoopThread
from runtime.mcpclient import McpPool
from runtime.metrics import Metrics
from runtime.pipeline import run_call
from runtime.pipeline.env import TurnEnv
from runtime.pipeline.permit import Approver, Permitter, would_ask
from runtime.pipeline.turn import run_turn
from runtime.policy.decision import PolicyPermitter
from runtime.policy.grants import SessionGrants
from runtime.policy.limits import Limits, LimitStore
from runtime.policy.placed import Where
from runtime.records import Call, Session, ToolResult
from runtime.reload import ConfigWatcher, ReloadEvent
from runtime.reload.mcpdrift import live_mount
from runtime.settings import Settings
from runtime.shaping.artifacts import ArtifactStore
from runtime.shaping.key_material import KeyIndex, key_dirs
from runtime.snapshot import Snapshot
from runtime.telemetry import trace_id_from_traceparent, tracing_for
from runtime.tools.workspace_tools import WorkspaceTools, lock_dir_for
from runtime.versions import CanaryMonitor
from runtime.workflow import WorkflowResult, new_run_id, run_named
from runtime.workflow.journal import Journal, JournalError, flush_journal, journal_for, journal_path
from runtime.workflow.resume import resume_run
from runtime.workflow.run import default_session

if TYPE_CHECKING:
    from runtime.telemetry.traces import Tracing

T = TypeVar("T")


def _run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end from sync code: on a new event loop, or on one in a
    worker thread when this thread already runs a loop (which cannot be re-entered)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _refused_empty(result: BuildResult, serving: int) -> BuildResult:
    """A clean build without a single tool while tools are serving: almost always a file
    caught half-written (truncated, not yet refilled) or a folder emptied by mistake.
    It is refused like a broken edit; the tools serving stay."""
    where = Location(result.files[0] if result.files else "config")
    problem = Problem(
        where,
        "no-tools",
        f"the new config declares no tools at all; the {serving} tool(s) serving are kept."
        " Restore the tool documents (or restart the runtime to serve none).",
    )
    return BuildResult(None, (*result.problems, problem), result.files, result.documents)


class Runtime:
    """Runs tool calls against a compiled config.

    ``config`` is a list of config paths (directories or YAML files). The snapshot is
    built once here (raising :class:`ConfigError` with every problem if the config is
    broken) and replaced only by a clean :meth:`reload`. Each turn reads the snapshot
    once and uses it for all of its calls.

    With ``watch`` (default: the ``hot_reload`` setting) the config paths are watched
    and every clean edit is swapped in (see :meth:`watch`). Call :meth:`close` when
    done: it stops the watcher and background jobs and writes the last audit records.

    ``tracer_provider`` is the OpenTelemetry TracerProvider that spans go to (default:
    the app's global one, when the ``tracing`` setting turns tracing on; see
    :mod:`runtime.telemetry`).

    A fleet of workers shares its limits and its log: ``limit_store`` (quotas,
    breakers; default: the ``limit_store`` setting, in memory unless a redis:// URL),
    ``grants`` (session grants; default: in Redis when the limit store setting is a
    Redis URL) and ``audit_sink`` (default: the ``audit_sink`` setting, SQLite unless
    a postgresql:// URL). A limit store or grants passed in are the app's to close;
    the ones the runtime made, and every audit sink, are closed by :meth:`close`.
    """

    def __init__(
        self,
        config: Sequence[Path | str],
        *,
        settings: Settings | None = None,
        workspace_root: Path | str | None = None,
        approver: Approver | None = None,
        permitter: Permitter | None = None,
        artifacts: ArtifactStore | None = None,
        watch: bool | None = None,
        tracer_provider: Any = None,
        limit_store: LimitStore | None = None,
        grants: SessionGrants | None = None,
        audit_sink: Sink | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self._paths = [Path(p) for p in config]
        self._cache = CompileCache()
        self.mcp = McpPool()  # sessions with the declared MCP servers, started on first use
        self.metrics = Metrics()  # runtime.metrics.snapshot() / .prometheus()
        self._mount, self._drift = live_mount(self.mcp, self._paths, self.metrics)  # their tools join every build
        result = build_snapshot(self._paths, self.settings, self._cache, mount=self._mount)
        if result.snapshot is None:
            self.mcp.close()
            raise ConfigError(result.problems)
        snapshot: Snapshot = result.snapshot
        self.last_reload_error: ConfigError | None = None
        self._reload_lock = threading.Lock()
        self.watcher: ConfigWatcher | None = None
        self.workspace_root = Path(
            workspace_root if workspace_root is not None else self.settings.workspace_root
        ).resolve()
        self._id_prefix = f"req_{uuid.uuid4().hex[:8]}_"
        self._turns = itertools.count(1)
        self.approver = approver
        self.artifacts = artifacts if artifacts is not None else ArtifactStore(self.artifact_path())
        # toolrt's own files are out of reach of the agent's command lines and file tools.
        self.where = Where.of(
            self.workspace_root,
            [*self.protected_paths(), *handler_paths(snapshot)],  # (handler modules beside the config too)
            self.settings.commands_outside_workspace,
            configs=self._config_paths(),
        )
        self.permitter: Permitter = permitter or PolicyPermitter(self.where)
        self._loop: LoopThread | None = None  # the runtime's own event loop, for sync callers
        self._loop_lock = threading.Lock()
        self._owned: list[Any] = []  # stores made here from the settings, closed by close()
        self.jobs = JobRegistry(index=self._made(fleet.job_index_for(self.settings)))
        # "allow for this session" answers, per session id
        self.grants: SessionGrants = grants if grants is not None else self._made(fleet.grants_for(self.settings))
        self.metrics.set_info("snapshot", {"version": snapshot.version})  # which config this worker serves
        # Outcomes per tool version; canaries that fail too often stop getting new sessions.
        self.canaries = CanaryMonitor()
        self.metrics.gauge_source("canaries", lambda: {"rolled_back": len(self.canaries.halts())})
        # OpenTelemetry spans, by the tracing setting and the app's provider (None: off).
        self.tracing: Tracing | None = tracing_for(self.settings.tracing, tracer_provider)
        # Quota counts and breaker states outlive snapshots: one store, a Limits per snapshot.
        self.limit_store: LimitStore = (
            limit_store if limit_store is not None else self._made(fleet.limit_store_for(self.settings))
        )
        self._current: tuple[Snapshot, Limits] = (snapshot, self._limits(snapshot))
        self._ends = SessionEnds(self._forget_session)  # session ends a down store could not record yet
        self.audit: AuditWriter | None = self._audit_writer(audit_sink)
        # With a shared Redis, this worker reports the snapshot it serves (`toolrt status`).
        self.presence = self._made(fleet.presence_for(self.settings, lambda: self.snapshot.version))
        if watch if watch is not None else self.settings.hot_reload:
            self.watch()
        # Commands run where toolrt's own paths are out of sight, where the machine allows it.
        self.hide: tuple[str, ...] = self._sandbox_cover()
        # Private keys in the workspace, ~/.ssh and /etc/ssh: scanned in a thread of its own.
        self.keys = KeyIndex(self.workspace_root if self.workspace_root.is_dir() else None, key_dirs())
        threading.Thread(target=self.keys.refresh, name="toolrt-key-scan", daemon=True).start()
        # file_read, file_edit, ...: one sandbox, read cache and lock directory for every turn.
        deny = (*self.settings.workspace_deny, *self.where.deny_globs())
        self.workspace_tools = (
            WorkspaceTools.create(
                self.workspace_root, deny, lock_dir_for(self.settings, self.workspace_root), self.where.inodes
            )
            if self.workspace_root.is_dir()
            else None
        )
        # cgroups of command supervisors that were SIGKILLed (with what still runs in them).
        threading.Thread(
            target=lambda: [sweep_stale_cgroups(base) for base in (cgroup_base(), pids_v1_base())],
            name="toolrt-cgroup-sweep",
            daemon=True,
        ).start()
        if self.workspace_tools is not None:
            # Temporary files of writers that crashed (a SIGKILL during file_edit): gone
            # before the agent could come across them, without delaying the start.
            threading.Thread(
                target=self.workspace_tools.editor.sweep_tree, name="toolrt-temp-sweep", daemon=True
            ).start()
            self.metrics.gauge_source("read_cache", self.workspace_tools.cache.stats)
            self.metrics.gauge_source("file_edit", self.workspace_tools.editor.stats)
        if self.audit is not None:
            audit = self.audit
            sink_stats = getattr(audit.sink, "stats", None)  # a PostgreSQL sink's spool and outage counters

            def audit_stats() -> dict[str, float]:
                found = {**audit.stats(), **(sink_stats() if sink_stats is not None else {})}
                return {k: v for k, v in found.items() if isinstance(v, int | float)}

            self.metrics.gauge_source("audit", audit_stats)

    def _sandbox_cover(self) -> tuple[str, ...]:
        """The paths the command sandbox covers (empty: no sandbox), by the
        ``command_sandbox`` setting and what this machine allows."""
        wanted = self.settings.command_sandbox
        if wanted == "off":
            return ()
        if not sandbox_available():
            if wanted == "on":
                message = (
                    "command_sandbox is `on`, but this machine does not allow mount and PID namespaces"
                    " (run as root or in a container that allows unshare, or set command_sandbox: auto)"
                )
                raise ConfigError([Problem(Location("settings"), "sandbox_unavailable", message)])
            return ()
        # Made now, so that the cover hides it: a folder made later by a command would not be.
        with contextlib.suppress(OSError):
            self.artifacts.root.mkdir(parents=True, exist_ok=True)
        entries = ((p.path, p.yaml_only, p.nested) for p in self.where.protected)
        return covered_paths(entries, self.where.root)

    def _made(self, store: T) -> T:
        if hasattr(store, "close"):
            self._owned.append(store)
        return store

    def _limits(self, snapshot: Snapshot) -> Limits:
        return Limits.from_policies(
            snapshot.policies, store=self.limit_store, on_store_error=self.settings.limit_store_on_error
        )

    def _audit_writer(self, given: Sink | None = None) -> AuditWriter | None:
        """The audit trail's writer, or None when it is off or cannot be opened (then
        a warning is logged: a broken audit log must not stop the agent)."""
        if given is not None:
            return AuditWriter(given)
        kind = self.settings.audit_sink
        if kind == "off":
            return None
        if fleet.is_postgres(kind):
            return AuditWriter(fleet.postgres_sink_for(self.settings, self.workspace_root))  # the writer closes it
        path = self.audit_path()
        # Published in the settings, so that runtime.settings.audit_store names the file written.
        self.settings = self.settings.model_copy(update={"audit_store": path})
        if inside(path, self.workspace_root):
            logger.warning("toolrt audit log {} is inside the workspace, where the agent's tools may reach it", path)
        try:
            if self.settings.audit_writer == "process":
                process_sink = ProcessSink(kind, path, untrusted=[self.workspace_root])
                process_sink.start()  # now, not with the first batch (see ProcessSink.start)
                sink: Sink = process_sink
            else:
                sink = SqliteSink(path) if kind == "sqlite" else JsonlSink(path)
                if self.settings.audit_writer == "auto" and cpus() >= 2:
                    sink = AutoSink(kind, path, sink, untrusted=[self.workspace_root])  # a child once calls come fast
        except (OSError, ToolrtError, sqlite3.Error) as err:
            logger.warning("toolrt audit log {} cannot be opened ({}); calls are not audited", path, err)
            return None
        return AuditWriter(sink)

    def _record(self, env: TurnEnv, call: Call, result: ToolResult, args: Mapping[str, Any] | None) -> None:
        """Hand one call's record to the audit writer (redaction happens off this thread)."""
        audit = self.audit
        if audit is None:
            return
        audit.submit(call_item(result, env.session, env.request_id, env.trace_id, args, env.snapshot.redactor))

    def protected_paths(self) -> list[Path]:
        """toolrt's own files and folders, which no tool of the agent may read or write:
        the pack directories, the settings file, the state, artifact, lock and audit paths (the config
        paths are added by :class:`~runtime.policy.placed.Where`, see ``configs``)."""
        settings = self.settings
        paths = [*settings.pack_dirs, *builtin_pack_dirs()]
        if settings.source_file is not None:  # the settings file is config too
            paths.append(settings.source_file)
        paths += [self._under_workspace(settings.state_dir), self.artifacts.root]
        paths += audit_paths(self.workspace_root, settings)  # the log, its WAL files and its chain head
        paths.append(lock_dir_for(settings, self.workspace_root))
        journal = journal_path(settings, self.workspace_root)  # workflow runs (and the WAL beside it)
        if journal is not None:
            paths += [journal, *(journal.with_name(journal.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
        return [path if path.is_absolute() else Path.cwd() / path for path in paths]

    def _config_paths(self) -> list[Path]:
        """The config paths, absolute (see :meth:`protected_paths`)."""
        return [path if path.is_absolute() else Path.cwd() / path for path in self._paths]

    def artifact_path(self) -> Path:
        """Where truncated outputs are stored: the ``artifact_dir`` setting, else a folder
        of this workspace's own in the state directory (see :mod:`runtime.audit.location`)."""
        configured = self.settings.artifact_dir
        if configured is not None:
            return self._under_workspace(configured)
        return workspace_dir(self.workspace_root, "artifacts", self.settings)

    def audit_path(self) -> Path:
        """Where this runtime's audit log is (see :mod:`runtime.audit.location`)."""
        return store_path(self.workspace_root, self.settings)

    def _under_workspace(self, path: Path) -> Path:
        return path if path.is_absolute() else self.workspace_root / path

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot new turns will use."""
        return self._current[0]

    def reload(self, guard: Callable[[BuildResult], str | None] | None = None) -> BuildResult:
        """Rebuild from the config paths; swap only if the result is clean.

        A broken config keeps the last good snapshot serving and is kept in
        :attr:`last_reload_error` (every problem with file:line:col). ``guard`` (the
        config watcher's) sees the build before the swap and may refuse it by returning
        a reason: then nothing is swapped, counted or remembered."""
        with self._reload_lock:  # one build at a time: the watcher and the app share the compile cache
            result = build_snapshot(self._paths, self.settings, self._cache, mount=self._mount)
            if result.snapshot is not None and not result.snapshot.tools and self.snapshot.tools:
                result = _refused_empty(result, len(self.snapshot.tools))
            if guard is not None and guard(result) is not None:
                return result
            self.metrics.record_reload(result.snapshot is not None)
            if result.snapshot is None:
                self.last_reload_error = ConfigError(result.problems)
            else:
                self.last_reload_error = None
                limits = self._limits(result.snapshot)
                self._current = (result.snapshot, limits)  # one reference assignment: turns in flight keep theirs
                self.metrics.set_info("snapshot", {"version": result.snapshot.version})
                if self.presence is not None:
                    self.presence.beat()  # the fleet sees the new version now, not at the next beat
            return result

    def watch(self, on_event: Callable[[ReloadEvent], None] | None = None) -> ConfigWatcher:
        """Start watching the config paths (and pack folders): each clean edit is
        swapped in, a broken one is logged and kept out. Idempotent; stopped by
        :meth:`close`. ``on_event`` hears of every reload attempt, and of each MCP server
        listing that differs from the lock file (``mcp_drift``; at once of those known)."""
        if self.watcher is None:
            watcher = ConfigWatcher(
                self._paths,
                self.reload,
                current=lambda: self.snapshot,
                on_event=on_event,
                extra_paths=self.settings.pack_dirs,
                settings=self.settings,
            )
            self.watcher = self._drift.attach(watcher).start()  # hears of the drift known already, watches the lock
        return self.watcher

    def _env(
        self,
        session: Session,
        trace_id: str | None,
        progress_listener: Callable[[str, str | None], None] | None = None,
        approver: Approver | None = None,
        request_id: str | None = None,
    ) -> TurnEnv:
        snapshot, limits = self._current  # read once: the snapshot and its limits belong together
        # Positional, in TurnEnv's field order: one is built per turn, and keywords cost
        # three times as much to match.
        return TurnEnv(
            snapshot,
            self.settings,
            session,
            self.permitter,
            approver if approver is not None else self.approver,
            self.artifacts,
            self.workspace_root,
            request_id or f"{self._id_prefix}{next(self._turns)}",
            trace_id,
            self.settings.approval_timeout_s,
            self.jobs,
            self._ends.grants_for(session.id, self.grants),
            self.workspace_tools,
            self._record if self.audit is not None else None,
            self.metrics,
            limits,
            self.mcp,
            self.canaries,
            None,  # tracing: the tracer wraps the calls itself
            progress_listener,
            self.hide,
            self.keys,
        )

    async def run_turn(
        self,
        calls: Sequence[Call],
        session: Session | None = None,
        *,
        parallel: bool = True,
        stop_on_error: bool = False,
        deadline_s: float | None = None,
        interrupt: asyncio.Event | None = None,
        trace_id: str | None = None,
        on_progress: Callable[[str, str | None], None] | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        approver: Approver | None = None,
    ) -> list[ToolResult]:
        """One result per call, in order. Never raises for anything a call does.

        ``on_progress`` hears every ``ToolContext.progress(message)`` of the turn's python
        handlers as ``(call id, message)``, on the handler's thread (so it must be thread-safe).

        ``traceparent`` (and ``tracestate``) is the W3C trace context of the agent's step:
        with tracing on, the turn's span continues it (else the app's active span is the
        parent); either way logs and audit records carry its trace id (see runtime.telemetry).

        ``approver`` answers this turn's ``ask`` decisions instead of the runtime's own
        (framework bridges pass one that reads the framework's approval state)."""
        session = session or Session(mode=self.settings.permission_mode.value)
        if self.tracing is not None:  # OpenTelemetry: the turn, its calls and their stages become spans
            parallel = parallel and self.settings.max_concurrency > 1
            return await self.tracing.run_turn(
                calls,
                lambda tid: self._env(session, tid, on_progress, approver),
                trace_id=trace_id,
                traceparent=traceparent,
                tracestate=tracestate,
                parallel=parallel,
                stop_on_error=stop_on_error,
                deadline_s=deadline_s,
                interrupt=interrupt,
            )
        env = self._env(
            session,
            trace_id or (trace_id_from_traceparent(traceparent) if traceparent else None),
            on_progress,
            approver,
        )
        if len(calls) == 1 and deadline_s is None and interrupt is None:
            return [await run_call(calls[0], env)]  # nothing to schedule
        return await run_turn(
            calls,
            env,
            parallel=parallel and self.settings.max_concurrency > 1,
            stop_on_error=stop_on_error,
            deadline_s=deadline_s,
            interrupt=interrupt,
        )

    def run_turn_sync(self, calls: Sequence[Call], session: Session | None = None, **options: Any) -> list[ToolResult]:
        """:meth:`run_turn` for code without an event loop (or called from inside one).

        The turn runs on the runtime's own event loop (one daemon thread, started on first
        use), so that a command that goes on in the background outlives the turn, as the
        model is told; :meth:`close_sync` (or :meth:`close`) stops it."""
        return self._on_own_loop(self.run_turn(calls, session, **options))

    def _on_own_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        with self._loop_lock:
            if self._loop is None or not self._loop.running:
                self._loop = LoopThread("toolrt-runtime-loop")
                # A runtime dropped without close(): its idle loop thread goes with it.
                weakref.finalize(self, self._loop.stop, 0)
            loop = self._loop
        if loop.in_loop_thread():
            return _run_sync(coroutine)  # a handler of this runtime calling back in: never block its own loop
        return loop.run(coroutine)

    def needs_approval(self, call: Call, session: Session | None = None) -> bool:
        """Whether running ``call`` now would put an ``ask`` to an approver: its arguments
        are valid, the policy says ask, and no earlier session grant covers it.

        Nothing runs and nothing is counted. A call that would be refused (unknown tool,
        bad arguments, denied) needs no approval: running it gives that error result.
        Framework bridges use this to raise the framework's own approval interruption
        before the call runs (see :mod:`runtime.adapters.bridge`)."""
        session = session or Session(mode=self.settings.permission_mode.value)
        return would_ask(call, session, self.snapshot, self.permitter, self._ends.grants_for(session.id, self.grants))

    def end_session(self, session_id: str) -> None:
        """Forget what the runtime keeps per session: its grants and quota counts.

        Never raises: when a shared store cannot be used the end is logged, retried
        later, and until then the session's turns use no grants (see runtime.fleet.ending)."""
        self._ends.end(session_id)

    def _forget_session(self, session_id: str) -> None:
        self.grants.forget(session_id)
        self._current[1].forget_session(session_id)

    async def close(self) -> None:
        """Stop background jobs (and their process trees) and flush the audit log.

        Call it before the app exits: audit records are written in batches by a
        background thread, and the last batch is written here."""
        if self.watcher is not None:
            await asyncio.to_thread(self.watcher.stop)
        await self.jobs.close()  # on whichever loops they run, the runtime's own included
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            await asyncio.to_thread(loop.stop)
        await asyncio.to_thread(self.mcp.close)
        if self.audit is not None:
            await asyncio.to_thread(self.audit.close)
        await asyncio.to_thread(flush_journal, self.settings, self.workspace_root)
        for store in self._owned:
            await asyncio.to_thread(store.close)

    def close_sync(self) -> None:
        """:meth:`close` for code without an event loop (or called from inside one):
        it also stops the runtime's own loop that :meth:`run_turn_sync` started."""
        _run_sync(self.close())

    async def run_workflow(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        session: Session | None = None,
        *,
        run_id: str | None = None,
        trace_id: str | None = None,
    ) -> WorkflowResult:
        """Run the workflow ``name`` with ``args``: every step a call through the pipeline
        (see :mod:`runtime.workflow.run`), the run journaled so that it can be resumed
        (see :meth:`resume_workflow`). Never raises for anything a step does; bad
        ``args``, an unknown name or an unusable journal give a result with ``error`` set."""
        session = session or default_session(self.settings.permission_mode.value)
        run_id = run_id or new_run_id()
        if self.tracing is not None:  # one span over the run, as over a turn
            return await self.tracing.run_workflow(
                name, run_id, lambda tid: self._start_workflow(name, args, session, run_id, tid), trace_id=trace_id
            )
        return await run_named(name, args, self._env(session, trace_id, request_id=run_id), run_id, run_call=run_call)

    async def _start_workflow(
        self, name: str, args: Mapping[str, Any] | None, session: Session, run_id: str, trace_id: str | None
    ) -> WorkflowResult:
        env = self._env(session, trace_id, request_id=run_id)
        if self.tracing is not None:
            env = self.tracing.traced(env)
        return await run_named(name, args, env, run_id, run_call=run_call)

    def run_workflow_sync(
        self, name: str, args: Mapping[str, Any] | None = None, session: Session | None = None, **options: Any
    ) -> WorkflowResult:
        """:meth:`run_workflow` for code without an event loop (on the runtime's own loop,
        like :meth:`run_turn_sync`)."""
        return self._on_own_loop(self.run_workflow(name, args, session, **options))

    async def resume_workflow(self, run_id: str, session: Session | None = None) -> WorkflowResult:
        """Go on with a journaled run that a stopped process left unfinished (see :mod:`runtime.workflow.resume`):
        completed steps are not run again, a step in flight runs again only if read-only or idempotent, else its
        result is unknown and the run compensates. A finished run is not run again (``note`` says so)."""
        return await resume_run(
            self.settings,
            self.workspace_root,
            run_id,
            lambda own: self._env(session or own, None, request_id=run_id),
            run_call=run_call,
            metrics=self.metrics,
        )

    def resume_workflow_sync(self, run_id: str, session: Session | None = None) -> WorkflowResult:
        """:meth:`resume_workflow` for code without an event loop."""
        return self._on_own_loop(self.resume_workflow(run_id, session))

    def workflow_journal(self) -> Journal:
        """The journal of this runtime's workflow runs (:class:`JournalError` when it is
        off or cannot be opened): ``runs()`` lists them, ``load(run_id)`` reads one."""
        journal = journal_for(self.settings, self.workspace_root)
        if journal is None:
            raise JournalError("workflow runs are not journaled (the workflow_journal setting is off)")
        return journal

    async def call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        session: Session | None = None,
        *,
        call_id: str | None = None,
    ) -> ToolResult:
        """Run one call by name."""
        call = Call(id=call_id or f"call_{uuid.uuid4().hex[:12]}", name=name, args=dict(args or {}))
        (result,) = await self.run_turn([call], session)
        return result
