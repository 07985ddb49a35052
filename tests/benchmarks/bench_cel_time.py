"""Calibration of lint's time estimate (``cel-time``): CPU time per cost unit.

Run with ``make bench``. Lint turns an expression's worst-case cost into time with
``PORTABLE_SECONDS_PER_UNIT`` (cel-python itself, for expressions the closures do not
translate) and ``CLOSURE_SECONDS_PER_UNIT`` (the closures, either engine), both in
``runtime/policy/celbudget.py``. This evaluates comprehensions of several shapes at
their schema's bounds (2,000 items), divides the evaluation's CPU time by lint's
estimate of its cost, and prints the rate per path beside the constant, and their
ratio: a ratio over 1 means the constant is too low for this machine.
"""

from __future__ import annotations

import time

from runtime.config.exprtypes import variable_types
from runtime.policy.cel import RULE_VARIABLES, get_engine
from runtime.policy.celast import parse
from runtime.policy.celbudget import CLOSURE_SECONDS_PER_UNIT, PORTABLE_SECONDS_PER_UNIT
from runtime.policy.celcheck import check

N = 2000
SCHEMA = {
    "type": "object",
    "required": ["items", "nums", "rows"],
    "properties": {
        "items": {"type": "array", "maxItems": N, "items": {"type": "string", "maxLength": 20}},
        "nums": {"type": "array", "maxItems": N, "items": {"type": "integer"}},
        "rows": {
            "type": "array",
            "maxItems": N,
            "items": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 20}},
            },
        },
    },
}
DATA = {"items": ["x" * 20] * N, "nums": list(range(N)), "rows": [{"id": i, "name": "n" * 20} for i in range(N)]}
EXPRESSIONS = [
    "args.items.all(t, size(t) < 64)",
    "args.nums.all(n, n >= 0 && n < 1000000)",
    "args.items.exists(t, t.contains('zz'))",
    "args.rows.all(r, r.id >= 0 && r.name.startsWith('n'))",
    "args.nums.map(n, n * 2).all(m, m >= 0)",
    "args.nums.filter(n, n % 2 == 0).size() >= 0",
    "args.items.all(t, t.matches('^x+$'))",
    "args.nums.exists_one(n, n == 5)",
    "args.items.all(t, int(size(t)) < 64)",
    "args.nums.all(n, string(n) != 'q')",
]


def main() -> int:
    variables, bounds, _ = variable_types(SCHEMA)
    limits = {name: float(bound.limit) for name, bound in bounds.items()}
    paths = {
        "portable engine": (get_engine("portable", translated=False), PORTABLE_SECONDS_PER_UNIT),
        "closures": (get_engine("portable"), CLOSURE_SECONDS_PER_UNIT),
    }
    worst = dict.fromkeys(paths, 0.0)
    data = {"args": DATA, "tool": {}, "session": {}, "call": {}}
    print(f"{'path':16} {'expression':56} {'units':>7} {'ms':>8} {'us/unit':>8}")
    for source in EXPRESSIONS:
        units = check(parse(source), variables).cost.evaluate(limits)
        for name, (engine, _constant) in paths.items():
            program = engine.compile(source, RULE_VARIABLES, 10**9, 10**6)
            samples = []
            for _ in range(3):
                activation = engine.activation(data, RULE_VARIABLES)
                started = time.thread_time()
                outcome = program.evaluate(activation)
                samples.append(time.thread_time() - started)
            if outcome.error is not None:
                raise SystemExit(f"{source}: {outcome.error}")
            rate = min(samples) / units
            if name == "portable engine" or "int(" not in source and "string(" not in source:
                worst[name] = max(worst[name], rate)  # the closures hand conversions to the engine
            print(f"{name:16} {source:56} {units:7.0f} {min(samples) * 1000:8.1f} {rate * 1e6:8.2f}")
    for name, (_engine, constant) in paths.items():
        print(
            f"{name}: most measured {worst[name] * 1e6:.2f} us a unit, constant {constant * 1e6:g} us, "
            f"ratio {worst[name] / constant:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
