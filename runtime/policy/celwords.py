"""How the CEL checker's messages name operands and suggest fixes."""

from __future__ import annotations

from runtime.policy.celast import Node
from runtime.policy.celfacts import path_of
from runtime.policy.celrefs import Token, string_value
from runtime.policy.celtypes import NUMERIC, CelType


def name_of(node: Node, value: CelType) -> str:
    """How a message names the operand ``node``: its path or its literal, in backquotes."""
    plain = plain_name(node, value)
    return f"`{plain}`" if plain != "the value" else plain


def plain_name(node: Node, value: CelType) -> str:
    path = path_of(node)
    if path:
        return path
    if value.label:
        return value.label
    if node.kind in ("string", "int", "uint", "double", "bool", "null", "bytes"):
        return node.value
    return "the value"


def mismatch_hint(left_node: Node, left: CelType, right_node: Node, right: CelType) -> str:
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
        if literal is not None and is_number(literal):
            return f" Write the number without quotes: {literal.strip()}."
        path = path_of(string_node)
        if path is None:
            return " Convert one side to the other's type: int(...) or string(...)."
        return f" Convert one side: `int({path})`, or `string(...)` of the number."
    if other.kind == "bool" and string_node.kind == "string":
        return " Write true or false without quotes."
    return ""


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def hint_for_field(value: CelType, name: str) -> str:
    if value.kind == "list" and name in ("contains", "includes"):
        return " For a list, use `x in list` or `list.exists(e, e == x)`."
    if value.kind in NUMERIC and name in ("contains", "startsWith", "endsWith", "matches"):
        return " Convert it first: string(...)."
    return ""


def to_bool_hint(node: Node, found: CelType) -> str:
    if found.kind in ("string", "list", "map", "bytes"):
        return " Test it instead, e.g. `size(...) > 0`."
    if found.kind in NUMERIC:
        return " Compare it instead, e.g. `... > 0`."
    return ""
