"""Where command lines run: the workspace, toolrt's own paths in and around it, and
what to do with paths outside it. Built once per runtime (:meth:`Where.of`) and read by
:mod:`runtime.policy.placed` for every command line."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.workspace.hardlinks import NO_PROTECTED_INODES, ProtectedInodes

if TYPE_CHECKING:
    from runtime.policy.placecache import Validator
    from runtime.policy.placedline import PlacedLine


@dataclass(frozen=True, slots=True)
class Protected:
    """One of toolrt's own paths: a file, or a folder and everything in it. With
    ``yaml_only`` (a config folder that holds the workspace itself), only the YAML
    files below it: those are what a reload would read."""

    path: Path
    yaml_only: bool = False
    text: str = ""  # str(path), filled in by Where.of
    # A YAML-only folder strictly inside the workspace (``toolrt.d``): its sub-folders may
    # hold config YAML too, so writing one is writing a folder that holds toolrt's files.
    nested: bool = False

    def holds_text(self, real: str) -> bool:
        """Whether the resolved path ``real`` is this path or inside it."""
        if not within(real, self.text):
            return False
        return not self.yaml_only or real.lower().endswith((".yaml", ".yml"))


@dataclass(frozen=True, slots=True)
class Where:
    """Where command lines run: the workspace (None when unknown, as in ``toolrt lint``),
    toolrt's own paths inside or outside it, and what to do with paths outside it
    (``ask``: no wildcard allow covers them; ``deny``; ``allow``: judge them like any word)."""

    root: Path | None = None
    protected: tuple[Protected, ...] = ()
    outside: str = "ask"
    root_text: str | None = None  # str(root), filled in by Where.of
    # toolrt's own files under other names (hard links), filled in by Where.of.
    inodes: ProtectedInodes = NO_PROTECTED_INODES
    # Lines placed here lately: (text, cwd) -> (the placed line, the paths it rests on).
    recent: dict[tuple[str, str], tuple[PlacedLine, Validator]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    @staticmethod
    def of(
        root: Path | str | None,
        protected: Sequence[Path | str] = (),
        outside: str = "ask",
        *,
        configs: Sequence[Path | str] = (),
    ) -> Where:
        """A Where with resolved paths. A protected folder that is the workspace root or
        holds it protects only its YAML files (the agent must be able to work). So does a
        config folder (``configs``) that holds the workspace or lies inside it: the YAML
        files below it are what a reload reads."""
        resolved_root = Path(root).resolve() if root is not None else None
        found: list[Protected] = []
        for path, config in [*((p, False) for p in protected), *((p, True) for p in configs)]:
            candidate = Path(path)
            if not candidate.is_absolute() and resolved_root is not None:
                candidate = resolved_root / candidate
            real = Path(os.path.realpath(candidate))
            overlaps = resolved_root is not None and (
                resolved_root.is_relative_to(real) or (config and real.is_relative_to(resolved_root))
            )
            yaml_only = overlaps and real.is_dir()
            nested = (
                yaml_only and resolved_root is not None and real != resolved_root and real.is_relative_to(resolved_root)
            )
            found.append(Protected(real, yaml_only, str(real), nested))
        unique = tuple(dict.fromkeys(found))
        inodes = ProtectedInodes((entry.path, entry.yaml_only) for entry in unique)
        return Where(
            resolved_root, unique, outside, str(resolved_root) if resolved_root is not None else None, inodes=inodes
        )

    def deny_globs(self) -> tuple[str, ...]:
        """The protected paths inside the workspace as workspace deny globs (for the file tools)."""
        root = self.root
        if root is None:
            return ()
        globs: list[str] = []
        for protected in self.protected:
            if not protected.path.is_relative_to(root):
                continue
            relative = protected.path.relative_to(root).as_posix()
            base = "" if relative == "." else re.sub(r"([*?\[\]])", r"[\1]", relative) + "/"
            if protected.yaml_only:
                globs += [f"{base}**/*.yaml", f"{base}**/*.yml"]
            elif base:
                globs.append(f"{base}**")
        return tuple(dict.fromkeys(globs))


NOWHERE = Where()


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (both absolute and normalised)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")
