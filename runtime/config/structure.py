"""Structural validation: one parsed YAML document -> a typed model, or problems.

The document is checked against the generated JSON Schema of its kind (the same file
editors use), every violation is reported at its own line and column, and only a
clean document becomes a frozen pydantic model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from runtime.config.models import API_VERSION, DOCUMENT_MODELS, KINDS
from runtime.config.problems import Problem, Severity
from runtime.config.schema import kind_schema
from runtime.config.suggest import closest, did_you_mean
from runtime.config.yamlsource import SourceDocument
from runtime.validation.violations import Violation, python_validator, violations
from runtime.validation.wording import field_name, sentence

_CODES = {
    "additionalProperties": "unknown-key",
    "required": "missing-key",
    "type": "wrong-type",
    "false": "unknown-key",
}
_HANDLER_KEYS = "builtin, python, mcp, command or http"


@dataclass(frozen=True)
class StructureResult:
    model: BaseModel | None
    problems: tuple[Problem, ...]


@functools.cache
def _validators(kind: str) -> tuple[Any, Any]:
    schema = kind_schema(kind)
    try:
        import jsonschema_rs

        fast = jsonschema_rs.validator_for(schema, validate_formats=False, pattern_options=jsonschema_rs.RegexOptions())
    except ImportError:
        fast = None
    return python_validator(schema), fast


def check_structure(doc: SourceDocument) -> StructureResult:
    """Validate ``doc`` against its kind's schema and build its model."""
    data = doc.data
    if not isinstance(data, dict):
        kind_of = type(data).__name__ if not isinstance(data, list) else "list"
        return _fail(
            Problem(
                doc.locate(()),
                "doc-not-mapping",
                f"a config document must be a mapping with apiVersion, kind, metadata and spec, not a {kind_of}.",
            )
        )
    problems: list[Problem] = []
    api_version = data.get("apiVersion")
    if api_version is None:
        problems.append(
            Problem(doc.locate(()), "missing-key", f"`apiVersion` is missing; add `apiVersion: {API_VERSION}`.")
        )
    elif not isinstance(api_version, str) or api_version != API_VERSION:
        problems.append(
            Problem(
                doc.locate(("apiVersion",)),
                "unknown-api-version",
                f"apiVersion `{api_version}` is not supported; use `{API_VERSION}`.",
            )
        )
    kind = data.get("kind")
    if kind is None:
        problems.append(Problem(doc.locate(()), "missing-key", f"`kind` is missing; add one of: {', '.join(KINDS)}."))
    elif not isinstance(kind, str) or kind not in DOCUMENT_MODELS:
        problems.append(
            Problem(
                doc.locate(("kind",)),
                "unknown-kind",
                f"unknown kind `{kind}`.{did_you_mean(str(kind), KINDS)} Known kinds: {', '.join(KINDS)}.",
            )
        )
    if problems:
        return _fail(*problems)

    python, fast = _validators(str(kind))
    if fast is None or not fast.is_valid(data):
        found = _one_message_per_mistake(doc, violations(python, data, root="the document"))
        if found:
            return _fail(*(_to_problem(doc, v) for v in found))
    try:
        return StructureResult(DOCUMENT_MODELS[str(kind)].model_validate(data), ())
    except ValidationError as err:
        return _fail(*(_pydantic_problem(doc, e) for e in err.errors()))


def _one_message_per_mistake(doc: SourceDocument, found: list[Violation]) -> list[Violation]:
    """Drop "missing key `x`" where an unknown key beside it is a misspelling of `x`:
    the typo is the one mistake, and its message already says "did you mean `x`?"."""
    typos: set[tuple[tuple[str | int, ...], str]] = set()
    for v in found:
        if v.keyword in ("additionalProperties", "false") and v.key is not None:
            meant = closest(v.key, _allowed_keys(doc.data, v.path[:-1]))
            if meant:
                typos.add((tuple(v.path[:-1]), meant[0]))
    return [v for v in found if not (v.keyword == "required" and v.key is not None and (tuple(v.path), v.key) in typos)]


def _fail(*problems: Problem) -> StructureResult:
    return StructureResult(None, tuple(problems))


def _to_problem(doc: SourceDocument, v: Violation) -> Problem:
    code = _CODES.get(v.keyword, "invalid-value")
    if v.keyword in ("additionalProperties", "false") and v.key is not None:
        allowed = _allowed_keys(doc.data, v.path[:-1])
        hint = did_you_mean(v.key, allowed)
        listed = f" Allowed here: {', '.join(sorted(allowed))}." if allowed and not hint else ""
        where = field_name(v.path[:-1], "the document")
        return Problem(doc.locate(v.path, key=True), code, f"unknown key `{v.key}` in {where}.{hint}{listed}")
    if v.path[-1:] == ("handler",) and v.keyword in ("minProperties", "maxProperties"):
        return Problem(
            doc.locate(v.path), "invalid-value", f"`{'.'.join(map(str, v.path))}` takes exactly one of {_HANDLER_KEYS}."
        )
    if v.keyword == "type" and v.path[-2:-1] == ("handler",) and v.message.endswith("got null"):
        return Problem(
            doc.locate(v.path),
            code,
            f"`{'.'.join(map(str, v.path))}` is empty: a handler needs exactly one kind with a value "
            f"({_HANDLER_KEYS}); complete it.",
        )
    if v.keyword == "required" and v.key == "tools" and "rules" in v.path:
        return Problem(
            doc.locate(v.path),
            code,
            f'{v.message}; a policy rule must name its tools: add `tools: [...]` (`tools: ["*"]` for every tool).',
        )
    if v.keyword == "required" and v.key is not None:
        return Problem(doc.locate(v.path), code, f"{v.message}; add `{v.key}`.")
    return Problem(doc.locate(v.path), code, sentence(v.message))


def _allowed_keys(data: Any, path: tuple[str | int, ...]) -> list[str]:
    """Keys the schema allows at ``path`` (walks the document's kind schema)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in DOCUMENT_MODELS:
        return []
    schema = kind_schema(kind)
    node: Any = schema
    for part in path:
        node = _resolve(schema, node)
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = _pick_object_branch(schema, node).get("properties", {}).get(part, {})
    node = _pick_object_branch(schema, _resolve(schema, node))
    return list(node.get("properties", {}))


def _resolve(root: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = root.get("$defs", {}).get(name, {})
    return node


def _pick_object_branch(root: dict[str, Any], node: Any) -> dict[str, Any]:
    node = _resolve(root, node)
    if not isinstance(node, dict):
        return {}
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key, []):
            branch = _resolve(root, branch)
            if isinstance(branch, dict) and "properties" in branch:
                return branch
    return node


def _pydantic_problem(doc: SourceDocument, error: Any) -> Problem:
    path = tuple(p for p in error.get("loc", ()) if isinstance(p, (str, int)))
    return Problem(
        doc.locate(path),
        "invalid-value",
        f"{field_name(path, 'the document')}: {error.get('msg', 'invalid value')}.",
        Severity.error,
    )
