"""Checks across documents: unique names, references that resolve, sound workflows."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from runtime.config.load import LoadedDocument
from runtime.config.models import (
    McpServerDocument,
    McpTransport,
    PolicyDocument,
    PolicyTestDocument,
    ToolDocument,
    WorkflowDocument,
)
from runtime.config.problems import Problem, Severity
from runtime.config.suggest import did_you_mean


def check_consistency(docs: Sequence[LoadedDocument], broken: Collection[tuple[str, str]] = ()) -> list[Problem]:
    """Every cross-document problem in ``docs``. ``broken``: (kind, name) of documents
    already reported as broken; references to them are not reported again."""
    problems = _duplicates(docs)
    tools = {e.model.metadata.name: e for e in docs if isinstance(e.model, ToolDocument)}
    for kind, name in broken:
        if kind == "Tool" and name and name not in tools:
            tools[name] = None  # type: ignore[assignment]  # declared but broken: reported once, where it is
    versions = {(e.model.metadata.name, e.model.metadata.version) for e in docs if isinstance(e.model, ToolDocument)}
    # A workflow exposed to the model is a tool that policy rules may name.
    exposed = {e.model.metadata.name for e in docs if isinstance(e.model, WorkflowDocument) and e.model.spec.expose}
    for entry in docs:
        model = entry.model
        if isinstance(model, ToolDocument) and not _PROVIDER_NAME.fullmatch(model.metadata.name):
            problems.append(
                Problem(
                    entry.source.locate(("metadata", "name")),
                    "invalid-value",
                    f"tool name `{model.metadata.name}` cannot be sent to model APIs, which accept only letters, "
                    "digits, `_` and `-` in tool names (Anthropic and OpenAI). Rename it, e.g. "
                    f"`{_PROVIDER_SAFE.sub('_', model.metadata.name)}`.",
                )
            )
        if isinstance(model, WorkflowDocument):
            problems.extend(_workflow(entry, model, tools))
        elif isinstance(model, PolicyTestDocument):
            for index, case in enumerate(model.spec.cases):
                name, _, version = case.tool.partition("@")
                if name not in tools:
                    problems.append(_unknown_tool(entry, ("spec", "cases", index, "tool"), name, tools))
                elif version and (name, version) not in versions:
                    problems.append(
                        Problem(
                            entry.source.locate(("spec", "cases", index, "tool")),
                            "unknown-tool",
                            f"tool `{name}` has no version `{version}`.",
                        )
                    )
        elif isinstance(model, McpServerDocument):
            spec = model.spec
            if spec.transport is McpTransport.stdio and not spec.command:
                problems.append(
                    Problem(
                        entry.source.locate(("spec",)),
                        "missing-key",
                        "a stdio McpServer needs `command` (the server's argv).",
                    )
                )
            if spec.transport is McpTransport.http and not spec.url:
                problems.append(
                    Problem(entry.source.locate(("spec",)), "missing-key", "an http McpServer needs `url`.")
                )
        elif isinstance(model, PolicyDocument) and entry.pack is None:
            for index, rule in enumerate(model.spec.rules):
                for g_index, glob in enumerate(rule.tools):
                    plain = glob.split("@")[0]
                    if not any(ch in plain for ch in "*?[") and plain not in tools and plain not in exposed:
                        hint = did_you_mean(plain, tools)
                        problems.append(
                            Problem(
                                entry.source.locate(("spec", "rules", index, "tools", g_index)),
                                "unknown-tool",
                                f"rule `{rule.name}` names tool `{plain}`, which is not declared, so the rule never "
                                f"applies.{hint}",
                                Severity.warning,
                            )
                        )
    return problems


_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_PROVIDER_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def _duplicates(docs: Sequence[LoadedDocument]) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[tuple[str, str, str | None], LoadedDocument] = {}
    for entry in docs:
        meta = entry.model.metadata  # type: ignore[attr-defined]
        key = (type(entry.model).__name__, meta.name, meta.version)
        if key in first:
            other = first[key]
            kind = entry.source.data.get("kind", "document")
            label = f"{kind} `{meta.name}`" + (f" version `{meta.version}`" if meta.version else "")
            here, there = entry.source.locate(("metadata", "name")), other.source.locate(("metadata", "name"))
            problems.append(
                Problem(here, "duplicate-name", f"{label} is defined twice: here and at {there}. Rename or remove one.")
            )
            problems.append(
                Problem(there, "duplicate-name", f"{label} is defined twice: here and at {here}. Rename or remove one.")
            )
        else:
            first[key] = entry
    return problems


def _unknown_tool(
    entry: LoadedDocument, path: tuple[str | int, ...], name: str, tools: dict[str, LoadedDocument]
) -> Problem:
    return Problem(
        entry.source.locate(path),
        "unknown-tool",
        f"no tool named `{name}`.{did_you_mean(name, tools)} Declared tools: {', '.join(sorted(tools)) or 'none'}.",
    )


def _workflow(entry: LoadedDocument, model: WorkflowDocument, tools: dict[str, LoadedDocument]) -> list[Problem]:
    problems: list[Problem] = []
    steps = model.spec.steps
    ids: dict[str, int] = {}
    for index, step in enumerate(steps):
        if step.id in ids:
            problems.append(
                Problem(
                    entry.source.locate(("spec", "steps", index, "id")),
                    "duplicate-name",
                    f"step id `{step.id}` is already used by step {ids[step.id] + 1}; step ids must be unique.",
                )
            )
        ids.setdefault(step.id, index)
        if step.tool not in tools:
            problems.append(_unknown_tool(entry, ("spec", "steps", index, "tool"), step.tool, tools))
        if step.compensate is not None and step.compensate != "builtin" and step.compensate.tool not in tools:
            problems.append(
                _unknown_tool(entry, ("spec", "steps", index, "compensate", "tool"), step.compensate.tool, tools)
            )
    for index, step in enumerate(steps):
        for d_index, dep in enumerate(step.depends_on):
            if dep not in ids:
                problems.append(
                    Problem(
                        entry.source.locate(("spec", "steps", index, "depends_on", d_index)),
                        "unknown-step",
                        f"step `{step.id}` depends on `{dep}`, which is not a step of this "
                        f"workflow.{did_you_mean(dep, ids)}",
                    )
                )
    cycle = _find_cycle({s.id: [d for d in s.depends_on if d in ids] for s in steps})
    if cycle:
        index = ids[cycle[0]]
        problems.append(
            Problem(
                entry.source.locate(("spec", "steps", index, "depends_on")),
                "workflow-cycle",
                f"steps depend on each other in a cycle: {' -> '.join(cycle)}. Remove one of these dependencies.",
            )
        )
    return problems


def _find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None
