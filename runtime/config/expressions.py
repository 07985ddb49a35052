"""Checking and compiling the CEL expressions found in config.

Each expression is checked in the same order whichever engine runs: tokens (syntax
the lexer can see), names (only declared variables), cost bounds (nesting,
comprehension depth), ``matches()`` patterns as RE2, the engine's own compile
(syntax, and the types of literals with the fast engine), then types against the
tool's input schema, the result type and the worst-case cost
(:mod:`runtime.config.exprtypes`), the same with either engine. Findings are
location-free so that they can be cached by content and placed in the file later.
"""

from __future__ import annotations

from typing import Any

from runtime.config.exprtypes import TypedCheck, type_findings
from runtime.config.finding import Finding as Finding  # re-exported: defined there, under exprtypes too
from runtime.config.finding import Path
from runtime.config.suggest import did_you_mean
from runtime.errors import CelCompileError
from runtime.policy.cel import CelEngine, CelProgram
from runtime.policy.celrefs import LexError, Token, analyse, offset_to_line_col, string_value
from runtime.regex import RegexRejected, check_pattern
from runtime.validation.wording import sentence

MAX_MACRO_DEPTH = 2
MAX_NESTING = 24


def compile_expression(
    source: str,
    path: Path,
    variables: tuple[str, ...],
    engine: CelEngine,
    input_schema: dict[str, Any] | None = None,
    *,
    typed: TypedCheck | None = None,
    explain: TypedCheck | None = None,
) -> tuple[CelProgram | None, list[Finding]]:
    """Check and compile one expression. The program is None when there are errors.

    ``typed`` types the expression (:func:`type_findings`): the variables' types,
    what its result must be, and the cost budget. Without it only the field names
    under ``args`` are checked against ``input_schema``. ``explain`` is used only to
    word a type error the engine found (policy conditions are typed per tool later)."""
    try:
        facts = analyse(source)
    except LexError as err:
        return None, [
            Finding(
                path,
                "cel-syntax",
                f"CEL syntax error: {err}. Fix the expression.",
                inner=offset_to_line_col(source, err.offset),
            )
        ]
    findings: list[Finding] = []

    def at(offset: int) -> tuple[int, int]:
        return offset_to_line_col(source, offset)

    for ref in facts.roots:
        if ref.name not in variables:
            findings.append(
                Finding(
                    path,
                    "cel-undeclared",
                    f"`{ref.name}` is not defined in this expression.{did_you_mean(ref.name, variables)} It may read: "
                    f"{', '.join(variables)}.",
                    inner=at(ref.offset),
                )
            )
    if facts.nesting_depth > MAX_NESTING:
        findings.append(
            Finding(
                path,
                "cel-too-complex",
                f"expression nests {facts.nesting_depth} levels of brackets; the limit is {MAX_NESTING}. Split it "
                "into several rules.",
            )
        )
    if facts.macro_depth > MAX_MACRO_DEPTH:
        findings.append(
            Finding(
                path,
                "cel-too-complex",
                f"comprehensions (all/exists/map/filter) nest {facts.macro_depth} deep; the limit is "
                f"{MAX_MACRO_DEPTH}, to bound evaluation cost. Simplify the expression.",
            )
        )
    for literal in facts.regex_literals:
        pattern = string_value(Token("string", literal.name, literal.offset))
        if pattern is None:
            continue
        try:
            check_pattern(pattern)
        except RegexRejected as err:
            findings.append(Finding(path, err.code, f"in matches(): {err.message}", inner=at(literal.offset)))
    if typed is None and input_schema is not None:
        findings.extend(_args_findings(source, facts.args_paths, input_schema, path))
    if any(not f.warning for f in findings):
        if typed is not None:  # report every problem at once: the fields and types too
            findings.extend(
                f
                for f in type_findings(source, path, typed)
                if not f.warning and f.code in ("cel-type", "cel-unknown-arg")
            )
        return None, findings
    try:
        wording = typed or explain
        if wording is not None:  # its evaluations are bounded by the budget lint checks against
            program = engine.compile(source, variables, wording.cost_limit)
        else:
            program = engine.compile(source, variables)
    except CelCompileError as err:
        code = "cel-syntax" if "yntax" in err.message else "cel-type"
        wording = typed or explain
        if code == "cel-type" and wording is not None:
            # The fast engine types what it can see (literals, macros); toolrt's checker
            # finds the same mistakes and says which types and how to fix it.
            ours = type_findings(source, path, wording)
            if any(not f.warning and f.code in ("cel-type", "cel-unknown-arg") for f in ours):
                # All of them for a typed rule (as the portable engine reports it); for a
                # policy condition, typed per tool later, only the type errors.
                return None, findings + [
                    f
                    for f in ours
                    if typed is not None or (not f.warning and f.code in ("cel-type", "cel-unknown-arg"))
                ]
        detail = err.message.removeprefix("Syntax error: ").removeprefix("syntax error: ")
        findings.append(
            Finding(
                path,
                code,
                f"CEL {'syntax' if code == 'cel-syntax' else 'type'} error: {sentence(detail)} Fix the expression.",
                inner=(err.line, err.col),
            )
        )
        return None, findings
    if typed is not None:
        # After the engine's compile, so that a syntax error is reported once, by the engine.
        findings.extend(type_findings(source, path, typed))
        if any(not f.warning for f in findings):
            return None, findings
    return program, findings


def _args_findings(source: str, args_paths: Any, schema: dict[str, Any], path: Path) -> list[Finding]:
    findings: list[Finding] = []
    for args_path in args_paths:
        node: Any = schema
        offset = args_path.offset
        for depth, name in enumerate(args_path.fields):
            properties = _properties(node)
            if properties is None:
                break
            if depth:
                found = source.find(name, offset)
                offset = found if found >= 0 else offset
            if name in properties:
                node = properties[name]
                offset += len(name)
                continue
            closed = (
                isinstance(node, dict)
                and node.get("additionalProperties") is False
                and not node.get("patternProperties")
            )
            dotted = ".".join(args_path.fields[: depth + 1])
            declared = ", ".join(sorted(properties)) or "none"
            hint = did_you_mean(name, properties)
            if closed:
                message = (
                    f"`args.{dotted}` is not an argument of this tool: the input schema declares {declared}.{hint}"
                )
            else:
                message = (
                    f"`args.{dotted}` is not declared in the input schema (declared: {declared}).{hint} The schema "
                    "allows undeclared keys, so this may be intended; declare it to be sure."
                )
            findings.append(
                Finding(path, "cel-unknown-arg", message, warning=not closed, inner=offset_to_line_col(source, offset))
            )
            break
    return findings


def _properties(node: Any) -> dict[str, Any] | None:
    """The declared properties of an object schema, merging ``allOf`` branches; None when unknown."""
    if not isinstance(node, dict) or "$ref" in node:
        return None
    properties = dict(node.get("properties", {})) if isinstance(node.get("properties"), dict) else {}
    for branch in node.get("allOf", []) if isinstance(node.get("allOf"), list) else []:
        more = _properties(branch)
        if more is None:
            return None
        properties.update(more)
    if not properties and node.get("type") != "object":
        return None
    return properties
