"""Build a :class:`Snapshot` from config paths: the one load path.

``build_snapshot`` runs parse -> structure -> semantic checks -> compile and either
returns a snapshot or reports every problem at once. ``toolrt lint`` runs exactly this
and only skips publishing the result, so lint and runtime can never disagree.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from runtime.config.cache import CompileCache
from runtime.config.compile_policies import PolicyBuilding
from runtime.config.compile_redaction import RedactionBuilding
from runtime.config.compile_tools import ToolBuilding, _defaults
from runtime.config.consistency import check_consistency
from runtime.config.expressions import Finding
from runtime.config.load import LoadedConfig, LoadedDocument, load_documents
from runtime.config.models import (
    McpServerDocument,
    OutputProfileDocument,
    PolicyDocument,
    PolicyTestDocument,
    RedactionProfileDocument,
    Risk,
    Timeout,
    ToolDocument,
    ToolSpec,
    WorkflowDocument,
)
from runtime.config.problems import Problem, sorted_problems
from runtime.errors import ConfigError
from runtime.policy.conditions import ConditionPlanner
from runtime.policy.decision import rules_by_tool
from runtime.settings import Settings
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledTool, Handler, PolicyTestEntry, Snapshot
from runtime.validation.arguments import ArgumentValidator
from runtime.validation.schemacheck import check_input_schema
from runtime.versions import RolloutTable, compile_rollout
from runtime.workflow.compile import CompiledWorkflow, compile_workflow
from runtime.workflow.exprtypes import compile_typed, workflow_checks

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


class _Builder(ToolBuilding, PolicyBuilding, RedactionBuilding):
    """One build of a snapshot from loaded documents."""

    # -- the whole build ----------------------------------------------------

    def build(self, loaded: LoadedConfig) -> Snapshot | None:
        docs = loaded.documents
        self.problems.extend(check_consistency(docs, loaded.broken))
        of = _by_kind(docs)
        output_profiles = {e.model.metadata.name: e.model.spec for e in of[OutputProfileDocument]}
        redaction = self._redaction_profiles(of[RedactionProfileDocument])
        mcp_servers = {e.model.metadata.name: e.model.spec for e in of[McpServerDocument]}
        self.tool_context = (
            self.engine.name,
            self.schema_engine,
            self.budget,
            self.env_digest,
            tuple(self.search_dirs),
            self.settings.default_output.model_dump_json(),
            tuple(sorted(mcp_servers)),
            tuple(sorted(self.redaction_hashes.items())),
            tuple(sorted((e.model.metadata.name, e.source.content_hash) for e in of[OutputProfileDocument])),
        )
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
            when_plans=ConditionPlanner(self.engine, self.cache, self.budget).plans(
                rule_index, MappingProxyType(by_name)
            ),
            redactor=self.cache.compiled(
                ("redactor", self.env_digest, *(self.redaction_hashes[name] for name in redaction)),
                functools.partial(Redactor, self.with_env_secrets(tuple(redaction.values()))),
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
                            f"`{name}` declares a rollout in {len(declaring)} versions; declare it in one version "
                            "only.",
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
                functools.partial(
                    compile_typed, engine=self.engine, typed_for=workflow_checks(model.spec, defaults, self.cost_limit)
                ),
            )
            findings.extend(more)
            if model.spec.expose and name in by_name:
                findings.append(
                    Finding(
                        ("metadata", "name"),
                        "duplicate-name",
                        f"workflow `{name}` is exposed as a tool, but a Tool of that name is declared too. Rename "
                        "one, or set `expose: false`.",
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


def _document_key(entry: LoadedDocument) -> str:
    metadata = entry.model.metadata  # type: ignore[attr-defined]
    version = getattr(metadata, "version", None)
    return f"{metadata.name}@{version}" if version else str(metadata.name)


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
