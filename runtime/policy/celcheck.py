"""The CEL type checker and cost estimator lint runs on every expression.

Both engines evaluate ``args`` as an untyped map at run time, so a wrong field name,
a string compared with an int or a non-bool condition only shows up as an error (or
a silent ``false``) on every call. This checker types the expression against the
variables' types (``args`` from the tool's input schema, see
:mod:`runtime.policy.celtypes`) with CEL's run-time rules as both engines apply them
to such values, so that its verdict is the engines' verdict:

- numbers of different kinds compare (``args.ratio > 1``) but do not mix in
  arithmetic; values of different kinds never compare equal (always false) and do
  not order (an error);
- reading a field the call may leave out (not ``required``, no ``default``) without
  ``has()`` fails on the calls that leave it out; ``a && b`` and ``a || b`` guard
  either side with the other (CEL's logical operators absorb errors), ``c ? x : y``
  guards its branches with ``c``;
- the cost is estimated the way Kubernetes estimates CEL cost: one unit per
  operation, a comprehension costs its body once per item, string scans cost per
  character, every size bounded by the schema (:class:`runtime.policy.celtypes.Cost`).

Findings carry offsets into the source; the caller places them in the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtime.policy.celast import Node
from runtime.policy.celfacts import NO_FACTS, Facts, facts_of, join, join_all, path_of, start_of, unknown_count
from runtime.policy.celfuncs import FUNCTIONS
from runtime.policy.celops_check import OperatorChecks
from runtime.policy.celrefs import Token, string_value
from runtime.policy.celtypes import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    NULL,
    ONE,
    STRING,
    TYPE,
    UINT,
    ZERO,
    CelType,
    Cost,
    const,
    larger,
    list_of,
    map_of,
)
from runtime.policy.celwords import hint_for_field, name_of, plain_name, to_bool_hint

TYPE_NAMES = {
    "int": INT,
    "uint": UINT,
    "double": DOUBLE,
    "string": STRING,
    "bool": BOOL,
    "bytes": BYTES,
    "list": TYPE,
    "map": TYPE,
    "null_type": TYPE,
    "type": TYPE,
    "dyn": TYPE,
}


_SCALAR_KINDS = frozenset({"bool", "int", "uint", "double", "string", "bytes"})


@dataclass(frozen=True, slots=True)
class Issue:
    offset: int
    code: str  # cel-type, cel-unknown-arg, cel-optional, cel-nullable, cel-unchecked
    message: str
    warning: bool = False


@dataclass
class Checked:
    type: CelType
    cost: Cost
    issues: list[Issue] = field(default_factory=list)


def check(root: Node, variables: Mapping[str, CelType], *, own_schema: bool = True) -> Checked:
    """Type ``root`` against ``variables``; return its type, cost and issues.

    ``own_schema``: the expression belongs to the tool whose schema types ``args`` (a
    business rule), so has() of an undeclared field is a typo; a policy rule checked
    against many tools may test for a field some of them lack."""
    checker = Checker(variables)
    checker.own_schema = own_schema
    result_type, cost = checker.visit(root, dict(variables), NO_FACTS)
    return Checked(result_type, cost, checker.issues)


class Checker(OperatorChecks):
    """One walk over an expression: each node's type and cost, and the issues found."""

    def __init__(self, variables: Mapping[str, CelType]) -> None:
        self.variables = variables
        self.issues: list[Issue] = []
        self._seen: set[tuple[int, str]] = set()
        self.own_schema = True

    def issue(self, offset: int, message: str, code: str = "cel-type", *, warning: bool = False) -> None:
        if (offset, code) in self._seen:
            return
        self._seen.add((offset, code))
        self.issues.append(Issue(offset, code, message, warning))

    # -- the walk -----------------------------------------------------------

    def visit(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        kind = node.kind
        if kind in ("int", "uint", "double", "bool", "null"):
            return {"int": INT, "uint": UINT, "double": DOUBLE, "bool": BOOL, "null": NULL}[kind], ONE
        if kind in ("string", "bytes"):
            value = string_value(Token("string", node.value, node.offset))
            length = len(value) if value is not None else len(node.value)
            return (STRING if kind == "string" else BYTES).with_(
                size=const(length), enum=(value,) if value is not None else None
            ), ONE
        if kind == "ident":
            return self._ident(node, scope), ONE
        if kind == "select":
            return self._select(node, scope, facts)
        if kind == "has":
            return self._has(node, scope, facts)
        if kind == "index":
            return self._index(node, scope, facts)
        if kind == "list":
            return self._list(node, scope, facts)
        if kind == "map":
            return self._map(node, scope, facts)
        if kind == "cond":
            return self._cond(node, scope, facts)
        if kind in ("and", "or"):
            return self._logic(node, scope, facts)
        if kind == "not":
            operand, cost = self.visit(node.args[0], scope, facts)
            self._want_bool(node.args[0], operand, "`!`")
            return BOOL, cost + ONE
        if kind == "neg":
            operand, cost = self.visit(node.args[0], scope, facts)
            if operand.kind not in ("int", "double", "number", "dyn"):
                self.issue(
                    node.offset,
                    f"`-` needs an int or a double; {name_of(node.args[0], operand)} is {operand.describe()}.",
                )
                return DYN, cost + ONE
            return operand.with_(enum=None, label=""), cost + ONE
        if kind == "op":
            return self.operator(node, scope, facts)
        if kind == "macro":
            return self._macro(node, scope, facts)
        if kind == "call":
            return self._call(node, scope, facts)
        return DYN, ONE

    def _ident(self, node: Node, scope: Mapping[str, CelType]) -> CelType:
        found = scope.get(node.value)
        if found is not None:
            return found
        if node.value in TYPE_NAMES:
            return TYPE
        return DYN  # undeclared: reported once, by the name check that runs before this one

    # -- fields ---------------------------------------------------------------

    def _select(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        operand_node = node.args[0]
        operand, cost = self.visit(operand_node, scope, facts)
        return self._field(node, operand_node, operand, node.value, facts, test_only=False), cost + ONE

    def _field(
        self, node: Node, operand_node: Node, operand: CelType, name: str, facts: Facts, *, test_only: bool
    ) -> CelType:
        path = path_of(node)
        where = plain_name(operand_node, operand)
        self.maybe_null(operand_node, operand, facts, f"reading `.{name}`")
        if operand.kind == "object":
            fields = operand.fields or {}
            info = fields.get(name)
            if info is None:
                if path is not None and (test_only or path in facts.present) and not self.own_schema:
                    # has(args.path) on a tool without `path` is false, and what it guards never
                    # runs for that tool: a rule over many tools tests for the field this way.
                    return DYN.with_(size=ZERO)
                return self._unknown_field(node, operand, name, where)
            if not test_only and not info.required and path is not None and path not in facts.present:
                self._optional(node, path, operand)
            return info.type
        if operand.kind == "map":
            if operand.key is not None and operand.key.kind not in ("string", "dyn"):
                self.issue(node.offset, f"`.{name}` selects a string key, but {where} is {operand.describe()}.")
                return DYN
            if not test_only and path is not None and path not in facts.present and operand.label:
                self.issue(
                    node.offset,
                    f"`{path}` reads a key of the map {where}, which may not hold it: when it does not, the "
                    "expression fails at "
                    "run time (a deny or ask rule then matches; a business rule rejects the call). Guard it: "
                    f"`has({path}) && ...` "
                    f'or `"{name}" in {where} && ...`.',
                    "cel-optional",
                    warning=True,
                )
            return operand.elem or DYN
        if operand.kind == "dyn":
            return DYN
        self.issue(
            node.offset,
            f"`.{name}` reads a field, but `{where}` is {operand.describe()}, which has no "
            f"fields.{hint_for_field(operand, name)}",
        )
        return DYN

    def _unknown_field(self, node: Node, operand: CelType, name: str, where: str) -> CelType:
        from runtime.config.suggest import did_you_mean

        declared = sorted(operand.fields or {})
        listing = ", ".join(declared) or "none"
        hint = did_you_mean(name, declared)
        label = f"{where}.{name}"
        if operand.extra is None:
            self.issue(
                node.offset, f"`{label}` does not exist: {where} has the fields {listing}.{hint}", "cel-unknown-arg"
            )
            return DYN
        self.issue(
            node.offset,
            f"`{label}` is not declared in the schema (declared: {listing}).{hint} The schema allows undeclared "
            "keys, so a call may "
            "carry it, but a call without it fails the expression at run time; declare it (and require it) or guard "
            "it with has().",
            "cel-unknown-arg",
            warning=True,
        )
        return operand.extra.with_(label=label)

    def _optional(self, node: Node, path: str, operand: CelType) -> None:
        self.issue(
            node.offset,
            f"`{path}` is optional (not in `required`, no `default`) and is read without has(): a call that leaves "
            "it out makes "
            "the expression fail at run time, and then a deny or ask rule matches (a business rule rejects the call). "
            f"Guard it: `has({path}) && ...` (or `!has({path}) || ...`), or list it in `required`.",
            "cel-optional",
            warning=True,
        )

    def _has(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        selection = node.args[0]
        operand, cost = self.visit(selection.args[0], scope, facts)
        if operand.kind not in ("object", "map", "dyn"):
            self.issue(
                selection.offset,
                f"has() tests a field of an object or a map; {name_of(selection.args[0], operand)} is "
                f"{operand.describe()}.",
            )
        elif operand.kind == "object":
            self._field(selection, selection.args[0], operand, selection.value, facts, test_only=True)
        return BOOL, cost + ONE

    def _index(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        container_node, key_node = node.args
        container, cost = self.visit(container_node, scope, facts)
        key, key_cost = self.visit(key_node, scope, facts)
        cost = cost + key_cost + ONE
        where = name_of(container_node, container)
        if container.kind == "object" and key_node.kind == "string":
            literal = string_value(Token("string", key_node.value, key_node.offset))
            if literal is not None:
                return self._field(node, container_node, container, literal, facts, test_only=False), cost
        if container.kind in ("object", "map"):
            if key.kind not in ("string", "dyn"):
                self.issue(key_node.offset, f"{where} has string keys; the index is {key.describe()}.")
            elif container.kind == "map" and key_node.kind == "string":
                return self._field(
                    node, container_node, container, key_node.value.strip("'\""), facts, test_only=False
                ), cost
            return (container.elem or container.extra or DYN) if container.kind == "map" else DYN, cost
        if container.kind == "list":
            if key.kind not in ("int", "uint", "dyn"):
                self.issue(key_node.offset, f"a list is indexed by an int; the index is {key.describe()}.")
            return container.elem or DYN, cost
        if container.kind == "dyn":
            return DYN, cost
        self.issue(
            node.offset,
            f"`[...]` indexes a list or a map; {where} is "
            f"{container.describe()}.{' CEL has no string indexing.' if container.kind == 'string' else ''}",
        )
        return DYN, cost

    # -- literals ---------------------------------------------------------------

    def _list(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        cost = ONE
        elems: list[CelType] = []
        for item in node.args:
            item_type, item_cost = self.visit(item, scope, facts)
            elems.append(item_type)
            cost = cost + item_cost
        return list_of(join_all(elems), const(len(node.args))), cost

    def _map(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        cost = ONE
        keys: list[CelType] = []
        values: list[CelType] = []
        for index, item in enumerate(node.args):
            item_type, item_cost = self.visit(item, scope, facts)
            (keys if index % 2 == 0 else values).append(item_type)
            cost = cost + item_cost
        return map_of(join_all(keys), join_all(values), const(len(keys))), cost

    # -- logic ---------------------------------------------------------------

    def _logic(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        left, right = node.args
        truth = node.kind == "and"
        # CEL's && and || absorb an error on one side when the other side decides, so
        # each side is evaluated knowing what the other one establishes.
        left_type, left_cost = self.visit(left, scope, facts | facts_of(right, truth))
        right_type, right_cost = self.visit(right, scope, facts | facts_of(left, truth))
        operator = "&&" if truth else "||"
        self._want_bool(left, left_type, f"`{operator}`")
        self._want_bool(right, right_type, f"`{operator}`")
        return BOOL, left_cost + right_cost + ONE

    def _cond(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        condition, then, otherwise = node.args
        condition_type, cost = self.visit(condition, scope, facts)
        self._want_bool(condition, condition_type, "the condition of `? :`")
        then_type, then_cost = self.visit(then, scope, facts | facts_of(condition, True))
        else_type, else_cost = self.visit(otherwise, scope, facts | facts_of(condition, False))
        if then_type.kind != else_type.kind and {then_type.kind, else_type.kind} <= _SCALAR_KINDS:
            # CEL types `? :` as one type: cel-expr-python refuses the expression, cel-python
            # gives either branch, so a rule would be a bool on some calls only.
            self.issue(
                node.offset,
                f"the branches of `? :` give {then_type.describe()} and {else_type.describe()}; CEL needs one type "
                "for both. Convert one of them, e.g. string(...) or double(...).",
            )
            return DYN, cost + larger(then_cost, else_cost) + ONE
        return join(then_type, else_type), cost + larger(then_cost, else_cost) + ONE

    def _want_bool(self, node: Node, found: CelType, where: str) -> None:
        if found.kind not in ("bool", "dyn"):
            self.issue(
                start_of(node),
                f"{where} needs a bool, but {name_of(node, found)} is {found.describe()}.{to_bool_hint(node, found)}",
            )

    # -- macros and functions -----------------------------------------------

    def _macro(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        target = node.target
        assert target is not None  # noqa: S101 - the parser always sets it for a macro
        range_type, range_cost = self.visit(target, scope, facts)
        self.maybe_null(target, range_type, facts, f"`.{node.value}()`")
        if range_type.kind == "list":
            item = range_type.elem or DYN
        elif range_type.kind in ("map", "object"):
            item = range_type.key or STRING  # a map's comprehension runs over its keys
        elif range_type.kind == "dyn":
            item = DYN
        else:
            self.issue(
                node.offset,
                f"`.{node.value}()` iterates over a list or a map; {name_of(target, range_type)} is "
                f"{range_type.describe()}.",
            )
            item = DYN
        inner = dict(scope)
        inner[node.names[0]] = item.with_(label=node.names[0])
        count = range_type.size if range_type.size is not None and range_type.kind != "dyn" else unknown_count(target)
        body_cost = ONE
        bodies = list(node.args)
        result: CelType = BOOL
        for body in bodies:
            body_type, cost = self.visit(body, inner, facts)
            body_cost = body_cost + cost
            if node.value != "map":
                self._want_bool(body, body_type, f"the body of `.{node.value}()`")
            else:
                result = list_of(body_type, count)
        if node.value == "filter":
            result = range_type.with_(enum=None, label="") if range_type.kind == "list" else list_of(item, count)
        return result, range_cost + count * body_cost + ONE

    def _call(self, node: Node, scope: dict[str, CelType], facts: Facts) -> tuple[CelType, Cost]:
        name = node.value
        target_type: CelType | None = None
        cost = ONE
        if node.target is not None:
            target_type, target_cost = self.visit(node.target, scope, facts)
            cost = cost + target_cost
        argument_types: list[CelType] = []
        for argument in node.args:
            argument_type, argument_cost = self.visit(argument, scope, facts)
            argument_types.append(argument_type)
            cost = cost + argument_cost
        signature = FUNCTIONS.get(name)
        if signature is None:
            known = ", ".join(sorted(FUNCTIONS))
            self.issue(node.offset, f"`{name}()` is not a function both CEL engines know. Available: {known}.")
            return DYN, cost
        receiver_node = node.target
        if receiver_node is not None and target_type is not None:
            operands: list[tuple[Node, CelType]] = [
                (receiver_node, target_type),
                *zip(node.args, argument_types, strict=True),
            ]
        else:
            operands = list(zip(node.args, argument_types, strict=True))
        return signature(self, node, operands, facts, cost)
