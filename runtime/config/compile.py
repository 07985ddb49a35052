"""Build a :class:`Snapshot` from config paths: the one load path.

``build_snapshot`` runs parse -> structure -> semantic checks -> compile and either
returns a snapshot or reports every problem at once. ``toolrt lint`` runs exactly this
and only skips publishing the result, so lint and runtime can never disagree.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from runtime.config.cache import CompileCache
from runtime.config.consistency import check_consistency
from runtime.config.expressions import Finding, compile_expression
from runtime.config.exprtypes import TypedCheck, type_findings, variable_types
from runtime.config.files import builtin_pack_dirs, find_pack, read_source
from runtime.config.handlers import handler_parts, resolve_handler
from runtime.config.load import LoadedConfig, LoadedDocument, load_documents
from runtime.config.models import (
    DEFAULT_REDACTION,
    Effect,
    Enforcement,
    McpServerDocument,
    OutputProfileDocument,
    OutputSettings,
    PolicyDocument,
    PolicyTestDocument,
    RedactionProfileDocument,
    Risk,
    Timeout,
    ToolDocument,
    ToolSpec,
    WorkflowDocument,
)
from runtime.config.problems import Problem, Severity, sorted_problems
from runtime.config.structure import check_structure
from runtime.config.suggest import did_you_mean
from runtime.config.yamlsource import parse_yaml
from runtime.errors import CelCompileError, ConfigError
from runtime.policy.cel import POLICY_VARIABLES, RULE_VARIABLES, CelEngine, Outcome, get_engine
from runtime.policy.celdirect import compile_direct
from runtime.policy.celrefs import LexError, analyse
from runtime.policy.commands import CommandPatterns
from runtime.policy.decision import rules_by_tool
from runtime.regex import RegexRejected, check_pattern, compile_alternation, compile_re2
from runtime.settings import Settings
from runtime.shaping.redact import Redactor
from runtime.snapshot import (
    CompiledPattern,
    CompiledPolicy,
    CompiledPolicyRule,
    CompiledRedaction,
    CompiledRule,
    CompiledTool,
    Handler,
    PolicyTestEntry,
    ResolvedOutput,
    Snapshot,
    WhenPlan,
)
from runtime.validation.arguments import ArgumentValidator, fast_schema_available
from runtime.validation.output import OutputCheck
from runtime.validation.schemacheck import check_input_schema, check_output_schema
from runtime.versions import RolloutTable, compile_rollout
from runtime.workflow.compile import CompiledWorkflow, compile_workflow
from runtime.workflow.templates import WORKFLOW_VARIABLES

# Extra documents for a build, given the loaded ones (see build_snapshot).
Mount = Callable[[Sequence[LoadedDocument]], Sequence[LoadedDocument]]


@dataclass(frozen=True)
class BuildResult:
    """A snapshot (None if there were errors) and every problem found."""

    snapshot: Snapshot | None
    problems: tuple[Problem, ...]
    files: tuple[str, ...]
    documents: int

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.is_error)


def build_snapshot(
    paths: Sequence[Path | str],
    settings: Settings | None = None,
    cache: CompileCache | None = None,
    *,
    mount: Mount | None = None,
) -> BuildResult:
    """Load and compile the config under ``paths``. Never raises for bad config.

    ``mount`` adds documents that do not come from files (the tools of MCP servers,
    see :mod:`runtime.mcpclient.mount`); they are compiled like the rest, but their
    problems are warnings that leave the tool out. Lint passes none: no network."""
    settings = settings or Settings()
    cache = cache or CompileCache()
    roots = [Path(p) for p in paths]
    cache.begin()
    loaded = load_documents(roots, settings, cache)
    if mount is not None and not any(p.is_error for p in loaded.problems):
        loaded.documents.extend(mount(loaded.documents))
    builder = _Builder(settings, cache, roots)
    snapshot = builder.build(loaded)
    cache.finish()
    problems = sorted_problems([*loaded.problems, *builder.problems])
    if any(p.is_error for p in problems):
        snapshot = None
    return BuildResult(snapshot, problems, tuple(loaded.files), len(loaded.documents))


def load_snapshot(
    paths: Sequence[Path | str], settings: Settings | None = None, cache: CompileCache | None = None
) -> Snapshot:
    """Like :func:`build_snapshot`, but raise :class:`ConfigError` unless it is clean."""
    result = build_snapshot(paths, settings, cache)
    if result.snapshot is None:
        raise ConfigError(result.problems)
    return result.snapshot


@dataclass(frozen=True)
class _ToolPieces:
    findings: tuple[Finding, ...]
    arguments: ArgumentValidator | None
    rules: tuple[CompiledRule, ...]
    variables: frozenset[str]
    output_check: OutputCheck | None = None


@dataclass(frozen=True)
class _PolicyPieces:
    findings: tuple[Finding, ...]
    rules: tuple[tuple[Any, Any, Any], ...]  # (glob matcher, when program, reason program) per rule


class _Builder:
    def __init__(self, settings: Settings, cache: CompileCache, roots: Sequence[Path]) -> None:
        self.settings = settings
        self.cache = cache
        self.engine: CelEngine = get_engine(settings.cel_engine)
        self.schema_engine = (
            "fast"
            if settings.schema_engine == "fast" or (settings.schema_engine == "auto" and fast_schema_available())
            else "portable"
        )
        self.search_dirs = [r if r.is_dir() else r.parent for r in roots]
        self.problems: list[Problem] = []
        self.redaction_hashes: dict[str, str] = {}
        self.cost_limit = settings.cel_cost_limit
        self.mounted_tools: set[str] = set()
        self.failed_expressions: set[tuple[int, tuple[str | int, ...]]] = (
            set()
        )  # (document, path): already reported, not typed

    def report(self, entry: LoadedDocument, findings: Sequence[Finding], prefix: tuple[str | int, ...] = ()) -> None:
        doc = entry.source
        for f in findings:
            path = (*prefix, *f.path)
            location = (
                doc.locate_in_scalar(path, *f.inner) if f.inner else doc.locate(path, key=f.code in ("unknown-key",))
            )
            # A mounted tool's problem is the remote server's: it leaves that tool out, not the build.
            self.problems.append(
                Problem(location, f.code, f.message, Severity.warning if f.warning or entry.mounted else Severity.error)
            )

    # -- the whole build ----------------------------------------------------

    def build(self, loaded: LoadedConfig) -> Snapshot | None:
        docs = loaded.documents
        self.problems.extend(check_consistency(docs, loaded.broken))
        of = _by_kind(docs)
        output_profiles = {e.model.metadata.name: e.model.spec for e in of[OutputProfileDocument]}
        redaction = self._redaction_profiles(of[RedactionProfileDocument])
        mcp_servers = {e.model.metadata.name: e.model.spec for e in of[McpServerDocument]}
        tools = [
            t
            for t in (self._tool(e, output_profiles, redaction, mcp_servers) for e in of[ToolDocument])
            if t is not None
        ]
        self.mounted_tools = {_document_key(e) for e in of[ToolDocument] if e.mounted}
        policies = [p for p in (self._policy(e) for e in of[PolicyDocument]) if p is not None]
        workflows, workflow_tools = self._workflows(of[WorkflowDocument], tools)
        tools.extend(workflow_tools)
        self._type_policy_rules(of[PolicyDocument], tools)
        tests = tuple(
            PolicyTestEntry(e.model.metadata.name, case, e.source.locate(("spec", "cases", i)))
            for e in of[PolicyTestDocument]
            for i, case in enumerate(e.model.spec.cases)
        )
        if any(p.is_error for p in self.problems):
            return None
        by_name: dict[str, dict[str, CompiledTool]] = {}
        for tool in tools:
            by_name.setdefault(tool.name, {})[tool.version or ""] = tool
        defaults = {name: _default_version(versions) for name, versions in by_name.items()}
        rollouts = self._rollouts(by_name)
        if any(p.is_error for p in self.problems):
            return None
        self._command_rules_apply(of[PolicyDocument], policies, tools)
        return Snapshot(
            version=_version(docs),
            tools=MappingProxyType(dict(sorted(defaults.items()))),
            tool_versions=MappingProxyType({n: MappingProxyType(v) for n, v in sorted(by_name.items())}),
            policies=tuple(policies),
            redaction_profiles=MappingProxyType(redaction),
            output_profiles=MappingProxyType({n: self._resolve_output(s, None) for n, s in output_profiles.items()}),
            mcp_servers=MappingProxyType(mcp_servers),
            workflows=MappingProxyType(workflows),
            policy_tests=tests,
            sources=tuple(loaded.files),
            warnings=tuple(p for p in self.problems if not p.is_error),
            cel_engine=self.engine.name,
            schema_engine=self.schema_engine,
            rule_index=(rule_index := rules_by_tool([rule for policy in policies for rule in policy.rules], by_name)),
            when_plans=self._when_plans(rule_index, MappingProxyType(by_name)),
            redactor=self.cache.compiled(
                ("redactor", *(self.redaction_hashes[name] for name in redaction)),
                functools.partial(Redactor, tuple(redaction.values())),
            ),
            forbidden_modes=frozenset(m.value for policy in policies for m in policy.spec.forbidden_modes),
            rollouts=MappingProxyType(rollouts),
        )

    def _rollouts(self, by_name: Mapping[str, Mapping[str, CompiledTool]]) -> dict[str, RolloutTable]:
        """Each tool's rollout, compiled (runtime.versions); problems at the declaring document."""
        tables: dict[str, RolloutTable] = {}
        for name, versions in by_name.items():
            declaring = [tool for tool in versions.values() if tool.spec.rollout is not None]
            if len(declaring) > 1:
                for tool in declaring:
                    self.problems.append(
                        Problem(
                            tool.source,
                            "rollout-conflict",
                            f"`{name}` declares a rollout in {len(declaring)} versions; declare it in one version only.",
                        )
                    )
                continue
            if not declaring:
                continue
            tool = declaring[0]
            assert tool.spec.rollout is not None  # noqa: S101 - chosen for having one
            table, problems = compile_rollout(name, tool.spec.rollout, [v for v in versions if v])
            for message in problems:
                self.problems.append(Problem(tool.source, "rollout-invalid", message))
            if table is not None:
                tables[name] = table
        return tables

    def _workflows(
        self, entries: Sequence[LoadedDocument], tools: Sequence[CompiledTool]
    ) -> tuple[dict[str, CompiledWorkflow], list[CompiledTool]]:
        """Each Workflow compiled (runtime.workflow.compile), and the tools that expose them."""
        by_name: dict[str, dict[str, CompiledTool]] = {}
        for tool in tools:
            by_name.setdefault(tool.name, {})[tool.version or ""] = tool
        defaults = {name: _default_version(versions) for name, versions in by_name.items()}
        compiled: dict[str, CompiledWorkflow] = {}
        exposed: list[CompiledTool] = []
        for entry in entries:
            model: WorkflowDocument = entry.model  # type: ignore[assignment]
            name = model.metadata.name
            findings = [
                Finding(("spec", "input_schema", *f.path), f.code, f.message, f.warning)
                for f in check_input_schema(model.spec.input_schema)
            ]
            workflow, more = compile_workflow(
                name,
                model.spec,
                defaults,
                lambda source, path: self._expression(source, path, WORKFLOW_VARIABLES, None),
            )
            findings.extend(more)
            if model.spec.expose and name in by_name:
                findings.append(
                    Finding(
                        ("metadata", "name"),
                        "duplicate-name",
                        f"workflow `{name}` is exposed as a tool, but a Tool of that name is declared too. Rename one, or set `expose: false`.",
                    )
                )
            self.report(entry, findings)
            if workflow is None or any(not f.warning for f in findings):
                continue
            compiled[name] = dataclasses.replace(
                workflow, arguments=ArgumentValidator(model.spec.input_schema, self.schema_engine)
            )
            if model.spec.expose:
                exposed.append(self._workflow_tool(entry, workflow))
        return compiled, exposed

    def _workflow_tool(self, entry: LoadedDocument, workflow: CompiledWorkflow) -> CompiledTool:
        """A workflow as the model sees it: a tool whose handler runs the workflow."""
        model: WorkflowDocument = entry.model  # type: ignore[assignment]
        spec = ToolSpec(
            description=model.spec.description,
            handler="builtin:workflow",
            input_schema=model.spec.input_schema,
            read_only=workflow.read_only,
            risk=Risk(workflow.risk),
            timeout=Timeout(total_s=86_400),
            edits_workspace=False,
        )
        handler = Handler(kind="workflow", target=workflow.name)
        attributes = MappingProxyType(
            {
                "name": workflow.name,
                "version": "",
                "labels": dict(model.metadata.labels),
                "read_only": workflow.read_only,
                "idempotent": False,
                "risk": workflow.risk,
                "trust": "trusted",
                "handler": "workflow",
                "defer_loading": False,
                "edits_workspace": False,
                "command_line": "",
            }
        )
        return CompiledTool(
            name=workflow.name,
            version=None,
            metadata=model.metadata,
            spec=spec,
            handler=handler,
            arguments=ArgumentValidator(model.spec.input_schema, self.schema_engine),
            rules=(),
            output=self._resolve_output(spec.output, None),
            redaction=(),
            source=entry.source.locate(()),
            defaults=_defaults(model.spec.input_schema),
            attributes=attributes,
        )

    def _when_plans(
        self, rule_index: Mapping[str, tuple[CompiledPolicyRule, ...]], tools: Mapping[str, Mapping[str, CompiledTool]]
    ) -> Mapping[str, WhenPlan]:
        """Per tool key: conditions that depend on the tool alone, evaluated now, and
        the rest as one list program (fast engine; compiled once per distinct set)."""
        programs: dict[tuple[int, ...], Any] = {}
        plans: dict[str, WhenPlan] = {}
        for name, versions in tools.items():
            for version, tool in versions.items():
                key = f"{name}@{version}" if version else name
                plan = self._when_plan(rule_index.get(key, ()), tool, programs)
                if plan is not None:
                    plans[key] = plan
        return MappingProxyType(plans)

    def _when_plan(
        self, rules: Sequence[CompiledPolicyRule], tool: CompiledTool, programs: dict[tuple[int, ...], Any]
    ) -> WhenPlan | None:
        static = {"tool"} if tool.spec.command_line else {"tool", "commands"}
        changing = _CHANGING_WITH_LINE if tool.spec.command_line else _CHANGING
        constants: dict[int, Outcome] = {}
        dynamic: list[int] = []
        activation = None
        for position, rule in enumerate(rules):
            if rule.when is None:
                continue
            # Static only if the references say so AND no per-call variable's name appears
            # anywhere in the source (a backstop against any form the reference scan misses,
            # such as root-scoped `.args`); a name inside a string just costs the folding.
            if rule.when_variables <= static and not changing.search(rule.when.source):
                if activation is None:
                    activation = self.engine.activation(
                        {"tool": dict(tool.attributes), "commands": [], "args": {}, "session": {}, "call": {}},
                        POLICY_VARIABLES,
                    )
                constants[position] = rule.when.evaluate(activation)
            elif rule.when_direct is None:  # a direct condition costs less alone than its place in a batch
                dynamic.append(position)
        batch = None
        if len(dynamic) >= 2 and self.engine.name == "fast":  # the portable engine pays per element, not per evaluation
            identity = tuple(id(rules[p]) for p in dynamic)
            if identity not in programs:
                sources = [rules[p].when.source for p in dynamic]  # type: ignore[union-attr]
                source = (
                    "[" + ", ".join(f"({text}\n)" for text in sources) + "]"
                )  # the newline ends a trailing // comment
                try:
                    programs[identity] = self.cache.compiled(
                        ("when-batch", self.engine.name, source), lambda: self.engine.compile(source, POLICY_VARIABLES)
                    )
                except CelCompileError:
                    programs[identity] = None  # each condition compiled alone: evaluate them one by one
            batch = programs[identity]
        quick = None
        if not tool.spec.command_line and all(rule.enforce is Enforcement.deny for rule in rules):
            live = [
                rule
                for position, rule in enumerate(rules)
                if position not in constants or constants[position].error is not None or constants[position].is_true
            ]
            quick = tuple(
                tuple(rule for rule in live if rule.effect is effect)
                for effect in (Effect.deny, Effect.ask, Effect.allow)
            )
        if not constants and batch is None and quick is None:
            return None
        known = MappingProxyType({id(rules[position]): outcome for position, outcome in constants.items()})
        return WhenPlan(MappingProxyType(constants), batch, tuple(dynamic) if batch is not None else (), known, quick)  # type: ignore[arg-type]

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
                            f"rule `{rule.name}` has `commands` patterns, but none of the tools it names declares `command_line`, so it never applies. Name a tool that runs command lines (e.g. run_command) or drop `commands`.",
                            Severity.warning,
                        )
                    )

    # -- tools ----------------------------------------------------------------

    def _tool(
        self,
        entry: LoadedDocument,
        output_profiles: Mapping[str, OutputSettings],
        redaction: Mapping[str, CompiledRedaction],
        mcp_servers: Mapping[str, Any],
    ) -> CompiledTool | None:
        model: ToolDocument = entry.model  # type: ignore[assignment]
        spec = model.spec
        pieces = self.cache.compiled(
            ("tool", entry.source.content_hash, self.engine.name, self.schema_engine, self.cost_limit),
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
                    f"tool `{model.metadata.name}` sets `redaction: []`: nothing in its output, its errors or its audited arguments is redacted, "
                    f"not even private keys and tokens. Remove the line to get the `{DEFAULT_REDACTION}` profile, or name the profiles it needs.",
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
        redactor_key = ("redactor", *(self.redaction_hashes[p.name] for p in profiles))
        redactor = self.cache.compiled(redactor_key, functools.partial(Redactor, tuple(profiles)))
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
        if schema_readable:
            cel_variables, bounds, key = variable_types(spec.input_schema)
            typed = TypedCheck(cel_variables, bounds, "bool", self.cost_limit, "rule", key=key)
        for index, rule in enumerate(spec.rules):
            name = rule.name or f"rule-{index + 1}"
            if name in seen:
                findings.append(
                    Finding(
                        ("spec", "rules", index, "name"),
                        "duplicate-name",
                        f"rule name `{name}` is already used by rule {seen[name] + 1} of this tool; give each rule its own name.",
                    )
                )
            seen[name] = index
            program, rule_findings = compile_expression(
                rule.expression,
                ("spec", "rules", index, "expression"),
                RULE_VARIABLES,
                self.engine,
                spec.input_schema if schema_readable else None,
                typed=typed,
            )
            findings.extend(rule_findings)
            if program is not None:
                rules.append(
                    CompiledRule(
                        name, rule.expression, rule.message, rule.on_error, program, compile_direct(rule.expression)
                    )
                )
        variables = frozenset(ref.name for rule in spec.rules for ref in _roots(rule.expression))
        if spec.command_line is not None and schema_readable:
            findings.extend(_check_command_line(spec.command_line, spec.input_schema))
        findings.extend(_settings_that_do_nothing(spec))
        output_findings = _output_schema_findings(spec)
        findings.extend(output_findings)
        output_check = None
        if spec.output_schema is not None and not any(not f.warning for f in output_findings):
            output_check = OutputCheck(spec.output_schema, self.schema_engine)
        return _ToolPieces(tuple(findings), arguments, tuple(rules), variables, output_check)

    def _expression(
        self, source: str, path: tuple[str | int, ...], variables: tuple[str, ...], schema: dict[str, Any] | None
    ) -> tuple[Any, list[Finding]]:
        return compile_expression(source, path, variables, self.engine, schema)

    def _untyped(self, field_name: str, result: str | None = "bool", *, with_commands: bool = False) -> TypedCheck:
        """Types for an expression that no tool schema applies to (args of unknown fields)."""
        variables, bounds, key = variable_types(None, with_commands=with_commands)
        return TypedCheck(variables, bounds, result, self.cost_limit, field_name, key=key)

    # -- typing policy conditions against the tools they apply to ---------------

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
        typed = TypedCheck(variables, bounds, result, limit, field_name, key=key)
        cache_key = ("cel-typed", source, key, field_name, result, limit)
        return list(self.cache.compiled(cache_key, lambda: tuple(type_findings(source, path, typed, own_schema=False))))

    def _resolve_output(self, own: OutputSettings, profile: OutputSettings | None) -> ResolvedOutput:
        default = self.settings.default_output

        def pick(field: str) -> Any:
            for layer in (own, profile):
                value = getattr(layer, field, None) if layer is not None else None
                if value is not None:
                    return value
            return getattr(default, field)

        return ResolvedOutput(
            **{f: pick(f) for f in ("max_chars", "preview_chars", "head_chars", "tail_chars", "on_success", "on_error")}
        )

    def _unknown(
        self, entry: LoadedDocument, path: tuple[str | int, ...], kind: str, name: str, known: Mapping[str, Any]
    ) -> None:
        listed = ", ".join(sorted(known)) or "none"
        message = f"no {kind} named `{name}`.{did_you_mean(name, known)} Declared: {listed}. Declare it, or include a pack that does."
        self.problems.append(Problem(entry.source.locate(path), "unknown-profile", message))

    # -- redaction profiles ---------------------------------------------------------

    def _redaction_profiles(self, entries: Sequence[LoadedDocument]) -> dict[str, CompiledRedaction]:
        compiled: dict[str, CompiledRedaction] = {}
        for entry in entries:
            model: RedactionProfileDocument = entry.model  # type: ignore[assignment]
            self.redaction_hashes[model.metadata.name] = entry.source.content_hash
            result = self.cache.compiled(
                ("redaction", entry.source.content_hash), functools.partial(_compile_redaction, model)
            )
            findings, profile = result
            self.report(entry, findings)
            if profile is not None:
                compiled[model.metadata.name] = profile
        if DEFAULT_REDACTION not in self.redaction_hashes:
            shipped = self.cache.compiled(
                ("shipped-redaction", DEFAULT_REDACTION),
                lambda: _shipped_profile(DEFAULT_REDACTION, self.settings.max_config_file_bytes),
            )
            if shipped is not None:
                self.redaction_hashes[DEFAULT_REDACTION] = shipped[0]
                compiled[DEFAULT_REDACTION] = shipped[1]
        return compiled

    # -- policies --------------------------------------------------------------------

    def _policy(self, entry: LoadedDocument) -> CompiledPolicy | None:
        model: PolicyDocument = entry.model  # type: ignore[assignment]
        pieces = self.cache.compiled(
            ("policy", entry.source.content_hash, self.engine.name, self.cost_limit), lambda: self._policy_pieces(model)
        )
        self.report(entry, pieces.findings)
        self.failed_expressions.update((id(entry), f.path) for f in pieces.findings if not f.warning)
        if any(not f.warning for f in pieces.findings):
            return None
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
                when_variables=frozenset(ref.name for ref in _roots(rule.when)) if rule.when else frozenset(),
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
                        f"rule name `{rule.name}` is already used by rule {seen[rule.name] + 1} of this policy; rule names must be unique.",
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


_CHANGING = re.compile(r"(?<![A-Za-z0-9_])(args|session|call)(?![A-Za-z0-9_])")
_CHANGING_WITH_LINE = re.compile(r"(?<![A-Za-z0-9_])(args|session|call|commands)(?![A-Za-z0-9_])")


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
                f"`command_line` names argument `{name}`, which the input_schema does not declare.{did_you_mean(name, known)}",
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
                f"`command_line` argument `{name}` must be listed in `required`, so that every call carries the command line its rules judge.",
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
                f"`retry.attempts: {spec.retry.attempts}` never takes effect: a tool is retried only when it is `read_only` or "
                "`idempotent` (retrying a write could apply it twice). Mark the tool `idempotent: true` if a repeat is harmless, or drop `retry`.",
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
                    f"`{name}` is required, so its `default` is never used (every call must give it). Drop the default, or take `{name}` out of `required`.",
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


def _document_key(entry: LoadedDocument) -> str:
    metadata = entry.model.metadata  # type: ignore[attr-defined]
    version = getattr(metadata, "version", None)
    return f"{metadata.name}@{version}" if version else str(metadata.name)


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


def _roots(source: str) -> tuple[Any, ...]:
    try:
        return analyse(source).roots
    except LexError:
        return ()


def glob_matcher(globs: Sequence[str]) -> Any:
    """One compiled regex matching any of the shell-style ``globs``."""
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))


def _compile_redaction(model: RedactionProfileDocument) -> tuple[tuple[Finding, ...], CompiledRedaction | None]:
    findings: list[Finding] = []
    patterns: list[CompiledPattern] = []
    seen: set[str] = set()
    for index, pattern in enumerate(model.spec.patterns):
        if pattern.name in seen:
            findings.append(
                Finding(
                    ("spec", "patterns", index, "name"),
                    "duplicate-name",
                    f"pattern name `{pattern.name}` appears twice in this profile; names label what was redacted, so they must be unique.",
                )
            )
        seen.add(pattern.name)
        try:
            check_pattern(pattern.regex)
            regex = compile_re2(pattern.regex, case_insensitive=pattern.case_insensitive)
        except RegexRejected as err:
            findings.append(Finding(("spec", "patterns", index, "regex"), err.code, err.message))
            continue
        patterns.append(
            CompiledPattern(
                pattern.name,
                regex,
                pattern.replacement or f"[REDACTED:{pattern.name}]",
                pattern.validator,
                pattern.keep,
                frozenset(pattern.shields),
                pattern.value_only,
            )
        )
    names = {p.name for p in model.spec.patterns}
    for index, pattern in enumerate(model.spec.patterns):
        if pattern.keep and not pattern.shields:
            findings.append(
                Finding(
                    ("spec", "patterns", index, "keep"),
                    "missing-key",
                    f"keep pattern `{pattern.name}` needs `shields`: the patterns of this profile it protects (e.g. [email]).",
                )
            )
        if pattern.shields and not pattern.keep:
            findings.append(
                Finding(
                    ("spec", "patterns", index, "shields"),
                    "invalid-value",
                    f"`shields` only means something with `keep: true` (pattern `{pattern.name}`).",
                )
            )
        for s_index, shielded in enumerate(pattern.shields):
            if shielded not in names:
                findings.append(
                    Finding(
                        ("spec", "patterns", index, "shields", s_index),
                        "unknown-reference",
                        f"pattern `{pattern.name}` shields `{shielded}`, which this profile does not have.{did_you_mean(shielded, names)}",
                    )
                )
    if findings:
        return tuple(findings), None
    combined_source = "|".join(f"({'(?i)' if p.case_insensitive else ''}{p.regex})" for p in model.spec.patterns)
    try:
        combined = compile_alternation(combined_source)
    except RegexRejected as err:
        return (Finding(("spec", "patterns"), err.code, f"the patterns together do not compile: {err.message}"),), None
    if model.spec.secret_keys is not None:
        try:
            check_pattern(model.spec.secret_keys)
            compile_re2(model.spec.secret_keys)
        except RegexRejected as err:
            return (Finding(("spec", "secret_keys"), err.code, err.message),), None
    return (), CompiledRedaction(model.metadata.name, tuple(patterns), combined, model.spec.secret_keys)


def _shipped_profile(name: str, max_bytes: int) -> tuple[str, CompiledRedaction] | None:
    """The RedactionProfile ``name`` of the shipped ``redaction-default`` pack, compiled,
    with its content hash; None if the pack is missing or does not compile (the shipped
    pack is tested, so only a damaged installation gets None)."""
    files = find_pack("redaction-default", builtin_pack_dirs()) or []
    for path in files:
        source, _problem = read_source(path, max_bytes)
        if source is None:
            continue
        for doc in parse_yaml(source.text, source.display).documents:
            model = check_structure(doc).model if doc.data is not None else None
            if isinstance(model, RedactionProfileDocument) and model.metadata.name == name:
                findings, profile = _compile_redaction(model)
                return None if profile is None or findings else (doc.content_hash, profile)
    return None


def _by_kind(docs: Sequence[LoadedDocument]) -> dict[type, list[LoadedDocument]]:
    kinds: dict[type, list[LoadedDocument]] = {
        k: []
        for k in (
            ToolDocument,
            PolicyDocument,
            RedactionProfileDocument,
            OutputProfileDocument,
            McpServerDocument,
            WorkflowDocument,
            PolicyTestDocument,
        )
    }
    for entry in docs:
        kinds.setdefault(type(entry.model), []).append(entry)
    return kinds


def _default_version(versions: Mapping[str, CompiledTool]) -> CompiledTool:
    """The unversioned tool if there is one, else the highest version."""
    if "" in versions:
        return versions[""]
    return versions[max(versions, key=_version_key)]


def _version_key(version: str) -> tuple[Any, ...]:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"[.\-+]", version))


def _version(docs: Sequence[LoadedDocument]) -> str:
    """Hash of every document's content: formatting and comments do not change it."""
    digest = hashlib.sha256()
    for content in sorted(entry.source.content_hash for entry in docs):
        digest.update(content.encode())
    return digest.hexdigest()[:16]
