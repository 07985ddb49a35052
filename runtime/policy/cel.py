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
        try:
            result = self._expression.eval(activation)
        except Exception as err:  # noqa: BLE001 - translate every engine failure into an outcome
            return Outcome(error=str(err))
        if result.type() == self._error_type:
            return Outcome(error=str(result.value()))
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
            types = {name: (cel.Type.List(cel.Type.List(cel.Type.STRING)) if name == "commands" else dyn_map) for name in variables}
            with self._lock:
                env = self._envs.setdefault(variables, cel.NewEnv(variables=types))
        return env

    def compile(self, source: str, variables: tuple[str, ...]) -> CelProgram:
        try:
            expression = self._env(variables).compile(source)
        except Exception as err:  # noqa: BLE001 - the binding raises RuntimeError with a formatted message
            raise _fast_compile_error(str(err)) from None
        return _FastProgram(source, expression, self._cel.Type.ERROR)

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any:
        return self._env(variables).Activation(dict(data))


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


class _PortableProgram:
    __slots__ = ("source", "_runner")

    def __init__(self, source: str, runner: Any) -> None:
        self.source = source
        self._runner = runner

    def evaluate(self, activation: Any) -> Outcome:
        from celpy.evaluation import CELEvalError

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
            raise CelCompileError(f"syntax error near `{detail}`" if detail else "syntax error", getattr(err, "line", 1) or 1, getattr(err, "column", 1) or 1) from None
        except Exception as err:  # noqa: BLE001 - any other parser failure is a compile error too
            raise CelCompileError(f"cannot compile: {err}", 1, 1) from None
        return _PortableProgram(source, runner)

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any:
        json_to_cel = self._celpy.json_to_cel
        return {name: json_to_cel(data[name]) for name in variables if name in data}


def _portable_overrides() -> dict[str, Any]:
    """Numeric comparisons across int, uint and double, as cel-cpp evaluates them on
    dynamic values (``args.n > 3.0`` with n = 5 is true there, an error in cel-python)."""
    import operator

    from celpy import celtypes
    from celpy.evaluation import base_functions

    numeric = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)

    def is_number(value: Any) -> bool:
        return isinstance(value, numeric) and not isinstance(value, celtypes.BoolType)

    def plain(value: Any) -> int | float:
        return float(value) if isinstance(value, celtypes.DoubleType) else int(value)

    def comparison(name: str, op: Any) -> Any:
        base = base_functions[name]

        def compare(a: Any, b: Any) -> Any:
            if is_number(a) and is_number(b) and type(a) is not type(b):
                return celtypes.BoolType(op(plain(a), plain(b)))
            return base(a, b)

        return compare

    base_in = base_functions["_in_"]

    def contains(item: Any, container: Any) -> Any:
        if is_number(item) and isinstance(container, celtypes.ListType):
            return celtypes.BoolType(any(is_number(x) and plain(x) == plain(item) for x in container))
        return base_in(item, container)

    ops = {"_<_": operator.lt, "_<=_": operator.le, "_>_": operator.gt, "_>=_": operator.ge, "_==_": operator.eq, "_!=_": operator.ne}
    overrides = {name: comparison(name, op) for name, op in ops.items()}
    overrides["_in_"] = contains
    return overrides


def _celpy_message(err: Any) -> str:
    args = getattr(err, "args", ())
    return str(args[0]) if args else (str(err) or type(err).__name__)


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
