"""Argument templates of workflow steps: literal values with CEL expressions inside.

A string that is exactly ``${EXPR}`` becomes the value of EXPR (a number stays a
number, a map a map); ``${EXPR}`` inside a longer string is replaced by the text of
its value; ``$${`` is a literal ``${``. Lists and maps are walked. Everything is
parsed and compiled once, while the snapshot is built; a run only evaluates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.policy.cel import CelProgram
from runtime.workflow.result import plain

#: The variables a workflow expression may read.
WORKFLOW_VARIABLES = ("input", "steps")


class TemplateError(Exception):
    """A template could not be parsed (at build time) or evaluated (at run time)."""


@dataclass(frozen=True, slots=True)
class Expr:
    """One ``${...}``: its source, where it sits, and its compiled program. ``path``:
    the keys of a plain field chain (``input.path``, ``steps.read.metadata.sha256``),
    read with dict lookups instead of a CEL evaluation (the same value, or the same
    "no such key" failure)."""

    source: str
    program: CelProgram
    path: tuple[str, ...] | None = None


_FIELD_CHAIN = re.compile(r"(?:input|steps)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def field_chain(source: str) -> tuple[str, ...] | None:
    """The keys of ``source`` when it is a plain chain of field selections."""
    text = source.strip()
    return tuple(text.split(".")) if _FIELD_CHAIN.fullmatch(text) else None


class Scope:
    """What expressions read: ``{"input": ..., "steps": ...}``, and the CEL activation
    of it (of the steps in ``reads``), made only if some expression is not a plain
    field chain."""

    __slots__ = ("data", "_reads", "_make", "_activation")

    def __init__(
        self,
        data: dict[str, Any],
        reads: frozenset[str] | None,
        make_activation: Callable[[dict[str, Any], frozenset[str] | None], Any],
    ) -> None:
        self.data = data
        self._reads = reads
        self._make = make_activation
        self._activation: Any = None

    def activation(self) -> Any:
        if self._activation is None:
            self._activation = self._make(self.data, self._reads)
        return self._activation


@dataclass(frozen=True, slots=True)
class Interpolated:
    """A string with expressions inside: literal text and :class:`Expr` in order."""

    parts: tuple[str | Expr, ...]


@dataclass(frozen=True, slots=True)
class Composite:
    """A list (``keys`` None) or a map whose values are templates."""

    keys: tuple[str, ...] | None
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Constant:
    value: Any


Template = Expr | Interpolated | Composite | Constant


def split_string(text: str) -> list[str | tuple[str, int]]:
    """``text`` cut into literal pieces and ``(expression source, offset)`` pairs.

    Raises :class:`TemplateError` for a ``${`` without its closing ``}``."""
    pieces: list[str | tuple[str, int]] = []
    literal: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("$${", i):
            literal.append("${")
            i += 3
            continue
        if text.startswith("${", i):
            end = _closing_brace(text, i + 2)
            if end < 0:
                raise TemplateError(f"`${{` at character {i + 1} has no closing `}}`; write `$${{` for a literal `${{`")
            if literal:
                pieces.append("".join(literal))
                literal = []
            source = text[i + 2 : end].strip()
            if not source:
                raise TemplateError(
                    f"`${{}}` at character {i + 1} is empty; put a CEL expression inside, e.g. `${{input.path}}`"
                )
            pieces.append((source, i + 2))
            i = end + 1
            continue
        literal.append(text[i])
        i += 1
    if literal:
        pieces.append("".join(literal))
    return pieces


def _closing_brace(text: str, start: int) -> int:
    """Index of the ``}`` closing an expression that starts at ``start`` (strings and
    nested braces skipped), or -1."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            j = i + 1
            while j < len(text) and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1


Compiler = Callable[[str, tuple[str | int, ...]], "CelProgram | None"]


def compile_template(value: Any, path: tuple[str | int, ...], compile_expr: Compiler) -> Template | None:
    """The template for ``value``; ``compile_expr(source, path)`` compiles one expression
    (and reports its problems), returning None when it failed. None if anything failed."""
    if isinstance(value, str):
        try:
            pieces = split_string(value)
        except TemplateError as err:
            raise TemplateError(str(err)) from None
        if not any(isinstance(p, tuple) for p in pieces):
            return Constant("".join(p for p in pieces if isinstance(p, str)))
        parts: list[str | Expr] = []
        ok = True
        for piece in pieces:
            if isinstance(piece, str):
                parts.append(piece)
                continue
            program = compile_expr(piece[0], path)
            if program is None:
                ok = False
            else:
                parts.append(Expr(piece[0], program, field_chain(piece[0])))
        if not ok:
            return None
        if len(parts) == 1 and isinstance(parts[0], Expr):
            return parts[0]
        return Interpolated(tuple(parts))
    if isinstance(value, Mapping):
        items = [(str(k), compile_template(v, (*path, str(k)), compile_expr)) for k, v in value.items()]
        if any(t is None for _, t in items):
            return None
        if all(isinstance(t, Constant) for _, t in items):
            return Constant({k: t.value for k, t in items})  # type: ignore[union-attr]
        return Composite(tuple(k for k, _ in items), tuple(t for _, t in items))
    if isinstance(value, list):
        elements = [compile_template(v, (*path, i), compile_expr) for i, v in enumerate(value)]
        if any(t is None for t in elements):
            return None
        if all(isinstance(t, Constant) for t in elements):
            return Constant([t.value for t in elements])  # type: ignore[union-attr]
        return Composite(None, tuple(elements))
    return Constant(value)


def expressions_of(template: Template | None) -> list[Expr]:
    """Every expression in ``template``."""
    if isinstance(template, Expr):
        return [template]
    if isinstance(template, Interpolated):
        return [p for p in template.parts if isinstance(p, Expr)]
    if isinstance(template, Composite):
        return [e for v in template.values for e in expressions_of(v)]
    return []


def evaluate(template: Template, scope: Scope) -> Any:
    """The value of ``template`` in ``scope``; :class:`TemplateError` when an
    expression fails (its message says which)."""
    if isinstance(template, Constant):
        return _copy(template.value)
    if isinstance(template, Expr):
        return _value(template, scope)
    if isinstance(template, Interpolated):
        return "".join(p if isinstance(p, str) else _text(_value(p, scope)) for p in template.parts)
    values = [evaluate(v, scope) for v in template.values]
    if template.keys is None:
        return values
    return dict(zip(template.keys, values, strict=True))


Reader = Callable[[dict[str, Any]], Any]


def compile_reader(template: Template) -> Reader | None:
    """``template`` as one closure over ``{"input": ..., "steps": ...}`` that returns what
    :func:`evaluate` would (the same value, the same :class:`TemplateError`), built once
    at snapshot build: no walk of the template's nodes per run. None when some
    expression is not a plain field chain (it needs a CEL activation: use
    :func:`evaluate`)."""
    if isinstance(template, Constant):
        value = template.value
        if type(value) in _ATOMS:
            return lambda data: value
        return lambda data: _copy(value)
    if isinstance(template, Expr):
        return _chain_reader(template) if template.path is not None else None
    if isinstance(template, Interpolated):
        parts: list[str | Reader] = []
        for part in template.parts:
            if isinstance(part, str):
                parts.append(part)
                continue
            reader = compile_reader(part)
            if reader is None:
                return None
            parts.append(reader)
        pieces = tuple(parts)
        return lambda data: "".join([p if type(p) is str else _text(p(data)) for p in pieces])  # type: ignore[operator]
    readers = [compile_reader(v) for v in template.values]
    if any(r is None for r in readers):
        return None
    fns: tuple[Reader, ...] = tuple(readers)  # type: ignore[arg-type]
    if template.keys is None:
        return lambda data: [f(data) for f in fns]
    if len(fns) == 1:
        (key,), (only,) = template.keys, fns
        return lambda data: {key: only(data)}
    pairs = tuple(zip(template.keys, fns, strict=True))
    return lambda data: {k: f(data) for k, f in pairs}


def _chain_reader(expr: Expr) -> Reader:
    """A plain field chain (``input.path``, ``steps.a.data.n``) read with dict lookups."""
    assert expr.path is not None  # noqa: S101 - only chains come here
    root, keys = expr.path[0], expr.path[1:]

    def missing(data: dict[str, Any]) -> TemplateError:
        value: Any = data
        for key in expr.path or ():
            if type(value) is not dict or key not in value:
                return TemplateError(f"`${{{expr.source}}}` failed: no such key: {key}")
            value = value[key]
        return TemplateError(f"`${{{expr.source}}}` failed")  # pragma: no cover - only called when a key is missing

    if len(keys) == 1:
        (key,) = keys

        def read_one(data: dict[str, Any]) -> Any:
            value = data[root]
            if type(value) is dict and key in value:
                found = value[key]
                return found if type(found) in _ATOMS else _copy(found)
            raise missing(data)

        return read_one

    def read(data: dict[str, Any]) -> Any:
        value = data[root]
        for key in keys:
            if type(value) is not dict or key not in value:
                raise missing(data)
            value = value[key]
        return value if type(value) in _ATOMS else _copy(value)

    return read


def _value(expr: Expr, scope: Scope) -> Any:
    path = expr.path
    if path is not None:
        value: Any = scope.data
        for key in path:
            if type(value) is not dict or key not in value:
                raise TemplateError(f"`${{{expr.source}}}` failed: no such key: {key}")
            value = value[key]
        return _copy(value)
    outcome = expr.program.evaluate(scope.activation())
    if outcome.error is not None:
        raise TemplateError(f"`${{{expr.source}}}` failed: {outcome.error}")
    return outcome.value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    # A constant is shared by every run, and a step's result by every step reading it:
    # hand each call its own lists and maps (plain ones: no read-only proxies or tuples).
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind in _ATOMS:
        return value
    return plain(value)
