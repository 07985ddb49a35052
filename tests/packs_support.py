"""The config of a Runtime over the default packs (workspace tools, default permissions,
redaction and output shaping, built-in tools), as the self-protection, persistence and
key redaction tests set one up."""

from __future__ import annotations

DEFAULT_PACKS = """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default, builtin-tools]}
"""


def with_packs(policy: str = "") -> str:
    """A config file: the default packs, and ``policy`` (YAML documents) after them."""
    return DEFAULT_PACKS + (f"---\n{policy}" if policy else "")
