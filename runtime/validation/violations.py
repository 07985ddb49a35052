"""Run a jsonschema validator and turn its errors into :class:`Violation` records.

Used for both tool arguments and config documents. For ``anyOf``/``oneOf`` (nullable
fields, handler forms) the branch whose type matches the value is the one explained,
which is what the writer meant in nearly every case.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from runtime.regex import RegexRejected, compile_re2
from runtime.validation.wording import describe, json_type


@dataclass(frozen=True, slots=True)
class Violation:
    """One way an instance breaks a schema."""

    path: tuple[str | int, ...]
    keyword: str
    message: str
    # For unknown keys: the offending key and the keys that are allowed there.
    key: str | None = None


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """``pattern`` with RE2 semantics, so that the portable and fast validators agree."""
    if not validator.is_type(instance, "string"):
        return
    try:
        compiled = compile_re2(pattern)
    except RegexRejected as err:
        yield ValidationError(f"schema pattern {pattern!r} is unusable: {err.message}")
        return
    if compiled.search(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _decimal_multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """``multipleOf`` in decimal arithmetic: 0.3 is a multiple of 0.1 (binary floats say no)."""
    if not validator.is_type(instance, "number"):
        return
    try:
        quotient = Decimal(str(instance)) / Decimal(str(divisor))
        exact = quotient == quotient.to_integral_value()
    except (InvalidOperation, ArithmeticError):
        exact = False
    if not exact:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


Re2Draft202012Validator = jsonschema.validators.extend(
    Draft202012Validator, {"pattern": _re2_pattern, "multipleOf": _decimal_multiple_of}
)


def python_validator(schema: Mapping[str, Any] | bool) -> Any:
    """A compiled jsonschema validator (Draft 2020-12, RE2 patterns, formats as annotations)."""
    return Re2Draft202012Validator(schema)


def violations(validator: Any, instance: Any, root: str = "the arguments") -> list[Violation]:
    """Every violation of ``validator``'s schema by ``instance``, explained."""
    found: dict[tuple[Any, ...], Violation] = {}
    for error in validator.iter_errors(instance):
        for violation in _explain(error, root):
            # jsonschema reports one `required` error per missing name, each carrying
            # the whole list; and a non-object schema can fail several meta-schema
            # branches the same way. Say each thing once.
            found.setdefault((violation.path, violation.keyword, violation.message), violation)
    return list(found.values())


def _explain(error: ValidationError, root: str) -> list[Violation]:
    path = tuple(error.absolute_path)
    keyword = str(error.validator)
    if keyword in ("anyOf", "oneOf") and error.context:
        branch = _matching_branch(error)
        if branch is not None:
            return [v for sub in branch for v in _explain(sub, root)]
        types = _branch_types(error.validator_value)
        if (
            types
            and json_type(error.instance) not in types
            and not (json_type(error.instance) == "integer" and "number" in types)
        ):
            return [Violation(path, "type", describe("type", path, error.instance, types, {}, root))]
        return [Violation(path, keyword, _alternatives(error, keyword, path, root))]
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {})) if isinstance(error.schema, dict) else set()
        extras = [k for k in error.instance if k not in allowed]
        return [
            Violation(
                (*path, k),
                keyword,
                describe(keyword, path, {k: error.instance[k]}, error.validator_value, error.schema, root),
                key=k,
            )
            for k in extras
        ]
    if keyword == "required" and isinstance(error.instance, dict):
        missing = [p for p in error.validator_value if p not in error.instance]
        return [
            Violation(path, keyword, describe(keyword, path, error.instance, [m], error.schema, root), key=m)
            for m in missing
        ]
    if keyword == "false" or error.validator_value is False and keyword == "additionalProperties":
        return [Violation(path, "false", describe("false", path, error.instance, False, error.schema, root))]
    return [
        Violation(path, keyword, describe(keyword, path, error.instance, error.validator_value, error.schema, root))
    ]


def _alternatives(error: ValidationError, keyword: str, path: tuple[str | int, ...], root: str) -> str:
    """ "does not match any of the allowed forms: (1) ...; (2) ..." with each branch's first reason."""
    by_branch: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        index = sub.relative_schema_path[0] if sub.relative_schema_path else -1
        by_branch.setdefault(int(index), []).append(sub)
    reasons = []
    for number, index in enumerate(sorted(by_branch), start=1):
        explained = _explain(by_branch[index][0], root)
        if explained:
            reasons.append(f"({number}) {explained[0].message}")
    head = describe(keyword, path, error.instance, error.validator_value, error.schema, root)
    return f"{head}: {'; '.join(reasons[:5])}" if reasons else head


def _matching_branch(error: ValidationError) -> list[ValidationError] | None:
    """The sub-errors of the branch whose declared type fits the value, if exactly one does."""
    by_branch: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        index = sub.relative_schema_path[0] if sub.relative_schema_path else -1
        by_branch.setdefault(int(index), []).append(sub)
    actual = json_type(error.instance)
    fitting = []
    for index, subs in by_branch.items():
        branch_schema = error.validator_value[index] if 0 <= index < len(error.validator_value) else {}
        if not any(s.validator == "type" and len(s.relative_schema_path) == 2 for s in subs):
            fitting.append(subs)
        elif _declares(branch_schema, actual):
            fitting.append(subs)
    return fitting[0] if len(fitting) == 1 else None


def _declares(schema: Any, actual: str) -> bool:
    declared = schema.get("type") if isinstance(schema, dict) else None
    names = [declared] if isinstance(declared, str) else list(declared or [])
    return actual in names or (actual == "integer" and "number" in names)


def _branch_types(branches: Any) -> list[str]:
    types: list[str] = []
    for branch in branches if isinstance(branches, list) else []:
        declared = branch.get("type") if isinstance(branch, dict) else None
        for name in [declared] if isinstance(declared, str) else list(declared or []):
            if name not in types:
                types.append(name)
    return types
