"""Per-call argument validation, compiled once per tool into the snapshot.

With the ``fast`` extra, jsonschema-rs answers "valid?" in about a microsecond; only
when the answer is no are the errors collected by the same explaining code the
portable validator uses, so the model reads the same messages whichever engine ran.
Patterns run on linear-time engines in both (RE2 / Rust ``regex``); ``format`` is an
annotation in both (the Draft 2020-12 default), so they cannot disagree on it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.validation.quickcheck import compile_quick, vouches
from runtime.validation.violations import Violation, python_validator, violations
from runtime.validation.wording import pointer


@dataclass(frozen=True, slots=True)
class ArgumentProblem:
    """What is wrong with one argument: JSON pointer and a sentence."""

    pointer: str
    message: str


def fast_schema_available() -> bool:
    """True when jsonschema-rs (the ``fast`` extra) is importable."""
    try:
        import jsonschema_rs  # noqa: F401
    except ImportError:
        return False
    return True


class ArgumentValidator:
    """A tool's compiled input-schema validator."""

    __slots__ = ("engine", "_python", "_rust", "_quick")

    def __init__(self, schema: Mapping[str, Any], engine: str = "auto") -> None:
        use_fast = engine == "fast" or (engine == "auto" and fast_schema_available())
        schema = copy.deepcopy(dict(schema))  # the compiled validator must not share the spec's dicts
        self._python = python_validator(schema)
        self._rust = _rust_validator(schema) if use_fast and not _has_class_escapes(schema) else None
        self.engine = "fast" if self._rust is not None else "portable"
        # Portable only: a compiled check that vouches for plainly valid calls (see quickcheck).
        self._quick = compile_quick(schema) if self._rust is None else None

    def validate(self, args: Any) -> tuple[ArgumentProblem, ...]:
        """Every problem with ``args``; empty when they are valid."""
        if self._quick is not None and vouches(self._quick, args):
            return ()
        if self._rust is not None:
            try:
                if self._rust.is_valid(args):
                    return ()
            except Exception:  # noqa: BLE001 - e.g. integers beyond 64 bits: let the portable validator judge
                pass
        found = violations(self._python, args)
        if not found and self._rust is not None:
            found = _rust_violations(self._rust, args)
        return tuple(ArgumentProblem(pointer(v.path), v.message) for v in found)


_CLASS_ESCAPES = re.compile(r"\\[sSbBwWdD]")


def _has_class_escapes(schema: Any) -> bool:
    """True when a ``pattern`` uses ``\\s``, ``\\b``, ``\\w`` or ``\\d``: RE2 reads them as ASCII
    classes and Rust's regex as Unicode ones, so such schemas use the portable
    validator alone, keeping one meaning for every pattern."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str) and _CLASS_ESCAPES.search(value):
                return True
            if key == "patternProperties" and isinstance(value, dict) and any(_CLASS_ESCAPES.search(k) for k in value):
                return True
            if _has_class_escapes(value):
                return True
    elif isinstance(schema, list):
        return any(_has_class_escapes(item) for item in schema)
    return False


def _rust_validator(schema: Mapping[str, Any]) -> Any:
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(
            dict(schema), validate_formats=False, pattern_options=jsonschema_rs.RegexOptions()
        )
    except Exception:  # noqa: BLE001 - a schema jsonschema-rs cannot build: fall back to the portable validator
        return None


def _rust_violations(validator: Any, args: Any) -> list[Violation]:
    found = []
    for error in validator.iter_errors(args):
        path = tuple(error.instance_path)
        where = f"`{'.'.join(str(p) for p in path)}`" if path else "the arguments"
        found.append(Violation(path, "schema", f"{where}: {error.message}"))
    return found
