"""The ``Policy`` and ``PolicyTest`` kinds: permission rules, quotas, circuit breakers, and
the cases that pin what the rules decide."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import Field

from runtime.config.models.base import CelExpression, FailurePolicy, Glob, Name, _Model


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
            "Command patterns for tools with a command_line, e.g. 'git push *' (words match argv items with * and ? "
            "globs; a last lone * matches any remaining items). deny/ask: matches if any command of the line matches. "
            "allow: the line is allowed only if every command is matched by some allow rule."
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
