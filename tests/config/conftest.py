"""Shared helpers for the config tests: write YAML into a temporary config dir and lint it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from runtime.config.compile import BuildResult, build_snapshot
from runtime.settings import Settings

FAST = Settings(cel_engine="fast", schema_engine="fast")

Lint = Callable[..., BuildResult]


@pytest.fixture
def lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lint:
    """``lint({"name.yaml": text}, settings)`` writes the files into a fresh config dir
    and builds it. The working directory is that dir, so problems name files as
    ``name.yaml``."""
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.chdir(config)

    def run(
        files: Mapping[str, str | bytes], settings: Settings = FAST, extra_paths: tuple[str, ...] = ()
    ) -> BuildResult:
        for name, content in files.items():
            target = config / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        return build_snapshot([config, *extra_paths], settings)

    return run
