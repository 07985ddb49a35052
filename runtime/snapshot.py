"""The immutable registry snapshot: everything the pipeline reads, compiled.

A snapshot is built once from config (see :mod:`runtime.config.compile`) and never
changes: frozen dataclasses, tuples and read-only mappings all the way down. It holds
compiled things only (argument validators, CEL programs, RE2 patterns, glob
matchers, resolved profiles, resolved handlers), never source text to interpret per
call. Its ``version`` is a hash of the documents' content, so an edit that changes
nothing (a comment, key order) yields the same version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from runtime.config.models import (
    Effect,
    Enforcement,
    FailurePolicy,
    HandlerCommand,
    HandlerHttp,
    McpServerSpec,
    Metadata,
    PolicySpec,
    PolicyTestCase,
    ToolSpec,
    TruncationMode,
)
from runtime.config.problems import Location, Problem
from runtime.policy.cel import CelProgram, Outcome
from runtime.policy.celdirect import DirectCheck
from runtime.policy.commands import CommandPatterns
from runtime.shaping.compiled import CompiledPattern as CompiledPattern  # re-exported: defined there, light to import
from runtime.shaping.compiled import CompiledRedaction
from runtime.validation.arguments import ArgumentValidator
from runtime.validation.output import OutputCheck


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A tool's business rule, compiled."""

    name: str
    source: str
    message: str
    on_error: FailurePolicy
    program: CelProgram
    direct: DirectCheck | None = None  # the same condition in Python, when it is simple enough (celdirect)


@dataclass(frozen=True, slots=True)
class ResolvedOutput:
    """Output limits with every field decided (tool, then profile, then default)."""

    max_chars: int
    preview_chars: int
    head_chars: int
    tail_chars: int
    on_success: TruncationMode
    on_error: TruncationMode


@dataclass(frozen=True, slots=True)
class Handler:
    """A resolved handler. ``kind`` is builtin, python, mcp, command or http."""

    kind: str
    target: str  # builtin name, module:function, server/tool, or "" for command/http
    command: HandlerCommand | None = None
    http: HandlerHttp | None = None
    function: Callable[..., Any] | None = field(default=None, compare=False)
    is_async: bool = False  # python handlers: a coroutine function
    takes_context: bool = False  # python handlers: accepts (args, context)
    search_dirs: tuple[str, ...] = ()  # python handlers: where a module beside the config is found
    prepared: Any = field(default=None, compare=False)  # http handlers: runtime.http.request.HttpPlan


@dataclass(frozen=True, slots=True)
class CompiledTool:
    name: str
    version: str | None
    metadata: Metadata
    spec: ToolSpec
    handler: Handler
    arguments: ArgumentValidator
    rules: tuple[CompiledRule, ...]
    output: ResolvedOutput
    redaction: tuple[CompiledRedaction, ...]
    source: Location
    defaults: Mapping[str, Any]  # top-level input-schema defaults, filled into valid calls
    attributes: Mapping[str, Any]  # what CEL sees as `tool`
    redactor: Any = None  # runtime.shaping.redact.Redactor over `redaction`, built once
    rule_variables: frozenset[str] = frozenset()  # the CEL variables the rules read
    output_check: OutputCheck | None = None  # the compiled output_schema, when the tool declares one
    # ``key``, made once: the policy stage looks the tool up by it on every call.
    _key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_key", f"{self.name}@{self.version}" if self.version else self.name)

    @property
    def key(self) -> str:
        """``name@version``, or just the name for an unversioned tool."""
        return self._key


@dataclass(frozen=True, slots=True)
class CompiledPolicyRule:
    policy: str
    name: str
    effect: Effect
    tool_globs: tuple[str, ...]
    tool_matcher: Any  # compiled regex over "name" and "name@version"
    when: CelProgram | None
    reason: str | None
    reason_program: CelProgram | None
    enforce: Enforcement
    on_error: FailurePolicy
    source: Location
    named_tools: frozenset[str] = frozenset()  # the tool names it lists literally (no wildcard): the tools it "names"
    command_patterns: CommandPatterns | None = None  # judged per command of a command-line tool
    when_variables: frozenset[str] = frozenset()  # the variables its `when` reads
    when_direct: DirectCheck | None = None  # `when` in Python, when it is simple enough (celdirect)

    def matches_tool(self, name: str, version: str | None = None) -> bool:
        if self.tool_matcher.fullmatch(name):
            return True
        return bool(version) and bool(self.tool_matcher.fullmatch(f"{name}@{version}"))


@dataclass(frozen=True, slots=True)
class WhenPlan:
    """How one tool's rule conditions are evaluated, decided at snapshot build.

    ``constants``: rule position (in the tool's rule tuple) -> the outcome of a
    condition that reads nothing but the tool itself (and ``commands``, for a tool
    without a command line, where it is always empty): evaluated once, here.
    ``batch``: the remaining conditions as one CEL list expression, one evaluation
    instead of one per rule; ``positions[i]`` is the rule of element ``i``. Conditions
    simple enough to be read straight from the arguments (``when_direct``) stay out
    of the batch.
    """

    constants: Mapping[int, Outcome]
    batch: CelProgram | None = None
    positions: tuple[int, ...] = ()
    #: ``constants`` keyed by ``id(rule)``, ready to be read per call without copying.
    known: Mapping[int, Outcome] = field(default_factory=lambda: MappingProxyType({}))
    #: For a tool without a command line or staged rules: its enforced rules in the
    #: order they are tried (deny, ask, allow; each in declared order), leaving out
    #: those whose condition is constant false. None: walk every rule.
    quick: (
        tuple[tuple[CompiledPolicyRule, ...], tuple[CompiledPolicyRule, ...], tuple[CompiledPolicyRule, ...]] | None
    ) = None
    #: ``quick`` laid out as steps (runtime.policy.quickwalk.QuickWalk), the per-call walk.
    walk: Any = None


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    name: str
    spec: PolicySpec
    rules: tuple[CompiledPolicyRule, ...]
    source: Location


@dataclass(frozen=True, slots=True)
class PolicyTestEntry:
    suite: str
    case: PolicyTestCase
    source: Location


@dataclass(frozen=True)
class Snapshot:
    """One consistent, compiled view of the config. Read it once per turn."""

    version: str
    tools: Mapping[str, CompiledTool]
    tool_versions: Mapping[str, Mapping[str, CompiledTool]]
    policies: tuple[CompiledPolicy, ...]
    redaction_profiles: Mapping[str, CompiledRedaction]
    output_profiles: Mapping[str, ResolvedOutput]
    mcp_servers: Mapping[str, McpServerSpec]
    workflows: Mapping[str, Any]  # name -> runtime.workflow.compile.CompiledWorkflow
    policy_tests: tuple[PolicyTestEntry, ...]
    sources: tuple[str, ...]
    warnings: tuple[Problem, ...]
    cel_engine: str
    schema_engine: str
    rule_index: Mapping[str, tuple[CompiledPolicyRule, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )  # tool key -> policy rules whose globs match it
    forbidden_modes: frozenset[str] = frozenset()  # permission modes some policy forbids
    redactor: Any = None  # every redaction profile at once (audit records: arguments can hold any secret)
    when_plans: Mapping[str, WhenPlan] = field(
        default_factory=lambda: MappingProxyType({})
    )  # tool key -> how its rules' conditions are evaluated
    rollouts: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({})
    )  # tool name -> runtime.versions.RolloutTable

    def tool(self, name: str, version: str | None = None) -> CompiledTool | None:
        """The tool called ``name`` (a given ``version`` of it, if asked), or None."""
        if version is None:
            return self.tools.get(name)
        return self.tool_versions.get(name, {}).get(version)

    @property
    def policy_rules(self) -> tuple[CompiledPolicyRule, ...]:
        return tuple(rule for policy in self.policies for rule in policy.rules)
