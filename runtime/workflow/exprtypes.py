"""Typing workflow expressions at lint: ``input`` from the workflow's input schema,
``steps.<id>`` as a step's result, its ``data`` from the tool's output schema.

Each step's ``when`` must be a bool; its ``args`` and its compensation's ``args``
may be any type. The types and costs are checked by the same checker as tool and
policy rules (:mod:`runtime.config.exprtypes`), so a wrong type, a non-bool ``when``
or an optional input read without ``has()`` is reported at file:line:col with a fix.
Names (which steps and fields exist, which steps are upstream) are checked by the
workflow's own reference check (:mod:`runtime.workflow.compile`): the checker's
unknown-name findings are left out so that one mistake gives one message.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from runtime.config.expressions import Finding, compile_expression
from runtime.config.exprtypes import TypedCheck
from runtime.policy.cel import CelEngine, CelProgram
from runtime.policy.celtypes import (
    BOOL,
    DYN,
    STRING,
    CelType,
    FieldInfo,
    closed_object,
    const,
    from_schema,
    map_of,
    size_var,
)
from runtime.workflow.templates import WORKFLOW_VARIABLES

Path = tuple[str | int, ...]

# What ``steps.<id>.status`` may be (runtime.workflow.result.StepReport).
_STATUSES = ("ok", "failed", "unknown", "skipped", "not_run")


def workflow_checks(spec: Any, tools: Mapping[str, Any], cost_limit: int) -> Callable[[Path], TypedCheck]:
    """For a workflow ``spec`` whose steps call ``tools`` (name -> compiled tool): the
    typing of the expression at a path (a ``when`` must be a bool, arguments anything)."""
    read = from_schema(spec.input_schema, "input")
    bounds = dict(read.bounds)
    steps: dict[str, CelType] = {}
    outputs: list[Any] = []
    for step in spec.steps:
        tool = tools.get(step.tool)
        output = getattr(getattr(tool, "spec", None), "output_schema", None) if tool is not None else None
        outputs.append(output)
        data = DYN
        if isinstance(output, dict):
            typed = from_schema(output, f"steps.{step.id}.data", defaults_present=False)
            data = typed.root
            bounds.update(typed.bounds)
        text = STRING.with_(size=size_var("(untyped values)"))
        label = f"steps.{step.id}"
        fields = {
            "status": STRING.with_(enum=_STATUSES),
            "ok": BOOL,
            "content": text,
            "data": data,
            # Keys vary by tool and call: a read of one is not flagged (no label).
            "metadata": map_of(STRING, DYN, size_var("(untyped values)")),
            "code": text,
        }
        steps[step.id] = CelType(
            "object",
            fields={
                name: FieldInfo(value.with_(label=f"{label}.{name}" if name != "metadata" else ""), True)
                for name, value in fields.items()
            },
            label=label,
        )
    from runtime.config.exprtypes import UNTYPED, variable_types

    untyped = variable_types(None)[1][UNTYPED]
    bounds[UNTYPED] = untyped
    variables = {
        "input": read.root.with_(label="input"),
        "steps": closed_object(steps, "steps").with_(size=const(len(steps))),
    }
    key = hashlib.sha256(
        json.dumps([spec.input_schema, [s.id for s in spec.steps], outputs], sort_keys=True, default=str).encode()
    ).hexdigest()
    checks = {
        result: TypedCheck(variables, bounds, result, cost_limit, field, key=f"workflow:{key}")
        for result, field in (("bool", "`when`"), (None, "expression"))
    }

    def typed_for(path: Path) -> TypedCheck:
        return checks["bool"] if path and path[-1] == "when" else checks[None]

    return typed_for


def compile_typed(
    source: str, path: Path, *, engine: CelEngine, typed_for: Callable[[Path], TypedCheck]
) -> tuple[CelProgram | None, list[Finding]]:
    """Check and compile one workflow expression under ``typed_for(path)``, without the
    checker's unknown-name findings (the workflow's reference check reports names)."""
    typed = typed_for(path)
    program, findings = compile_expression(source, path, WORKFLOW_VARIABLES, engine, None, typed=typed)
    # A `when` over untyped step data (metadata, a tool without output_schema) is not
    # warned about as "maybe not a bool": step results are untyped by nature.
    kept = [f for f in findings if f.code != "cel-unknown-arg" and not (f.code == "cel-result-type" and f.warning)]
    if program is None and not any(not f.warning for f in kept):
        # Only a name was wrong: the reference check says so; compile without types to keep going.
        program, untyped = compile_expression(source, path, WORKFLOW_VARIABLES, engine, None)
        kept.extend(f for f in untyped if f.code not in ("cel-unknown-arg", "cel-result-type") and f not in kept)
    return program, kept
