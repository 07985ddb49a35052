"""Compiling RedactionProfile documents into RE2 pattern sets."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from runtime.config.building import BuildState
from runtime.config.expressions import Finding
from runtime.config.files import builtin_pack_dirs, find_pack, read_source
from runtime.config.load import LoadedDocument
from runtime.config.models import DEFAULT_REDACTION, RedactionProfileDocument
from runtime.config.structure import check_structure
from runtime.config.suggest import did_you_mean
from runtime.config.yamlsource import parse_yaml
from runtime.regex import RegexRejected, check_pattern, compile_alternation, compile_re2
from runtime.shaping.compiled import CompiledPattern, CompiledRedaction


class RedactionBuilding(BuildState):
    """Compiling RedactionProfile documents (and the shipped default profile)."""

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
                    f"pattern name `{pattern.name}` appears twice in this profile; names label what was redacted, so "
                    "they must be unique.",
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
                    f"keep pattern `{pattern.name}` needs `shields`: the patterns of this profile it protects (e.g. "
                    "[email]).",
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
                        f"pattern `{pattern.name}` shields `{shielded}`, which this profile does not "
                        f"have.{did_you_mean(shielded, names)}",
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
