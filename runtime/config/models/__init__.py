"""The config kinds, as pydantic models: the single source of truth.

Every YAML document is ``apiVersion: toolrt/v1``, ``kind``, ``metadata``, ``spec``.
The JSON Schemas in ``schemas/`` are generated from these models (``toolrt schema``),
and the loader validates structure against exactly those schemas, so the editor,
the linter and the runtime can never disagree about what a document may contain.

Models are frozen and forbid unknown keys. Defaults are the safe choice: a tool is
not read-only, not idempotent and medium risk unless it says otherwise.

One module a kind (``tool``, ``policy`` with ``PolicyTest``, ``profiles``, ``mcp``,
``workflow``) over the pieces they share (``base``). This package draws the documents and
names every model, so ``from runtime.config.models import ToolSpec`` keeps working.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from runtime.config.models.base import (
    API_VERSION,
    NAME_PATTERN,
    CelExpression,
    FailurePolicy,
    Glob,
    Metadata,
    Name,
    OnTimeout,
    OutputSettings,
    Risk,
    Timeout,
    ToolOutput,
    TruncationMode,
    Trust,
    _Model,
)
from runtime.config.models.mcp import (
    McpServerSpec,
    McpToolOverride,
    McpTransport,
)
from runtime.config.models.policy import (
    CircuitBreaker,
    Effect,
    Enforcement,
    Expectation,
    PermissionMode,
    PolicyRule,
    PolicySpec,
    PolicyTestCase,
    PolicyTestSpec,
    Quotas,
    SessionFixture,
)
from runtime.config.models.profiles import (
    OutputProfileSpec,
    RedactionPattern,
    RedactionProfileSpec,
    Validator,
)
from runtime.config.models.tool import (
    DEFAULT_REDACTION,
    HANDLER_STRING_PATTERN,
    Canary,
    HandlerCommand,
    HandlerHttp,
    HandlerSpec,
    HandlerString,
    Retry,
    Rollback,
    Rollout,
    Rule,
    ToolSpec,
)
from runtime.config.models.workflow import (
    Compensation,
    OnFailure,
    StepRetry,
    TemplateArgs,
    WorkflowSpec,
    WorkflowStep,
)

__all__ = [
    "API_VERSION",
    "Canary",
    "CelExpression",
    "CircuitBreaker",
    "Compensation",
    "DEFAULT_REDACTION",
    "DOCUMENT_MODELS",
    "Document",
    "Effect",
    "Enforcement",
    "Expectation",
    "FailurePolicy",
    "Glob",
    "HANDLER_STRING_PATTERN",
    "HandlerCommand",
    "HandlerHttp",
    "HandlerSpec",
    "HandlerString",
    "IncludeDocument",
    "IncludeSpec",
    "KINDS",
    "McpServerDocument",
    "McpServerSpec",
    "McpToolOverride",
    "McpTransport",
    "Metadata",
    "NAME_PATTERN",
    "Name",
    "OnFailure",
    "OnTimeout",
    "OutputProfileDocument",
    "OutputProfileSpec",
    "OutputSettings",
    "PermissionMode",
    "PolicyDocument",
    "PolicyRule",
    "PolicySpec",
    "PolicyTestCase",
    "PolicyTestDocument",
    "PolicyTestSpec",
    "Quotas",
    "RedactionPattern",
    "RedactionProfileDocument",
    "RedactionProfileSpec",
    "Retry",
    "Risk",
    "Rollback",
    "Rollout",
    "Rule",
    "SessionFixture",
    "StepRetry",
    "TemplateArgs",
    "Timeout",
    "ToolDocument",
    "ToolOutput",
    "ToolSpec",
    "TruncationMode",
    "Trust",
    "Validator",
    "WorkflowDocument",
    "WorkflowSpec",
    "WorkflowStep",
]


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
