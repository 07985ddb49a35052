"""The config kinds, as pydantic models: the single source of truth.

Every YAML document is ``apiVersion: toolrt/v1``, ``kind``, ``metadata``, ``spec``.
The JSON Schemas in ``schemas/`` are generated from these models (``toolrt schema``),
and the loader validates structure against exactly those schemas, so the editor,
the linter and the runtime can never disagree about what a document may contain.

Models are frozen and forbid unknown keys. Defaults are the safe choice: a tool is
not read-only, not idempotent and medium risk unless it says otherwise.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

API_VERSION = "toolrt/v1"

# A DNS-label-like name: what Kubernetes accepts for metadata.name, plus "_" and "."
# so that tool names can match what models already call (file_read, git.push).
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
Name = Annotated[
    str,
    Field(
        pattern=NAME_PATTERN, description="Letters, digits, '_', '.', '-'; starts with a letter; at most 64 characters."
    ),
]
Glob = Annotated[str, Field(min_length=1, max_length=200)]
CelExpression = Annotated[str, Field(min_length=1, max_length=4000, description="A CEL expression (https://cel.dev).")]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


# ---------------------------------------------------------------------------
# shared pieces


class Metadata(_Model):
    """Identity of a document."""

    name: Name
    version: str | None = Field(
        default=None,
        max_length=64,
        description="Optional version, e.g. '2' or '1.4.0'; tools may exist in several versions.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Free-form labels, visible to policy rules as tool.labels."
    )
    description: str | None = Field(default=None, max_length=2000)


class TruncationMode(str, Enum):
    artifact = "artifact"
    head = "head"
    tail = "tail"
    head_tail = "head_tail"


class OutputSettings(_Model):
    """How a result is cut down to size. Every field may be left out to inherit."""

    max_chars: int | None = Field(
        default=None, ge=1, le=10_000_000, description="Results longer than this are truncated."
    )
    preview_chars: int | None = Field(
        default=None, ge=0, le=1_000_000, description="Characters of preview shown with an artifact notice."
    )
    head_chars: int | None = Field(
        default=None, ge=0, le=1_000_000, description="Characters kept from the start in head/head_tail mode."
    )
    tail_chars: int | None = Field(
        default=None, ge=0, le=1_000_000, description="Characters kept from the end in tail/head_tail mode."
    )
    on_success: TruncationMode | None = None
    on_error: TruncationMode | None = None


class ToolOutput(OutputSettings):
    """A tool's output settings: an optional named OutputProfile plus overrides."""

    profile: Name | None = Field(default=None, description="Name of an OutputProfile; fields set here override it.")


# ---------------------------------------------------------------------------
# Tool


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
        description="Placeholder name -> environment variable holding the secret, e.g. {token: API_TOKEN} for `Authorization: Bearer {token}`.",
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
        description="A built-in tool: file_read, file_edit, file_delete, artifact_read, list_dir, glob, grep, run_command.",
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


class OnTimeout(str, Enum):
    kill = "kill"
    background = "background"


class Timeout(_Model):
    total_s: float = Field(default=60.0, gt=0, le=86_400, description="Wall-clock limit for one call.")
    idle_s: float | None = Field(default=None, gt=0, le=86_400, description="Limit on time without output or progress.")
    grace_s: float = Field(
        default=2.0, ge=0, le=60, description="Between SIGTERM and SIGKILL when a process tree is stopped."
    )
    on_timeout: OnTimeout = OnTimeout.kill


class Retry(_Model):
    """Retries happen only for read-only or idempotent tools, on transient errors."""

    attempts: int = Field(default=0, ge=0, le=10, description="Extra attempts after the first.")
    backoff_s: float = Field(default=0.5, gt=0, le=600)
    max_backoff_s: float = Field(default=10.0, gt=0, le=3600)


class Risk(str, Enum):
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


class Trust(str, Enum):
    trusted = "trusted"
    untrusted = "untrusted"


class FailurePolicy(str, Enum):
    """What an expression that errors at run time counts as. ``fail`` is fail-closed."""

    fail = "fail"
    ignore = "ignore"


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
        description="RedactionProfile names applied to this tool's output. Unset: the shipped `secrets` profile. `[]`: no redaction at all (lint warns).",
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
        description="The string argument that holds a shell command line: policy rules see it split into `commands` and judge it command by command.",
    )
    rollout: Rollout | None = Field(
        default=None,
        description="For a tool declared in several versions: which version serves which sessions. Declare it on one version only.",
    )


# ---------------------------------------------------------------------------
# Policy


class Effect(str, Enum):
    allow = "allow"
    ask = "ask"
    deny = "deny"


class Enforcement(str, Enum):
    deny = "deny"
    warn = "warn"
    audit = "audit"


class PermissionMode(str, Enum):
    default = "default"
    plan = "plan"
    accept_edits = "accept_edits"
    bypass = "bypass"


class PolicyRule(_Model):
    name: Name
    effect: Effect
    # Required: a rule cut off after `effect:` must not become a rule on every tool.
    tools: list[Glob] = Field(
        min_length=1, description='Tool name globs, optionally tool@version; ["*"] for every tool.'
    )
    when: CelExpression | None = Field(default=None, description="CEL over tool, args, session, call, commands.")
    commands: list[Annotated[str, Field(min_length=1, max_length=500)]] | None = Field(
        default=None,
        max_length=500,
        description=(
            "Command patterns for tools with a command_line, e.g. 'git push *' (words match argv items with * and ? globs; a last lone * matches any remaining items). "
            "deny/ask: matches if any command of the line matches. allow: the line is allowed only if every command is matched by some allow rule."
        ),
    )
    reason: str | None = Field(default=None, max_length=2000)
    reason_expression: CelExpression | None = Field(default=None, description="CEL producing the reason string.")
    enforce: Enforcement = Enforcement.deny
    on_error: FailurePolicy = FailurePolicy.fail


class Quotas(_Model):
    calls_per_session: int | None = Field(default=None, ge=1)
    calls_per_tool: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    execution_seconds_per_session: float | None = Field(default=None, gt=0)
    output_bytes_per_session: int | None = Field(default=None, ge=1)
    max_concurrent_per_tool: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)


class CircuitBreaker(_Model):
    tools: list[Glob] = Field(default_factory=lambda: ["*"], min_length=1)
    failures: int = Field(default=5, ge=1, le=10_000)
    window_s: float = Field(default=60.0, gt=0)
    cooldown_s: float = Field(default=30.0, gt=0)
    half_open_calls: int = Field(default=1, ge=1, le=100)


class PolicySpec(_Model):
    default_mode: PermissionMode | None = None
    forbidden_modes: list[PermissionMode] = Field(default_factory=list)
    rules: list[PolicyRule] = Field(default_factory=list, max_length=10_000)
    quotas: Quotas | None = None
    circuit_breakers: list[CircuitBreaker] = Field(default_factory=list)


# ---------------------------------------------------------------------------
# RedactionProfile, OutputProfile


class Validator(str, Enum):
    """Checks a candidate match must pass before it is redacted."""

    luhn = "luhn"
    iban = "iban"
    cn_resident_id = "cn_resident_id"
    assigned_secret = "assigned_secret"
    key_body = "key_body"
    phone_digits = "phone_digits"


class RedactionPattern(_Model):
    name: Name
    regex: str = Field(min_length=1, max_length=4000, description="RE2 syntax: no look-arounds or back-references.")
    replacement: str | None = Field(default=None, max_length=200, description="Default: [REDACTED:<name>].")
    validator: Validator | None = None
    case_insensitive: bool = False
    keep: bool = Field(
        default=False,
        description="A look-alike, not a secret: its matches are left as they are, and matches of the patterns in `shields` that start inside one are left too (an ssh remote is not an email address). Every other pattern still applies inside it.",
    )
    shields: list[Name] = Field(
        default_factory=list, description="With keep: the patterns of this profile that this look-alike protects."
    )
    value_only: bool = Field(
        default=False,
        description="For `<name> <separator> <value>` patterns: the name, the separator (`:`, `=`, `:=`, `=>`) and quotes stay, only the value is replaced (password: \"[REDACTED:...]\"); a token at the value's start keeps its own pattern's name.",
    )


class RedactionProfileSpec(_Model):
    patterns: list[RedactionPattern] = Field(min_length=1, max_length=500)
    secret_keys: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        description=(
            "RE2 pattern, case-insensitive, matched against whole keys of structured data (results, structuredContent, "
            "audited arguments): the value under a matching key is redacted whatever it looks like (null, booleans, "
            "empty strings and references such as ${VAR} are kept)."
        ),
    )


class OutputProfileSpec(OutputSettings):
    pass


# ---------------------------------------------------------------------------
# McpServer


class McpTransport(str, Enum):
    stdio = "stdio"
    http = "http"


class McpToolOverride(_Model):
    read_only: bool | None = None
    idempotent: bool | None = None
    risk: Risk | None = None
    trust: Trust | None = None
    timeout: Timeout | None = None
    output: ToolOutput | None = None


class McpServerSpec(_Model):
    transport: McpTransport
    command: list[str] | None = Field(default=None, min_length=1, description="argv of a stdio server.")
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = Field(default=None, description="URL of a streamable-HTTP server.")
    headers: dict[str, str] = Field(default_factory=dict)
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600)
    call_timeout_s: float = Field(default=60.0, gt=0, le=86_400)
    include: list[Glob] = Field(
        default_factory=lambda: ["*"], description="Globs of the server's tool names to import."
    )
    exclude: list[Glob] = Field(default_factory=list)
    overrides: dict[str, McpToolOverride] = Field(default_factory=dict, description="Attribute overrides by tool name.")
    trust: Trust = Trust.untrusted


# ---------------------------------------------------------------------------
# Workflow


class OnFailure(str, Enum):
    """What a workflow does when a step fails."""

    stop = "stop"  # start no further step; the run fails
    continue_ = "continue"  # go on with the steps that do not depend on the failed one
    compensate = "compensate"  # stop, then undo the completed steps in reverse completion order


class StepRetry(_Model):
    """Extra attempts of a step. Only a read-only or idempotent tool may be retried."""

    attempts: int = Field(default=1, ge=0, le=10, description="Extra attempts after the first.")
    backoff_s: float = Field(
        default=0.5, ge=0, le=600, description="Wait before the first retry; doubled for each further one."
    )


TemplateArgs = Annotated[
    dict[str, Any],
    Field(
        default_factory=dict,
        description=(
            "Argument values. A string that is exactly `${EXPR}` takes the value of the CEL expression EXPR (any type); "
            "`${EXPR}` inside a longer string is replaced by its text; `$${` is a literal `${`. Expressions read `input` "
            "(the workflow's arguments) and `steps.<id>` (`status`, `ok`, `content`, `data`, `metadata`) of upstream steps."
        ),
    ),
]


class Compensation(_Model):
    """A tool call that undoes a completed step."""

    tool: Name
    args: TemplateArgs


class WorkflowStep(_Model):
    id: Name
    tool: Name
    args: TemplateArgs
    depends_on: list[Name] = Field(default_factory=list, description="Steps that must finish before this one starts.")
    when: CelExpression | None = Field(
        default=None,
        description="CEL over `input` and `steps`: the step runs only when it is true (else it is skipped).",
    )
    retry: StepRetry | None = Field(
        default=None,
        description="Retries of this step after an error or a timeout (read-only or idempotent tools only).",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=86_400, description="A limit for this step, on top of the tool's own timeout."
    )
    on_failure: OnFailure = OnFailure.stop
    compensate: Compensation | Literal["builtin"] | None = Field(
        default=None,
        description="The call that undoes this step. `builtin` for file_edit and file_delete steps: restore the exact previous content (refused when the file changed since).",
    )


class WorkflowSpec(_Model):
    description: str = Field(
        default="A workflow of tool calls.",
        min_length=1,
        max_length=8000,
        description="Shown to the model when the workflow is exposed as a tool.",
    )
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema (Draft 2020-12) of the workflow's arguments.",
    )
    steps: list[WorkflowStep] = Field(min_length=1, max_length=500)
    risk: Risk | None = Field(default=None, description="Default: the highest risk of its steps' tools.")
    expose: bool = Field(default=True, description="Offer the workflow to the model as a tool of the same name.")
    max_concurrency: int = Field(default=4, ge=1, le=64, description="Read-only steps running at once, at most.")


# ---------------------------------------------------------------------------
# PolicyTest


class SessionFixture(_Model):
    id: str = "test-session"
    user: str | None = None
    mode: PermissionMode = PermissionMode.default
    labels: dict[str, str] = Field(default_factory=dict)


class Expectation(_Model):
    decision: Effect | None = None
    rule: Name | None = None
    validation_error: bool = False


class PolicyTestCase(_Model):
    name: str = Field(min_length=1, max_length=200)
    tool: str = Field(min_length=1, description="Tool name, optionally tool@version.")
    args: dict[str, Any] = Field(default_factory=dict)
    session: SessionFixture = Field(default_factory=SessionFixture)
    expect: Expectation


class PolicyTestSpec(_Model):
    cases: list[PolicyTestCase] = Field(min_length=1, max_length=10_000)


# ---------------------------------------------------------------------------
# Include: pull shipped packs into a config dir


class IncludeSpec(_Model):
    packs: list[Name] = Field(min_length=1, description="Names of packs under policies/, e.g. redaction-default.")


# ---------------------------------------------------------------------------
# documents


class _Document(_Model):
    api_version: Literal["toolrt/v1"] = Field(alias="apiVersion")
    metadata: Metadata

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class ToolDocument(_Document):
    kind: Literal["Tool"]
    spec: ToolSpec


class PolicyDocument(_Document):
    kind: Literal["Policy"]
    spec: PolicySpec


class RedactionProfileDocument(_Document):
    kind: Literal["RedactionProfile"]
    spec: RedactionProfileSpec


class OutputProfileDocument(_Document):
    kind: Literal["OutputProfile"]
    spec: OutputProfileSpec


class McpServerDocument(_Document):
    kind: Literal["McpServer"]
    spec: McpServerSpec


class WorkflowDocument(_Document):
    kind: Literal["Workflow"]
    spec: WorkflowSpec


class PolicyTestDocument(_Document):
    kind: Literal["PolicyTest"]
    spec: PolicyTestSpec


class IncludeDocument(_Document):
    kind: Literal["Include"]
    spec: IncludeSpec


Document = (
    ToolDocument
    | PolicyDocument
    | RedactionProfileDocument
    | OutputProfileDocument
    | McpServerDocument
    | WorkflowDocument
    | PolicyTestDocument
    | IncludeDocument
)

DOCUMENT_MODELS: dict[str, type[_Document]] = {
    "Tool": ToolDocument,
    "Policy": PolicyDocument,
    "RedactionProfile": RedactionProfileDocument,
    "OutputProfile": OutputProfileDocument,
    "McpServer": McpServerDocument,
    "Workflow": WorkflowDocument,
    "PolicyTest": PolicyTestDocument,
    "Include": IncludeDocument,
}
KINDS = tuple(DOCUMENT_MODELS)
