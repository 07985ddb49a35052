"""The ``Tool`` kind: handlers, business rules, retries, rollout and the tool's spec."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from runtime.config.models.base import (
    CelExpression,
    FailurePolicy,
    Name,
    Risk,
    Timeout,
    ToolOutput,
    Trust,
    _Model,
)


class HandlerCommand(_Model):
    """Run a program. ``argv`` items are templates: ``{path}`` is replaced by args.path."""

    argv: list[Annotated[str, Field(max_length=4096)]] = Field(min_length=1, max_length=256)
    shell: bool = Field(
        default=False, description="Run through /bin/sh -c. Off by default: arguments are never shell-interpreted."
    )
    cwd: str | None = Field(default=None, description="Working directory, relative to the workspace root.")
    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list, description="Names of environment variables passed through (allow-list)."
    )
    set_env: dict[str, str] = Field(default_factory=dict, description="Variables set for the command.")


class HandlerHttp(_Model):
    """Send an HTTP request (needs the ``http`` extra).

    ``url``, header values and string values in ``body`` are templates: ``{name}`` is an
    argument (percent-encoded in the URL, so it cannot change the host or the path's
    structure) or a name of ``secrets`` (read from the environment at call time, never
    written in YAML). A body string that is exactly ``{name}`` takes the argument's value
    as is (a number stays a number). Private, loopback, link-local and other non-public
    addresses are refused unless ``allow_networks`` lists them; the host is resolved once
    and the connection goes to that address (no DNS rebinding), redirects included.
    """

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "GET"
    url: str = Field(min_length=1, max_length=4096)
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = Field(default=None, description="JSON body (a map, list or string); None: no body.")
    secrets: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")],
        Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")],
    ] = Field(
        default_factory=dict,
        description=(
            "Placeholder name -> environment variable holding the secret, e.g. {token: API_TOKEN} for `Authorization: "
            "Bearer {token}`."
        ),
    )
    allow_networks: list[Annotated[str, Field(min_length=2, max_length=64)]] = Field(
        default_factory=list,
        description="CIDRs that may be reached although they are not public (e.g. 10.0.0.0/8, 127.0.0.1/32, fd00::/8).",
    )
    max_response_bytes: int = Field(
        default=10_000_000,
        ge=1,
        le=1_000_000_000,
        description="A larger response is refused (its reading stops there).",
    )
    max_redirects: int = Field(
        default=5, ge=0, le=20, description="Redirects followed, each checked like the first address; 0: none."
    )


class HandlerSpec(_Model):
    """The object form of a handler: exactly one of its keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra={"minProperties": 1, "maxProperties": 1})

    # None is the model's "not this kind", never a value a document may give: a handler
    # cut off after its kind (`http:` and nothing more) is an error, not an empty kind.
    builtin: Name | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            "A built-in tool: file_read, file_edit, file_delete, artifact_read, list_dir, glob, grep, run_command."
        ),
    )
    python: str | SkipJsonSchema[None] = Field(
        default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="module.path:function"
    )
    mcp: str | SkipJsonSchema[None] = Field(
        default=None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]*/.+$", description="server/tool of a declared McpServer"
    )
    command: HandlerCommand | SkipJsonSchema[None] = None
    http: HandlerHttp | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _one_kind(self) -> HandlerSpec:
        given = [key for key in ("builtin", "python", "mcp", "command", "http") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(
                f"a handler takes exactly one of builtin, python, mcp, command or http with a value, got {len(given)}"
            )
        return self


# The short string forms: builtin:file_read, python:pkg.mod:func, mcp:server/tool.
HANDLER_STRING_PATTERN = (
    r"^(builtin:[A-Za-z][A-Za-z0-9_.-]*|python:[A-Za-z_][\w.]*:[A-Za-z_]\w*|mcp:[A-Za-z][A-Za-z0-9_.-]*/.+)$"
)
HandlerString = Annotated[
    str, Field(pattern=HANDLER_STRING_PATTERN, description="builtin:NAME, python:module:function or mcp:server/tool")
]


class Retry(_Model):
    """Retries happen only for read-only or idempotent tools, on transient errors."""

    attempts: int = Field(default=0, ge=0, le=10, description="Extra attempts after the first.")
    backoff_s: float = Field(default=0.5, gt=0, le=600)
    max_backoff_s: float = Field(default=10.0, gt=0, le=3600)


class Rule(_Model):
    """A business rule: ``expression`` must be true, else ``message`` goes to the model."""

    name: Name | None = None
    expression: CelExpression
    message: str = Field(
        min_length=1, max_length=2000, description="Told to the model when the rule fails: say what to change."
    )
    on_error: FailurePolicy = Field(
        default=FailurePolicy.fail,
        description="fail: an evaluation error rejects the call (default); ignore: it passes.",
    )


DEFAULT_REDACTION = "secrets"
"""The RedactionProfile applied to a tool that names none (the config's own profile of
that name, else the one of the shipped ``redaction-default`` pack)."""


class Canary(_Model):
    version: str = Field(min_length=1, max_length=64)
    percent: float = Field(
        ge=0, le=100, description="Share of sessions (by a stable hash of the session id) served by this version."
    )


class Rollback(_Model):
    """Stop sending new sessions to the canary when it fails clearly more than the stable version."""

    window_s: float = Field(default=300.0, gt=0, le=86_400, description="Calls of this long ago and newer are counted.")
    min_calls: int = Field(
        default=20, ge=1, le=1_000_000, description="Calls of the canary in the window before it is judged."
    )
    max_error_rate_margin: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Rolled back when the canary's error rate exceeds the stable version's by more than this.",
    )


class Rollout(_Model):
    """Which version serves the sessions that do not pin one. Either ``stable`` (with an
    optional ``canary``) or ``weights`` (version -> percent, summing to 100)."""

    stable: str | None = Field(default=None, min_length=1, max_length=64)
    canary: Canary | None = None
    weights: dict[str, Annotated[float, Field(ge=0, le=100)]] | None = Field(
        default=None, description="Version -> percent of sessions; the percents must sum to 100."
    )
    rollback: Rollback | None = Field(
        default=None, description="Automatic rollback of the canary (stable + canary form only)."
    )


class ToolSpec(_Model):
    description: str = Field(min_length=1, max_length=8000, description="Shown to the model.")
    handler: HandlerString | HandlerSpec
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema (Draft 2020-12) of the arguments.",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description=(
            "JSON Schema (Draft 2020-12, `type: object`) of the object the tool returns: every result is checked "
            "against it (a result that does not match is an error) and MCP clients get it as `outputSchema`."
        ),
    )
    rules: list[Rule] = Field(default_factory=list, max_length=100)
    read_only: bool = Field(
        default=False, description="Only read-only calls run concurrently. Default false: the call runs alone."
    )
    idempotent: bool = False
    timeout: Timeout = Field(default_factory=Timeout)
    output: ToolOutput = Field(default_factory=ToolOutput)
    risk: Risk = Risk.medium
    trust: Trust = Field(default=Trust.trusted, description="untrusted: content is marked as data, not instructions.")
    redaction: list[Name] | None = Field(
        default=None,
        description=(
            "RedactionProfile names applied to this tool's output. Unset: the shipped `secrets` profile. `[]`: no "
            "redaction at all (lint warns)."
        ),
    )
    retry: Retry = Field(default_factory=Retry)
    defer_loading: bool = Field(
        default=False, description="Leave out of the initial tool list; found through tool_search."
    )
    process_isolation: bool = Field(
        default=False, description="Run a python handler in a child process so that a timeout can kill it."
    )
    edits_workspace: bool = Field(
        default=False,
        description="Changes files inside the workspace and nothing else: in accept_edits mode it runs without asking.",
    )
    command_line: Name | None = Field(
        default=None,
        description=(
            "The string argument that holds a shell command line: policy rules see it split into `commands` and judge "
            "it command by command."
        ),
    )
    rollout: Rollout | None = Field(
        default=None,
        description=(
            "For a tool declared in several versions: which version serves which sessions. Declare it on one version "
            "only."
        ),
    )
