"""A small config for the fleet tests, written as YAML (JSON) beside its handler module,
and the settings that point a Runtime at a shared Redis and PostgreSQL."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path
from typing import Any

API = "toolrt/v1"

HANDLERS = """
import os, time
from pathlib import Path

def ping(args):
    return "pong"

def boom(args):
    raise RuntimeError("backend exploded")

def hold(args):
    # Holds its concurrency slot until the file named by `release` exists.
    flag = Path(args["release"])
    Path(args["started"]).write_text(str(os.getpid()))
    while not flag.exists():
        time.sleep(0.01)
    return "held"
"""


def write_config(root: Path, policy: dict[str, Any], *, extra: list[dict[str, Any]] | None = None) -> Path:
    """A config dir under ``root`` with tools ping, boom, hold (read-only), ask_me (asks), and one Policy."""
    root.mkdir(parents=True, exist_ok=True)
    module = f"toolrt_fleet_h_{uuid.uuid4().hex[:10]}"
    (root / f"{module}.py").write_text(textwrap.dedent(HANDLERS), encoding="utf-8")
    schema_hold = {
        "type": "object",
        "properties": {"release": {"type": "string"}, "started": {"type": "string"}},
        "required": ["release", "started"],
    }
    docs: list[dict[str, Any]] = []
    for name, spec in (
        ("ping", {"read_only": True}),
        ("boom", {"read_only": True}),
        ("hold", {"read_only": True, "input_schema": schema_hold}),
        ("ask_me", {"read_only": False}),
    ):
        handler = f"python:{module}:{'ping' if name == 'ask_me' else name}"
        docs.append(
            {
                "apiVersion": API,
                "kind": "Tool",
                "metadata": {"name": name},
                "spec": {"description": f"{name} tool.", "handler": handler, **spec},
            }
        )
    docs.append({"apiVersion": API, "kind": "Policy", "metadata": {"name": "fleet"}, "spec": policy})
    docs.extend(extra or [])
    (root / "tools.yaml").write_text("\n---\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    return root
