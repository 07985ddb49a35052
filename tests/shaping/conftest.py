"""Shared fixtures for the shaping tests: the shipped redaction profiles, compiled once."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime import load_snapshot
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledRedaction, Snapshot


@pytest.fixture(scope="session")
def shipped() -> Snapshot:
    """The snapshot of the shipped policy packs (redaction-default.yaml among them)."""
    return load_snapshot([Path(__file__).resolve().parents[2] / "policies"])


@pytest.fixture(scope="session")
def default_profiles(shipped: Snapshot) -> tuple[CompiledRedaction, ...]:
    return (shipped.redaction_profiles["secrets"], shipped.redaction_profiles["pii"])


@pytest.fixture(scope="session")
def redactor(default_profiles: tuple[CompiledRedaction, ...]) -> Redactor:
    """secrets + pii, the default pair, with the default stream window."""
    return Redactor(default_profiles)
