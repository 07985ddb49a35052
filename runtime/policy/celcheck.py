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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from runtime.policy.celast import Node
from runtime.policy.celrefs import Token, string_value
from runtime.policy.celtypes import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    NULL,
    NUMERIC,
    ONE,
    STRING,
    TIMESTAMP,
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

#: Cost of scanning one character (``contains``, ``startsWith``, equality, ``+``) and of
#: matching one with RE2. Native code scans a character about a thousand times faster
#: than either engine runs one CEL operation.
SCAN_PER_CHAR = 0.001
REGEX_PER_CHAR = 0.004

_TYPE_NAMES = {
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
_SIZED = frozenset({"string", "bytes", "list", "map", "object"})
_ORDERED = frozenset({"string", "bytes", "bool", "timestamp", "duration"})


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


@dataclass(frozen=True)
class _Facts:
    """Paths known present / known not null where a sub-expression is evaluated."""

    present: frozenset[str] = frozenset()
    nonnull: frozenset[str] = frozenset()

    def __or__(self, other: _Facts) -> _Facts:
        return _Facts(self.present | other.present, self.nonnull | other.nonnull)


_NO_FACTS = _Facts()


def check(root: Node, variables: Mapping[str, CelType], *, own_schema: bool = True) -> Checked:
    """Type ``root`` against ``variables``; return its type, cost and issues.

    ``own_schema``: the expression belongs to the tool whose schema types ``args`` (a
    business rule), so has() of an undeclared field is a typo; a policy rule checked
    against many tools may test for a field some of them lack."""
    checker = _Checker(variables)
    checker.own_schema = own_schema
    result_type, cost = checker.visit(root, dict(variables), _NO_FACTS)
    return Checked(result_type, cost, checker.issues)


class _Checker:
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

    def visit(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
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
                    f"`-` needs an int or a double; {_name(node.args[0], operand)} is {operand.describe()}.",
                )
                return DYN, cost + ONE
            return operand.with_(enum=None, label=""), cost + ONE
        if kind == "op":
            return self._operator(node, scope, facts)
        if kind == "macro":
            return self._macro(node, scope, facts)
        if kind == "call":
            return self._call(node, scope, facts)
        return DYN, ONE

    def _ident(self, node: Node, scope: Mapping[str, CelType]) -> CelType:
        found = scope.get(node.value)
        if found is not None:
            return found
        if node.value in _TYPE_NAMES:
            return TYPE
        return DYN  # undeclared: reported once, by the name check that runs before this one

    # -- fields ---------------------------------------------------------------

    def _select(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        operand_node = node.args[0]
        operand, cost = self.visit(operand_node, scope, facts)
        return self._field(node, operand_node, operand, node.value, facts, test_only=False), cost + ONE

    def _field(
        self, node: Node, operand_node: Node, operand: CelType, name: str, facts: _Facts, *, test_only: bool
    ) -> CelType:
        path = path_of(node)
        where = _plain(operand_node, operand)
        self._maybe_null(operand_node, operand, facts, f"reading `.{name}`")
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
                    f"`{path}` reads a key of the map {where}, which may not hold it: when it does not, the expression fails at "
                    f"run time (a deny or ask rule then matches; a business rule rejects the call). Guard it: `has({path}) && ...` "
                    f'or `"{name}" in {where} && ...`.',
                    "cel-optional",
                    warning=True,
                )
            return operand.elem or DYN
        if operand.kind == "dyn":
            return DYN
        self.issue(
            node.offset,
            f"`.{name}` reads a field, but `{where}` is {operand.describe()}, which has no fields.{_hint_for_field(operand, name)}",
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
            f"`{label}` is not declared in the schema (declared: {listing}).{hint} The schema allows undeclared keys, so a call may "
            "carry it, but a call without it fails the expression at run time; declare it (and require it) or guard it with has().",
            "cel-unknown-arg",
            warning=True,
        )
        return operand.extra.with_(label=label)

    def _optional(self, node: Node, path: str, operand: CelType) -> None:
        self.issue(
            node.offset,
            f"`{path}` is optional (not in `required`, no `default`) and is read without has(): a call that leaves it out makes "
            "the expression fail at run time, and then a deny or ask rule matches (a business rule rejects the call). "
            f"Guard it: `has({path}) && ...` (or `!has({path}) || ...`), or list it in `required`.",
            "cel-optional",
            warning=True,
        )

    def _has(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        selection = node.args[0]
        operand, cost = self.visit(selection.args[0], scope, facts)
        if operand.kind not in ("object", "map", "dyn"):
            self.issue(
                selection.offset,
                f"has() tests a field of an object or a map; {_name(selection.args[0], operand)} is {operand.describe()}.",
            )
        elif operand.kind == "object":
            self._field(selection, selection.args[0], operand, selection.value, facts, test_only=True)
        return BOOL, cost + ONE

    def _index(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        container_node, key_node = node.args
        container, cost = self.visit(container_node, scope, facts)
        key, key_cost = self.visit(key_node, scope, facts)
        cost = cost + key_cost + ONE
        where = _name(container_node, container)
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
            f"`[...]` indexes a list or a map; {where} is {container.describe()}.{' CEL has no string indexing.' if container.kind == 'string' else ''}",
        )
        return DYN, cost

    # -- literals ---------------------------------------------------------------

    def _list(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        cost = ONE
        elems: list[CelType] = []
        for item in node.args:
            item_type, item_cost = self.visit(item, scope, facts)
            elems.append(item_type)
            cost = cost + item_cost
        return list_of(_join_all(elems), const(len(node.args))), cost

    def _map(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        cost = ONE
        keys: list[CelType] = []
        values: list[CelType] = []
        for index, item in enumerate(node.args):
            item_type, item_cost = self.visit(item, scope, facts)
            (keys if index % 2 == 0 else values).append(item_type)
            cost = cost + item_cost
        return map_of(_join_all(keys), _join_all(values), const(len(keys))), cost

    # -- logic ---------------------------------------------------------------

    def _logic(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
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

    def _cond(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        condition, then, otherwise = node.args
        condition_type, cost = self.visit(condition, scope, facts)
        self._want_bool(condition, condition_type, "the condition of `? :`")
        then_type, then_cost = self.visit(then, scope, facts | facts_of(condition, True))
        else_type, else_cost = self.visit(otherwise, scope, facts | facts_of(condition, False))
        return _join(then_type, else_type), cost + larger(then_cost, else_cost) + ONE

    def _want_bool(self, node: Node, found: CelType, where: str) -> None:
        if found.kind not in ("bool", "dyn"):
            self.issue(
                start_of(node),
                f"{where} needs a bool, but {_name(node, found)} is {found.describe()}.{_to_bool_hint(node, found)}",
            )

    # -- operators -------------------------------------------------------------

    def _operator(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        op = node.value
        left_node, right_node = node.args
        left, left_cost = self.visit(left_node, scope, facts)
        right, right_cost = self.visit(right_node, scope, facts)
        cost = left_cost + right_cost + ONE
        if op in ("==", "!="):
            self._equality(node, left_node, left, right_node, right, facts)
            return BOOL, cost + _compare_cost(left, right)
        if op in ("<", "<=", ">", ">="):
            self._maybe_null(left_node, left, facts, f"`{op}`")
            self._maybe_null(right_node, right, facts, f"`{op}`")
            if not _orderable(left, right):
                self.issue(
                    node.offset,
                    f"`{op}` cannot order {_name(left_node, left)} ({left.describe()}) and {_name(right_node, right)} ({right.describe()}): "
                    f"the expression fails at run time on every call.{_mismatch_hint(left_node, left, right_node, right)}",
                )
            return BOOL, cost + _compare_cost(left, right)
        if op == "in":
            return BOOL, cost + self._membership(node, left_node, left, right_node, right, facts)
        return self._arithmetic(node, op, left_node, left, right_node, right, facts, cost)

    def _equality(
        self, node: Node, left_node: Node, left: CelType, right_node: Node, right: CelType, facts: _Facts
    ) -> None:
        for value_node, value, other in ((left_node, left, right), (right_node, right, left)):
            if other.kind == "null" and value.kind not in ("null", "dyn") and not value.nullable:
                path = path_of(value_node)
                hint = f" To test whether the call gave it, use has({path})." if path else ""
                self.issue(
                    node.offset,
                    f"{_name(value_node, value)} is {value.describe()} and is never null, so this comparison with null is always {'false' if node.value == '==' else 'true'}.{hint}",
                    warning=True,
                )
                return
        if not _comparable(left, right):
            verdict = "false" if node.value == "==" else "true"
            self.issue(
                node.offset,
                f"`{node.value}` compares {_name(left_node, left)} ({left.describe()}) with {_name(right_node, right)} ({right.describe()}): "
                f"values of different types are never equal, so it is always {verdict}.{_mismatch_hint(left_node, left, right_node, right)}",
            )
            return
        for value_node, value, other_node in ((left_node, left, right_node), (right_node, right, left_node)):
            if value.enum and other_node.kind == "string" and value.kind == "string":
                literal = string_value(Token("string", other_node.value, other_node.offset))
                if literal is not None and literal not in value.enum:
                    allowed = ", ".join(repr(v) for v in value.enum)
                    self.issue(
                        other_node.offset,
                        f"{_name(value_node, value)} is one of {allowed} (its enum); {literal!r} is not one of them, so this is always {'false' if node.value == '==' else 'true'}.",
                    )

    def _membership(
        self, node: Node, left_node: Node, left: CelType, right_node: Node, right: CelType, facts: _Facts
    ) -> Cost:
        self._maybe_null(right_node, right, facts, "`in`")
        if right.kind == "list":
            elem = right.elem or DYN
            if not _comparable(left, elem):
                self.issue(
                    node.offset,
                    f"`in` looks for {_name(left_node, left)} ({left.describe()}) in a list of {elem.describe()}: never found, always false.",
                )
            return (right.size or ZERO) * (ONE + _compare_cost(left, elem))
        if right.kind in ("map", "object"):
            if left.kind not in ("string", "dyn"):
                self.issue(
                    node.offset,
                    f"`in` looks for a key in {_name(right_node, right)}, whose keys are strings; {_name(left_node, left)} is {left.describe()}.",
                )
            return ONE
        if right.kind != "dyn":
            self.issue(
                node.offset,
                f"`in` needs a list or a map on its right; {_name(right_node, right)} is {right.describe()}. For text, use `.contains(...)`.",
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
        facts: _Facts,
        cost: Cost,
    ) -> tuple[CelType, Cost]:
        self._maybe_null(left_node, left, facts, f"`{op}`")
        self._maybe_null(right_node, right, facts, f"`{op}`")
        kinds = {left.kind, right.kind}
        if "dyn" in kinds:
            other = right if left.kind == "dyn" else left
            if op == "+" and other.kind in _SIZED:
                return other.with_(size=(left.size or ZERO) + (right.size or ZERO), enum=None, label=""), cost + _scan(
                    other
                )
            return DYN, cost
        if "number" in kinds:
            number_node = left_node if left.kind == "number" else right_node
            path = path_of(number_node) or "the value"
            self.issue(
                node.offset,
                f"`{op}` on {_name(number_node, left if left.kind == 'number' else right)}, a JSON number: a call may send it as an int (`5`) "
                f"or a double (`5.5`), and CEL does not mix the two in arithmetic. Convert it: `double({path})` (and write double literals, `2.0`).",
            )
            return DOUBLE, cost
        if len(kinds) == 1:
            (kind,) = kinds
            if kind in ("int", "uint", "double") and (op != "%" or kind != "double"):
                return left.with_(enum=None, label=""), cost
            if op == "+" and kind in ("string", "bytes", "list"):
                elem = _join(left.elem or DYN, right.elem or DYN) if kind == "list" else None
                size = (left.size or ZERO) + (right.size or ZERO)
                joined = left.with_(size=size, enum=None, label="", elem=elem)
                return joined, cost + (const(SCAN_PER_CHAR) * size if kind != "list" else size)
            if kind == "duration" and op in ("+", "-"):
                return DURATION, cost
        if op in ("+", "-") and kinds == {"timestamp", "duration"}:
            return TIMESTAMP, cost
        if op == "-" and kinds == {"timestamp"}:
            return DURATION, cost
        hint = _mismatch_hint(left_node, left, right_node, right)
        if not hint and kinds <= NUMERIC:
            hint = (
                " CEL does not mix int, uint and double in arithmetic: convert one side with int(), uint() or double()."
            )
        self.issue(
            node.offset,
            f"`{op}` is not defined for {_name(left_node, left)} ({left.describe()}) and {_name(right_node, right)} ({right.describe()}): the expression fails at run time on every call.{hint}",
        )
        return DYN, cost

    def _maybe_null(self, node: Node, value: CelType, facts: _Facts, use: str) -> None:
        if not value.nullable:
            return
        path = path_of(node)
        if path is not None and path in facts.nonnull:
            return
        guard = f"`{path} != null && ...`" if path else "a null check"
        self.issue(
            node.offset,
            f"{_name(node, value)} may be null (the schema allows null), and {use} fails on null at run time. Guard it: {guard}.",
            "cel-nullable",
            warning=True,
        )

    # -- macros and functions -----------------------------------------------

    def _macro(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
        target = node.target
        assert target is not None  # noqa: S101 - the parser always sets it for a macro
        range_type, range_cost = self.visit(target, scope, facts)
        self._maybe_null(target, range_type, facts, f"`.{node.value}()`")
        if range_type.kind == "list":
            item = range_type.elem or DYN
        elif range_type.kind in ("map", "object"):
            item = range_type.key or STRING  # a map's comprehension runs over its keys
        elif range_type.kind == "dyn":
            item = DYN
        else:
            self.issue(
                node.offset,
                f"`.{node.value}()` iterates over a list or a map; {_name(target, range_type)} is {range_type.describe()}.",
            )
            item = DYN
        inner = dict(scope)
        inner[node.names[0]] = item.with_(label=node.names[0])
        count = range_type.size if range_type.size is not None and range_type.kind != "dyn" else _unknown_count(target)
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

    def _call(self, node: Node, scope: dict[str, CelType], facts: _Facts) -> tuple[CelType, Cost]:
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
        signature = _FUNCTIONS.get(name)
        if signature is None:
            known = ", ".join(sorted(_FUNCTIONS))
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


# ---------------------------------------------------------------------------
# functions: each checks its operands and returns (result type, cost)


def _fn_size(
    checker: _Checker, node: Node, operands: list[tuple[Node, CelType]], facts: _Facts, cost: Cost
) -> tuple[CelType, Cost]:
    if not _arity(checker, node, operands, 1):
        return INT, cost
    operand_node, operand = operands[0]
    checker._maybe_null(operand_node, operand, facts, "size()")
    if operand.kind not in ("string", "bytes", "list", "map", "object", "dyn"):
        checker.issue(
            node.offset,
            f"size() takes a string, bytes, a list or a map; {_name(operand_node, operand)} is {operand.describe()}.",
        )
    return INT, cost


_Signature = Callable[["_Checker", Node, list[tuple[Node, CelType]], "_Facts", Cost], tuple[CelType, Cost]]


def _string_test(name: str, per_char: float) -> _Signature:
    def check_string_test(
        checker: _Checker, node: Node, operands: list[tuple[Node, CelType]], facts: _Facts, cost: Cost
    ) -> tuple[CelType, Cost]:
        if not _arity(checker, node, operands, 2, method=True):
            return BOOL, cost
        (text_node, text), (part_node, part) = operands
        checker._maybe_null(text_node, text, facts, f"`.{name}()`")
        for value_node, value in operands:
            if value.kind not in ("string", "dyn"):
                checker.issue(
                    value_node.offset,
                    f"`.{name}()` works on strings; {_name(value_node, value)} is {value.describe()}.{_hint_for_field(value, name)}",
                )
        # RE2 (both engines) matches in time linear in the text, whatever the pattern.
        scanned = const(per_char) * (text.size if text.size is not None else _unknown_size(text_node))
        return BOOL, cost + scanned

    return check_string_test


def _conversion(result: CelType, accepts: frozenset[str]) -> _Signature:
    def check_conversion(
        checker: _Checker, node: Node, operands: list[tuple[Node, CelType]], facts: _Facts, cost: Cost
    ) -> tuple[CelType, Cost]:
        if not _arity(checker, node, operands, 1):
            return result, cost
        operand_node, operand = operands[0]
        checker._maybe_null(operand_node, operand, facts, f"{node.value}()")
        if operand.kind not in accepts and operand.kind != "dyn":
            checker.issue(
                node.offset, f"{node.value}() does not take {operand.describe()} ({_name(operand_node, operand)})."
            )
        size = operand.size if result.kind in ("string", "bytes") and operand.kind in ("string", "bytes") else const(24)
        return (result.with_(size=size) if result.kind in ("string", "bytes") else result), cost + const(
            SCAN_PER_CHAR
        ) * (operand.size or ZERO)

    return check_conversion


def _fn_dyn(
    checker: _Checker, node: Node, operands: list[tuple[Node, CelType]], facts: _Facts, cost: Cost
) -> tuple[CelType, Cost]:
    _arity(checker, node, operands, 1)
    return (operands[0][1] if node.value == "dyn" and operands else TYPE if node.value == "type" else DYN), cost


_SCALARS = frozenset({"int", "uint", "double", "number", "string", "bool", "bytes", "timestamp", "duration"})
_FUNCTIONS: dict[str, _Signature] = {
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
    checker: _Checker, node: Node, operands: list[tuple[Node, CelType]], count: int, *, method: bool = False
) -> bool:
    if len(operands) == count and (not method or node.target is not None or node.value == "matches"):
        return True
    form = f"text.{node.value}(x)" if method else f"{node.value}(x)"
    checker.issue(
        node.offset,
        f"`{node.value}` takes {count - 1 if method else count} argument{'s' if count - method != 1 else ''}: write `{form}`.",
    )
    return False


# ---------------------------------------------------------------------------
# facts, paths and type relations


def start_of(node: Node) -> int:
    """Where the source of ``node`` starts (a selection's node sits at its field name)."""
    while True:
        if node.kind in ("select", "index", "and", "or", "cond") or (node.kind == "op"):
            node = node.args[0]
        elif node.kind in ("call", "macro") and node.target is not None:
            node = node.target
        else:
            return node.offset


def path_of(node: Node) -> str | None:
    """``args.a.b`` for a chain of selections (or string-literal indexes) from a name."""
    parts: list[str] = []
    while node.kind in ("select", "index"):
        if node.kind == "select":
            parts.append(node.value)
        else:
            key = node.args[1]
            literal = string_value(Token("string", key.value, key.offset)) if key.kind == "string" else None
            if literal is None:
                return None
            parts.append(literal)
        node = node.args[0]
    if node.kind != "ident":
        return None
    return ".".join([node.value, *reversed(parts)])


def facts_of(node: Node, truth: bool) -> _Facts:
    """What is known when ``node`` evaluated to ``truth`` (has(), ``in``, null tests)."""
    if node.kind == "not":
        return facts_of(node.args[0], not truth)
    if node.kind == "has" and truth:
        path = path_of(node.args[0])
        return _Facts(frozenset(_prefixes(path))) if path else _NO_FACTS
    if node.kind in ("and", "or"):
        if (node.kind == "and") == truth:
            return facts_of(node.args[0], truth) | facts_of(node.args[1], truth)
        return _NO_FACTS
    if node.kind == "op" and node.value == "in" and truth and node.args[0].kind == "string":
        container = path_of(node.args[1])
        key = string_value(Token("string", node.args[0].value, node.args[0].offset))
        if container is not None and key is not None:
            return _Facts(frozenset(_prefixes(f"{container}.{key}")))
    if node.kind == "op" and node.value in ("==", "!="):
        left, right = node.args
        other = left if right.kind == "null" else right
        nullish = left.kind == "null" or right.kind == "null"
        if nullish and (truth == (node.value == "!=")):
            path = path_of(other)
            if path:
                return _Facts(frozenset(_prefixes(path)), frozenset({path}))
    return _NO_FACTS


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts) + 1)]


def _comparable(a: CelType, b: CelType) -> bool:
    if "dyn" in (a.kind, b.kind):
        return True
    if a.kind in NUMERIC and b.kind in NUMERIC:
        return True
    if "null" in (a.kind, b.kind):
        return True  # reported apart: a never-null value compared with null
    if a.kind in ("object", "map") and b.kind in ("object", "map"):
        return True
    if a.kind != b.kind:
        return False
    if a.kind == "list":
        return _comparable(a.elem or DYN, b.elem or DYN)
    return True


def _orderable(a: CelType, b: CelType) -> bool:
    if "dyn" in (a.kind, b.kind):
        return a.kind in (*NUMERIC, *_ORDERED, "dyn") and b.kind in (*NUMERIC, *_ORDERED, "dyn")
    if a.kind in NUMERIC and b.kind in NUMERIC:
        return True
    return a.kind == b.kind and a.kind in _ORDERED


def _join(a: CelType, b: CelType) -> CelType:
    if a.kind == b.kind and a.kind not in ("list", "map", "object"):
        return a.with_(
            enum=None,
            label="",
            size=larger(a.size, b.size) if a.size is not None and b.size is not None else a.size,
            nullable=a.nullable or b.nullable,
        )
    if a.kind == "null":
        return b.with_(nullable=True, label="")
    if b.kind == "null":
        return a.with_(nullable=True, label="")
    if a.kind == b.kind == "list":
        return list_of(_join(a.elem or DYN, b.elem or DYN), larger(a.size or ZERO, b.size or ZERO))
    if a.kind in NUMERIC and b.kind in NUMERIC:
        return CelType("number")
    return DYN


def _join_all(types: list[CelType]) -> CelType:
    if not types:
        return DYN
    joined = types[0]
    for more in types[1:]:
        joined = _join(joined, more)
    return joined


def _compare_cost(a: CelType, b: CelType) -> Cost:
    if a.kind in ("string", "bytes") and b.kind in ("string", "bytes"):
        smaller = a.size if (b.size is None or (a.size is not None and a.size.op == "c")) else b.size
        return const(SCAN_PER_CHAR) * (smaller or ZERO)
    if a.kind in ("list", "map") and b.kind in ("list", "map"):
        return a.size or ZERO
    return ZERO


def _scan(value: CelType) -> Cost:
    return const(SCAN_PER_CHAR) * (value.size or ZERO) if value.kind in ("string", "bytes") else (value.size or ZERO)


def _unknown_count(node: Node) -> Cost:
    """How many items a value of no declared type may hold: as many as fit in the arguments."""
    from runtime.policy.celtypes import MAX_ARGUMENT_BYTES, size_var

    return size_var("(untyped values)") if MAX_ARGUMENT_BYTES else ONE


def _unknown_size(node: Node) -> Cost:
    return _unknown_count(node)


def _name(node: Node, value: CelType) -> str:
    """How a message names the operand ``node``: its path or its literal, in backquotes."""
    plain = _plain(node, value)
    return f"`{plain}`" if plain != "the value" else plain


def _plain(node: Node, value: CelType) -> str:
    path = path_of(node)
    if path:
        return path
    if value.label:
        return value.label
    if node.kind in ("string", "int", "uint", "double", "bool", "null", "bytes"):
        return node.value
    return "the value"


def _mismatch_hint(left_node: Node, left: CelType, right_node: Node, right: CelType) -> str:
    kinds = {left.kind, right.kind}
    if kinds == {"string"} or not kinds & {"string"}:
        if kinds & NUMERIC and kinds & {"bool"}:
            return " Compare the number with a number, or the bool with true/false."
        return ""
    other_node, other = (right_node, right) if left.kind == "string" else (left_node, left)
    string_node = left_node if left.kind == "string" else right_node
    if other.kind in NUMERIC:
        literal = (
            string_value(Token("string", string_node.value, string_node.offset))
            if string_node.kind == "string"
            else None
        )
        if literal is not None and _is_number(literal):
            return f" Write the number without quotes: {literal.strip()}."
        path = path_of(string_node)
        if path is None:
            return " Convert one side to the other's type: int(...) or string(...)."
        return f" Convert one side: `int({path})`, or `string(...)` of the number."
    if other.kind == "bool" and string_node.kind == "string":
        return " Write true or false without quotes."
    return ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _hint_for_field(value: CelType, name: str) -> str:
    if value.kind == "list" and name in ("contains", "includes"):
        return " For a list, use `x in list` or `list.exists(e, e == x)`."
    if value.kind in NUMERIC and name in ("contains", "startsWith", "endsWith", "matches"):
        return " Convert it first: string(...)."
    return ""


def _to_bool_hint(node: Node, found: CelType) -> str:
    if found.kind in ("string", "list", "map", "bytes"):
        return " Test it instead, e.g. `size(...) > 0`."
    if found.kind in NUMERIC:
        return " Compare it instead, e.g. `... > 0`."
    return ""
