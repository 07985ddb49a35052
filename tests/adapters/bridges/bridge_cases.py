"""What every framework bridge must turn into the framework's own tool result: the
hostile calls a model makes, and the failures of tools, with what the model must read."""

from __future__ import annotations

from pathlib import Path

CONFIG = Path(__file__).resolve().parent / "config"

DEEP = '{"city": ' + "[" * 300 + "]" * 300 + "}"

# (id, tool, raw JSON arguments as the model sent them, words the model must read, words it must not)
HOSTILE: list[tuple[str, str, str, str, str | None]] = [
    ("valid-call-runs", "lookup_city", '{"city": "Oslo"}', '"temp": 21', None),
    (
        "strict-null-for-omitted-optional-is-dropped",
        "lookup_city",
        '{"city": "Oslo", "units": null}',
        '"units": "metric"',
        None,
    ),
    ("bad-json-is-an-error-result", "lookup_city", '{"city": "Oslo"', "not valid JSON", None),
    ("trailing-garbage-is-an-error-result", "lookup_city", '{"city": "Oslo"} and more', "not valid JSON", None),
    ("json-array-is-an-error-result", "lookup_city", '["Oslo"]', "must be a JSON object", None),
    ("json-null-is-an-error-result", "lookup_city", "null", "must be a JSON object", None),
    ("missing-required-argument-is-named", "lookup_city", "{}", "missing required argument `city`", None),
    ("wrong-type-is-named", "lookup_city", '{"city": 5}', "`city` must be a string", None),
    (
        "unknown-argument-is-named",
        "lookup_city",
        '{"city": "Oslo", "planet": "Mars"}',
        "unknown argument `planet`",
        None,
    ),
    (
        "enum-violation-lists-the-choices",
        "lookup_city",
        '{"city": "Oslo", "units": "kelvin"}',
        '"metric", "imperial"',
        None,
    ),
    ("business-rule-message-reaches-the-model", "lookup_city", '{"city": "Atlantis"}', "no weather station", None),
    ("nan-is-refused", "lookup_city", '{"city": NaN}', "NaN", None),
    ("lone-surrogate-is-refused", "lookup_city", '{"city": "\\ud800"}', "surrogate", None),
    ("deep-nesting-is-refused", "lookup_city", DEEP, "64", None),
    ("huge-integer-is-refused", "lookup_city", '{"city": 123456789012345678901234567890}', "64-bit", None),
    ("denied-call-says-why", "erase_disk", "{}", "erasing disks is never allowed", None),
    ("read-timeout-is-a-result", "sleepy", "{}", "timed out", "woke up"),
    ("write-timeout-says-result-unknown", "slow_write", "{}", "Result unknown", "woke up"),
    ("handler-crash-is-a-result", "explode", "{}", "RuntimeError", None),
    ("tool-error-message-reaches-the-model", "refuse", "{}", "ticket 42 not found", None),
    ("secrets-are-redacted", "leak", "{}", "REDACTED", "AKIAABCDEFGHIJKLMNOP"),
]

# Of those, the ones that are errors (the model must be told it failed).
OK_CASES = {"valid-call-runs", "strict-null-for-omitted-optional-is-dropped", "secrets-are-redacted"}


def as_object_cases() -> list[tuple[str, str, dict, str, str | None]]:
    """The cases whose arguments decode to an object: what frameworks that hand tools
    decoded arguments (LangChain, Pydantic AI, MCP) can pass on."""
    import json

    found = []
    for case_id, tool, raw, expected, absent in HOSTILE:
        try:
            args = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(args, dict):
            found.append((case_id, tool, args, expected, absent))
    return found
