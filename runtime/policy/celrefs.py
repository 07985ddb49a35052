"""Static facts about a CEL expression, read from its tokens.

Engine-independent, so that lint gives the same answers with either CEL engine:

- the root identifiers it reads (``args``, ``session``...), to reject undeclared names;
- the ``args`` fields it reads (``args.path``, ``args["path"]``, ``"path" in args``,
  ``args.filter.limit``), to check them against the tool's input schema;
- the depth of nested comprehension macros (``all``, ``exists``, ``map``...), which
  bounds evaluation cost since no CEL library here enforces a cost limit;
- the literal patterns passed to ``matches``, to check them as RE2 at lint time.

Only positions and names are extracted; the engines do the real parsing.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_KEYWORDS = frozenset(
    {
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    }
)
_TWO_CHAR = frozenset({"==", "!=", "<=", ">=", "&&", "||"})
_ONE_CHAR = frozenset("<>+-*/%!?:.,()[]{}")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "ident", "string", "number", "punct"
    text: str
    offset: int


@dataclass(frozen=True, slots=True)
class Reference:
    """A name read by the expression, at ``offset`` (0-based) in its source."""

    name: str
    offset: int


@dataclass(frozen=True, slots=True)
class ArgsPath:
    """A chain of fields read under ``args``, e.g. ``("filter", "limit")``."""

    fields: tuple[str, ...]
    offset: int  # where the first field name starts


@dataclass(frozen=True, slots=True)
class ExpressionFacts:
    roots: tuple[Reference, ...]
    args_paths: tuple[ArgsPath, ...]
    macro_depth: int
    nesting_depth: int  # deepest (), [] or {} nesting
    regex_literals: tuple[Reference, ...]


class LexError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def tokenize(source: str) -> list[Token]:
    """Split CEL source into tokens (comments and whitespace dropped)."""
    tokens: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch.isspace():
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
        elif ch.isalpha() or ch == "_":
            start = i
            while i < n and (source[i].isalnum() or source[i] == "_"):
                i += 1
            word = source[start:i]
            if i < n and source[i] in "\"'" and word.lower() in ("r", "b", "rb", "br"):
                end = _string_end(source, i)
                tokens.append(Token("string", source[start:end], start))
                i = end
            else:
                tokens.append(Token("ident", word, start))
        elif ch in "\"'":
            end = _string_end(source, i)
            tokens.append(Token("string", source[i:end], i))
            i = end
        elif ch.isdigit() or (ch == "." and i + 1 < n and source[i + 1].isdigit()):
            start = i
            while i < n and (source[i].isalnum() or source[i] in "._" or (source[i] in "+-" and source[i - 1] in "eE")):
                i += 1
            tokens.append(Token("number", source[start:i], start))
        elif source[i : i + 2] in _TWO_CHAR:
            tokens.append(Token("punct", source[i : i + 2], i))
            i += 2
        elif ch in _ONE_CHAR:
            tokens.append(Token("punct", ch, i))
            i += 1
        else:
            raise LexError(f"unexpected character {ch!r}", i)
    return tokens


def _string_end(source: str, i: int) -> int:
    quote = source[i] * 3 if source.startswith(source[i] * 3, i) else source[i]
    j = i + len(quote)
    while j < len(source):
        if source[j] == "\\":
            j += 2
            continue
        if source.startswith(quote, j):
            return j + len(quote)
        if len(quote) == 1 and source[j] == "\n":
            break
        j += 1
    raise LexError("unterminated string literal", i)


def string_value(token: Token) -> str | None:
    """The value of a string literal token, or None if it cannot be decoded simply."""
    text = token.text
    if text[:1].lower() == "b" or text[:2].lower() in ("rb", "br"):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


@functools.lru_cache(maxsize=4096)  # one compile reads an expression several times; results are frozen
def analyse(source: str) -> ExpressionFacts:
    """Extract the facts listed in the module docstring. Raises :class:`LexError`."""
    tokens = tokenize(source)
    scopes = _macro_scopes(tokens)
    roots: list[Reference] = []
    args_paths: list[ArgsPath] = []
    regexes: list[Reference] = []
    for index, token in enumerate(tokens):
        before = tokens[index - 1] if index else None
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        if token.kind == "ident":
            # `a.b` selects a field; a `.` that follows no operand (`.args`, `x || .args`)
            # is CEL's root-scope prefix, and the name after it is a variable.
            is_member = before is not None and before.text == "." and index >= 2 and _is_operand(tokens[index - 2])
            is_call = after is not None and after.text == "("
            if (
                not is_member
                and not is_call
                and token.text not in _KEYWORDS
                and not _is_bound(token.text, index, scopes)
            ):
                roots.append(Reference(token.text, token.offset))
                if token.text == "args":
                    path = _args_path(tokens, index + 1)
                    if path:
                        args_paths.append(path)
            if (
                is_member
                and token.text == "matches"
                and is_call
                and index + 2 < len(tokens)
                and tokens[index + 2].kind == "string"
            ):
                regexes.append(Reference(tokens[index + 2].text, tokens[index + 2].offset))
        elif token.kind == "string" and after is not None and after.text == "in":
            target = tokens[index + 2] if index + 2 < len(tokens) else None
            field = string_value(token)
            follows = tokens[index + 3] if index + 3 < len(tokens) else None
            if (
                target is not None
                and target.text == "args"
                and field is not None
                and (follows is None or follows.text not in (".", "["))
            ):
                args_paths.append(ArgsPath((field,), token.offset))
    return ExpressionFacts(
        tuple(roots), tuple(args_paths), _macro_depth(tokens), _nesting_depth(tokens), tuple(regexes)
    )


def _is_operand(token: Token) -> bool:
    """Whether ``token`` can end an operand (so a ``.`` after it selects a field)."""
    return token.kind in ("ident", "string", "number") or token.text in (")", "]", "}")


def _args_path(tokens: list[Token], start: int) -> ArgsPath | None:
    fields: list[str] = []
    offset = -1
    i = start
    while i + 1 < len(tokens):
        if tokens[i].text == "." and tokens[i + 1].kind == "ident":
            # `args.x.size()` style member calls end the field chain.
            if i + 2 < len(tokens) and tokens[i + 2].text == "(":
                break
            fields.append(tokens[i + 1].text)
            offset = tokens[i + 1].offset if offset < 0 else offset
            i += 2
        elif (
            tokens[i].text == "["
            and tokens[i + 1].kind == "string"
            and i + 2 < len(tokens)
            and tokens[i + 2].text == "]"
        ):
            value = string_value(tokens[i + 1])
            if value is None:
                break
            fields.append(value)
            offset = tokens[i + 1].offset if offset < 0 else offset
            i += 3
        else:
            break
    return ArgsPath(tuple(fields), offset) if fields else None


def _macro_scopes(tokens: list[Token]) -> list[tuple[int, int, frozenset[str]]]:
    """(first, last, names): token ranges where a comprehension macro binds ``names``,
    e.g. ``x`` inside ``list.all(x, ...)`` (and ``k, v`` in two-variable forms)."""
    scopes = []
    for i in range(len(tokens) - 3):
        if tokens[i].text == "." and tokens[i + 1].text in _MACROS and tokens[i + 2].text == "(":
            names: set[str] = set()
            j = i + 3
            while j + 1 < len(tokens) and tokens[j].kind == "ident" and tokens[j + 1].text == ",":
                names.add(tokens[j].text)
                j += 2
            if names:
                scopes.append((i + 3, _closing(tokens, i + 2), frozenset(names)))
    return scopes


def _closing(tokens: list[Token], open_index: int) -> int:
    depth = 0
    for k in range(open_index, len(tokens)):
        if tokens[k].text == "(":
            depth += 1
        elif tokens[k].text == ")":
            depth -= 1
            if depth == 0:
                return k
    return len(tokens)


def _is_bound(name: str, index: int, scopes: list[tuple[int, int, frozenset[str]]]) -> bool:
    return any(first <= index <= last and name in names for first, last, names in scopes)


def _macro_depth(tokens: list[Token]) -> int:
    depth = deepest = 0
    stack: list[bool] = []  # one entry per open "(": whether it opened a macro
    for i, token in enumerate(tokens):
        if token.text == "(":
            is_macro = i >= 2 and tokens[i - 1].text in _MACROS and tokens[i - 2].text == "."
            stack.append(is_macro)
            if is_macro:
                depth += 1
                deepest = max(deepest, depth)
        elif token.text == ")" and stack:
            if stack.pop():
                depth -= 1
    return deepest


def _nesting_depth(tokens: list[Token]) -> int:
    depth = deepest = 0
    for token in tokens:
        if token.text in ("(", "[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token.text in (")", "]", "}"):
            depth = max(0, depth - 1)
    return deepest


def offset_to_line_col(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``source``."""
    line = source.count("\n", 0, offset) + 1
    col = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, col
