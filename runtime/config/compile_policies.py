"""Compiling Policy documents: rules, their conditions typed against every tool they name."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.config.building import BuildState
from runtime.config.compile_tools import expression_roots
from runtime.config.expressions import Finding, compile_expression
from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.config.load import LoadedDocument
from runtime.config.models import PolicyDocument
from runtime.config.problems import Problem, Severity
from runtime.policy.cel import POLICY_VARIABLES
from runtime.policy.celdirect import compile_direct
from runtime.policy.commands import CommandPatterns
from runtime.snapshot import CompiledPolicy, CompiledPolicyRule, CompiledTool


@dataclass(frozen=True)
class _PolicyPieces:
    findings: tuple[Finding, ...]
    rules: tuple[tuple[Any, Any, Any], ...]  # (glob matcher, when program, reason program) per rule


class PolicyBuilding(BuildState):
    """Compiling Policy documents and typing their conditions against the tools they name."""

    def _policy(self, entry: LoadedDocument) -> CompiledPolicy | None:
        model: PolicyDocument = entry.model  # type: ignore[assignment]
        pieces = self.cache.compiled(
            ("policy", entry.source.content_hash, self.engine.name, self.budget), lambda: self._policy_pieces(model)
        )
        self.report(entry, pieces.findings)
        self.failed_expressions.update((id(entry), f.path) for f in pieces.findings if not f.warning)
        if any(not f.warning for f in pieces.findings):
            return None
        # A document of an unchanged file gets the previous build's policy: its rules keep
        # their identity, and with it the tools' condition plans made from them
        # (runtime.policy.conditions).
        return self.cache.reused(
            ("whole-policy", self.engine.name, self.budget),
            (entry.source, model),
            lambda: self._compiled_policy(entry, pieces),
        )

    def _compiled_policy(self, entry: LoadedDocument, pieces: _PolicyPieces) -> CompiledPolicy:
        model: PolicyDocument = entry.model  # type: ignore[assignment]
        rules = tuple(
            CompiledPolicyRule(
                policy=model.metadata.name,
                name=rule.name,
                effect=rule.effect,
                tool_globs=tuple(rule.tools),
                tool_matcher=matcher,
                when=when,
                reason=rule.reason,
                reason_program=reason,
                enforce=rule.enforce,
                on_error=rule.on_error,
                source=entry.source.locate(("spec", "rules", index)),
                named_tools=frozenset(
                    glob.split("@")[0] for glob in rule.tools if not any(ch in glob.split("@")[0] for ch in "*?[")
                ),
                command_patterns=CommandPatterns(rule.commands) if rule.commands is not None else None,
                when_variables=frozenset(ref.name for ref in expression_roots(rule.when)) if rule.when else frozenset(),
                when_direct=self.cache.compiled(("direct", rule.when), functools.partial(compile_direct, rule.when))
                if rule.when and when is not None
                else None,
            )
            for index, (rule, (matcher, when, reason)) in enumerate(zip(model.spec.rules, pieces.rules, strict=True))
        )
        return CompiledPolicy(model.metadata.name, model.spec, rules, entry.source.locate(()))

    def _policy_pieces(self, model: PolicyDocument) -> _PolicyPieces:
        findings: list[Finding] = []
        compiled: list[tuple[Any, Any, Any]] = []
        seen: dict[str, int] = {}
        for index, rule in enumerate(model.spec.rules):
            base = ("spec", "rules", index)
            if rule.name in seen:
                findings.append(
                    Finding(
                        (*base, "name"),
                        "duplicate-name",
                        f"rule name `{rule.name}` is already used by rule {seen[rule.name] + 1} of this policy; rule "
                        "names must be unique.",
                    )
                )
            seen[rule.name] = index
            when = reason = None
            if rule.when:
                when, more = compile_expression(
                    rule.when,
                    (*base, "when"),
                    POLICY_VARIABLES,
                    self.engine,
                    explain=self._untyped("`when`", with_commands=True),
                )
                findings.extend(more)
            if rule.reason_expression:
                explain = self._untyped("`reason_expression`", "string", with_commands=True)
                reason, more = compile_expression(
                    rule.reason_expression, (*base, "reason_expression"), POLICY_VARIABLES, self.engine, explain=explain
                )
                findings.extend(more)
            compiled.append((glob_matcher(rule.tools), when, reason))
        return _PolicyPieces(tuple(findings), tuple(compiled))

    def _type_policy_rules(self, entries: Sequence[LoadedDocument], tools: Sequence[CompiledTool]) -> None:
        """Type each rule's ``when`` and ``reason_expression`` against every tool its
        globs match (a glob over tools of different schemas is checked against each);
        a rule that matches no tool is typed with arguments of unknown fields."""
        for entry in entries:
            model: PolicyDocument = entry.model  # type: ignore[assignment]
            for index, rule in enumerate(model.spec.rules):
                matched: list[CompiledTool | None] = [t for t in tools if _glob_matches(rule.tools, t)] or [None]
                literal = len(rule.tools) == 1 and not any(ch in rule.tools[0] for ch in "*?[")
                for field_name, source, result in (
                    ("`when`", rule.when, "bool"),
                    ("`reason_expression`", rule.reason_expression, "string"),
                ):
                    if not source:
                        continue
                    path = ("spec", "rules", index, "when" if result == "bool" else "reason_expression")
                    if (id(entry), path) in self.failed_expressions:
                        continue  # one mistake, one message: the compile error already said it
                    grouped: dict[tuple[str, str, bool, Any], list[str]] = {}
                    for tool in matched:
                        for finding in self._typed_for_tool(source, path, tool, field_name, result):
                            grouped.setdefault(
                                (finding.code, finding.message, finding.warning, finding.inner), []
                            ).append(tool.key if tool else "")
                    findings = []
                    for (code, message, warning, inner), names in grouped.items():
                        subject = _subject(names, literal)
                        # A mounted tool's schema is the remote server's: what it makes of a
                        # rule is reported, but does not stop the build (as its own problems).
                        remote = all(name in self.mounted_tools for name in names if name)
                        findings.append(
                            Finding(path, code, subject + message, warning or (remote and any(names)), inner)
                        )
                    self.report(entry, findings)

    def _typed_for_tool(
        self, source: str, path: tuple[str | int, ...], tool: CompiledTool | None, field_name: str, result: str
    ) -> list[Finding]:
        schema = tool.spec.input_schema if tool is not None else None
        line = tool.spec.command_line if tool is not None else None
        variables, bounds, key = self.cache.compiled(
            ("cel-types", _schema_key(schema), line), lambda: variable_types(schema, line, with_commands=True)
        )
        # A rule that matches no tool applies to nothing yet: its cost is judged per tool.
        limit = self.cost_limit if tool is not None else 10**18
        declared = self.engine.name == "fast"
        typed = TypedCheck(
            variables, bounds, result, limit, field_name, key=key, declared=declared, time_limit_ms=self.time_limit_ms
        )
        cache_key = ("cel-typed", source, key, field_name, result, limit, declared, self.time_limit_ms)
        return list(self.cache.compiled(cache_key, lambda: tuple(type_findings(source, path, typed, own_schema=False))))

    def _command_rules_apply(
        self, entries: Sequence[LoadedDocument], policies: Sequence[CompiledPolicy], tools: Sequence[CompiledTool]
    ) -> None:
        """Warn about `commands` rules that no command-line tool falls under: they never apply."""
        own = {e.model.metadata.name for e in entries if e.pack is None}
        with_lines = [t for t in tools if t.spec.command_line]
        for policy in policies:
            if policy.name not in own:
                continue
            for rule in policy.rules:
                if rule.command_patterns is not None and not any(
                    rule.matches_tool(t.name, t.version) for t in with_lines
                ):
                    self.problems.append(
                        Problem(
                            rule.source,
                            "never-applies",
                            f"rule `{rule.name}` has `commands` patterns, but none of the tools it names declares "
                            "`command_line`, so it never applies. Name a tool that runs command lines (e.g. "
                            "run_command) or drop `commands`.",
                            Severity.warning,
                        )
                    )


def _glob_matches(globs: Sequence[str], tool: CompiledTool) -> bool:
    for glob in globs:
        if fnmatch.fnmatchcase(tool.name, glob) or (
            tool.version and fnmatch.fnmatchcase(f"{tool.name}@{tool.version}", glob)
        ):
            return True
    return False


def _subject(names: Sequence[str], literal: bool) -> str:
    """ "for tool `x`: " before a finding of a rule checked per tool (none when the
    rule names exactly one tool, or matches none)."""
    names = [n for n in names if n]
    if literal or not names:
        return ""
    if len(names) == 1:
        return f"for tool `{names[0]}`: "
    shown = ", ".join(f"`{n}`" for n in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"for tools {shown}{more}: "


def _schema_key(schema: Any) -> str:
    return hashlib.sha256(repr(schema).encode()).hexdigest() if schema is not None else ""


def glob_matcher(globs: Sequence[str]) -> Any:
    """One compiled regex matching any of the shell-style ``globs``."""
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))
