"""Facts, paths and type relations for the CEL checker (:mod:`runtime.policy.celcheck`).

What a sub-expression may assume where it is evaluated (fields known present or not
null, from ``has()``, ``in`` and null tests on the other side of ``&&``/``||`` or in
the condition of ``? :``), how a chain of selections is named, which types compare,
order and join, and what comparing or scanning a value costs.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.policy.celast import Node
from runtime.policy.celbudget import BUILD_CHARS_PER_UNIT, REGEX_CHARS_PER_UNIT, SCAN_CHARS_PER_UNIT
from runtime.policy.celrefs import Token, string_value
from runtime.policy.celtypes import (
    DYN,
    NUMERIC,
    ONE,
    ZERO,
    CelType,
    Cost,
    const,
    larger,
    list_of,
)

#: Cost of scanning one character (``contains``, ``startsWith``, equality), of matching
#: one with RE2, and of building one (``+``). Native code scans a character about a
#: thousand times faster than either engine runs one CEL operation; a built character is
#: also held until the evaluation ends. The run-time counters charge the same
#: (:mod:`runtime.policy.celbudget`).
SCAN_PER_CHAR = 1 / SCAN_CHARS_PER_UNIT
REGEX_PER_CHAR = 1 / REGEX_CHARS_PER_UNIT
BUILD_PER_CHAR = 1 / BUILD_CHARS_PER_UNIT
ORDERED = frozenset({"string", "bytes", "bool", "timestamp", "duration"})


@dataclass(frozen=True)
class Facts:
    """Paths known present / known not null where a sub-expression is evaluated."""

    present: frozenset[str] = frozenset()
    nonnull: frozenset[str] = frozenset()

    def __or__(self, other: Facts) -> Facts:
        return Facts(self.present | other.present, self.nonnull | other.nonnull)


NO_FACTS = Facts()


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


def facts_of(node: Node, truth: bool) -> Facts:
    """What is known when ``node`` evaluated to ``truth`` (has(), ``in``, null tests)."""
    if node.kind == "not":
        return facts_of(node.args[0], not truth)
    if node.kind == "has" and truth:
        path = path_of(node.args[0])
        return Facts(frozenset(prefixes(path))) if path else NO_FACTS
    if node.kind in ("and", "or"):
        if (node.kind == "and") == truth:
            return facts_of(node.args[0], truth) | facts_of(node.args[1], truth)
        return NO_FACTS
    if node.kind == "op" and node.value == "in" and truth and node.args[0].kind == "string":
        container = path_of(node.args[1])
        key = string_value(Token("string", node.args[0].value, node.args[0].offset))
        if container is not None and key is not None:
            return Facts(frozenset(prefixes(f"{container}.{key}")))
    if node.kind == "op" and node.value in ("==", "!="):
        left, right = node.args
        other = left if right.kind == "null" else right
        nullish = left.kind == "null" or right.kind == "null"
        if nullish and (truth == (node.value == "!=")):
            path = path_of(other)
            if path:
                return Facts(frozenset(prefixes(path)), frozenset({path}))
    return NO_FACTS


def prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts) + 1)]


def comparable(a: CelType, b: CelType) -> bool:
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
        return comparable(a.elem or DYN, b.elem or DYN)
    return True


def orderable(a: CelType, b: CelType) -> bool:
    if "dyn" in (a.kind, b.kind):
        return a.kind in (*NUMERIC, *ORDERED, "dyn") and b.kind in (*NUMERIC, *ORDERED, "dyn")
    if a.kind in NUMERIC and b.kind in NUMERIC:
        return True
    return a.kind == b.kind and a.kind in ORDERED


def join(a: CelType, b: CelType) -> CelType:
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
        return list_of(join(a.elem or DYN, b.elem or DYN), larger(a.size or ZERO, b.size or ZERO))
    if a.kind in NUMERIC and b.kind in NUMERIC:
        return CelType("number")
    return DYN


def join_all(types: list[CelType]) -> CelType:
    if not types:
        return DYN
    joined = types[0]
    for more in types[1:]:
        joined = join(joined, more)
    return joined


def compare_cost(a: CelType, b: CelType) -> Cost:
    if a.kind in ("string", "bytes") and b.kind in ("string", "bytes"):
        smaller = a.size if (b.size is None or (a.size is not None and a.size.op == "c")) else b.size
        return const(SCAN_PER_CHAR) * (smaller or ZERO)
    if a.kind in ("list", "map") and b.kind in ("list", "map"):
        return a.size or ZERO
    return ZERO


def scan(value: CelType) -> Cost:
    return const(SCAN_PER_CHAR) * (value.size or ZERO) if value.kind in ("string", "bytes") else (value.size or ZERO)


def unknown_count(node: Node) -> Cost:
    """How many items a value of no declared type may hold: as many as fit in the arguments."""
    from runtime.policy.celtypes import MAX_ARGUMENT_BYTES, size_var

    return size_var("(untyped values)") if MAX_ARGUMENT_BYTES else ONE


def unknown_size(node: Node) -> Cost:
    return unknown_count(node)
