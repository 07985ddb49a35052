"""Fuzzing the whole load path: whatever the text, build_snapshot returns problems, never raises."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from runtime.config.cache import CompileCache
from runtime.config.compile import BuildResult, build_snapshot
from runtime.config.models import KINDS
from runtime.config.problems import Location, Problem, Severity
from runtime.settings import Settings

FAST = Settings(cel_engine="fast", schema_engine="fast")
PORTABLE = Settings(cel_engine="portable", schema_engine="portable")
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

# Words that steer random documents into the deeper checks (handlers, schemas, CEL, regexes, references).
KEYS = [
    "apiVersion", "kind", "metadata", "spec", "name", "version", "description", "handler", "input_schema", "rules",
    "expression", "message",
    "type", "properties", "required", "additionalProperties", "default", "enum", "pattern", "items", "allOf", "$ref",
    "$defs",
    "timeout", "total_s", "output", "profile", "redaction", "patterns", "regex", "steps", "id", "tool", "depends_on",
    "when",
    "cases", "expect", "decision", "packs", "transport", "command", "argv", "url", "effect", "tools", "builtin",
    "python", "mcp", "http", "<<",
]  # fmt: skip
WORDS = [
    "toolrt/v1", "Tool", "object", "string", "integer", "args.path == 'x'", "args.pth.size() > 1",
    "has(args.path) && (", "sesion.user",
    "(a+)+", "(?=x)", "[a-", "builtin:file_read", "builtin:nope", "python:json:dumps", "python:nope_mod:f",
    "mcp:srv/tool",
    "{path}", "{pth}", "*", "t", "a", "b", "deny", "allow", "stdio", "http", "inline-large", "secrets",
    "redaction-default",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**9), max_value=10**9),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(WORDS),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=8))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)
documents = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["toolrt/v1", "toolrt/v1", "toolrt/v2"]),
        "kind": st.sampled_from([*KINDS, "Toool"]),
        "metadata": st.fixed_dictionaries({"name": st.sampled_from(["t", "a", "b", "9bad"])}),
        "spec": st.dictionaries(keys, values, max_size=6),
    }
)


def _block(data: Any) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def to_yaml(data: Any, style: str) -> str:
    return json.dumps(data) if style == "flow" else _block(data)


@pytest.fixture
def config_dir() -> Iterator[Path]:
    # One dir per test, emptied before each example (hypothesis reuses the fixture).
    path = Path(tempfile.mkdtemp(prefix="toolrt-fuzz-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cache() -> CompileCache:
    # One per test (and so per engine), reused by its examples as a Runtime reuses one
    # across reloads: the shipped redaction profile, the same in every build, is compiled
    # once instead of in each example (more than half of an example's time).
    return CompileCache()


def build(config_dir: Path, text: str | bytes, engine: Settings, cache: CompileCache) -> BuildResult:
    for old in config_dir.iterdir():
        old.unlink()
    target = config_dir / "c.yaml"
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text, encoding="utf-8")
    return build_snapshot([config_dir], engine, cache)


def assert_only_problems(result: BuildResult) -> None:
    assert isinstance(result.problems, tuple)
    for problem in result.problems:
        assert isinstance(problem, Problem)
        assert isinstance(problem.location, Location)
        assert problem.location.file.endswith("c.yaml")
        assert problem.location.line >= 0
        assert problem.location.col >= 0
        assert isinstance(problem.code, str)
        assert problem.code
        assert isinstance(problem.message, str)
        assert problem.message
        assert isinstance(problem.severity, Severity)
    assert (result.snapshot is None) == any(p.is_error for p in result.problems)


@FUZZ
@given(text=st.text(max_size=300))
def test_random_text_never_raises(config_dir: Path, cache: CompileCache, text: str) -> None:
    assert_only_problems(build(config_dir, text, FAST, cache))


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list("ab: -[]{},'\"!&*<>|#?\n  ")), max_size=200))
def test_random_yaml_punctuation_never_raises(config_dir: Path, cache: CompileCache, text: str) -> None:
    assert_only_problems(build(config_dir, text, FAST, cache))


@FUZZ
@given(raw=st.binary(max_size=200))
def test_random_bytes_never_raise(config_dir: Path, cache: CompileCache, raw: bytes) -> None:
    assert_only_problems(build(config_dir, raw, FAST, cache))


@FUZZ
@given(data=st.lists(values, min_size=1, max_size=3), style=st.sampled_from(["flow", "block"]))
def test_random_structures_never_raise(config_dir: Path, cache: CompileCache, data: list[Any], style: str) -> None:
    text = "\n---\n".join(to_yaml(item, style) for item in data)
    assert_only_problems(build(config_dir, text, FAST, cache))


@pytest.mark.parametrize("engine", [FAST, PORTABLE], ids=["fast", "portable"])
@FUZZ
@given(data=st.lists(documents, min_size=1, max_size=3), style=st.sampled_from(["flow", "block"]))
def test_random_config_documents_never_raise(
    config_dir: Path, cache: CompileCache, engine: Settings, data: list[Any], style: str
) -> None:
    text = "\n---\n".join(to_yaml(item, style) for item in data)
    assert_only_problems(build(config_dir, text, engine, cache))


@FUZZ
@given(kind=st.sampled_from(KINDS), spec=st.dictionaries(keys, values, max_size=6))
def test_random_specs_report_problems_inside_the_document(
    config_dir: Path, cache: CompileCache, kind: str, spec: dict[str, Any]
) -> None:
    text = to_yaml({"apiVersion": "toolrt/v1", "kind": kind, "metadata": {"name": "t"}, "spec": spec}, "block")
    result = build(config_dir, text, FAST, cache)
    assert_only_problems(result)
    last_line = len(text.splitlines())
    for problem in result.problems:
        if problem.code.startswith("file-") or problem.code == "unknown-pack":
            continue
        assert 1 <= problem.location.line <= last_line, str(problem)
