"""Expansions: what bash may make of a word before the command runs.

Glob, brace, extglob and tilde shapes (whether a word is known before the line runs),
and arithmetic: which expressions hold only numbers and operators, and the problem
reported for those that read variables.
"""

from __future__ import annotations

import re

from runtime.policy.shell.words import ASSIGNMENT, GLOB, LITERAL, RUNTIME, Word, short

_GLOB_CHAR = re.compile(r"[*?\[]")
# Numbers and operators only; possessive quantifiers keep a failed match linear.
PURE_ARITH = re.compile(r"(?:\s++|0[xX][0-9a-fA-F]++|[0-9]++#[0-9A-Za-z@_]++|[0-9]++|[-+*/%<>=!&|^~?:(),])*+")
SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[(?:[0-9]+|@|\*)\])?")
SAFE_NUMBER = re.compile(r"[-+]?[0-9]+|\$[?#$!]|\$\{[?#$!]\}|\$\{#[A-Za-z_][A-Za-z0-9_]*\}")
TEST_ARITH_OPERATORS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def has_glob(word: Word) -> bool:
    """Unquoted ``*``, ``?`` or ``[...]``: the word depends on the files present."""
    value, plain = word.value, word.plain
    for match in _GLOB_CHAR.finditer(value):
        i = match.start()
        if not plain[i]:
            continue
        if value[i] != "[" or "]" in value[i + 1 :]:
            return True
    return False


def has_brace(word: Word) -> bool:
    """Unquoted ``{a,b}`` or ``{1..3}``: the word may become several words."""
    value, plain = word.value, word.plain
    opening = -1
    for i, ch in enumerate(value):
        if not plain[i]:
            continue
        if ch == "{":
            opening = i
        elif ch == "}" and opening >= 0:
            inner = value[opening + 1 : i]
            if "," in inner or ".." in inner:
                return True
    return False


def has_extglob(word: Word) -> bool:
    """Unquoted ``@(...)``, ``!(...)``, ``+(...)``, ``*(...)``, ``?(...)`` (extglob patterns)."""
    value, plain = word.value, word.plain
    return any(plain[i] and value[i] in "@!+*?" and value[i + 1] == "(" for i in range(len(value) - 1))


def shape(word: Word) -> str:
    """The :attr:`CommandLine.shapes` character of one argv item."""
    if (
        word.expanded
        or has_brace(word)
        or has_extglob(word)
        or (word.plain[:1] == b"\x01" and word.value.startswith("~"))
    ):
        return RUNTIME
    return GLOB if has_glob(word) else LITERAL


def fixed(word: Word) -> bool:
    """Known before the command runs, and exactly one word."""
    return not word.expanded and not has_glob(word) and not has_brace(word)


def quoted_assignment(word: Word) -> bool:
    """``NAME="$value"``: one word whatever the value, so it cannot move the command."""
    return not word.split and not has_glob(word) and not has_brace(word) and ASSIGNMENT.match(word.value) is not None


def arith_problem(expression: str) -> str:
    return (
        f"arithmetic ({short(expression, 40)}) reads variables, whose values can run commands through an array "
        "subscript"
    )
