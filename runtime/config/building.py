"""The state a snapshot build shares between its parts (tools, policies, redaction)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runtime.config.cache import CompileCache
from runtime.config.expressions import Finding
from runtime.config.exprtypes import TypedCheck, variable_types
from runtime.config.load import LoadedDocument
from runtime.config.models import OutputSettings
from runtime.config.problems import Problem, Severity
from runtime.config.suggest import did_you_mean
from runtime.policy.cel import CelEngine, get_engine, with_budget
from runtime.settings import Settings
from runtime.shaping.env_secrets import env_secret_profile
from runtime.snapshot import ResolvedOutput
from runtime.validation.arguments import fast_schema_available


class BuildState:
    """What every part of a build shares: the settings, the caches, the engines and the
    problems found so far."""

    def __init__(self, settings: Settings, cache: CompileCache, roots: Sequence[Path]) -> None:
        self.settings = settings
        self.cache = cache
        # Every program this build compiles gets the configured budget (rules, conditions
        # and their batches, reasons, workflow expressions), unless a caller names another.
        self.engine: CelEngine = with_budget(
            get_engine(settings.cel_engine), settings.cel_cost_limit, settings.cel_time_limit_ms
        )
        self.schema_engine = (
            "fast"
            if settings.schema_engine == "fast" or (settings.schema_engine == "auto" and fast_schema_available())
            else "portable"
        )
        self.search_dirs = [r if r.is_dir() else r.parent for r in roots]
        self.problems: list[Problem] = []
        self.redaction_hashes: dict[str, str] = {}
        # The values of secret-named environment variables: first in every redactor.
        self.env_secrets, self.env_digest = env_secret_profile(
            os.environ, settings.env_secret_names, settings.env_secret_min_chars
        )
        self.cost_limit = settings.cel_cost_limit
        self.time_limit_ms = settings.cel_time_limit_ms
        self.budget = (settings.cel_cost_limit, settings.cel_time_limit_ms)  # in the keys of cached programs
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

    def with_env_secrets(self, profiles: Sequence[Any]) -> tuple[Any, ...]:
        """``profiles`` (CompiledRedaction) led by the environment's secret values, if any."""
        return tuple(profiles) if self.env_secrets is None else (self.env_secrets, *profiles)

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
        message = (
            f"no {kind} named `{name}`.{did_you_mean(name, known)} Declared: {listed}. "
            "Declare it, or include a pack that does."
        )
        self.problems.append(Problem(entry.source.locate(path), "unknown-profile", message))

    def _untyped(self, field_name: str, result: str | None = "bool", *, with_commands: bool = False) -> TypedCheck:
        """Types for an expression that no tool schema applies to (args of unknown fields)."""
        variables, bounds, key = variable_types(None, with_commands=with_commands)
        return TypedCheck(
            variables, bounds, result, self.cost_limit, field_name, key=key, time_limit_ms=self.time_limit_ms
        )
