"""A CEL parser for lint: expression source -> a small syntax tree with offsets.

The engines parse for themselves; this tree exists so that one checker
(:mod:`runtime.policy.celcheck`) can type expressions against tool schemas and
bound their cost whichever engine runs. It follows CEL's grammar
(https://github.com/google/cel-spec/blob/master/doc/langdef.md#syntax) over the
tokens of :mod:`runtime.policy.celrefs`; what it does not know (message
construction, the optional ``.?`` syntax) raises :class:`ParseError`, and the
checker then says it cannot type the expression instead of guessing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from runtime.policy.celrefs import LexError, Token, tokenize

#: Comprehension macros (method form) and the number of arguments each takes.
MACROS = frozenset(
    {"all", "exists", "exists_one", "map", "filter"}
)  # each (variable, body): the forms both engines read
_RELATIONS = frozenset({"<", "<=", ">", ">=", "==", "!=", "in"})
_MAX_DEPTH = 64  # the loader limits bracket nesting far below this; recursion stays bounded


class ParseError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True, slots=True)
class Node:
    """One syntax node.

    ``kind`` is one of: ``int uint double string bytes bool null`` (literals, ``value``
    holds the token text), ``ident`` (``value`` the name), ``select`` (``value`` the
    field; ``args[0]`` the operand), ``has`` (``args[0]`` a select), ``index``, ``call``
    (``value`` the function; ``target`` the receiver of a method call), ``list``, ``map``
    (``args`` alternate keys and values), ``cond`` (``c ? a : b``), ``not``, ``neg``,
    ``and``, ``or``, ``op`` (``value`` the operator), ``macro`` (``value`` the macro,
    ``target`` the range, ``names`` the bound variables, ``args`` the bodies).
    """

    kind: str
    offset: int
    value: str = ""
    args: tuple[Node, ...] = ()
    target: Node | None = None
    names: tuple[str, ...] = ()


@functools.lru_cache(maxsize=4096)  # one compile reads an expression several times; results are frozen
def parse(source: str) -> Node:
    """Parse ``source``. Raises :class:`ParseError` (syntax this parser does not read)."""
    try:
        tokens = tokenize(source)
    except LexError as err:
        raise ParseError(str(err), err.offset) from None
    if not tokens:
        raise ParseError("empty expression", 0)
    parser = _Parser(tokens, len(source))
    node = parser.expression(0)
    if parser.at < len(tokens):
        token = tokens[parser.at]
        raise ParseError(f"unexpected `{token.text}`", token.offset)
    return node


class _Parser:
    def __init__(self, tokens: list[Token], end: int) -> None:
        self.tokens = tokens
        self.at = 0
        self.end = end

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.at + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def text(self, ahead: int = 0) -> str | None:
        token = self.peek(ahead)
        return token.text if token is not None else None

    def take(self, text: str | None = None) -> Token:
        token = self.peek()
        if token is None:
            raise ParseError("the expression ends too early", self.end)
        if text is not None and token.text != text:
            raise ParseError(f"expected `{text}`, found `{token.text}`", token.offset)
        self.at += 1
        return token

    def expression(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            token = self.peek()
            raise ParseError("expression nests too deeply", token.offset if token is not None else self.end)
        condition = self._or(depth)
        if self.text() == "?":
            self.take("?")
            then = self._or(depth + 1)
            self.take(":")
            otherwise = self.expression(depth + 1)
            return Node("cond", condition.offset, args=(condition, then, otherwise))
        return condition

    def _or(self, depth: int) -> Node:
        left = self._and(depth)
        while self.text() == "||":
            op = self.take()
            left = Node("or", op.offset, args=(left, self._and(depth)))
        return left

    def _and(self, depth: int) -> Node:
        left = self._relation(depth)
        while self.text() == "&&":
            op = self.take()
            left = Node("and", op.offset, args=(left, self._relation(depth)))
        return left

    def _relation(self, depth: int) -> Node:
        left = self._addition(depth)
        while self.text() in _RELATIONS and self.peek().kind in ("punct", "ident"):  # type: ignore[union-attr]
            op = self.take()
            left = Node("op", op.offset, op.text, (left, self._addition(depth)))
        return left

    def _addition(self, depth: int) -> Node:
        left = self._multiplication(depth)
        while self.text() in ("+", "-"):
            op = self.take()
            left = Node("op", op.offset, op.text, (left, self._multiplication(depth)))
        return left

    def _multiplication(self, depth: int) -> Node:
        left = self._unary(depth)
        while self.text() in ("*", "/", "%"):
            op = self.take()
            left = Node("op", op.offset, op.text, (left, self._unary(depth)))
        return left

    def _unary(self, depth: int) -> Node:
        if self.text() == "!":
            op = self.take()
            return Node("not", op.offset, args=(self._unary(depth + 1),))
        if self.text() == "-":
            op = self.take()
            following = self.peek()
            if following is not None and following.kind == "number" and following.offset == op.offset + 1:
                # -9223372036854775808 is a literal, not the negation of one that overflows
                node = self._member(depth)
                if node.kind in ("int", "double") and node.offset == following.offset:
                    return Node(node.kind, op.offset, "-" + node.value)
                return Node("neg", op.offset, args=(node,))
            return Node("neg", op.offset, args=(self._unary(depth + 1),))
        return self._member(depth)

    def _member(self, depth: int) -> Node:
        node = self._primary(depth)
        while True:
            text = self.text()
            if text == ".":
                self.take(".")
                name = self.take()
                if name.kind != "ident":
                    raise ParseError(f"expected a field or method name after `.`, found `{name.text}`", name.offset)
                if self.text() == "(":
                    arguments = self._arguments(depth)
                    node = self._method(node, name, arguments)
                else:
                    node = Node("select", name.offset, name.text, (node,))
            elif text == "[":
                bracket = self.take("[")
                key = self.expression(depth + 1)
                self.take("]")
                node = Node("index", bracket.offset, args=(node, key))
            elif text == "{":
                raise ParseError("message construction is not supported here", self.peek().offset)  # type: ignore[union-attr]
            else:
                return node

    def _method(self, target: Node, name: Token, arguments: tuple[Node, ...]) -> Node:
        if name.text in MACROS and len(arguments) == 2 and arguments[0].kind == "ident":
            return Node("macro", name.offset, name.text, arguments[1:], target=target, names=(arguments[0].value,))
        # Other forms (map with a filter, two-variable comprehensions) are not read by
        # both engines: as calls, the checker reports them as unknown functions.
        return Node("call", name.offset, name.text, arguments, target=target)

    def _arguments(self, depth: int) -> tuple[Node, ...]:
        self.take("(")
        items: list[Node] = []
        while self.text() != ")":
            items.append(self.expression(depth + 1))
            if self.text() == ",":
                self.take(",")
            elif self.text() != ")":
                token = self.peek()
                raise ParseError(
                    f"expected `,` or `)`, found `{token.text if token else 'the end'}`",
                    token.offset if token else self.end,
                )
        self.take(")")
        return tuple(items)

    def _primary(self, depth: int) -> Node:
        token = self.take()
        kind, text = token.kind, token.text
        if kind == "number":
            return _number(token)
        if kind == "string":
            return Node(
                "bytes" if text[:1] in "bB" or text[:2].lower() in ("rb", "br") else "string", token.offset, text
            )
        if text == "(":
            inner = self.expression(depth + 1)
            self.take(")")
            return inner
        if text == "[":
            items: list[Node] = []
            while self.text() != "]":
                items.append(self.expression(depth + 1))
                if self.text() == ",":
                    self.take(",")
                elif self.text() != "]":
                    raise ParseError("expected `,` or `]` in a list", self.peek().offset if self.peek() else self.end)  # type: ignore[union-attr]
            self.take("]")
            return Node("list", token.offset, args=tuple(items))
        if text == "{":
            entries: list[Node] = []
            while self.text() != "}":
                entries.append(self.expression(depth + 1))
                self.take(":")
                entries.append(self.expression(depth + 1))
                if self.text() == ",":
                    self.take(",")
                elif self.text() != "}":
                    raise ParseError("expected `,` or `}` in a map", self.peek().offset if self.peek() else self.end)  # type: ignore[union-attr]
            self.take("}")
            return Node("map", token.offset, args=tuple(entries))
        if text == ".":
            name = self.take()  # `.name`: a name in the root scope
            if name.kind != "ident":
                raise ParseError("expected a name after a leading `.`", name.offset)
            token, kind, text = name, "ident", name.text
        if kind == "ident":
            if text in ("true", "false"):
                return Node("bool", token.offset, text)
            if text == "null":
                return Node("null", token.offset, text)
            if self.text() == "(":
                arguments = self._arguments(depth)
                if text == "has":
                    if len(arguments) != 1 or arguments[0].kind != "select":
                        raise ParseError("has() takes one field selection, e.g. has(args.path)", token.offset)
                    return Node("has", token.offset, args=arguments)
                return Node("call", token.offset, text, arguments)
            return Node("ident", token.offset, text)
        raise ParseError(f"unexpected `{text}`", token.offset)


def _number(token: Token) -> Node:
    text = token.text
    lowered = text.lower()
    if lowered.endswith("u"):
        return Node("uint", token.offset, text)
    if lowered.startswith("0x"):
        return Node("int", token.offset, text)
    if any(ch in lowered for ch in ".e"):
        return Node("double", token.offset, text)
    return Node("int", token.offset, text)
