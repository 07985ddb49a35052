"""The one seam to CEL: the only module that imports a CEL library.

Two engines give the same verdicts:

- ``fast``: Google's cel-expr-python (cel-cpp). Type-checks at compile time and
  evaluates in microseconds. Installed by ``toolrt[fast]`` and picked when present.
- ``portable``: cel-python, pure Python, always installed.

Both are wrapped so that callers see only :class:`CelProgram.evaluate`, which returns
an :class:`Outcome` (a value, or an error message) and never raises. Two traps are
handled here and nowhere else:

- cel-expr-python reports an evaluation error as a *value* whose text is truthy;
  a rule passes only when its result ``is True`` (fail closed);
- cel-python's evaluation is not thread-safe; it runs under one lock.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.errors import CelCompileError
from runtime.policy.celrefs import LexError, tokenize
from runtime.regex import re2_tester

#: Variables a tool's business rules may read.
RULE_VARIABLES = ("args", "tool", "session", "call")
#: Variables a policy rule's ``when`` may read (adds the parsed command lines).
POLICY_VARIABLES = ("args", "tool", "session", "call", "commands")


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of evaluating an expression: ``value`` or ``error``, never both."""

    value: Any = None
    error: str | None = None

    @property
    def is_true(self) -> bool:
        """True only for a boolean true result (errors and non-booleans are not true)."""
        return self.error is None and self.value is True


class CelProgram(Protocol):
    source: str

    def evaluate(self, activation: Any) -> Outcome: ...


class CelEngine(Protocol):
    name: str
    checks_types: bool

    def compile(self, source: str, variables: tuple[str, ...]) -> CelProgram: ...

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any: ...


_TRUE = Outcome(value=True)
_FALSE = Outcome(value=False)

# ---------------------------------------------------------------------------
# fast: cel-expr-python

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

    def compile(self, source: str, variables: tuple[str, ...]) -> CelProgram:
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


# ---------------------------------------------------------------------------
# portable: cel-python


# cel-python's runners keep per-evaluation state on shared objects; one lock for all
# portable evaluations makes them safe to call from any thread.
_PORTABLE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class _Unusable:
    """An activation that could not be converted; evaluating against it is an error."""

    reason: str


class _PortableProgram:
    __slots__ = ("source", "_runner")

    def __init__(self, source: str, runner: Any) -> None:
        self.source = source
        self._runner = runner

    def evaluate(self, activation: Any) -> Outcome:
        from celpy.evaluation import CELEvalError

        if isinstance(activation, _Unusable):
            return Outcome(error=activation.reason)
        try:
            with _PORTABLE_LOCK:
                result = self._runner.evaluate(activation)
        except CELEvalError as err:
            return Outcome(error=_celpy_message(err))
        except Exception as err:  # noqa: BLE001 - translate every engine failure into an outcome
            return Outcome(error=f"{type(err).__name__}: {err}")
        if isinstance(result, CELEvalError):
            return Outcome(error=_celpy_message(result))
        return Outcome(value=_from_celpy(result))


class PortableEngine:
    name = "portable"
    checks_types = False

    def __init__(self) -> None:
        import celpy

        self._celpy = celpy
        limit = sys.getrecursionlimit()
        # cel-python raises the interpreter's recursion limit as a side effect; a
        # library must not change that behind the app's back. Expressions are
        # bounded in size and nesting at load time instead. The interpreted runner
        # is used: the compiled one keeps evaluation state in module globals (not
        # thread-safe) and ignores function overrides.
        self._env = celpy.Environment(runner_class=celpy.InterpretedRunner)
        sys.setrecursionlimit(limit)
        self._functions = _portable_overrides()

    def compile(self, source: str, variables: tuple[str, ...]) -> CelProgram:
        from celpy.celparser import CELParseError

        try:
            tree = self._env.compile(source)
            runner = self._env.program(tree, functions=self._functions)
        except CELParseError as err:
            detail = (err.args[0] if err.args else "syntax error").strip().splitlines()[0].strip()
            raise CelCompileError(
                f"syntax error near `{detail}`" if detail else "syntax error",
                getattr(err, "line", 1) or 1,
                getattr(err, "column", 1) or 1,
            ) from None
        except Exception as err:  # noqa: BLE001 - any other parser failure is a compile error too
            raise CelCompileError(f"cannot compile: {err}", 1, 1) from None
        return _PortableProgram(source, runner)

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any:
        json_to_cel = self._celpy.json_to_cel
        try:
            return {name: json_to_cel(data[name]) for name in variables if name in data}
        except (ValueError, TypeError, OverflowError) as err:
            # e.g. an integer beyond 64 bits: every evaluation against it is an error
            return _Unusable(f"value cannot be represented in CEL: {err}")


def _portable_overrides() -> dict[str, Any]:
    """Operators and functions that make cel-python give cel-cpp's verdicts.

    cel-python leans on Python semantics where CEL differs: ``true == 1`` (bool is an
    int), ``"a" == 7`` raising instead of being false, ``[1].contains(1)``, negative
    list indexes, ``size(null)``, int/uint mixing and ``x / 0.0``. Each override below
    restores the CEL answer (the one the fast engine gives) for that case and
    delegates everything else to cel-python.
    """
    import math
    import operator

    from celpy import celtypes
    from celpy.evaluation import CELEvalError, base_functions

    # cel-python returns plain Python str / float / int from some operations (string
    # concatenation, double arithmetic), so both the celtypes and the plain types count.
    bools = (bool, celtypes.BoolType)

    def is_number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bools)

    def plain(value: Any) -> int | float:
        return float(value) if isinstance(value, float) else int(value)

    def no_overload(name: str, *values: Any) -> CELEvalError:
        kinds = ", ".join(type(v).__name__ for v in values)
        return CELEvalError(f"no matching overload for {name} applied to ({kinds})", TypeError, ())

    def category(value: Any) -> str:
        if value is None:
            return "null"
        if isinstance(value, bools):
            return "bool"
        if is_number(value):
            return "number"
        if isinstance(value, str):
            return "string"
        if isinstance(value, bytes):
            return "bytes"
        if isinstance(value, (celtypes.ListType, list)):
            return "list"
        if isinstance(value, (celtypes.MapType, dict)):
            return "map"
        return type(value).__name__

    def equal(a: Any, b: Any) -> bool:
        kind = category(a)
        if kind != category(b):
            return False
        if kind == "number":
            return plain(a) == plain(b)
        if kind == "list":
            return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
        if kind == "map":
            if len(a) != len(b):
                return False
            for key, value in a.items():
                match = next((k for k in b if equal(k, key)), _MISSING)
                if match is _MISSING or not equal(value, b[match]):
                    return False
            return True
        return bool(a == b)

    def errors_first(*values: Any) -> Any:
        return next((v for v in values if isinstance(v, CELEvalError)), None)

    def eq(a: Any, b: Any) -> Any:
        return errors_first(a, b) or celtypes.BoolType(equal(a, b))

    def ne(a: Any, b: Any) -> Any:
        return errors_first(a, b) or celtypes.BoolType(not equal(a, b))

    def ordering(name: str, op: Any) -> Any:
        base = base_functions[name]

        def compare(a: Any, b: Any) -> Any:
            error = errors_first(a, b)
            if error is not None:
                return error
            if is_number(a) and is_number(b):
                return celtypes.BoolType(op(plain(a), plain(b)))
            if category(a) != category(b) or category(a) in ("number", "null", "list", "map"):
                return no_overload(name, a, b)
            return base(a, b)

        return compare

    def contains_item(item: Any, container: Any) -> Any:
        error = errors_first(item, container)
        if error is not None:
            return error
        if isinstance(container, (celtypes.ListType, list)):
            return celtypes.BoolType(any(equal(item, x) for x in container))
        if isinstance(container, (celtypes.MapType, dict)):
            return celtypes.BoolType(any(equal(item, k) for k in container))
        return no_overload("_in_", item, container)

    def arithmetic(name: str) -> Any:
        base = base_functions[name]

        def apply(a: Any, b: Any) -> Any:
            error = errors_first(a, b)
            if error is not None:
                return error
            if isinstance(a, bools) or isinstance(b, bools) or category(a) != category(b):
                return no_overload(name, a, b)
            if is_number(a) and is_number(b) and _number_kind(a) != _number_kind(b):
                return no_overload(name, a, b)
            if name == "_/_" and isinstance(a, float) and isinstance(b, float) and b == 0.0:
                x = float(a)
                if x == 0.0 or math.isnan(x):
                    return celtypes.DoubleType(math.nan)
                return celtypes.DoubleType(math.copysign(math.inf, x) * math.copysign(1.0, float(b)))
            return base(a, b)

        return apply

    def index(container: Any, key: Any) -> Any:
        error = errors_first(container, key)
        if error is not None:
            return error
        if isinstance(container, (str, bytes)):
            return no_overload("_[_]", container, key)  # CEL has no string indexing
        if isinstance(container, (celtypes.ListType, list)):
            if not is_number(key) or isinstance(key, float) and not float(key).is_integer():
                return no_overload("_[_]", container, key)
            position = int(plain(key))
            if position < 0 or position >= len(container):
                return CELEvalError(f"index out of bounds: {position}", IndexError, ())
            return container[position]
        return base_functions["_[_]"](container, key)

    def size(value: Any) -> Any:
        if isinstance(
            value,
            (celtypes.StringType, celtypes.BytesType, celtypes.ListType, celtypes.MapType, str, bytes, list, dict),
        ):
            return celtypes.IntType(len(value))
        return errors_first(value) or no_overload("size", value)

    def contains(text: Any, part: Any) -> Any:
        # A concatenation ("," + x) is a plain str here (see above): a string all the same.
        if isinstance(text, str) and isinstance(part, str):
            return base_functions["contains"](celtypes.StringType(text), celtypes.StringType(part))
        return errors_first(text, part) or no_overload("contains", text, part)

    def matches(text: Any, pattern: Any) -> Any:
        # RE2, as the fast engine: linear time whatever the pattern (Python's re is not),
        # so lint's cost estimate of matches() holds on both engines.
        if isinstance(text, str) and isinstance(pattern, str):
            try:
                return celtypes.BoolType(re2_tester(str(pattern))(str(text)))
            except Exception as err:  # noqa: BLE001 - a bad pattern or unencodable text is an evaluation error
                return CELEvalError(f"matches: {err}", ValueError, ())
        return errors_first(text, pattern) or no_overload("matches", text, pattern)

    overrides: dict[str, Any] = {
        "_==_": eq,
        "_!=_": ne,
        "_in_": contains_item,
        "_[_]": index,
        "size": size,
        "contains": contains,
        "matches": matches,
    }
    for name, op in {"_<_": operator.lt, "_<=_": operator.le, "_>_": operator.gt, "_>=_": operator.ge}.items():
        overrides[name] = ordering(name, op)
    for name in ("_+_", "_-_", "_*_", "_/_", "_%_"):
        overrides[name] = arithmetic(name)
    return overrides


_MISSING = object()


def _number_kind(value: Any) -> str:
    """int, uint or double: CEL does not mix them in arithmetic."""
    from celpy import celtypes

    if isinstance(value, float):
        return "double"
    return "uint" if isinstance(value, celtypes.UintType) else "int"


_MESSAGE_MAX_CHARS = 500


def _celpy_message(err: Any) -> str:
    """cel-python's message without the dump of the whole activation it appends to
    some (every argument and session label, thousands of characters, in a message
    that reaches the model and the logs), and bounded in length."""
    args = getattr(err, "args", ())
    text = str(args[0]) if args else (str(err) or type(err).__name__)
    text = text.split(" (in activation ", 1)[0]
    return text if len(text) <= _MESSAGE_MAX_CHARS else text[: _MESSAGE_MAX_CHARS - 3] + "..."


def _from_celpy(value: Any) -> Any:
    from celpy import celtypes

    if value is None:
        return None
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.BytesType):
        return bytes(value)
    if isinstance(value, (celtypes.ListType, list)):
        return [_from_celpy(v) for v in value]
    if isinstance(value, (celtypes.MapType, dict)):
        return {_from_celpy(k): _from_celpy(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------
# choosing an engine

_engines: dict[str, CelEngine] = {}
_choice_lock = threading.Lock()


def fast_available() -> bool:
    """True when cel-expr-python (the ``fast`` extra) is importable."""
    try:
        import cel_expr_python.cel  # noqa: F401
    except ImportError:
        return False
    return True


def get_engine(name: str = "auto") -> CelEngine:
    """The engine called ``name``: ``fast``, ``portable`` or ``auto`` (fast when installed)."""
    engine = _engines.get(name)
    if engine is not None:
        return engine  # the per-call path: no lock once the engine exists
    if name == "auto":
        name = "fast" if fast_available() else "portable"
    if name not in ("fast", "portable"):
        raise ValueError(f"unknown CEL engine {name!r}; use auto, fast or portable")
    with _choice_lock:
        engine = _engines.get(name)
        if engine is None:
            engine = FastEngine() if name == "fast" else PortableEngine()
            _engines[name] = engine
    return engine
