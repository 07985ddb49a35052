"""The CEL checker's operators: equality, ordering, ``in``, arithmetic, and null operands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.policy.celast import Node
from runtime.policy.celfacts import BUILD_PER_CHAR, Facts, comparable, compare_cost, join, orderable, path_of
from runtime.policy.celrefs import Token, string_value
from runtime.policy.celtypes import (
    BOOL,
    DOUBLE,
    DURATION,
    DYN,
    NUMERIC,
    ONE,
    TIMESTAMP,
    ZERO,
    CelType,
    Cost,
    const,
)
from runtime.policy.celwords import mismatch_hint, name_of

SIZED = frozenset({"string", "bytes", "list", "map", "object"})


class OperatorChecks:
    """Operator checks of :class:`runtime.policy.celcheck.Checker` (a mixin: it reports
    through ``issue`` and types operands through ``visit``)."""

    if TYPE_CHECKING:

        def issue(self, offset: int, message: str, code: str = "cel-type", *, warning: bool = False) -> None: ...

        def visit(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]: ...

    def operator(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        op = node.value
        left_node, right_node = node.args
        left, left_cost = self.visit(left_node, scope, facts)
        right, right_cost = self.visit(right_node, scope, facts)
        cost = left_cost + right_cost + ONE
        if op in ("==", "!="):
            self._equality(node, left_node, left, right_node, right, facts)
            return BOOL, cost + compare_cost(left, right)
        if op in ("<", "<=", ">", ">="):
            self.maybe_null(left_node, left, facts, f"`{op}`")
            self.maybe_null(right_node, right, facts, f"`{op}`")
            if not orderable(left, right):
                self.issue(
                    node.offset,
                    f"`{op}` cannot order {name_of(left_node, left)} ({left.describe()}) and "
                    f"{name_of(right_node, right)} ({right.describe()}): "
                    "the expression fails at run time on every "
                    f"call.{mismatch_hint(left_node, left, right_node, right)}",
                )
            return BOOL, cost + compare_cost(left, right)
        if op == "in":
            return BOOL, cost + self._membership(node, left_node, left, right_node, right, facts)
        return self._arithmetic(node, op, left_node, left, right_node, right, facts, cost)

    def _equality(
        self, node: Node, left_node: Node, left: CelType, right_node: Node, right: CelType, facts: Facts
    ) -> None:
        for value_node, value, other in ((left_node, left, right), (right_node, right, left)):
            if other.kind == "null" and value.kind not in ("null", "dyn") and not value.nullable:
                path = path_of(value_node)
                hint = f" To test whether the call gave it, use has({path})." if path else ""
                self.issue(
                    node.offset,
                    f"{name_of(value_node, value)} is {value.describe()} and is never null, so this comparison with "
                    f"null is always {'false' if node.value == '==' else 'true'}.{hint}",
                    warning=True,
                )
                return
        if not comparable(left, right):
            verdict = "false" if node.value == "==" else "true"
            self.issue(
                node.offset,
                f"`{node.value}` compares {name_of(left_node, left)} ({left.describe()}) with "
                f"{name_of(right_node, right)} ({right.describe()}): "
                "values of different types are never equal, so it is always "
                f"{verdict}.{mismatch_hint(left_node, left, right_node, right)}",
            )
            return
        for value_node, value, other_node in ((left_node, left, right_node), (right_node, right, left_node)):
            if value.enum and other_node.kind == "string" and value.kind == "string":
                literal = string_value(Token("string", other_node.value, other_node.offset))
                if literal is not None and literal not in value.enum:
                    allowed = ", ".join(repr(v) for v in value.enum)
                    self.issue(
                        other_node.offset,
                        f"{name_of(value_node, value)} is one of {allowed} (its enum); {literal!r} is not one of "
                        f"them, so this is always {'false' if node.value == '==' else 'true'}.",
                    )

    def _membership(
        self, node: Node, left_node: Node, left: CelType, right_node: Node, right: CelType, facts: Facts
    ) -> Cost:
        self.maybe_null(right_node, right, facts, "`in`")
        if right.kind == "list":
            elem = right.elem or DYN
            if not comparable(left, elem):
                self.issue(
                    node.offset,
                    f"`in` looks for {name_of(left_node, left)} ({left.describe()}) in a list of {elem.describe()}: "
                    "never found, always false.",
                )
            return (right.size or ZERO) * (ONE + compare_cost(left, elem))
        if right.kind in ("map", "object"):
            if left.kind not in ("string", "dyn"):
                self.issue(
                    node.offset,
                    f"`in` looks for a key in {name_of(right_node, right)}, whose keys are strings; "
                    f"{name_of(left_node, left)} is {left.describe()}.",
                )
            return ONE
        if right.kind != "dyn":
            self.issue(
                node.offset,
                f"`in` needs a list or a map on its right; {name_of(right_node, right)} is {right.describe()}. For "
                "text, use `.contains(...)`.",
            )
        return ONE

    def _arithmetic(
        self,
        node: Node,
        op: str,
        left_node: Node,
        left: CelType,
        right_node: Node,
        right: CelType,
        facts: Facts,
        cost: Cost,
    ) -> tuple[CelType, Cost]:
        self.maybe_null(left_node, left, facts, f"`{op}`")
        self.maybe_null(right_node, right, facts, f"`{op}`")
        kinds = {left.kind, right.kind}
        if "dyn" in kinds:
            other = right if left.kind == "dyn" else left
            if op == "+" and other.kind in SIZED:
                size = (left.size or ZERO) + (right.size or ZERO)
                built = const(BUILD_PER_CHAR) * size if other.kind in ("string", "bytes") else size
                return other.with_(size=size, enum=None, label=""), cost + built
            return DYN, cost
        if "number" in kinds:
            number_node = left_node if left.kind == "number" else right_node
            path = path_of(number_node) or "the value"
            self.issue(
                node.offset,
                f"`{op}` on {name_of(number_node, left if left.kind == 'number' else right)}, a JSON number: a call "
                "may send it as an int (`5`) "
                f"or a double (`5.5`), and CEL does not mix the two in arithmetic. Convert it: `double({path})` (and "
                "write double literals, `2.0`).",
            )
            return DOUBLE, cost
        if len(kinds) == 1:
            (kind,) = kinds
            if kind in ("int", "uint", "double") and (op != "%" or kind != "double"):
                return left.with_(enum=None, label=""), cost
            if op == "+" and kind in ("string", "bytes", "list"):
                elem = join(left.elem or DYN, right.elem or DYN) if kind == "list" else None
                size = (left.size or ZERO) + (right.size or ZERO)
                joined = left.with_(size=size, enum=None, label="", elem=elem)
                return joined, cost + (const(BUILD_PER_CHAR) * size if kind != "list" else size)
            if kind == "duration" and op in ("+", "-"):
                return DURATION, cost
        if op in ("+", "-") and kinds == {"timestamp", "duration"}:
            return TIMESTAMP, cost
        if op == "-" and kinds == {"timestamp"}:
            return DURATION, cost
        hint = mismatch_hint(left_node, left, right_node, right)
        if not hint and kinds <= NUMERIC:
            hint = (
                " CEL does not mix int, uint and double in arithmetic: convert one side with int(), uint() or double()."
            )
        self.issue(
            node.offset,
            f"`{op}` is not defined for {name_of(left_node, left)} ({left.describe()}) and "
            f"{name_of(right_node, right)} ({right.describe()}): the expression fails at run time on every call.{hint}",
        )
        return DYN, cost

    def maybe_null(self, node: Node, value: CelType, facts: Facts, use: str) -> None:
        if not value.nullable:
            return
        path = path_of(node)
        if path is not None and path in facts.nonnull:
            return
        guard = f"`{path} != null && ...`" if path else "a null check"
        self.issue(
            node.offset,
            f"{name_of(node, value)} may be null (the schema allows null), and {use} fails on null at run time. "
            f"Guard it: {guard}.",
            "cel-nullable",
            warning=True,
        )
