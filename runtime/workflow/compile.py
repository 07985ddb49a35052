"""Compiling a ``Workflow`` document into the snapshot, and linting it.

Everything a run needs is decided here, once: the steps in an order that respects
``depends_on`` (a topological order; declaration order breaks ties), each step's
upstream set, its argument templates and ``when`` as compiled CEL programs, its
compensation, the workflow's risk and the tools that built-in compensation calls.

Lint (problems with their path in the document; the cross-document checks of unknown
tools, unknown ``depends_on`` and cycles are in :mod:`runtime.config.consistency`):

* an expression reading ``steps.X`` where X is not a step, is the step itself, or is
  not upstream of it (``depends_on``, transitively): X may not have run yet;
* ``steps.X.field`` with a field a step result does not have;
* ``input.field`` not declared by the workflow's ``input_schema`` (an error when the
  schema is closed, a warning when it allows other keys);
* a compensation that cannot run: ``builtin`` on a tool other than file_edit or
  file_delete, or without the tool that restores (a ``builtin:file_edit`` tool, and
  ``builtin:file_delete`` for a file the step created); a compensation reading a step
  that is not upstream; ``on_failure: compensate`` when no step can be compensated;
* ``retry`` on a step whose tool is neither read-only nor idempotent (a retried write
  could be applied twice).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.config.expressions import Finding
from runtime.config.models import OnFailure, Risk, StepRetry, WorkflowSpec
from runtime.config.suggest import did_you_mean
from runtime.policy.cel import CelProgram
from runtime.policy.celrefs import LexError, Token, string_value, tokenize
from runtime.workflow.rowtext import ok_format
from runtime.workflow.templates import (
    WORKFLOW_VARIABLES,
    Reader,
    Template,
    TemplateError,
    compile_reader,
    compile_template,
    expressions_of,
)

#: What ``steps.<id>`` holds.
STEP_FIELDS = ("status", "ok", "content", "data", "metadata", "code")
_RISKS = [r.value for r in Risk]

Path = tuple[str | int, ...]
ExpressionCompiler = Callable[[str, Path], tuple[CelProgram | None, list[Finding]]]


@dataclass(frozen=True, slots=True)
class CompiledCompensation:
    """How a completed step is undone: a tool call (``tool`` and ``args``), or
    ``builtin`` restoring the file a file_edit/file_delete step changed."""

    tool: str
    args: Template | None
    builtin: bool = False


@dataclass(frozen=True, slots=True)
class CompiledStep:
    id: str
    index: int  # position in the document
    tool: str
    read_only: bool
    retry_allowed: bool  # read-only or idempotent
    handler: str  # the tool's builtin name ("" when not a builtin): file_edit/file_delete get built-in compensation
    args: Template
    when: CelProgram | None
    depends_on: tuple[str, ...]
    upstream: frozenset[str]
    retry: StepRetry | None
    timeout_s: float | None
    on_failure: OnFailure
    compensation: CompiledCompensation | None
    reads: frozenset[str] = frozenset()  # the steps its args and when read (only they go into its activation)
    needs_activation: bool = True  # False: constant args and no when, nothing to evaluate
    # The args as one closure over the run's data (templates.compile_reader): None when an
    # expression needs CEL, or the step has a `when` (its args are evaluated in its scope).
    read_args: Reader | None = None


@dataclass(frozen=True, slots=True)
class CompiledWorkflow:
    name: str
    spec: WorkflowSpec
    steps: tuple[CompiledStep, ...]  # in a topological order
    risk: str
    read_only: bool
    restore_tool: str | None  # a tool with handler builtin:file_edit (built-in compensation)
    remove_tool: str | None  # a tool with handler builtin:file_delete (undoing a file a step created)
    arguments: Any = None  # runtime.validation.arguments.ArgumentValidator of input_schema (set by the snapshot build)
    # Steps some expression reads ("*": any); the others' results are not converted for CEL.
    read_steps: frozenset[str] = frozenset({"*"})
    fingerprint: str = ""  # of the document: a journaled run resumes only under the same workflow
    in_document_order: tuple[CompiledStep, ...] = ()  # the steps as the document lists them (reports)
    chain: bool = False  # each step is downstream of the one before: they can only run one by one, in order
    ok_form: str = ""  # the journal's result text of a run whose steps all ran once, ok (rowtext.ok_format)

    def step(self, step_id: str) -> CompiledStep | None:
        return next((s for s in self.steps if s.id == step_id), None)


def compile_workflow(
    name: str, spec: WorkflowSpec, tools: Mapping[str, Any], compile_expression: ExpressionCompiler
) -> tuple[CompiledWorkflow | None, list[Finding]]:
    """The compiled workflow (None when there are errors) and every problem found.

    ``tools`` maps names to compiled tools (the default version of each);
    ``compile_expression(source, path)`` checks and compiles one CEL expression over
    :data:`WORKFLOW_VARIABLES`."""
    findings: list[Finding] = []
    ids = [s.id for s in spec.steps]
    deps = {s.id: tuple(d for d in s.depends_on if d in ids) for s in spec.steps}
    order = _topological(ids, deps)
    if order is None:
        return None, findings  # a cycle: reported by the consistency checks
    upstream = {sid: _upstream(sid, deps) for sid in ids}
    restore_tool = _tool_with_builtin(tools, "file_edit")
    remove_tool = _tool_with_builtin(tools, "file_delete")
    input_properties, input_closed = _properties(spec.input_schema)
    compiled: dict[str, CompiledStep] = {}
    for index, step in enumerate(spec.steps):
        base: Path = ("spec", "steps", index)
        tool = tools.get(step.tool)
        allowed = upstream[step.id]

        def compile_in(
            source: str, path: Path, allowed: frozenset[str] = allowed, own: str = step.id
        ) -> CelProgram | None:
            program, more = compile_expression(source, path)
            findings.extend(more)
            refs = _references(source, path, allowed, own, ids, input_properties, input_closed)
            findings.extend(refs)
            return program if program is not None and not any(not f.warning for f in refs) else None

        args = _template(step.args, (*base, "args"), compile_in, findings)
        when = compile_in(step.when, (*base, "when")) if step.when else None
        compensation = None
        comp = step.compensate
        handler = _builtin_of(tool)
        if comp == "builtin":
            compensation = CompiledCompensation(restore_tool or "", None, builtin=True)
            if handler not in ("file_edit", "file_delete"):
                findings.append(
                    Finding(
                        (*base, "compensate"),
                        "workflow-compensation",
                        f"`compensate: builtin` restores files changed by file_edit or file_delete, but step"
                        f" `{step.id}` calls `{step.tool}`; declare `compensate: {{tool: ..., args: ...}}` instead.",
                    )
                )
            elif restore_tool is None:
                findings.append(
                    Finding(
                        (*base, "compensate"),
                        "workflow-compensation",
                        "`compensate: builtin` restores a file through a tool with `handler: builtin:file_edit`, and"
                        " none is declared; include the workspace-tools pack or declare one.",
                    )
                )
            elif handler == "file_edit" and remove_tool is None:
                findings.append(
                    Finding(
                        (*base, "compensate"),
                        "workflow-compensation",
                        "undoing a file_edit that created a file needs a tool with `handler: builtin:file_delete`,"
                        " and none is declared; include the workspace-tools pack or declare one.",
                        warning=True,
                    )
                )
        elif comp is not None:
            # The step itself has completed when its compensation runs: it may read its own result.
            comp_allowed = allowed | {step.id}

            def compile_comp(
                source: str,
                path: Path,
                allowed: frozenset[str] = comp_allowed,
                inner: Callable[..., CelProgram | None] = compile_in,
            ) -> CelProgram | None:
                return inner(source, path, allowed, "")

            comp_args = _template(comp.args, (*base, "compensate", "args"), compile_comp, findings)
            compensation = CompiledCompensation(comp.tool, comp_args)
        if (
            step.retry is not None
            and step.retry.attempts
            and tool is not None
            and not (tool.spec.read_only or tool.spec.idempotent)
        ):
            findings.append(
                Finding(
                    (*base, "retry"),
                    "workflow-retry",
                    f"step `{step.id}` declares retries, but `{step.tool}` is neither read-only nor idempotent: a"
                    f" retried write could take effect twice. Remove `retry`, or mark the tool idempotent if"
                    f" repeating it is safe.",
                )
            )
        if args is None or (step.when and when is None) or tool is None:
            continue
        sources = [e.source for e in expressions_of(args)] + ([step.when] if step.when else [])
        reads = frozenset(ref for source in sources for ref in _step_names(source))
        compiled[step.id] = CompiledStep(
            id=step.id,
            index=index,
            tool=step.tool,
            read_only=tool.spec.read_only,
            retry_allowed=tool.spec.read_only or tool.spec.idempotent,
            handler=handler,
            args=args,
            when=when,
            depends_on=tuple(step.depends_on),
            upstream=upstream[step.id],
            retry=step.retry,
            timeout_s=step.timeout_s,
            on_failure=step.on_failure,
            compensation=compensation,
            reads=reads,
            needs_activation=bool(sources),
            read_args=compile_reader(args) if not step.when else None,
        )
    if any(s.on_failure is OnFailure.compensate for s in spec.steps) and not any(
        s.compensate is not None for s in spec.steps
    ):
        index = next(i for i, s in enumerate(spec.steps) if s.on_failure is OnFailure.compensate)
        findings.append(
            Finding(
                ("spec", "steps", index, "on_failure"),
                "workflow-compensation",
                "`on_failure: compensate`, but no step of this workflow declares `compensate`, so nothing would be"
                " undone. Add `compensate` to the steps that change something.",
                warning=True,
            )
        )
    if any(not f.warning for f in findings) or len(compiled) != len(spec.steps):
        return None, findings
    steps = tuple(compiled[sid] for sid in order)
    risks = [tools[s.tool].spec.risk.value for s in spec.steps]
    risk = spec.risk.value if spec.risk is not None else max(risks, key=_RISKS.index)
    read_only = all(s.read_only for s in steps)
    read_steps = frozenset().union(*(s.reads for s in steps), *(_compensation_reads(s) for s in steps))
    fingerprint = hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:32]
    return CompiledWorkflow(
        name,
        spec,
        steps,
        risk,
        read_only,
        restore_tool,
        remove_tool,
        read_steps=read_steps,
        fingerprint=fingerprint,
        in_document_order=tuple(sorted(steps, key=lambda s: s.index)),
        ok_form=ok_format(name, [(s.id, s.tool) for s in spec.steps]),
        chain=all(before.id in after.upstream for before, after in zip(steps, steps[1:], strict=False)),
    ), findings


def _compensation_reads(step: CompiledStep) -> frozenset[str]:
    comp = step.compensation
    if comp is None or comp.args is None:
        return frozenset()
    return frozenset(ref for e in expressions_of(comp.args) for ref in _step_names(e.source))


def _template(
    value: Any, path: Path, compile_in: Callable[[str, Path], CelProgram | None], findings: list[Finding]
) -> Template | None:
    try:
        return compile_template(value, path, compile_in)
    except TemplateError as err:
        findings.append(Finding(path, "workflow-template", f"{err}."))
        return None


def _builtin_of(tool: Any) -> str:
    if tool is None:
        return ""
    handler = tool.handler
    return str(handler.target) if handler.kind == "builtin" else ""


def _tool_with_builtin(tools: Mapping[str, Any], builtin: str) -> str | None:
    """The tool serving ``builtin`` (the one named like it first)."""
    if builtin in tools and _builtin_of(tools[builtin]) == builtin:
        return builtin
    return next((name for name, tool in sorted(tools.items()) if _builtin_of(tool) == builtin), None)


def _topological(ids: Sequence[str], deps: Mapping[str, tuple[str, ...]]) -> list[str] | None:
    """Steps ordered so that each comes after its dependencies (ties: declaration order); None for a cycle."""
    done: list[str] = []
    placed: set[str] = set()
    remaining = list(dict.fromkeys(ids))
    while remaining:
        ready = next((sid for sid in remaining if all(d in placed for d in deps.get(sid, ()))), None)
        if ready is None:
            return None
        done.append(ready)
        placed.add(ready)
        remaining.remove(ready)
    return done


def _upstream(step_id: str, deps: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    seen: set[str] = set()
    todo = list(deps.get(step_id, ()))
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(deps.get(current, ()))
    seen.discard(step_id)
    return frozenset(seen)


def _properties(schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None, False
    return properties, schema.get("additionalProperties") is False


def _references(
    source: str,
    path: Path,
    allowed: frozenset[str],
    own: str,
    ids: Sequence[str],
    input_properties: Mapping[str, Any] | None,
    input_closed: bool,
) -> list[Finding]:
    """Problems with the ``steps.X.field`` and ``input.field`` chains of one expression."""
    try:
        tokens = tokenize(source)
    except LexError:
        return []  # reported by the expression compiler
    findings: list[Finding] = []
    for index, token in enumerate(tokens):
        if token.kind != "ident" or token.text not in WORKFLOW_VARIABLES:
            continue
        before = tokens[index - 1] if index else None
        if before is not None and before.text == ".":
            continue  # a field named like a variable (x.steps), not the variable
        chain = _chain(tokens, index + 1)
        if token.text == "input":
            if chain and input_properties is not None and chain[0] not in input_properties:
                declared = ", ".join(sorted(input_properties)) or "none"
                findings.append(
                    Finding(
                        path,
                        "cel-unknown-arg",
                        f"`input.{chain[0]}` is not declared in the workflow's input_schema (declared:"
                        f" {declared}).{did_you_mean(chain[0], input_properties)}",
                        warning=not input_closed,
                    )
                )
            continue
        if not chain:
            continue  # `steps` as a whole (e.g. `"a" in steps`): nothing to check by name
        target = chain[0]
        if target not in ids:
            findings.append(
                Finding(
                    path, "unknown-step", f"`steps.{target}` is not a step of this workflow.{did_you_mean(target, ids)}"
                )
            )
        elif target == own:
            findings.append(
                Finding(
                    path,
                    "workflow-reference",
                    f"step `{own}` reads its own result (`steps.{target}`), which does not exist while it runs. Read"
                    f" an upstream step instead.",
                )
            )
        elif target not in allowed:
            findings.append(
                Finding(
                    path,
                    "workflow-reference",
                    f"`steps.{target}` is not upstream of this step, so it may not have run yet. Add `{target}` to"
                    f" `depends_on` (directly or through a step that depends on it).",
                )
            )
        if len(chain) > 1 and chain[1] not in STEP_FIELDS:
            findings.append(
                Finding(
                    path,
                    "workflow-reference",
                    f"a step result has no field `{chain[1]}`; it has"
                    f" {', '.join(STEP_FIELDS)}.{did_you_mean(chain[1], STEP_FIELDS)}",
                )
            )
    return findings


def _step_names(source: str) -> list[str]:
    """The step ids an expression reads as ``steps.X`` or ``steps["X"]``; every step
    when it reads ``steps`` as a whole."""
    try:
        tokens = tokenize(source)
    except LexError:
        return []
    names: list[str] = []
    for index, token in enumerate(tokens):
        if token.kind == "ident" and token.text == "steps" and not (index and tokens[index - 1].text == "."):
            chain = _chain(tokens, index + 1)
            names.append(chain[0] if chain else "*")
    return names


def _chain(tokens: list[Token], start: int) -> list[str]:
    """The field names selected after a variable: ``.a.b`` and ``["a"]`` forms."""
    fields: list[str] = []
    i = start
    while i + 1 < len(tokens):
        if tokens[i].text == "." and tokens[i + 1].kind == "ident":
            if i + 2 < len(tokens) and tokens[i + 2].text == "(":
                break
            fields.append(tokens[i + 1].text)
            i += 2
        elif (
            tokens[i].text == "["
            and tokens[i + 1].kind == "string"
            and i + 2 < len(tokens)
            and tokens[i + 2].text == "]"
        ):
            value = string_value(tokens[i + 1])
            if value is None:
                break
            fields.append(value)
            i += 3
        else:
            break
    return fields


__all__ = [
    "STEP_FIELDS",
    "CompiledCompensation",
    "CompiledStep",
    "CompiledWorkflow",
    "compile_workflow",
    "expressions_of",
]
