"""The fast CEL engine: Google's cel-expr-python (cel-cpp), installed by ``toolrt[fast]``.

Type-checks at compile time and evaluates in microseconds. Two of its traps are
handled here: an evaluation error comes back as a *value* whose text is truthy (a
rule passes only when its result ``is True``), and strings are cut at a NUL (an
activation holding one evaluates to an error, which fails closed).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from runtime.errors import CelCompileError
from runtime.policy.celbudget import DEFAULT_COST_LIMIT, DEFAULT_TIME_LIMIT_MS
from runtime.policy.celprogram import CelProgram, Outcome
from runtime.policy.celrefs import LexError, tokenize
from runtime.regex import re2_tester

_TRUE = Outcome(value=True)
_FALSE = Outcome(value=False)

_FAST_ERROR = re.compile(r"<input>:(\d+):(\d+): (.*)")


class _FastProgram:
    __slots__ = ("source", "_expression", "_error_type")

    def __init__(self, source: str, expression: Any, error_type: Any) -> None:
        self.source = source
        self._expression = expression
        self._error_type = error_type

    def evaluate(self, activation: Any) -> Outcome:
        if activation is _HOLDS_NUL:
            return _NUL_ERROR
        try:
            result = self._expression.eval(activation)
        except Exception as err:  # noqa: BLE001 - translate every engine failure into an outcome
            return Outcome(error=_as_written(str(err)))
        value = result.value()
        # An error's value is its message (a str), never a bool: booleans are safe to take as is.
        if value is True:
            return _TRUE
        if value is False:
            return _FALSE
        if result.type() == self._error_type:
            return Outcome(error=_as_written(str(result.value())))
        try:
            return Outcome(value=result.plain_value())
        except Exception as err:  # noqa: BLE001
            return Outcome(error=f"result not convertible: {err}")


class FastEngine:
    name = "fast"
    checks_types = True

    def __init__(self) -> None:
        from cel_expr_python import cel

        self._cel = cel
        self._envs: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()

    def _env(self, variables: tuple[str, ...]) -> Any:
        env = self._envs.get(variables)
        if env is None:
            cel = self._cel
            dyn_map = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
            types = {
                name: (cel.Type.List(cel.Type.List(cel.Type.STRING)) if name == "commands" else dyn_map)
                for name in variables
            }
            matches = cel.FunctionDecl(
                _MATCHES,
                [
                    cel.Overload(
                        "toolrt_matches_member",
                        cel.Type.BOOL,
                        [cel.Type.STRING, cel.Type.STRING],
                        is_member=True,
                        impl=_re2_matches,
                    ),
                    cel.Overload(
                        "toolrt_matches_global",
                        cel.Type.BOOL,
                        [cel.Type.STRING, cel.Type.STRING],
                        is_member=False,
                        impl=_re2_matches,
                    ),
                ],
            )
            with self._lock:
                env = self._envs.setdefault(variables, cel.NewEnv(variables=types, functions=[matches]))
        return env

    def compile(
        self,
        source: str,
        variables: tuple[str, ...],
        cost_limit: int = DEFAULT_COST_LIMIT,
        time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    ) -> CelProgram:
        """Compile ``source``. cel-expr-python cannot be stopped once it evaluates: the
        ``cost_limit`` and ``time_limit_ms`` are kept before it starts, by
        :class:`runtime.policy.cel.TranslatedEngine` (the sizes of the values it reads)."""
        if _MATCHES in source and any(t.kind == "ident" and t.text == _MATCHES for t in _tokens(source)):
            offset = source.index(_MATCHES)
            raise CelCompileError(f"undeclared reference to '{_MATCHES}'", *_line_col(source, offset))
        try:
            expression = self._env(variables).compile(_with_cached_matches(source))
        except Exception as err:  # noqa: BLE001 - the binding raises RuntimeError with a formatted message
            raise _fast_compile_error(_as_written(str(err))) from None
        return _FastProgram(source, expression, self._cel.Type.ERROR)

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any:
        # The model's arguments; tool data comes from the config, the session from the app,
        # and commands from a line that bash itself cuts at a NUL.
        args = data.get("args")
        if args and _holds_nul(args):
            return _HOLDS_NUL
        return self._env(variables).Activation(dict(data))


# cel-expr-python cuts strings at a NUL character ("\x00.env" would read as ""), so a
# deny rule could miss what it is meant to catch: an activation holding one evaluates to
# an error instead, which fails closed under the rule's failure policy.
_HOLDS_NUL = object()
_NUL_ERROR = Outcome(
    error="a value holds a NUL character, which the fast CEL engine cannot read; the expression cannot be evaluated"
)


def _holds_nul(value: Any, depth: int = 0) -> bool:
    """Whether a string anywhere in ``value`` (keys included) holds a NUL character."""
    if type(value) is str:
        return "\x00" in value
    if depth > 64:
        return True  # deeper than any argument validation lets through: do not trust it
    kind = type(value)
    if kind is dict and depth == 0 and all(type(item) is str for item in value.values()):
        return any("\x00" in item or "\x00" in key for key, item in value.items())  # the common case, flat strings
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        return any(_holds_nul(key, depth + 1) or _holds_nul(item, depth + 1) for key, item in value.items())
    if kind is list or kind is tuple:
        return any(_holds_nul(item, depth + 1) for item in value)
    return False


# cel-expr-python compiles the pattern of matches() on every evaluation (tens of
# microseconds for the patterns of the shipped policy pack, on every call). Calls of
# matches() are compiled as calls of this function instead: same arguments, RE2
# partial-match semantics as CEL's, patterns compiled once and kept. The name has as
# many characters as "matches", so error columns stay those of the source.
_MATCHES = "rxmatch"


def _re2_matches(text: str, pattern: str) -> bool:
    return re2_tester(pattern)(text)


def _tokens(source: str) -> list[Any]:
    try:
        return tokenize(source)
    except LexError:
        return []


def _line_col(source: str, offset: int) -> tuple[int, int]:
    before = source[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _as_written(message: str) -> str:
    """An engine message about the renamed function, in the words of the source."""
    return message.replace(_MATCHES, "matches") if _MATCHES in message else message


def _with_cached_matches(source: str) -> str:
    """``source`` with each call of ``matches`` renamed (tokens, not text: a string
    that contains "matches(" is left alone)."""
    if "matches" not in source:
        return source
    try:
        tokens = tokenize(source)
    except LexError:
        return source  # the engine reports the syntax error itself
    out = source
    for index, token in enumerate(tokens[:-1]):
        if token.kind == "ident" and token.text == "matches" and tokens[index + 1].text == "(":
            out = out[: token.offset] + _MATCHES + out[token.offset + len("matches") :]
    return out


def _fast_compile_error(text: str) -> CelCompileError:
    match = _FAST_ERROR.search(text)
    if not match:
        return CelCompileError(text.strip(), 1, 1)
    message = match.group(3).split(" | ")[0].strip()
    message = message.replace(" (in container '')", "").removesuffix(" [INVALID_ARGUMENT]")
    if "mismatched input '<EOF>'" in message:
        message = "Syntax error: the expression ends too early (an operand or a closing bracket is missing)"
    elif message.startswith("Syntax error: mismatched input"):
        message = "Syntax error: " + message.split(" expecting ")[0].removeprefix("Syntax error: ")
    return CelCompileError(message, int(match.group(1)), int(match.group(2)))
