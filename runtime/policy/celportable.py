"""The portable CEL engine: cel-python, pure Python, always installed.

cel-python leans on Python semantics where CEL differs; the overrides below make it
give cel-cpp's verdicts. Its evaluation is not thread-safe: it runs under one lock.

Each evaluation is bounded (:mod:`runtime.policy.celbudget`): it counts a step for
every syntax-tree node it visits and for every item it copies or scans natively, and
it is stopped, as an evaluation error (so a deny or ask rule matches: fail closed),
past its budget of cost units (setting ``cel_cost_limit``, turned into steps by
:func:`~runtime.policy.celbudget.budget`) or its time limit (setting
``cel_time_limit_ms``, CPU time), whichever comes first. The lock is never held
longer than that.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.errors import CelCompileError
from runtime.policy import celbudget
from runtime.policy.celprogram import CelProgram, Outcome
from runtime.regex import re2_tester

# cel-python's runners keep per-evaluation state on shared objects; one lock for all
# portable evaluations makes them safe to call from any thread.
_PORTABLE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class _Unusable:
    """An activation that could not be converted; evaluating against it is an error."""

    reason: str


class _PortableProgram:
    __slots__ = ("source", "_runner", "_cost_limit", "_time_limit_ms")

    def __init__(self, source: str, runner: Any, cost_limit: int, time_limit_ms: int) -> None:
        self.source = source
        self._runner = runner
        self._cost_limit = cost_limit
        self._time_limit_ms = time_limit_ms

    def evaluate(self, activation: Any) -> Outcome:
        return self.evaluate_after(activation, 0.0)

    def evaluate_after(self, activation: Any, spent: float) -> Outcome:
        """Evaluate, with ``spent`` CPU seconds of the time limit already used (by the
        closures, which handed the evaluation over)."""
        from celpy.evaluation import CELEvalError

        if isinstance(activation, _Unusable):
            return Outcome(error=activation.reason)
        try:
            with _PORTABLE_LOCK:
                celbudget.start(self._cost_limit, self._time_limit_ms, spent)
                result = self._runner.evaluate(activation)
        except celbudget.Exhausted as err:
            return Outcome(error=str(err))
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
        self._env = celpy.Environment(runner_class=celbudget.bounded_runner())
        sys.setrecursionlimit(limit)
        self._functions = _portable_overrides()

    def compile(
        self,
        source: str,
        variables: tuple[str, ...],
        cost_limit: int = celbudget.DEFAULT_COST_LIMIT,
        time_limit_ms: int = celbudget.DEFAULT_TIME_LIMIT_MS,
    ) -> CelProgram:
        """Compile ``source``; each evaluation is stopped past ``cost_limit`` cost units or
        ``time_limit_ms`` ms of CPU."""
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
        return _PortableProgram(source, runner, cost_limit, time_limit_ms)

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
        if kind in ("list", "map"):
            celbudget.charge(len(a))
        elif kind == "string":
            scanned(a, celbudget.SCAN_CHARS_PER_UNIT)
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

    def scanned(text: Any, chars_per_unit: int) -> None:
        # Native work over a string, charged as lint charges it (in steps: STEPS_PER_UNIT a unit).
        units = len(text) // chars_per_unit
        if units:
            celbudget.charge(units * celbudget.STEPS_PER_UNIT)

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
            celbudget.charge(len(container))
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
            if name == "_+_" and category(a) in ("list", "string", "bytes"):
                # A copy of both sides, charged before it is made, as lint charges it: a unit
                # per item, per BUILD_CHARS_PER_UNIT characters.
                size = len(a) + len(b)
                units = size if category(a) == "list" else size // celbudget.BUILD_CHARS_PER_UNIT
                celbudget.charge(units * celbudget.STEPS_PER_UNIT)
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
            scanned(text, celbudget.SCAN_CHARS_PER_UNIT)
            return base_functions["contains"](celtypes.StringType(text), celtypes.StringType(part))
        return errors_first(text, part) or no_overload("contains", text, part)

    def matches(text: Any, pattern: Any) -> Any:
        # RE2, as the fast engine: linear time whatever the pattern (Python's re is not),
        # so lint's cost estimate of matches() holds on both engines.
        if isinstance(text, str) and isinstance(pattern, str):
            scanned(text, celbudget.REGEX_CHARS_PER_UNIT)
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
