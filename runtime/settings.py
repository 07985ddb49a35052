"""Runtime settings: ``TOOLRT_*`` environment variables, an optional TOML file, defaults.

Precedence, highest first: arguments passed to :class:`Settings`, environment
variables (``TOOLRT_MAX_CONCURRENCY=4``), the settings file (``TOOLRT_SETTINGS_FILE``
or ``Settings.load(path)``), then the defaults below. Limits that a config document
can set (timeouts, output sizes) follow tool value, then profile, then these defaults.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from runtime.config.models import PermissionMode, TruncationMode
from runtime.shaping.env_secrets import DEFAULT_NAMES as DEFAULT_SECRET_NAMES
from runtime.workspace.sandbox import DEFAULT_DENY

Engine = Literal["auto", "fast", "portable"]


class DefaultOutput(BaseModel):
    """Output limits for tools and profiles that do not set them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_chars: int = Field(default=30_000, ge=1)
    preview_chars: int = Field(default=2_000, ge=0)
    head_chars: int = Field(default=5_000, ge=0)
    tail_chars: int = Field(default=5_000, ge=0)
    on_success: TruncationMode = TruncationMode.artifact
    on_error: TruncationMode = TruncationMode.head_tail


class Settings(BaseSettings):
    """Everything the runtime needs that is not in the config documents."""

    model_config = SettingsConfigDict(env_prefix="TOOLRT_", env_nested_delimiter="__", extra="forbid", frozen=True)

    config_dir: Path = Field(default=Path("toolrt.d"), description="Directory of YAML config documents.")
    workspace_root: Path = Field(default=Path("."), description="Root that every path argument must stay inside.")
    state_dir: Path = Field(default=Path(".toolrt"), description="Runtime state: locks, caches.")
    artifact_dir: Path | None = Field(
        default=None,
        description=(
            "Where truncated outputs are stored. Unset: a folder of the workspace's own in the state directory,"
            " outside the workspace where the agent's tools reach (like the audit log); relative: under the"
            " workspace root."
        ),
    )
    audit_store: Path = Field(
        default=Path("audit.sqlite3"),
        description=(
            "The audit log. Relative: in a directory of the workspace's own under the state directory"
            " (runtime.audit.location), outside the workspace where the agent's tools reach; absolute: used as given."
            " Left unset with audit_sink=jsonl: audit.jsonl."
        ),
    )
    audit_sink: str = Field(
        default="sqlite",
        pattern=r"^(sqlite|jsonl|off|postgres(ql)?://.*)$",
        description="How every call is recorded: sqlite (a database file, WAL), jsonl, off, or a postgresql:// URL"
        " (one log for a fleet; needs the postgres extra).",
    )
    audit_spool_max_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="With a postgresql:// audit sink: how much may wait on local disk while PostgreSQL is"
        " unreachable; past it, new records are counted as lost and logged.",
    )
    limit_store: str = Field(
        default="memory",
        pattern=r"^(memory|(redis|rediss|unix)://.*)$",
        description="Where quotas, breakers, session grants live: memory (this process) or a redis:// URL shared by"
        " a fleet (needs the redis extra).",
    )
    limit_store_on_error: Literal["deny", "allow"] = Field(
        default="deny",
        description="When the shared limit store cannot be used: deny = calls under a quota or breaker are refused"
        " (fail closed); allow = they run uncounted.",
    )
    limit_store_timeout_s: float = Field(
        default=0.5,
        gt=0,
        le=60,
        description="How long one round trip to the shared limit store may take before the call's check fails.",
    )
    limit_lease_s: float = Field(
        default=30.0,
        gt=0,
        description="How long a concurrency slot of a shared limit store outlives a worker that stopped renewing it"
        " (died).",
    )
    audit_writer: Literal["auto", "thread", "process"] = Field(
        default="auto",
        description="Where audit records are redacted and stored: a background thread, or a child process (off this"
        " interpreter's lock; pays off when a core is otherwise idle). The child reads a hand-off file beside the"
        " store, so what the app handed over survives a crash of the app. auto: the thread, until the calls come"
        " fast (twice within 10 s, 128 calls or more at 1,000 a second or more) on two CPUs or more; then a child.",
    )
    log_format: Literal["json", "text"] = "text"
    log_level: Literal["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    trace_content: bool = Field(
        default=False,
        description="With tracing on, add each call's arguments (redacted by every redaction pattern) and result (as"
        " the model read it) to its span as events gen_ai.tool.call.arguments and gen_ai.tool.call.result. Off by"
        " default: spans then carry no content.",
    )
    tracing: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="OpenTelemetry spans per turn, call and stage: auto = on when the otel extra is installed and"
        " the app configured a TracerProvider before building the Runtime (or passed one); on = always (a no-op"
        " until a provider exists); off = never.",
    )
    permission_mode: PermissionMode = PermissionMode.default
    workflow_journal: str = Field(
        default="",
        description=(
            "Where workflow runs are journaled (SQLite), so that a run killed mid-way can be resumed:"
            " empty = workflows.sqlite3 in state_dir; off = not journaled (runs cannot be resumed)."
        ),
    )
    workflow_retention_days: float = Field(
        default=30.0,
        ge=0,
        description="Finished workflow runs are deleted from the journal this many days after they ended.",
    )
    max_concurrency: int = Field(default=8, ge=1, le=1024, description="Read-only calls run at once, per turn.")
    approval_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="How long an `ask` decision waits for the approver; no answer in time is a denial.",
    )
    hot_reload: bool = True
    reload_settle_ms: int = Field(
        default=2000,
        ge=10,
        le=600_000,
        description=(
            "Hot reload publishes a config only after its files stayed unchanged (inode, size, times, content) for"
            " this long after the last change,"
            " and again after compiling; a reload that removes tools, policies or deny/ask rules waits twice as"
            " long. Long enough for tools that write a file in steps."
        ),
    )
    reload_marker: str | None = Field(
        default=None,
        description=(
            "Atomic publish mode: reload only when this commit marker changes (a file a deploy step writes last,"
            " e.g. `toolrt.lock`, or `..data`,"
            " the symlink a Kubernetes ConfigMap volume swaps). Relative: beside the config (in the first config"
            " folder, or the folder of the first config file)."
            " Unset: publish after the settle window."
        ),
    )
    cel_engine: Engine = Field(default="auto", description="auto picks cel-expr-python when installed.")
    schema_engine: Engine = Field(default="auto", description="auto picks jsonschema-rs when installed.")
    cel_cost_limit: int = Field(
        default=100_000,
        ge=1,
        le=100_000_000,
        description=(
            "Worst-case cost (about one unit per CEL operation) an expression may have on the largest input its"
            " tool's schema"
            " accepts; lint rejects one over it and says which schema bound to add. Each evaluation is bounded by"
            " the same budget at run time, on both engines."
        ),
    )
    cel_time_limit_ms: int = Field(
        default=100,
        ge=1,
        le=60_000,
        description=(
            "CPU time one CEL evaluation may take before it is stopped, whatever lint estimated: an evaluation runs"
            " on the event loop, and this bounds how long it can hold every other call. Stopped is an evaluation"
            " error: a deny or ask rule matches, a business rule rejects the call. The portable engine runs"
            " about 100x slower per operation than the fast one, so on it this limit, not cel_cost_limit, binds"
            " first for costly expressions."
        ),
    )
    pack_dirs: list[Path] = Field(
        default_factory=list, description="Extra directories searched for packs, before the shipped ones."
    )
    max_config_file_bytes: int = Field(default=1_048_576, ge=1024)
    default_output: DefaultOutput = Field(default_factory=DefaultOutput)
    command_sandbox: Literal["auto", "on", "off"] = Field(
        default="auto",
        description=(
            "Run each command (command handlers, run_command) in a mount and PID namespace of its own in which"
            " toolrt's config, packs, state, artifacts, locks and audit log are hidden: auto = where the machine"
            " allows it, else the policy alone; on = a Runtime refuses to start where it cannot; off = never."
        ),
    )
    command_max_processes: int = Field(
        default=1024,
        ge=0,
        le=4_194_304,
        description=(
            "At most this many processes and threads one command (command handlers, run_command, background jobs,"
            " isolated python handlers) may have at once, so that a fork bomb cannot take every pid of the machine:"
            " a cgroup's pids.max where the machine offers a writable pids cgroup (reaching it stops the command"
            " with a process_limit error), else RLIMIT_NPROC for a user that is not root; 0 = no limit. `toolrt"
            " explain` says which holds here."
        ),
    )
    env_secret_names: tuple[str, ...] = Field(
        default=DEFAULT_SECRET_NAMES,
        description=(
            "Environment variables whose values are redacted by value in every output, error, audit record, artifact"
            " and trace (also JSON-escaped, percent-encoded, hex and base64): globs matched against the variable's"
            " name without regard to case. Empty: none."
        ),
    )
    env_secret_min_chars: int = Field(
        default=8,
        ge=1,
        description="Environment secrets shorter than this are not redacted (short values occur in ordinary text).",
    )
    commands_outside_workspace: Literal["ask", "deny", "allow"] = Field(
        default="ask",
        description=(
            "Command lines naming a path outside the workspace (absolute, `..`, `~`, /proc, /sys, /dev but /dev/null):"
            " ask = no wildcard allow rule covers them and the session's mode does not run them unasked;"
            " deny = refused; allow = judged like any other word."
        ),
    )
    workspace_deny: tuple[str, ...] = Field(
        default=(*DEFAULT_DENY, "**/.toolrt/**"),
        description="Globs the workspace tools refuse to read or write (matched case-insensitively on"
        " workspace-relative paths), enforced below any policy.",
    )

    _source_file: Path | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Remember the settings file these settings were read from (see :attr:`source_file`)."""
        super().model_post_init(context)
        named = _settings_file.get() or os.environ.get("TOOLRT_SETTINGS_FILE")
        self._source_file = Path(named).absolute() if named else None

    @property
    def source_file(self) -> Path | None:
        """The TOML settings file these settings were read from, if any: toolrt's own
        config, which the agent's tools may not write (it could turn the sandbox off or
        choose bypass mode for the next start)."""
        return self._source_file

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        settings_file = _settings_file.get() or os.environ.get("TOOLRT_SETTINGS_FILE")
        if settings_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(settings_file)))
        return tuple(sources)

    @classmethod
    def load(cls, settings_file: Path | None = None, **overrides: Any) -> Settings:
        """Settings with ``settings_file`` (TOML) under the environment and ``overrides``."""
        token = _settings_file.set(settings_file)
        try:
            return cls(**overrides)
        finally:
            _settings_file.reset(token)


_settings_file: ContextVar[Path | None] = ContextVar("toolrt_settings_file", default=None)
