"""Stage 03, validate: the input schema, then the tool's business rules (CEL)."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

from runtime.adapters.arguments import MAX_DEPTH
from runtime.codes import ResultCode
from runtime.config.models import FailurePolicy
from runtime.policy.cel import RULE_VARIABLES, Outcome, get_engine
from runtime.policy.celdata import call_activation, cel_data
from runtime.records import BoundCall, Session, Stage, Status, ToolResult, ValidatedCall, error_result
from runtime.snapshot import Snapshot


def validate(bound: BoundCall, session: Session, snapshot: Snapshot) -> ValidatedCall | ToolResult:
    """Arguments checked against the compiled schema and rules, with schema defaults
    filled in; or an error result saying what to fix."""
    call, tool = bound.call, bound.tool
    args = call.args
    if args is None:
        return error_result(
            call,
            Status.invalid,
            ResultCode.bad_arguments,
            Stage.validate,
            f"Arguments for `{tool.name}` could not be read: {call.parse_error or 'missing'}.",
        )
    too_deep, huge, plain = scan(args, MAX_DEPTH)
    if too_deep:
        # Checked before any validator recurses into them (calls built by the app
        # itself do not pass through the provider adapters' checks).
        return error_result(
            call,
            Status.invalid,
            ResultCode.invalid_arguments,
            Stage.validate,
            f"Arguments for `{tool.name}` nest deeper than {MAX_DEPTH} levels of lists and objects; send a flatter "
            "structure.",
        )
    if huge:
        # Beyond 64 bits: the fast validator and CEL engine cannot take such numbers
        # (one waves them through, one crashes); no tool needs them as numbers.
        return error_result(
            call,
            Status.invalid,
            ResultCode.invalid_arguments,
            Stage.validate,
            f"Arguments for `{tool.name}` contain an integer beyond the 64-bit range; send large numbers as strings.",
        )
    problems = tool.arguments.validate(args)
    if problems:
        lines = "\n".join(f"- {p.message}" for p in problems[:20])
        more = f"\n- ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        return error_result(
            call,
            Status.invalid,
            ResultCode.invalid_arguments,
            Stage.validate,
            f"Invalid arguments for `{tool.name}`:\n{lines}{more}\nFix the arguments and call `{tool.name}` again.",
            problems=tuple({"pointer": p.pointer, "message": p.message} for p in problems),
        )
    filled: Mapping[str, Any] = MappingProxyType({**tool.defaults, **args}) if tool.defaults else args
    validated = ValidatedCall(call, tool, filled)
    if tool.rules:
        # Schema defaults are the config's values, not checked here: plain only without them.
        failure = _check_rules(validated, session, snapshot, plain and not tool.defaults)
        if failure is not None:
            return failure
    return validated


def _check_rules(
    validated: ValidatedCall, session: Session, snapshot: Snapshot, args_plain: bool = False
) -> ToolResult | None:
    call, tool, args = validated.call, validated.tool, validated.args
    activation = None
    for rule in tool.rules:
        verdict = rule.direct(args) if rule.direct is not None else None
        if verdict is True:
            continue
        if verdict is False:
            outcome = _FALSE
        else:
            if activation is None:
                activation = _activation(validated, session, snapshot, args_plain)
            outcome = rule.program.evaluate(activation)
        if outcome.is_true:
            continue
        if outcome.error is not None:
            if rule.on_error is FailurePolicy.ignore:
                continue
            message = f"{rule.message} (rule `{rule.name}` could not be checked: {outcome.error})"
        else:
            message = rule.message
        return error_result(
            call,
            Status.invalid,
            ResultCode.rule_failed,
            Stage.validate,
            f"`{tool.name}` refused these arguments: {message}",
            rule=rule.name,
        )
    return None


def _activation(validated: ValidatedCall, session: Session, snapshot: Snapshot, args_plain: bool) -> Any:
    """The call's CEL activation. For a tool without a command line it is built with
    everything the policy conditions read too and kept in ``validated`` for stage 04
    (see runtime.policy.celdata); a command-line tool's conditions also read the placed
    line, so its rules get only the variables they read (building CEL values is most
    of a rule's cost)."""
    call, tool, args = validated.call, validated.tool, validated.args
    if not tool.spec.command_line:
        validated.activation = call_activation(snapshot.cel_engine, call, tool, args, session, args_plain=args_plain)
        return validated.activation
    return get_engine(snapshot.cel_engine).activation(
        cel_data(call, tool, args, session, tool.rule_variables), RULE_VARIABLES
    )


_FALSE = Outcome(value=False)
_INT64 = (-(2**63), 2**63 - 1)  # what both CEL engines read as an int


def scan_arguments(args: Mapping[str, Any], limit: int) -> tuple[bool, bool]:
    """(nests deeper than ``limit``, holds an integer beyond 64 bits), without recursion."""
    too_deep, huge, _plain = scan(args, limit)
    return too_deep, huge


def scan(args: Mapping[str, Any], limit: int) -> tuple[bool, bool, bool]:
    """(nests deeper than ``limit``, holds an integer beyond 64 bits, is plain JSON data:
    dicts with string keys, lists, strings, booleans, floats, None and 64-bit ints only,
    each of exactly those types, as the CEL closures require), without recursion.

    Runs on every call, so it tests exact types first (an ABC ``isinstance`` costs
    ten times more) and only walks into containers."""
    low, high = _INT64
    huge = False
    plain = type(args) is dict and all(map(_IS_STR, map(type, args)))
    stack: list[tuple[Any, int]] = []
    children = args.values() if isinstance(args, dict) else _children(args)
    for value in children:
        kind = type(value)
        if kind is int:
            huge = huge or not low <= value <= high
        elif kind is dict or kind is list:
            stack.append((value, 2))
        elif kind is str or kind is bool or kind is float or value is None:
            continue
        else:
            plain = False
            if kind is tuple or isinstance(value, Mapping):
                stack.append((value, 2))
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True, huge, False
        kind = type(node)
        if kind is dict:
            if plain and not all(map(_IS_STR, map(type, node))):
                plain = False
            values: Any = node.values()
        elif kind is list or kind is tuple:
            values = node
        else:
            values = node.values()  # a Mapping of another kind
        for value in values:
            kind = type(value)
            if kind is int:
                huge = huge or not low <= value <= high
            elif kind is dict or kind is list:
                stack.append((value, depth + 1))
            elif kind is str or kind is bool or kind is float or value is None:
                continue
            else:
                plain = False
                if kind is tuple or isinstance(value, Mapping):
                    stack.append((value, depth + 1))
    return False, huge, plain and not huge


_IS_STR = partial(operator.is_, str)  # of a type: whether it is exactly str (in C, over map(type, keys))


def _children(args: Any) -> Any:
    if isinstance(args, Mapping):
        return args.values()
    return (args,)  # not an object at all: the schema check says so; look inside it anyway
