"""Loading: paths -> parsed, structurally valid documents (plus the packs they include).

Never raises on bad input; every failure is a :class:`Problem`. Work is reused from
the :class:`CompileCache` by content hash: an unchanged file is not parsed again, an
unchanged document is not validated again.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.config.cache import CompileCache
from runtime.config.files import available_packs, builtin_pack_dirs, discover, find_pack, read_source
from runtime.config.models import IncludeDocument
from runtime.config.problems import Location, Problem
from runtime.config.structure import check_structure
from runtime.config.suggest import did_you_mean
from runtime.config.yamlsource import SourceDocument, parse_yaml
from runtime.settings import Settings

_MAX_PACK_DEPTH = 8


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    source: SourceDocument
    model: Any  # one of the *Document models of runtime.config.models
    pack: str | None  # the pack it came from, or None for the user's own files
    mounted: bool = False  # synthesized from an MCP server's tool list (runtime.mcpclient.mount), not read from a file


@dataclass
class LoadedConfig:
    documents: list[LoadedDocument] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # real paths already loaded
    broken: set[tuple[str, str]] = field(
        default_factory=set
    )  # (kind, name) of documents that failed their structure check


def load_documents(paths: Sequence[Path], settings: Settings, cache: CompileCache) -> LoadedConfig:
    """Read, parse and structurally validate everything under ``paths``."""
    loaded = LoadedConfig()
    files, problems = discover(paths)
    loaded.problems.extend(problems)
    if not paths:
        loaded.problems.append(
            Problem(_nowhere(), "path-not-found", "no config paths given; pass a config directory or YAML files.")
        )
    _load_files(files, None, settings, cache, loaded)
    _load_packs(settings, cache, loaded)
    return loaded


def _nowhere() -> Location:
    return Location("<arguments>")


def _load_files(
    files: Iterable[Path], pack: str | None, settings: Settings, cache: CompileCache, loaded: LoadedConfig
) -> None:
    for path in files:
        real = os.path.realpath(path)
        if real in loaded.seen:
            continue  # e.g. a pack file that was also passed on the command line
        loaded.seen.add(real)
        source, problem = read_source(path, settings.max_config_file_bytes)
        if problem is not None:
            loaded.problems.append(problem)
            continue
        if source is None:
            continue
        loaded.files.append(source.display)
        parsed = cache.parsed(source.display, source.digest, functools.partial(parse_yaml, source.text, source.display))
        loaded.problems.extend(parsed.problems)
        for doc in parsed.documents:
            if doc.data is None:
                continue  # an empty document (e.g. a trailing `---`)
            model = cache.model(doc.content_hash)
            if model is None:
                result = check_structure(doc)
                if result.model is None:
                    loaded.problems.extend(result.problems)
                    loaded.broken.add(_kind_and_name(doc.data))
                    continue
                model = cache.remember_model(doc.content_hash, result.model)
            loaded.documents.append(LoadedDocument(doc, model, pack))


def _kind_and_name(data: Any) -> tuple[str, str]:
    """The kind and name a broken document declares, as far as they can be read: what
    references to it must not report again as "no such ..." (one mistake, one message)."""
    if not isinstance(data, dict):
        return ("", "")
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return (str(data.get("kind", "")), name if isinstance(name, str) else "")


def _load_packs(settings: Settings, cache: CompileCache, loaded: LoadedConfig) -> None:
    """Follow ``Include`` documents to shipped or configured packs (packs may include packs)."""
    search = [*settings.pack_dirs, *builtin_pack_dirs()]
    done: set[str] = set()
    for _depth in range(_MAX_PACK_DEPTH):
        wanted: list[tuple[str, LoadedDocument, int]] = []
        for entry in loaded.documents:
            if isinstance(entry.model, IncludeDocument):
                for index, name in enumerate(entry.model.spec.packs):
                    if name not in done:
                        wanted.append((name, entry, index))
        if not wanted:
            return
        for name, entry, index in wanted:
            if name in done:
                continue
            done.add(name)
            files = find_pack(name, search)
            if files is None:
                known = available_packs(search)
                hint = did_you_mean(name, known)
                loaded.problems.append(
                    Problem(
                        entry.source.locate(("spec", "packs", index)),
                        "unknown-pack",
                        f"no pack named `{name}`.{hint} Available packs: {', '.join(known) or 'none'}.",
                    )
                )
                continue
            _load_files(files, name, settings, cache, loaded)
