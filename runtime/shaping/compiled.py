"""A compiled redaction profile's parts, in a module that imports nothing heavy.

The snapshot (:mod:`runtime.snapshot`) holds these and re-exports them; they live here
so that what redacts without a snapshot (the audit writer child, which rebuilds the
profiles it is sent) does not import the config models, the policy engine and the
rest of the snapshot's world to start.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Validator(str, Enum):
    """Checks a candidate match must pass before it is redacted."""

    luhn = "luhn"
    iban = "iban"
    cn_resident_id = "cn_resident_id"
    assigned_secret = "assigned_secret"
    key_body = "key_body"
    phone_digits = "phone_digits"


@dataclass(frozen=True, slots=True)
class CompiledPattern:
    name: str
    regex: Any  # a compiled RE2 pattern
    replacement: str
    validator: Validator | None
    keep: bool = False  # a look-alike: matched text stays as it is
    shields: frozenset[str] = frozenset()  # with keep: the patterns whose matches starting inside it are left alone
    value_only: bool = False  # <name> <separator> <value>: only the value is replaced


@dataclass(frozen=True, slots=True)
class CompiledRedaction:
    """A redaction profile: its patterns, and one RE2 alternation of all of them
    (one linear scan of the text finds every candidate)."""

    name: str
    patterns: tuple[CompiledPattern, ...]
    combined: Any
    secret_keys: str | None = None  # RE2 source: structured data's keys whose values are secrets
