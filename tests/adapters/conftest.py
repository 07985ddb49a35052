"""Snapshots shared by the adapter tests: the shipped coding-agent example, and a small
config whose tools cover every attribute the adapters read."""

from __future__ import annotations

from pathlib import Path

import pytest

import runtime
from runtime.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[2]

ATTRIBUTE_TOOLS = """
apiVersion: toolrt/v1
kind: Tool
metadata:
  name: web_fetch
  labels: {title: Fetch a web page}
spec:
  description: Fetch a web page.
  handler:
    http: {url: "https://example.com/{path}"}
  read_only: true
  idempotent: true
  risk: low
  trust: untrusted
  input_schema:
    type: object
    additionalProperties: false
    required: [path]
    properties:
      path: {type: string, format: uri-reference}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: append_note}
spec:
  description: Append a line to the notes file.
  handler:
    command: {argv: [echo, "{text}"]}
  risk: low
  input_schema:
    type: object
    additionalProperties: false
    required: [text]
    properties:
      text: {type: string}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: drop_table}
spec:
  description: Drop a database table.
  handler:
    command: {argv: [echo, "{table}"]}
  risk: critical
  idempotent: true
  input_schema:
    type: object
    additionalProperties: false
    required: [table]
    properties:
      table: {type: string}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: search_archive}
spec:
  description: Search the archive (rarely needed).
  handler:
    command: {argv: [echo, "{query}"]}
  read_only: true
  defer_loading: true
  input_schema:
    type: object
    additionalProperties: false
    required: [query]
    properties:
      query: {type: string}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: set_labels}
spec:
  description: Set free-form labels.
  handler:
    command: {argv: [echo, "{labels}"]}
  input_schema:
    type: object
    additionalProperties: false
    required: [labels]
    properties:
      labels:
        type: object
        additionalProperties: {type: string}
"""


@pytest.fixture(scope="session")
def coding_snapshot() -> Snapshot:
    """The shipped examples/coding-agent config."""
    return runtime.load_snapshot([str(ROOT / "examples" / "coding-agent")])


@pytest.fixture(scope="session")
def attribute_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    """Tools with http/command handlers, low/critical risk, untrusted output, defer_loading,
    and a schema strict mode cannot express (``set_labels``)."""
    config = tmp_path_factory.mktemp("adapter-config")
    (config / "tools.yaml").write_text(ATTRIBUTE_TOOLS, encoding="utf-8")
    return runtime.load_snapshot([str(config)])
