""".gitignore files inside the workspace, read as git reads them.

The deepest file decides, its last matching line wins; ``!`` re-includes; a trailing
``/`` matches directories only; a pattern with a ``/`` at the start or in the middle
is anchored to the file's directory, one without matches at any depth. Patterns are
compiled in the one glob dialect (:mod:`runtime.workspace.globs`) without brace
alternation, which git does not have; ``dir/**`` matches what is inside ``dir`` but
not ``dir`` itself, as in git (so ``!dir/keep`` can re-include a file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.workspace.errors import GlobError
from runtime.workspace.globs import compile_glob
from runtime.workspace.sandbox import Workspace
from runtime.workspace.search.common import join, matchable, read_file

_MAX_GITIGNORE_BYTES = 1 << 20
_MAX_GITIGNORE_RULES = 10_000


@dataclass(frozen=True)
class _IgnoreRule:
    regex: Any
    negated: bool
    dir_only: bool


@dataclass(frozen=True)
class IgnoreFile:
    base: str  # workspace-relative directory holding the .gitignore ("." for the root)
    rules: tuple[_IgnoreRule, ...]


def load_gitignore(workspace: Workspace, dir_fd: int, rel: str) -> IgnoreFile | None:
    if workspace.denied_by(join(rel, ".gitignore")) is not None:
        return None
    data = read_file(dir_fd, ".gitignore", _MAX_GITIGNORE_BYTES)
    if not data:
        return None
    rules = _parse_gitignore(data.decode("utf-8", "replace"))
    return IgnoreFile(rel, rules) if rules else None


def _parse_gitignore(text: str) -> tuple[_IgnoreRule, ...]:
    """The rules of one ``.gitignore`` (git's syntax); lines that do not compile are skipped, as git does."""
    rules: list[_IgnoreRule] = []
    for raw in text.split("\n")[:_MAX_GITIGNORE_RULES]:
        line = raw.rstrip("\r")
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        # A slash at the start or in the middle anchors the pattern to the file's directory.
        if "/" in line:
            line = line.lstrip("/")
        else:
            line = "**/" + line
        if line.endswith("/**"):
            line += "/*"  # inside the directory, not the directory itself (git's meaning)
        try:
            glob = compile_glob(line, braces=False)
        except GlobError:
            continue
        rules.append(_IgnoreRule(glob.regex, negated, dir_only))
    return tuple(rules)


def gitignored(ignores: tuple[IgnoreFile, ...], rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` is ignored: the deepest file with a matching rule decides, its last match wins."""
    for ignore in reversed(ignores):
        sub = rel if ignore.base == "." else rel[len(ignore.base) + 1 :]
        for rule in reversed(ignore.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(matchable(sub)) is not None:
                return not rule.negated
    return False
