"""The ``RedactionProfile`` and ``OutputProfile`` kinds."""

from __future__ import annotations

from pydantic import Field

from runtime.config.models.base import Name, OutputSettings, _Model
from runtime.shaping.compiled import Validator  # (defined there: the audit child reads it without pydantic)


class RedactionPattern(_Model):
    name: Name
    regex: str = Field(min_length=1, max_length=4000, description="RE2 syntax: no look-arounds or back-references.")
    replacement: str | None = Field(default=None, max_length=200, description="Default: [REDACTED:<name>].")
    validator: Validator | None = None
    case_insensitive: bool = False
    keep: bool = Field(
        default=False,
        description=(
            "A look-alike, not a secret: its matches are left as they are, and matches of the patterns in `shields` "
            "that start inside one are left too (an ssh remote is not an email address). Every other pattern still "
            "applies inside it."
        ),
    )
    shields: list[Name] = Field(
        default_factory=list, description="With keep: the patterns of this profile that this look-alike protects."
    )
    value_only: bool = Field(
        default=False,
        description=(
            "For `<name> <separator> <value>` patterns: the name, the separator (`:`, `=`, `:=`, `=>`) and quotes "
            'stay, only the value is replaced (password: "[REDACTED:...]"); a token at the value\'s start keeps its '
            "own pattern's name."
        ),
    )


class RedactionProfileSpec(_Model):
    patterns: list[RedactionPattern] = Field(min_length=1, max_length=500)
    secret_keys: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        description=(
            "RE2 pattern, case-insensitive, matched against whole keys of structured data (results, structuredContent, "
            "audited arguments): the value under a matching key is redacted whatever it looks like (null, booleans, "
            "empty strings and references such as ${VAR} are kept)."
        ),
    )


class OutputProfileSpec(OutputSettings):
    pass
