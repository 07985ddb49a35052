"""The one seam to CEL: callers see only :class:`CelEngine` and :class:`CelProgram`.

Two engines give the same verdicts:

- ``fast``: Google's cel-expr-python (cel-cpp), :mod:`runtime.policy.celfast`.
  Installed by ``toolrt[fast]`` and picked when present.
- ``portable``: cel-python, pure Python, always installed, :mod:`runtime.policy.celportable`.

Only those two modules import a CEL library to evaluate (and
:mod:`runtime.policy.celdeclared`, which gives cel-expr-python's checker the schemas'
types at build time). Whichever engine runs, an expression in
the subset that real rules use is also translated into Python closures at compile
time (:mod:`runtime.policy.celclosure`) and evaluated without the engine; the engine
answers for everything else, and for every error (so messages stay the engine's).
:class:`CelProgram.evaluate` returns an :class:`Outcome` (a value, or an error
message) and never raises.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from runtime.policy.celbudget import DEFAULT_COST_LIMIT, DEFAULT_TIME_LIMIT_MS, fast_cost_limit
from runtime.policy.celclosure import METER, CelError, Closure, Defer, OverBudget, run_in, scope, translate
from runtime.policy.celmeter import spent

# re-exported: defined in celprogram, which the engines import without this registry
from runtime.policy.celprogram import CelEngine as CelEngine
from runtime.policy.celprogram import CelProgram as CelProgram
from runtime.policy.celprogram import Outcome as Outcome
from runtime.policy.celsize import Read, largest_size, measure, reads

#: Variables a tool's business rules may read.
RULE_VARIABLES = ("args", "tool", "session", "call")
#: Variables a policy rule's ``when`` may read (adds the parsed command lines).
POLICY_VARIABLES = ("args", "tool", "session", "call", "commands")


_TRUE = Outcome(value=True)
_FALSE = Outcome(value=False)


# ---------------------------------------------------------------------------
# closures in front of an engine


class _Activation:
    """The call's plain data, and the engine's activation built from it only if a
    program needs the engine (most evaluations never do)."""

    __slots__ = ("data", "checked", "_variables", "_engine", "_built", "_scope", "_sizes")

    def __init__(self, data: Mapping[str, Any], variables: tuple[str, ...], engine: CelEngine) -> None:
        self.data = data if type(data) is dict else dict(data)
        self.checked: set[str] = set()  # variables the closures found plain
        self._variables = variables
        self._engine = engine
        self._built: Any = None
        self._scope: dict[str, Any] | None = None
        self._sizes: dict[tuple[Read, ...], tuple[int, int]] | None = None

    def scope(self) -> dict[str, Any]:
        """What the closures read: made at the first evaluation, reused by the rest
        (the business rules' and the policy conditions' of one call)."""
        env = self._scope
        if env is None:
            env = self._scope = scope(self.data, self.checked)
        return env

    def within(self, names: tuple[Read, ...], largest: int) -> bool:
        """Whether no value that ``names`` reads is larger than ``largest`` (measured once
        per call for the programs that read the same values)."""
        sizes = self._sizes
        if sizes is None:
            sizes = self._sizes = {}
        known = sizes.get(names)
        if known is not None:
            size, cap = known
            if size <= cap:  # exact: compare it with this program's largest
                return size <= largest
            if largest < cap:  # only known to be over a larger cap
                return False
        size = measure(self.data, names, largest)
        sizes[names] = (size, largest)
        return size <= largest

    def engine(self) -> Any:
        built = self._built
        if built is None:
            built = self._built = self._engine.activation(self.data, self._variables)
        return built


class _Guard:
    """The fast engine's run-time bound of one program (it cannot be interrupted): the
    largest size of the values it reads for which its cost stays within the budget, the
    smaller of the cost limit and the units the time limit allows
    (:mod:`runtime.policy.celsize`). A call with larger values is evaluated by the
    portable engine instead, which counts its steps and stops at the same budget."""

    __slots__ = (
        "source",
        "names",
        "largest",
        "cost_limit",
        "time_limit_ms",
        "_variables",
        "_portable",
        "_lock",
        "_oversize",
    )

    def __init__(
        self,
        source: str,
        variables: tuple[str, ...],
        cost_limit: int,
        time_limit_ms: int,
        oversize: Outcome | None = None,
    ) -> None:
        self.source = source
        self.names = reads(source, variables)
        self.largest = largest_size(source, variables, fast_cost_limit(cost_limit, time_limit_ms))
        self.cost_limit = cost_limit
        self.time_limit_ms = time_limit_ms
        self._variables = variables
        self._portable: CelProgram | Outcome | None = None
        self._lock = threading.Lock()
        self._oversize = oversize

    def evaluate(self, activation: _Activation, spent: float = 0.0) -> Outcome:
        """Evaluate over-sized values on the portable engine (compiled once, on first need),
        or give the ``oversize`` outcome at once when one was set at compile time;
        ``spent``: CPU seconds the evaluation already took in the closures."""
        if self._oversize is not None:
            return self._oversize
        portable = self._portable
        if portable is None:
            with self._lock:
                portable = self._portable
                if portable is None:
                    portable = self._portable = self._compile()
        if type(portable) is Outcome:
            return portable
        engine = get_engine("portable", translated=False)
        return portable.evaluate_after(  # type: ignore[union-attr]
            engine.activation(activation.data, self._variables), spent
        )

    def _compile(self) -> CelProgram | Outcome:
        from runtime.errors import CelCompileError

        try:
            return get_engine("portable", translated=False).compile(
                self.source, self._variables, self.cost_limit, self.time_limit_ms
            )
        except CelCompileError as err:
            return Outcome(
                error=f"the values are too large for the fast CEL engine's budget of {self.cost_limit:,} cost units "
                f"and the portable engine cannot compile the expression ({err.message}); it was not evaluated"
            )


class _ClosureProgram:
    """A program evaluated by its closure; the engine's program answers what the
    closure cannot be certain of, and words every error."""

    __slots__ = ("source", "budget", "_closure", "_program", "_guard")

    def __init__(
        self, source: str, closure: Closure, program: CelProgram, guard: _Guard | None, budget: tuple[int, int]
    ) -> None:
        self.source = source
        self.budget = budget  # cost units, CPU ms
        self._closure = closure
        self._program = program
        self._guard = guard

    def evaluate(self, activation: Any) -> Outcome:
        if type(activation) is not _Activation:
            return self._program.evaluate(activation)
        env = activation.scope()
        try:
            value = run_in(self._closure, env)
        except OverBudget as err:
            # The closures' units never exceed lint's estimate: over the budget here is over
            # it on every engine (and the time limit is the same for all).
            return Outcome(error=str(err))
        except (CelError, Defer, RecursionError):
            return self._by_engine(activation, spent(env[METER]))
        if value is True:
            return _TRUE
        if value is False:
            return _FALSE
        return Outcome(value=value)

    def _by_engine(self, activation: _Activation, used: float) -> Outcome:
        """The engine's verdict or wording; ``used``: CPU seconds the closures already
        took, left out of the portable engine's time limit."""
        guard = self._guard
        if guard is not None and not activation.within(guard.names, guard.largest):
            return guard.evaluate(activation, used)
        program = self._program
        after = getattr(program, "evaluate_after", None) if used else None  # the portable engine's
        if after is not None:
            return after(activation.engine(), used)  # type: ignore[no-any-return]
        return program.evaluate(activation.engine())


class _EngineProgram:
    """A program outside the closures' subset: the engine evaluates it."""

    __slots__ = ("source", "budget", "_program", "_guard")

    def __init__(self, program: CelProgram, guard: _Guard | None, budget: tuple[int, int]) -> None:
        self.source = program.source
        self.budget = budget  # cost units, CPU ms
        self._program = program
        self._guard = guard

    def evaluate(self, activation: Any) -> Outcome:
        if type(activation) is _Activation:
            guard = self._guard
            if guard is not None and not activation.within(guard.names, guard.largest):
                return guard.evaluate(activation)
            return self._program.evaluate(activation.engine())
        return self._program.evaluate(activation)


class TranslatedEngine:
    """``engine`` with closures in front: same names, same compile errors, same values."""

    def __init__(self, engine: CelEngine) -> None:
        self.engine = engine
        self.name = engine.name
        self.checks_types = engine.checks_types

    def compile(
        self,
        source: str,
        variables: tuple[str, ...],
        cost_limit: int = DEFAULT_COST_LIMIT,
        time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
        *,
        oversize: Outcome | None = None,
    ) -> CelProgram:
        """Compile ``source``; each evaluation stays within ``cost_limit`` cost units and
        ``time_limit_ms`` ms of CPU (the closures and the portable engine count them as
        they go; the fast engine is checked before it starts). ``oversize``: on the fast
        engine, the outcome of values too large for its budget, given at once instead of
        evaluating them on the portable engine (a batch of conditions that can be
        evaluated one by one instead)."""
        # Syntax and type errors are the engine's.
        program = self.engine.compile(source, variables, cost_limit, time_limit_ms)
        closure = translate(source, variables, cost_limit, time_limit_ms)
        guard = _Guard(source, variables, cost_limit, time_limit_ms, oversize) if self.engine.name == "fast" else None
        if closure is not None:
            return _ClosureProgram(source, closure, program, guard, (cost_limit, time_limit_ms))
        return _EngineProgram(program, guard, (cost_limit, time_limit_ms))

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any:
        return _Activation(data, variables, self.engine)


class BudgetedEngine:
    """``engine`` whose programs are compiled with a configured budget unless the caller
    names another: every program a snapshot build makes (rules, conditions, their
    batches, reasons, workflow expressions) gets the settings' limits this way."""

    def __init__(self, engine: CelEngine, cost_limit: int, time_limit_ms: int) -> None:
        self.engine = engine
        self.name = engine.name
        self.checks_types = engine.checks_types
        self.cost_limit = cost_limit
        self.time_limit_ms = time_limit_ms

    def compile(
        self,
        source: str,
        variables: tuple[str, ...],
        cost_limit: int | None = None,
        time_limit_ms: int | None = None,
        **options: Any,
    ) -> CelProgram:
        """Compile ``source`` with the configured budget (or the one given)."""
        return self.engine.compile(  # type: ignore[call-arg]
            source,
            variables,
            self.cost_limit if cost_limit is None else cost_limit,
            self.time_limit_ms if time_limit_ms is None else time_limit_ms,
            **options,
        )

    def activation(self, data: Mapping[str, Any], variables: tuple[str, ...]) -> Any:
        return self.engine.activation(data, variables)


def with_budget(engine: CelEngine, cost_limit: int, time_limit_ms: int) -> CelEngine:
    """``engine`` compiling with ``cost_limit`` cost units and ``time_limit_ms`` ms per evaluation."""
    return BudgetedEngine(engine, cost_limit, time_limit_ms)


def known_plain(activation: Any, variable: str) -> None:
    """Tell ``activation`` that ``variable`` is already known to hold plain JSON values
    only (the closures then do not walk it again); no effect on an engine's own."""
    if type(activation) is _Activation:
        activation.checked.add(variable)


def is_translated(program: CelProgram) -> bool:
    """Whether ``program`` is evaluated by closures (else by its engine)."""
    return type(program) is _ClosureProgram


# ---------------------------------------------------------------------------
# choosing an engine

_engines: dict[tuple[str, bool], CelEngine] = {}
_choice_lock = threading.RLock()  # a translated engine builds its engine under it


def fast_available() -> bool:
    """True when cel-expr-python (the ``fast`` extra) is importable."""
    try:
        import cel_expr_python.cel  # noqa: F401
    except ImportError:
        return False
    return True


def get_engine(name: str = "auto", *, translated: bool = True) -> CelEngine:
    """The engine called ``name``: ``fast``, ``portable`` or ``auto`` (fast when
    installed), with closures in front unless ``translated`` is False."""
    asked = (name, translated)
    engine = _engines.get(asked)
    if engine is not None:
        return engine  # the per-call path: no lock once the engine exists
    if name == "auto":
        name = "fast" if fast_available() else "portable"
    if name not in ("fast", "portable"):
        raise ValueError(f"unknown CEL engine {name!r}; use auto, fast or portable")
    with _choice_lock:
        engine = _engines.get((name, translated))
        if engine is None:
            if translated:
                engine = TranslatedEngine(get_engine(name, translated=False))
            elif name == "fast":
                from runtime.policy.celfast import FastEngine

                engine = FastEngine()
            else:
                from runtime.policy.celportable import PortableEngine

                engine = PortableEngine()
            _engines[(name, translated)] = engine
        _engines[asked] = engine
    return engine
