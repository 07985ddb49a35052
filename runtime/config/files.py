"""Finding and reading config files: directories, single files and shipped packs."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.config.problems import Location, Problem

if TYPE_CHECKING:
    from runtime.snapshot import Snapshot

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A config file read into memory. ``display`` is the name used in messages."""

    display: str
    path: Path
    text: str
    digest: str


def display_name(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it, else as given."""
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if os.path.commonpath([absolute, here]) == here:
        return os.path.relpath(absolute, here)
    return str(path)


def discover(paths: Iterable[Path]) -> tuple[list[Path], list[Problem]]:
    """Every YAML file under ``paths`` (sorted, hidden entries skipped: this also skips
    the ``..data`` and timestamped folders of Kubernetes ConfigMap volumes, whose
    files are reached through the top-level symlinks)."""
    found: list[Path] = []
    problems: list[Problem] = []
    for root in paths:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found.extend(_walk(root))
        else:
            problems.append(
                Problem(
                    Location(str(root)),
                    "path-not-found",
                    f"`{root}` does not exist; pass a config directory or a YAML file.",
                )
            )
    unique: dict[str, Path] = {}
    for path in found:
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values()), problems


def _walk(root: Path) -> list[Path]:
    files: list[Path] = []
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and name.endswith(YAML_SUFFIXES):
                files.append(Path(current) / name)
    return files


def read_source(path: Path, max_bytes: int) -> tuple[SourceFile | None, Problem | None]:
    """Read one file, refusing files over ``max_bytes`` and text that is not UTF-8."""
    display = display_name(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return None, Problem(
                Location(display),
                "file-too-large",
                f"file is {size:,} bytes; the limit is {max_bytes:,} (setting max_config_file_bytes). Split it into "
                "several files.",
            )
        raw = path.read_bytes()
    except OSError as err:
        return None, Problem(Location(display), "file-unreadable", f"cannot read the file: {err.strerror or err}.")
    if len(raw) > max_bytes:  # grew between stat and read
        return None, Problem(
            Location(display),
            "file-too-large",
            f"file is over the limit of {max_bytes:,} bytes. Split it into several files.",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        return None, Problem(Location(display, line, 1), "file-encoding", "file is not valid UTF-8; save it as UTF-8.")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(display, path, text, hashlib.sha256(raw).hexdigest()), None


def builtin_pack_dirs() -> list[Path]:
    """Where shipped packs live: the source checkout's ``policies/`` or the installed copy."""
    here = Path(__file__).resolve().parent.parent
    candidates = [here.parent / "policies", here / "_packs"]
    return [c for c in candidates if c.is_dir()]


def find_pack(name: str, search: Sequence[Path]) -> list[Path] | None:
    """The files of pack ``name`` (``<dir>/<name>.yaml`` or ``<dir>/<name>/``), or None."""
    for base in search:
        for suffix in YAML_SUFFIXES:
            candidate = base / f"{name}{suffix}"
            if candidate.is_file():
                return [candidate]
        folder = base / name
        if folder.is_dir():
            return _walk(folder)
    return None


def available_packs(search: Sequence[Path]) -> list[str]:
    names: set[str] = set()
    for base in search:
        for entry in base.iterdir() if base.is_dir() else []:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                names.add(entry.name)
            elif entry.suffix in YAML_SUFFIXES:
                names.add(entry.stem)
    return sorted(names)


def handler_paths(snapshot: Snapshot) -> list[Path]:
    """The files of the python handlers' modules that ``snapshot`` took from beside its
    config files (a module's file, a package's folder, and the ``__pycache__`` beside
    them, whose compiled files Python would run instead): config too, which no tool of
    the agent may write. A config folder inside the workspace otherwise keeps only its
    YAML files from the agent, and a handler module rewritten there would run in the app
    at its next start, and in an isolated handler's child at its next call."""
    found: dict[Path, None] = {}
    for tool in snapshot.tools.values():
        handler = tool.handler
        if handler.kind != "python" or not handler.search_dirs:
            continue
        folders = [Path(os.path.realpath(folder)) for folder in handler.search_dirs]
        names = {handler.target.partition(":")[0], getattr(handler.function, "__module__", None) or ""}
        for name in names:
            file = getattr(sys.modules.get(name), "__file__", None)
            if not file:
                continue
            real = Path(os.path.realpath(file))
            if not any(real.is_relative_to(folder) for folder in folders):
                continue  # installed elsewhere, not config
            if real.name == "__init__.py":
                found[real.parent] = None  # the whole package, its __pycache__ in it
            else:
                found[real] = None
                found[real.parent / "__pycache__"] = None
    return list(found)
