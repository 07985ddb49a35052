"""Typing config expressions: what each variable holds, what the result must be, and
what an expression may cost.

:func:`variable_types` builds the types CEL expressions see for one tool (``args``
from its input schema; ``tool``, ``session``, ``call`` and ``commands`` from what the
runtime builds); :func:`type_findings` runs :mod:`runtime.policy.celcheck` on one
expression and turns its issues into findings: type errors, a result that is not
what the field needs (a rule or ``when`` that is not a bool never matches: fail-open),
optional fields read without ``has()``, and a worst-case cost over the budget, with
the schema bound that would bring it down.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.config.finding import Finding
from runtime.policy import celbudget
from runtime.policy.celast import ParseError, parse
from runtime.policy.celcheck import check
from runtime.policy.celrefs import offset_to_line_col
from runtime.policy.celtypes import (
    BOOL,
    INT,
    MAX_ARGUMENT_BYTES,
    STRING,
    CelType,
    SizeBound,
    closed_object,
    from_schema,
    list_of,
    map_of,
    size_var,
)
from runtime.policy.shell import MAX_LINE_LENGTH

#: A rule that lints clean evaluates within this many cost units (see celcheck), and at
#: run time each evaluation is bounded by the same budget on both engines
#: (runtime.policy.celbudget). One unit is about one CEL operation: 0.1-0.4 us on the
#: fast engine, 20-45 us on the portable one (measured).
DEFAULT_COST_LIMIT = celbudget.DEFAULT_COST_LIMIT
UNTYPED = "(untyped values)"

_WHAT = {"bool": "a bool", "string": "a string"}


@dataclass(frozen=True)
class TypedCheck:
    """How to type one expression: its variables, the result kind it must have
    (``bool``, ``string`` or None for any), the cost limit, and whom it applies to."""

    variables: Mapping[str, CelType]
    bounds: Mapping[str, SizeBound]
    result: str | None = "bool"
    cost_limit: int = DEFAULT_COST_LIMIT
    field_name: str = "expression"  # how messages name the field: rule, `when`...
    subject: str = ""  # "for tool `x`: " when a policy rule is checked per tool
    key: str = field(default="", compare=False)  # a content key of the types, for caches
    declared: bool = False  # also ask cel-expr-python's checker, the types declared (the fast engine)
    time_limit_ms: int = celbudget.DEFAULT_TIME_LIMIT_MS  # setting cel_time_limit_ms


def variable_types(
    schema: Any, command_line: str | None = None, *, with_commands: bool = False
) -> tuple[dict[str, CelType], dict[str, SizeBound], str]:
    """The variables' types for a tool with input ``schema`` (None: args of no known
    schema), their size bounds, and a content key of both. Tools often share a schema:
    the result is kept per content (callers must not change it)."""
    key = hashlib.sha256(
        json.dumps([schema, command_line, with_commands], sort_keys=True, default=str).encode()
    ).hexdigest()
    cached = _TYPES.get(key)
    if cached is None:
        if len(_TYPES) >= 4096:
            _TYPES.clear()
        cached = _TYPES[key] = _variable_types(schema, command_line, with_commands, key)
    return cached


_TYPES: dict[str, tuple[dict[str, CelType], dict[str, SizeBound], str]] = {}


def _variable_types(
    schema: Any, command_line: str | None, with_commands: bool, key: str
) -> tuple[dict[str, CelType], dict[str, SizeBound], str]:
    read = from_schema(schema if schema is not None else {"type": "object"}, "args")
    bounds = dict(read.bounds)
    bounds[UNTYPED] = SizeBound(MAX_ARGUMENT_BYTES // 2, False, "maxItems", "(values of no declared type)")
    # With no schema, `args` is a map of unknown keys: reading one is not flagged (no
    # label), since nothing says which keys the tools it will meet have.
    variables = {"args": read.root.with_(label="args" if schema is not None else ""), **_fixed_types(bounds)}
    if with_commands and not command_line:
        variables["commands"] = list_of(list_of(STRING)).with_(
            label="commands"
        )  # always empty: the tool runs no command line
    elif with_commands:
        line_bound = bounds.get(f"args.{command_line}") if command_line else None
        limit = min(
            line_bound.limit if line_bound is not None else MAX_ARGUMENT_BYTES, MAX_LINE_LENGTH
        )  # longer lines are not split
        # A line of n characters holds at most n/2 words in all: nested iteration over
        # commands and their words shares that total (as lists share the argument cap).
        count = max(1, limit // 2)
        per_command = max(1, limit // 2 // count)
        shares = {"commands": count, "commands[]": per_command, "commands[][]": max(1, limit // (count * per_command))}
        for name, bound in shares.items():
            bounds[name] = SizeBound(
                bound,
                line_bound.declared if line_bound else False,
                "maxLength",
                line_bound.pointer if line_bound else "the command line",
            )
        word = STRING.with_(size=size_var("commands[][]"))
        variables["commands"] = list_of(list_of(word, size_var("commands[]")), size_var("commands")).with_(
            label="commands"
        )
    return variables, bounds, key


def _fixed_types(bounds: dict[str, SizeBound]) -> dict[str, CelType]:
    """``tool``, ``session`` and ``call`` as the runtime builds them (see
    runtime.config.compile._attributes and runtime.policy.celdata.cel_data)."""
    for name, keyword in (
        ("session.labels", "maxProperties"),
        ("session.labels.*", "maxLength"),
        ("session.text", "maxLength"),
        ("tool.text", "maxLength"),
        ("tool.labels", "maxProperties"),
    ):
        # Set by the app and the config (trusted), not by the model: sized like arguments.
        bounds[name] = SizeBound(MAX_ARGUMENT_BYTES // (5 if keyword == "maxProperties" else 1), False, keyword, name)
    tool_text = STRING.with_(size=size_var("tool.text"))
    session_text = STRING.with_(size=size_var("session.text"))
    flag = BOOL
    tool = closed_object(
        {
            "name": tool_text,
            "version": tool_text,
            "labels": map_of(STRING, tool_text, size_var("tool.labels")),
            "read_only": flag,
            "idempotent": flag,
            "risk": tool_text.with_(enum=("low", "medium", "high", "critical")),
            "trust": tool_text.with_(enum=("trusted", "untrusted")),
            "handler": tool_text.with_(enum=("builtin", "python", "mcp", "command", "http", "workflow")),
            "defer_loading": flag,
            "edits_workspace": flag,
            "command_line": tool_text,
        },
        "tool",
    )
    session = closed_object(
        {
            "id": session_text,
            "user": session_text,
            "mode": session_text.with_(enum=("default", "plan", "accept_edits", "bypass")),
            "labels": map_of(STRING, STRING.with_(size=size_var("session.labels.*")), size_var("session.labels")),
        },
        "session",
    )
    call = closed_object({"id": session_text, "index": INT}, "call")
    return {"tool": tool, "session": session, "call": call}


@functools.lru_cache(maxsize=4096)
def _parsed(source: str) -> Any:
    try:
        return parse(source)
    except ParseError as err:
        return err


def type_findings(
    source: str, path: tuple[str | int, ...], typed: TypedCheck, *, own_schema: bool = True
) -> list[Finding]:
    """Findings for ``source`` under ``typed``
    (kept per content: many tools share their rules and schemas)."""
    memo = (
        source,
        path,
        typed.key,
        typed.result,
        typed.cost_limit,
        typed.field_name,
        typed.subject,
        own_schema,
        typed.declared,
        typed.time_limit_ms,
    )
    found = _FINDINGS.get(memo) if typed.key else None
    if found is None:
        found = tuple(_type_findings(source, path, typed, own_schema=own_schema))
        if typed.key:
            if len(_FINDINGS) >= 16384:
                _FINDINGS.clear()
            _FINDINGS[memo] = found
    return list(found)


_FINDINGS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _type_findings(
    source: str, path: tuple[str | int, ...], typed: TypedCheck, *, own_schema: bool = True
) -> list[Finding]:

    tree = _parsed(source)
    if isinstance(tree, ParseError):
        message = (
            f"{typed.subject}this expression uses syntax lint cannot type ({tree}), so its field names, types and "
            "cost are unchecked. Rewrite it with CEL's standard operators, functions and macros."
        )
        return [Finding(path, "cel-unchecked", message, warning=True, inner=offset_to_line_col(source, tree.offset))]
    variables = {name: value for name, value in typed.variables.items()}
    result = check(tree, variables, own_schema=own_schema)
    findings = [
        Finding(
            path,
            issue.code,
            typed.subject + issue.message,
            warning=issue.warning,
            inner=offset_to_line_col(source, issue.offset),
        )
        for issue in result.issues
    ]
    expected = typed.result
    kind = result.type.kind
    if expected is not None and not any(not f.warning for f in findings):
        if kind not in (expected, "dyn"):
            if expected == "bool":
                message = (
                    f"{typed.subject}this {typed.field_name} is {result.type.describe()}, not a bool: a condition "
                    "that is not a bool never matches, so a deny or ask rule would never fire (fail-open) and a "
                    f"business rule would reject every call. {_bool_fix(kind)}"
                )
            else:
                message = (
                    f"{typed.subject}this {typed.field_name} is {result.type.describe()}, not "
                    f"{_WHAT.get(expected, expected)}. Convert it: string(...)."
                )
            findings.append(Finding(path, "cel-result-type", message, inner=(1, 1)))
        elif kind == "dyn" and expected == "bool":
            findings.append(
                Finding(
                    path,
                    "cel-result-type",
                    f"{typed.subject}lint cannot tell whether this {typed.field_name} is a bool (it reads values of "
                    "no declared type); if it is not, it never matches. Compare it explicitly, e.g. `... == true`, "
                    "or declare the types in the input schema.",
                    warning=True,
                    inner=(1, 1),
                )
            )
    if typed.declared and not any(not f.warning for f in findings):
        findings.extend(_declared_findings(source, path, typed, own_schema))
    findings.extend(_cost_findings(result.cost, path, typed))
    findings.extend(_time_findings(source, result.cost, path, typed))
    return findings


def _declared_findings(source: str, path: tuple[str | int, ...], typed: TypedCheck, own_schema: bool) -> list[Finding]:
    """cel-expr-python's checker's word, the schema's types declared to it
    (:mod:`runtime.policy.celdeclared`), where toolrt's checker found no error: the
    conformance test keeps the two in agreement wherever it can decide."""
    from runtime.policy.celdeclared import check_declared

    verdict = check_declared(source, typed.variables, typed.key, typed.result, own_schema=own_schema)
    if verdict is None or verdict.status != "error":
        return []
    message = (
        f"{typed.subject}cel-expr-python's type checker, given the types of the input schema, rejects this "
        f"{typed.field_name}: {verdict.message}. Fix the expression to match the schema's types."
    )
    return [Finding(path, "cel-type", message, inner=(verdict.line, verdict.col))]


def _bool_fix(kind: str) -> str:
    if kind in ("string", "list", "map", "bytes", "object"):
        return 'Test it: e.g. `size(...) > 0`, `x == "..."`, `x.contains("...")`.'
    if kind in ("int", "uint", "double", "number"):
        return "Compare it: e.g. `... > 0`."
    return "Write a comparison or a test that gives true or false."


def _cost_findings(cost: Any, path: tuple[str | int, ...], typed: TypedCheck) -> list[Finding]:

    limits = {name: float(bound.limit) for name, bound in typed.bounds.items()}
    worst = cost.evaluate(limits)
    if worst <= typed.cost_limit:
        return []
    how = "; ".join(_fixes(cost, limits, typed, worst)) or "simplify the expression"
    message = (
        f"{typed.subject}this {typed.field_name} may cost up to {worst:,.0f} units per evaluation, over the limit of "
        f"{typed.cost_limit:,} (setting cel_cost_limit): on large inputs it would stall every session. "
        f"{how[0].upper()}{how[1:]}."
    )
    return [Finding(path, "cel-cost", message)]


def _time_findings(source: str, cost: Any, path: tuple[str | int, ...], typed: TypedCheck) -> list[Finding]:
    """A warning when the worst case within the cost budget would still run past
    ``cel_time_limit_ms`` on the portable engine (it would be stopped, failing closed),
    with the schema bound, and the value of it, that brings it under."""
    from runtime.policy.celclosure import translate

    limits = {name: float(bound.limit) for name, bound in typed.bounds.items()}
    worst = cost.evaluate(limits)
    limit_s = typed.time_limit_ms / 1000
    if worst > typed.cost_limit or worst * celbudget.PORTABLE_SECONDS_PER_UNIT <= limit_s:
        return []
    # The rates were measured on comprehensions, where each unit is a step of the engine.
    # Without one, the steps are the syntax tree's few nodes and the units are sizes that
    # native string and list operations scan or build (a 500,000-character `+` takes
    # 0.2 ms on cel-python, not the 400 ms its 5,000 units would give at the step rate).
    if not _has_comprehension(source):
        return []
    # Most expressions are evaluated by Python closures on either engine, far faster per
    # unit than cel-python itself; only the rest runs on the portable engine proper.
    names = tuple(typed.variables)
    closures = translate(source, names, typed.cost_limit, typed.time_limit_ms) is not None
    rate = celbudget.CLOSURE_SECONDS_PER_UNIT if closures else celbudget.PORTABLE_SECONDS_PER_UNIT
    if worst * rate <= limit_s:
        return []
    allowed = limit_s / rate
    how = "; ".join(_fixes(cost, limits, typed, worst, allowed)) or "simplify the expression"
    where = "in the closures it is translated into" if closures else "on the portable engine (cel-python)"
    message = (
        f"{typed.subject}this {typed.field_name} may cost up to {worst:,.0f} units, about "
        f"{worst * rate * 1000:,.0f} ms of CPU {where} at {rate * 1e6:g} us a unit (measured), over "
        f"cel_time_limit_ms of {typed.time_limit_ms:,} ms: on the largest inputs its schema accepts it would be "
        "stopped and fail closed (a deny or ask rule matches, a business rule rejects the call). "
        f"{how[0].upper()}{how[1:]} (or raise cel_time_limit_ms, knowing every other call waits that long"
        f"{'; the fast engine runs it within the limit' if not closures else ''})."
    )
    return [Finding(path, "cel-time", message, warning=True)]


def _has_comprehension(source: str) -> bool:
    from runtime.policy.celrefs import LexError, analyse

    try:
        return analyse(source).macro_depth > 0
    except LexError:
        return True  # unreadable here: judged at the step rate, as before


def _fixes(cost: Any, limits: dict[str, float], typed: TypedCheck, worst: float, allowed: float = 0) -> list[str]:
    """Which sizes drive ``cost`` (the variables whose lowering saves the most), and how
    to bound them; with ``allowed``, the largest value of the bound that keeps the cost
    within it."""
    drivers = []
    for name in sorted(cost.variables()):
        bound = typed.bounds.get(name)
        if bound is None:
            continue
        lowered = dict(limits)
        lowered[name] = max(1.0, limits[name] / 1000)
        drivers.append((worst - cost.evaluate(lowered), name, bound))
    drivers.sort(key=lambda item: (-item[0], item[1]))
    fixes: list[str] = []
    for saving, name, bound in drivers[:2]:
        if fixes and saving < worst / 10:
            break
        target = _largest_within(cost, limits, name, allowed) if allowed else None
        at_most = f" of at most {target:,}" if target else ""
        if bound.declared:
            fixes.append(
                f"`{name}` may hold up to {bound.limit:,} ({bound.keyword} at {bound.pointer}): lower that bound"
                + (f" to {target:,}" if target else "")
            )
        elif name == UNTYPED:
            fixes.append(
                "values of no declared type may hold up to the whole argument size: declare their type and a "
                "maxItems/maxLength"
            )
        else:
            fixes.append(
                f"`{name}` has no {bound.keyword} (so up to {bound.limit:,}): add `{bound.keyword}`{at_most} at "
                f"input_schema {bound.pointer}"
            )
    return fixes


def _largest_within(cost: Any, limits: dict[str, float], name: str, allowed: float) -> int | None:
    """The largest bound of ``name`` (the others as they are) at which ``cost`` stays
    within ``allowed``; None when even 1 does not."""
    low, high = 1, int(limits[name])
    trial = dict(limits)
    trial[name] = 1.0
    if cost.evaluate(trial) > allowed:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        trial[name] = float(middle)
        if cost.evaluate(trial) <= allowed:
            low = middle
        else:
            high = middle - 1
    return low
