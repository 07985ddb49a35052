"""The deny globs of the workspace and the glob tool read a glob exactly as
runtime.workspace.globs does (grant patterns: tests/policy/test_grant_patterns.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.workspace import Workspace
from runtime.workspace.globs import compile_glob
from runtime.workspace.search import glob

FILES = (
    "a.py",
    "src/a.py",
    "src/x/b.py",
    "src/x/y/c.md",
    ".env",
    "sub/.env",
    "sub/.env.local",
    "a/b",
    "a/x/y/b",
    "ab",
    "a(b).txt",
    "a+b$.txt",
    "{x}.txt",
    "ünï/naïve.py",
    "build/out/x.o",
    "[x]",
    "x" * 200 + ".log",
)

PATTERNS = (
    "*.py",
    "**/*.py",
    "src/**",
    "src/**/*.md",
    "src/*",
    "src/",
    "**/.env",
    "**/.env*",
    "a/**/b",
    "a**b",
    "a(b).txt",
    "a+b$.txt",
    "{x}.txt",
    "*.{py,md}",
    "{src,build}/**",
    "ünï/*.py",
    "build/",
    "\\[x]",
    "[[]x]",
    "?b",
    "**",
    "*.log",
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("consumers") / "ws"
    for rel in FILES:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text("x\n")
    return base


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_glob_tool_lists_exactly_the_files_the_dialect_matches(root: Path, pattern: str) -> None:
    compiled = compile_glob(pattern)
    expected = sorted((f for f in FILES if compiled.matches(f)), key=lambda f: f.split("/"))
    out = glob(Workspace(root, deny_globs=()), pattern, include_ignored=True, limit=1000)
    listed = [] if out.startswith("No files match") else out.splitlines()
    assert listed == expected


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_deny_glob_protects_exactly_what_the_dialect_matches_and_what_lies_below(root: Path, pattern: str) -> None:
    compiled = compile_glob(pattern, case_sensitive=False)
    workspace = Workspace(root, deny_globs=(pattern,))
    for rel in FILES:
        parts = rel.split("/")
        expected = any(compiled.matches("/".join(parts[:end])) for end in range(1, len(parts) + 1))
        assert (workspace.denied_by(rel) == pattern) is expected, rel
        assert (workspace.denied_by(rel.upper()) == pattern) is expected, rel  # case-insensitive
