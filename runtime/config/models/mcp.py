"""The ``McpServer`` kind: a server whose tools are mounted beside the declared ones."""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from runtime.config.models.base import Glob, Risk, Timeout, ToolOutput, Trust, _Model


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
