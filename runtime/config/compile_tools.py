"""Compiling Tool documents: arguments, business rules, handlers, output and redaction."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from runtime.config.building import BuildState
from runtime.config.expressions import Finding, compile_expression
from runtime.config.exprtypes import TypedCheck, variable_types
from runtime.config.handlers import handler_parts, resolve_handler
from runtime.config.load import LoadedDocument
from runtime.config.models import DEFAULT_REDACTION, OutputSettings, ToolDocument, ToolSpec
from runtime.config.problems import Problem, Severity
from runtime.config.suggest import did_you_mean
from runtime.policy.cel import RULE_VARIABLES, CelEngine, CelProgram
from runtime.policy.celdirect import DirectCheck, compile_direct
from runtime.policy.celrefs import LexError, analyse
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledRedaction, CompiledRule, CompiledTool
from runtime.validation.arguments import ArgumentValidator
from runtime.validation.output import OutputCheck
from runtime.validation.schemacheck import check_input_schema, check_output_schema


@dataclass(frozen=True)
class _ToolPieces:
    findings: tuple[Finding, ...]
    arguments: ArgumentValidator | None
    rules: tuple[CompiledRule, ...]
    variables: frozenset[str]
    output_check: OutputCheck | None = None


@dataclass(frozen=True)
class _KeptTool:
    """A compiled tool kept for the next build, with the problems its compilation
    reported (warnings: a tool with errors is not kept)."""

    tool: CompiledTool
    problems: tuple[Problem, ...]


class ToolBuilding(BuildState):
    """Compiling Tool documents."""

    #: What every tool's compilation depends on besides its own document (set by the build).
    tool_context: tuple[Any, ...] = ()

    def _tool(
        self,
        entry: LoadedDocument,
        output_profiles: Mapping[str, OutputSettings],
        redaction: Mapping[str, CompiledRedaction],
        mcp_servers: Mapping[str, Any],
    ) -> CompiledTool | None:
        """The tool of ``entry``. A document of an unchanged file, in an unchanged context
        (engines, profiles, servers, settings), gets the tool of the previous build: a
        reload after one edit recompiles that file's tools, not a thousand others."""
        source, model = entry.source, entry.model
        start = len(self.problems)
        built = False

        def build() -> _KeptTool | None:
            nonlocal built
            built = True
            tool = self._compiled_tool(entry, output_profiles, redaction, mcp_servers)
            return None if tool is None else _KeptTool(tool, tuple(self.problems[start:]))

        kept = self.cache.reused(("whole-tool", entry.mounted, self.tool_context), (source, model), build)
        if kept is None:
            return None
        if not built:
            self.problems.extend(kept.problems)  # said again, as a fresh compilation would
        return kept.tool

    def _compiled_tool(
        self,
        entry: LoadedDocument,
        output_profiles: Mapping[str, OutputSettings],
        redaction: Mapping[str, CompiledRedaction],
        mcp_servers: Mapping[str, Any],
    ) -> CompiledTool | None:
        model: ToolDocument = entry.model  # type: ignore[assignment]
        spec = model.spec
        pieces = self.cache.compiled(
            ("tool", entry.source.content_hash, self.engine.name, self.schema_engine, self.budget),
            lambda: self._tool_pieces(model),
        )
        self.report(entry, pieces.findings)
        # A python module is looked for beside the YAML that names it, then in the roots.
        search = (Path(entry.source.file).parent, *self.search_dirs)
        handler_key = ("handler", entry.source.content_hash, tuple(sorted(mcp_servers)), search)
        handler, findings = self.cache.compiled(
            handler_key, functools.partial(resolve_handler, spec, list(mcp_servers), list(search))
        )
        self.report(entry, findings)
        ok = handler is not None and pieces.arguments is not None and not any(not f.warning for f in pieces.findings)
        profile = None
        if spec.output.profile is not None:
            profile = output_profiles.get(spec.output.profile)
            if profile is None:
                self._unknown(
                    entry, ("spec", "output", "profile"), "OutputProfile", spec.output.profile, output_profiles
                )
                ok = False
        profiles: list[CompiledRedaction] = []
        if spec.redaction is None:
            # Unset: the `secrets` profile (the config's own, or the shipped one). A tool
            # that names no profile must not leak every key and token it meets.
            if DEFAULT_REDACTION in redaction:
                profiles.append(redaction[DEFAULT_REDACTION])
        elif not spec.redaction and not entry.mounted:
            self.problems.append(
                Problem(
                    entry.source.locate(("spec", "redaction")),
                    "redaction-off",
                    f"tool `{model.metadata.name}` sets `redaction: []`: nothing in its output, its errors or its "
                    "audited arguments is redacted but the values of secret-named environment variables, "
                    f"not even private keys and tokens. Remove the line to get the `{DEFAULT_REDACTION}` profile, or "
                    "name the profiles it needs.",
                    Severity.warning,
                )
            )
        for index, name in enumerate(spec.redaction or ()):
            if name in redaction:
                profiles.append(redaction[name])
            else:
                self._unknown(entry, ("spec", "redaction", index), "RedactionProfile", name, redaction)
                ok = False
        if not ok or handler is None or pieces.arguments is None:
            return None
        redactor_key = ("redactor", self.env_digest, *(self.redaction_hashes[p.name] for p in profiles))
        redactor = self.cache.compiled(redactor_key, functools.partial(Redactor, self.with_env_secrets(profiles)))
        return CompiledTool(
            name=model.metadata.name,
            version=model.metadata.version,
            metadata=model.metadata,
            spec=spec,
            handler=handler,
            arguments=pieces.arguments,
            rules=pieces.rules,
            output=self._resolve_output(spec.output, profile),
            redaction=tuple(profiles),
            source=entry.source.locate(()),
            defaults=_defaults(spec.input_schema),
            attributes=_attributes(model, handler.kind),
            redactor=redactor,
            rule_variables=pieces.variables,
            output_check=pieces.output_check,
        )

    def _tool_pieces(self, model: ToolDocument) -> _ToolPieces:
        spec = model.spec
        findings: list[Finding] = [
            Finding(("spec", "input_schema", *f.path), f.code, f.message, f.warning)
            for f in check_input_schema(spec.input_schema)
        ]
        schema_ok = not any(not f.warning for f in findings)
        schema_readable = not any(f.code == "schema-invalid" for f in findings)
        arguments = ArgumentValidator(spec.input_schema, self.schema_engine) if schema_ok else None
        rules: list[CompiledRule] = []
        seen: dict[str, int] = {}
        typed = None
        types_key = None  # the rules' types (None: args untyped, the schema unreadable)
        if schema_readable:
            cel_variables, bounds, types_key = variable_types(spec.input_schema)
            typed = TypedCheck(
                cel_variables,
                bounds,
                "bool",
                self.cost_limit,
                "rule",
                key=types_key,
                declared=self.engine.name == "fast",
                time_limit_ms=self.time_limit_ms,
            )
        for index, rule in enumerate(spec.rules):
            name = rule.name or f"rule-{index + 1}"
            if name in seen:
                findings.append(
                    Finding(
                        ("spec", "rules", index, "name"),
                        "duplicate-name",
                        f"rule name `{name}` is already used by rule {seen[name] + 1} of this tool; give each rule "
                        "its own name.",
                    )
                )
            seen[name] = index
            # Kept per rule text, place and types: tools made from one template share their
            # rules (the programs hold no per-tool state), and a rule is compiled once for all.
            program, rule_findings, direct = self.cache.compiled(
                ("rule", rule.expression, index, types_key, self.engine.name, self.budget),
                functools.partial(
                    _rule, rule.expression, index, self.engine, spec.input_schema if schema_readable else None, typed
                ),
            )
            findings.extend(rule_findings)
            if program is not None:
                rules.append(CompiledRule(name, rule.expression, rule.message, rule.on_error, program, direct))
        variables = frozenset(ref.name for rule in spec.rules for ref in expression_roots(rule.expression))
        if spec.command_line is not None and schema_readable:
            findings.extend(_check_command_line(spec.command_line, spec.input_schema))
        findings.extend(_settings_that_do_nothing(spec))
        output_findings = _output_schema_findings(spec)
        findings.extend(output_findings)
        output_check = None
        if spec.output_schema is not None and not any(not f.warning for f in output_findings):
            output_check = OutputCheck(spec.output_schema, self.schema_engine)
        return _ToolPieces(tuple(findings), arguments, tuple(rules), variables, output_check)


def _rule(
    source: str, index: int, engine: CelEngine, input_schema: dict[str, Any] | None, typed: TypedCheck | None
) -> tuple[CelProgram | None, tuple[Finding, ...], DirectCheck | None]:
    """One business rule's program, findings and direct check (see celdirect)."""
    program, findings = compile_expression(
        source, ("spec", "rules", index, "expression"), RULE_VARIABLES, engine, input_schema, typed=typed
    )
    direct = compile_direct(source) if program is not None else None
    return program, tuple(findings), direct


def _check_command_line(name: str, schema: Mapping[str, Any]) -> list[Finding]:
    """``command_line`` must name a string property, or policy rules would judge nothing."""
    properties = schema.get("properties")
    spec = properties.get(name) if isinstance(properties, dict) else None
    path = ("spec", "command_line")
    if not isinstance(spec, dict):
        known = sorted(properties) if isinstance(properties, dict) else []
        return [
            Finding(
                path,
                "unknown-reference",
                f"`command_line` names argument `{name}`, which the input_schema does not "
                f"declare.{did_you_mean(name, known)}",
            )
        ]
    if spec.get("type") != "string":
        return [
            Finding(
                path,
                "invalid-value",
                f"`command_line` argument `{name}` must be declared with `type: string` (a shell command line).",
            )
        ]
    required = schema.get("required")
    if not isinstance(required, list) or name not in required:
        return [
            Finding(
                path,
                "invalid-value",
                f"`command_line` argument `{name}` must be listed in `required`, so that every call carries the "
                "command line its rules judge.",
            )
        ]
    return []


def _output_schema_findings(spec: ToolSpec) -> list[Finding]:
    """Lint for ``output_schema``: a sound object schema, on a handler that returns data."""
    if spec.output_schema is None:
        return []
    findings = [
        Finding(("spec", "output_schema", *f.path), f.code, f.message, f.warning)
        for f in check_output_schema(spec.output_schema)
    ]
    kind = handler_parts(spec)[0]
    if kind in _TEXT_HANDLERS:
        findings.append(
            Finding(
                ("spec", "output_schema"),
                "output-schema-on-text",
                f"a `{kind}` handler {_TEXT_HANDLERS[kind]}, never a JSON object, so every call would fail the "
                "output_schema. Remove output_schema, or use a python, http or mcp handler that returns an object.",
            )
        )
    return findings


# Handler kinds whose results are text by construction: an output_schema cannot hold for them.
_TEXT_HANDLERS = {"command": "returns its output stream as text", "builtin": "returns toolrt's own text"}


def _settings_that_do_nothing(spec: ToolSpec) -> list[Finding]:
    """Warnings for settings the runtime will never act on, so the author is not misled."""
    findings: list[Finding] = []
    if spec.retry.attempts and not (spec.read_only or spec.idempotent):
        findings.append(
            Finding(
                ("spec", "retry", "attempts"),
                "retry-unsafe",
                f"`retry.attempts: {spec.retry.attempts}` never takes effect: a tool is retried only when it is "
                "`read_only` or "
                "`idempotent` (retrying a write could apply it twice). Mark the tool `idempotent: true` if a repeat "
                "is harmless, or drop `retry`.",
                warning=True,
            )
        )
    schema = spec.input_schema
    properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    for name in required:
        sub = properties.get(name) if isinstance(name, str) else None
        if isinstance(sub, dict) and "default" in sub:
            findings.append(
                Finding(
                    ("spec", "input_schema", "properties", name, "default"),
                    "schema-default-unused",
                    f"`{name}` is required, so its `default` is never used (every call must give it). Drop the "
                    f"default, or take `{name}` out of `required`.",
                    warning=True,
                )
            )
    return findings


def _defaults(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return MappingProxyType({})
    return MappingProxyType(
        {name: sub["default"] for name, sub in properties.items() if isinstance(sub, dict) and "default" in sub}
    )


def _attributes(model: ToolDocument, handler_kind: str) -> Mapping[str, Any]:
    """The tool as CEL expressions see it (``tool.read_only``, ``tool.labels``...)."""
    spec = model.spec
    return MappingProxyType(
        {
            "name": model.metadata.name,
            "version": model.metadata.version or "",
            "labels": dict(model.metadata.labels),
            "read_only": spec.read_only,
            "idempotent": spec.idempotent,
            "risk": spec.risk.value,
            "trust": spec.trust.value,
            "handler": handler_kind,
            "defer_loading": spec.defer_loading,
            "edits_workspace": spec.edits_workspace,
            "command_line": spec.command_line or "",
        }
    )


def expression_roots(source: str) -> tuple[Any, ...]:
    try:
        return analyse(source).roots
    except LexError:
        return ()
