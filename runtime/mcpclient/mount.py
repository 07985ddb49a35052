"""Mounting: an MCP server's listed tools enter the registry as Tool documents.

While a snapshot is built for serving (``Runtime`` at startup and on every reload,
never ``toolrt lint``), each declared McpServer is asked for its tools (bounded by its
``connect_timeout_s``), and each tool its ``include``/``exclude`` globs admit becomes a
synthesized Tool document that is then validated and compiled exactly like one from
YAML:

- name ``<server>__<tool>`` (characters model APIs refuse become ``_``; at most 64);
- handler ``mcp:<server>/<tool>``; input schema: the server's ``inputSchema``; output
  schema: its ``outputSchema`` when it gives a usable one (results are then checked);
- ``trust`` from the server document (untrusted unless declared). The server's hints
  are believed only from a trusted server: ``read_only`` from ``readOnlyHint``,
  ``idempotent`` from ``idempotentHint``, ``risk`` low for read-only tools, medium for
  ``destructiveHint: false``, else high (MCP's default for a tool that may write is
  destructive). An untrusted server is outside input like its output, and a hint that
  loosens (runs in plan mode, passes read-only allow rules, is retried, needs no
  approval) would let it grant itself permissions: its tools are not read-only, not
  idempotent and high risk whatever it says, unless ``overrides`` (the config author's
  word) says otherwise; ``timeout.total_s`` the server's
  ``call_timeout_s``; output: the ``mcp-25k-tokens`` OutputProfile (from the
  ``output-default`` pack) when the config has it, else the same limits inline;
  redaction: every RedactionProfile of the config, and ``secrets`` (the shipped
  one when the config declares none) whatever else there is (remote output is
  outside our world). ``overrides.<tool>`` replaces any of these attributes;
- labels ``mcp_server`` and ``mcp_tool``, for policy rules.

A Tool document of the config wins: a remote tool is not mounted when a declared
Tool has its mounted name or already calls it (``handler: mcp:<server>/<tool>``).
A tool whose input schema is not a usable JSON Schema is skipped with a warning. A
server that cannot be reached mounts nothing (with a warning) and never fails the
build; on a reload it keeps the tools it listed last time, if its declaration is
unchanged.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from loguru import logger

from runtime.config.handlers import handler_parts
from runtime.config.load import LoadedDocument
from runtime.config.models import (
    API_VERSION,
    DEFAULT_REDACTION,
    McpServerDocument,
    McpServerSpec,
    McpToolOverride,
    McpTransport,
    OutputProfileDocument,
    RedactionProfileDocument,
    ToolDocument,
    Trust,
)
from runtime.config.structure import check_structure
from runtime.config.yamlsource import SourceDocument, content_hash
from runtime.mcpclient.errors import McpFailure
from runtime.mcpclient.pool import McpPool
from runtime.validation.schemacheck import check_input_schema, check_output_schema

MOUNT_PROFILE = "mcp-25k-tokens"
# The limits of the mcp-25k-tokens profile (policies/output-default.yaml), for configs
# that do not include that pack: MCP clients cut tool results at 25,000 tokens.
_INLINE_OUTPUT = {
    "max_chars": 100_000,
    "preview_chars": 4000,
    "head_chars": 10_000,
    "tail_chars": 10_000,
    "on_success": "artifact",
    "on_error": "head_tail",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_DESCRIPTION = 8000


@dataclass(frozen=True)
class ListedTool:
    """What mounting needs from one entry of a server's tools/list."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    output_schema: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, tool: Any) -> ListedTool:
        """From the SDK's ``Tool`` model."""
        hints = tool.annotations
        description = tool.description or tool.title or (hints.title if hints is not None else None) or ""
        return cls(
            name=tool.name,
            description=description,
            input_schema=tool.input_schema,
            read_only=hints.read_only_hint if hints is not None else None,
            destructive=hints.destructive_hint if hints is not None else None,
            idempotent=hints.idempotent_hint if hints is not None else None,
            output_schema=getattr(tool, "output_schema", None),
        )


def mounted_name(server: str, tool: str) -> str:
    """The registry name of ``server``'s ``tool``."""
    return _UNSAFE.sub("_", f"{server}__{tool}")[:64]


class ListingCheck(Protocol):
    """What the mount step tells a check of the live listings (:class:`runtime.mcpclient.lockcheck.LockCheck`, which
    compares them with the lock file; it reads the lock through :mod:`runtime.mcpclient.lock`, which mounts, so it
    is named here by what it is asked, not imported)."""

    def begin(self, servers: Collection[str]) -> None: ...

    def listed(self, server: str, tools: tuple[ListedTool, ...]) -> None: ...


class Mounter:
    """The snapshot build's mount step (``build_snapshot(..., mount=Mounter(pool))``).

    With a ``check`` (:class:`runtime.mcpclient.lockcheck.LockCheck`) every live listing
    is compared with the lock file CI checked, and a drift is reported.

    A server's Tool documents are made once per listing: a build whose server lists what
    it listed last time, declared and surrounded as before, gets the same documents again
    (checking and validating hundreds of schemas at every reload is most of its cost; a
    warning about a tool left out is logged once per listing, not at every build)."""

    def __init__(self, pool: McpPool, check: ListingCheck | None = None) -> None:
        self._pool = pool
        self._last: dict[str, tuple[McpServerSpec, tuple[ListedTool, ...]]] = {}  # last good listing per server
        self._check = check
        self._mounted: dict[str, tuple[tuple[Any, ...], list[LoadedDocument]]] = {}  # server -> (inputs, documents)

    def __call__(self, documents: Sequence[LoadedDocument]) -> list[LoadedDocument]:
        """Tool documents for the tools of the McpServers among ``documents``."""
        servers = {
            e.model.metadata.name: e.model.spec
            for e in documents
            if isinstance(e.model, McpServerDocument) and _declared_fully(e.model.spec)
        }
        if self._check is not None:
            self._check.begin(servers)
        if not servers:
            return []
        try:
            listings = self._pool.list_tools(servers)
        except Exception as err:  # noqa: BLE001 - a build never fails because of a remote server
            logger.warning("MCP servers could not be asked for their tools ({}); none are mounted", err)
            return []
        config = ConfigFacts.of(documents)
        mounted: list[LoadedDocument] = []
        for gone in self._mounted.keys() - servers.keys():
            del self._mounted[gone]
        for name, spec in servers.items():
            tools = self._tools(name, spec, listings[name])
            inputs = (spec, tools, config, frozenset(d.model.metadata.name for d in mounted))
            kept = self._mounted.get(name)
            if kept is None or kept[0] != inputs:
                kept = self._mounted[name] = (inputs, mount_server(name, spec, tools, config, taken=inputs[3]))
            mounted.extend(kept[1])
        return mounted

    def _tools(self, name: str, spec: McpServerSpec, listed: list[Any] | McpFailure) -> tuple[ListedTool, ...]:
        if not isinstance(listed, McpFailure):
            tools = tuple(ListedTool.of(t) for t in listed)
            if self._check is not None:
                self._check.listed(name, tools)
            self._last[name] = (spec, tools)
            return tools
        previous = self._last.get(name)  # kept, not compared: a server that went away has not drifted
        if previous is not None and previous[0] == spec:
            logger.warning(
                "MCP server {} {}; keeping the {} tool(s) it listed before", name, listed.message, len(previous[1])
            )
            return previous[1]
        logger.warning("MCP server {} {}; none of its tools are mounted", name, listed.message)
        return ()


@dataclass(frozen=True)
class ConfigFacts:
    """What mounting needs to know about the rest of the config."""

    tool_names: frozenset[str]
    mcp_targets: frozenset[str]  # server/tool pairs that declared Tools already call
    has_profile: bool
    redaction: tuple[str, ...]

    @classmethod
    def of(cls, documents: Sequence[LoadedDocument]) -> ConfigFacts:
        """The facts of the loaded ``documents``."""
        tools = [e.model for e in documents if isinstance(e.model, ToolDocument)]
        targets = frozenset(target for kind, target, _ in (handler_parts(t.spec) for t in tools) if kind == "mcp")
        return cls(
            tool_names=frozenset(t.metadata.name for t in tools),
            mcp_targets=targets,
            has_profile=any(
                isinstance(e.model, OutputProfileDocument) and e.model.metadata.name == MOUNT_PROFILE for e in documents
            ),
            redaction=tuple(
                dict.fromkeys(e.model.metadata.name for e in documents if isinstance(e.model, RedactionProfileDocument))
            ),
        )


def mount_server(
    server: str,
    spec: McpServerSpec,
    tools: Sequence[ListedTool],
    config: ConfigFacts,
    *,
    taken: set[str] | frozenset[str] = frozenset(),
) -> list[LoadedDocument]:
    """The Tool documents for ``server``'s ``tools`` that its declaration admits."""
    mounted: list[LoadedDocument] = []
    names = set(taken)
    for tool in tools:
        if not _admitted(tool.name, spec) or f"{server}/{tool.name}" in config.mcp_targets:
            continue
        name = mounted_name(server, tool.name)
        if name in config.tool_names:
            continue  # a declared Tool of that name wins
        if name in names:
            logger.warning(
                "MCP server {}: tool `{}` is not mounted: its name `{}` is already taken by another mounted tool",
                server,
                tool.name,
                name,
            )
            continue
        errors = [f for f in check_input_schema(dict(tool.input_schema)) if not f.warning]
        if errors:
            logger.warning(
                "MCP server {}: tool `{}` is not mounted: its input schema is not usable ({})",
                server,
                tool.name,
                errors[0].message,
            )
            continue
        if tool.output_schema is not None:
            problems = [f for f in check_output_schema(dict(tool.output_schema)) if not f.warning]
            if problems:
                # The tool still works; its results are then not checked and no outputSchema is relisted.
                logger.warning(
                    "MCP server {}: tool `{}` is mounted without its output schema, which is not usable ({})",
                    server,
                    tool.name,
                    problems[0].message,
                )
                tool = dataclasses.replace(tool, output_schema=None)
        data = _document(server, spec, tool, name, config)
        source = SourceDocument(
            file=f"mcp:{server}",
            index=len(mounted),
            data=data,
            content_hash=content_hash(data),
            positions={},
            key_positions={},
            scalar_styles={},
            lines=(),
        )
        result = check_structure(source)
        if result.model is None:
            logger.warning(
                "MCP server {}: tool `{}` is not mounted: {}",
                server,
                tool.name,
                result.problems[0].message if result.problems else "it is not a valid Tool",
            )
            continue
        names.add(name)
        mounted.append(LoadedDocument(source, result.model, None, mounted=True))
    return mounted


def _admitted(tool: str, spec: McpServerSpec) -> bool:
    return any(fnmatch.fnmatchcase(tool, g) for g in spec.include) and not any(
        fnmatch.fnmatchcase(tool, g) for g in spec.exclude
    )


def _declared_fully(spec: McpServerSpec) -> bool:
    """A server the build can reach: lint reports the others."""
    return bool(spec.command) if spec.transport is McpTransport.stdio else bool(spec.url)


def _document(server: str, spec: McpServerSpec, tool: ListedTool, name: str, config: ConfigFacts) -> dict[str, Any]:
    override = spec.overrides.get(tool.name, McpToolOverride())
    trust = override.trust or spec.trust
    # Every hint below loosens something; from an untrusted server they count as absent,
    # which leaves the strictest attributes (the overrides are the config's own word).
    believed = trust is Trust.trusted
    read_only = override.read_only if override.read_only is not None else believed and tool.read_only is True
    idempotent = override.idempotent if override.idempotent is not None else believed and tool.idempotent is True
    if override.risk is not None:
        risk = override.risk.value
    else:
        risk = "low" if read_only else "medium" if believed and tool.destructive is False else "high"
    timeout = (
        override.timeout.model_dump(mode="json") if override.timeout is not None else {"total_s": spec.call_timeout_s}
    )
    output: dict[str, Any] = {"profile": MOUNT_PROFILE} if config.has_profile else dict(_INLINE_OUTPUT)
    if override.output is not None:
        own = override.output.model_dump(mode="json", exclude_none=True)
        output = own if "profile" in own else {**output, **own}
    description = (tool.description.strip() or f"Tool `{tool.name}` of MCP server `{server}`.")[:_MAX_DESCRIPTION]
    document: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Tool",
        "metadata": {"name": name, "labels": {"mcp_server": server, "mcp_tool": tool.name}},
        "spec": {
            "description": description,
            "handler": f"mcp:{server}/{tool.name}",
            "input_schema": dict(tool.input_schema),
            "read_only": read_only,
            "idempotent": idempotent,
            "risk": risk,
            "trust": trust.value,
            "timeout": timeout,
            "output": output,
            # Every profile of the config, and the default one even when the config does
            # not declare it (the compiler resolves `secrets` to the shipped profile).
            "redaction": list(dict.fromkeys((*config.redaction, DEFAULT_REDACTION))),
        },
    }
    if tool.output_schema is not None:
        # The server's promise about its results, checked on each of them like a declared one.
        document["spec"]["output_schema"] = dict(tool.output_schema)
    return document
