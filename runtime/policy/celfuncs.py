"""The functions the CEL checker knows: each checks its operands and returns (result type, cost)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from runtime.policy.celast import Node
from runtime.policy.celfacts import REGEX_PER_CHAR, SCAN_PER_CHAR, Facts, unknown_size
from runtime.policy.celtypes import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    STRING,
    TIMESTAMP,
    TYPE,
    UINT,
    ZERO,
    CelType,
    Cost,
    const,
)
from runtime.policy.celwords import hint_for_field, name_of


class FunctionChecker(Protocol):
    """What a function's check asks of the checker walking the expression
    (:class:`runtime.policy.celcheck.Checker`, which looks functions up here)."""

    def issue(self, offset: int, message: str, code: str = "cel-type", *, warning: bool = False) -> None: ...

    def maybe_null(self, node: Node, value: CelType, facts: Facts, use: str) -> None: ...


def _fn_size(
    checker: FunctionChecker, node: Node, operands: list[tuple[Node, CelType]], facts: Facts, cost: Cost
) -> tuple[CelType, Cost]:
    if not _arity(checker, node, operands, 1):
        return INT, cost
    operand_node, operand = operands[0]
    checker.maybe_null(operand_node, operand, facts, "size()")
    if operand.kind not in ("string", "bytes", "list", "map", "object", "dyn"):
        checker.issue(
            node.offset,
            f"size() takes a string, bytes, a list or a map; {name_of(operand_node, operand)} is {operand.describe()}.",
        )
    return INT, cost


_Signature = Callable[[FunctionChecker, Node, list[tuple[Node, CelType]], Facts, Cost], tuple[CelType, Cost]]


def _string_test(name: str, per_char: float) -> _Signature:
    def check_string_test(
        checker: FunctionChecker, node: Node, operands: list[tuple[Node, CelType]], facts: Facts, cost: Cost
    ) -> tuple[CelType, Cost]:
        if not _arity(checker, node, operands, 2, method=True):
            return BOOL, cost
        (text_node, text), (part_node, part) = operands
        checker.maybe_null(text_node, text, facts, f"`.{name}()`")
        for value_node, value in operands:
            if value.kind not in ("string", "dyn"):
                checker.issue(
                    value_node.offset,
                    f"`.{name}()` works on strings; {name_of(value_node, value)} is "
                    f"{value.describe()}.{hint_for_field(value, name)}",
                )
        # RE2 (both engines) matches in time linear in the text, whatever the pattern.
        scanned = const(per_char) * (text.size if text.size is not None else unknown_size(text_node))
        return BOOL, cost + scanned

    return check_string_test


def _conversion(result: CelType, accepts: frozenset[str]) -> _Signature:
    def check_conversion(
        checker: FunctionChecker, node: Node, operands: list[tuple[Node, CelType]], facts: Facts, cost: Cost
    ) -> tuple[CelType, Cost]:
        if not _arity(checker, node, operands, 1):
            return result, cost
        operand_node, operand = operands[0]
        checker.maybe_null(operand_node, operand, facts, f"{node.value}()")
        if operand.kind not in accepts and operand.kind != "dyn":
            checker.issue(
                node.offset, f"{node.value}() does not take {operand.describe()} ({name_of(operand_node, operand)})."
            )
        size = operand.size if result.kind in ("string", "bytes") and operand.kind in ("string", "bytes") else const(24)
        return (result.with_(size=size) if result.kind in ("string", "bytes") else result), cost + const(
            SCAN_PER_CHAR
        ) * (operand.size or ZERO)

    return check_conversion


def _fn_dyn(
    checker: FunctionChecker, node: Node, operands: list[tuple[Node, CelType]], facts: Facts, cost: Cost
) -> tuple[CelType, Cost]:
    _arity(checker, node, operands, 1)
    return (operands[0][1] if node.value == "dyn" and operands else TYPE if node.value == "type" else DYN), cost


_SCALARS = frozenset({"int", "uint", "double", "number", "string", "bool", "bytes", "timestamp", "duration"})
FUNCTIONS: dict[str, _Signature] = {
    "size": _fn_size,
    "contains": _string_test("contains", SCAN_PER_CHAR),
    "startsWith": _string_test("startsWith", SCAN_PER_CHAR),
    "endsWith": _string_test("endsWith", SCAN_PER_CHAR),
    "matches": _string_test("matches", REGEX_PER_CHAR),
    "int": _conversion(INT, frozenset({"int", "uint", "double", "number", "string", "timestamp"})),
    "uint": _conversion(UINT, frozenset({"int", "uint", "double", "number", "string"})),
    "double": _conversion(DOUBLE, frozenset({"int", "uint", "double", "number", "string"})),
    "string": _conversion(STRING, _SCALARS),
    "bytes": _conversion(BYTES, frozenset({"string", "bytes"})),
    "bool": _conversion(BOOL, frozenset({"string", "bool"})),
    "duration": _conversion(DURATION, frozenset({"string", "duration"})),
    "timestamp": _conversion(TIMESTAMP, frozenset({"string", "timestamp", "int"})),
    "dyn": _fn_dyn,
    "type": _fn_dyn,
}


def _arity(
    checker: FunctionChecker, node: Node, operands: list[tuple[Node, CelType]], count: int, *, method: bool = False
) -> bool:
    if len(operands) == count and (not method or node.target is not None or node.value == "matches"):
        return True
    form = f"text.{node.value}(x)" if method else f"{node.value}(x)"
    checker.issue(
        node.offset,
        f"`{node.value}` takes {count - 1 if method else count} argument{'s' if count - method != 1 else ''}: write "
        f"`{form}`.",
    )
    return False
