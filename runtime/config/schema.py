"""JSON Schemas of the config kinds, generated from the pydantic models.

``toolrt schema --out schemas/`` writes them; a test fails when the checked-in files
drift from the models. The loader validates every document against these same
schemas, so an editor using them (yaml-language-server) and ``toolrt lint`` agree.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from runtime.config.models import DOCUMENT_MODELS, Document

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_BASE = "urn:toolrt:schemas:v1:"
COMBINED_FILE = "toolrt.schema.json"


def kind_file(kind: str) -> str:
    """File name of a kind's schema, e.g. ``tool.schema.json``."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in kind).lstrip("_")
    return f"{snake.replace('_', '-')}.schema.json"


@functools.cache
def kind_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one kind's documents."""
    model = DOCUMENT_MODELS[kind]
    body = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": DRAFT, "$id": SCHEMA_BASE + kind_file(kind), **body}


@functools.lru_cache(maxsize=1)
def combined_schema() -> dict[str, Any]:
    """One schema accepting any kind (for files that mix kinds)."""
    adapter: TypeAdapter[Any] = TypeAdapter(Annotated[Document, Field(discriminator="kind")])
    body = adapter.json_schema(by_alias=True, mode="validation")
    return {"$schema": DRAFT, "$id": SCHEMA_BASE + COMBINED_FILE, "title": "toolrt config document", **body}


def all_schemas() -> dict[str, dict[str, Any]]:
    """File name -> schema, for every kind and the combined schema."""
    files = {kind_file(kind): kind_schema(kind) for kind in DOCUMENT_MODELS}
    files[COMBINED_FILE] = combined_schema()
    return files


def render(schema: dict[str, Any]) -> str:
    """Stable text of a schema file (sorted keys would scramble the property order)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
