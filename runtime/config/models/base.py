"""The pieces every config kind shares: names, the strict base model, metadata, output
settings, timeouts, risk and trust."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

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
