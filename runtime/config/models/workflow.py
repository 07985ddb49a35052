"""The ``Workflow`` kind: steps of tool calls, their retries and compensations."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import Field

from runtime.config.models.base import CelExpression, Name, Risk, _Model


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
            "Argument values. A string that is exactly `${EXPR}` takes the value of the CEL expression EXPR (any "
            "type); `${EXPR}` inside a longer string is replaced by its text; `$${` is a literal `${`. Expressions "
            "read `input` (the workflow's arguments) and `steps.<id>` (`status`, `ok`, `content`, `data`, `metadata`) "
            "of upstream steps."
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
        description=(
            "The call that undoes this step. `builtin` for file_edit and file_delete steps: restore the exact "
            "previous content (refused when the file changed since)."
        ),
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
