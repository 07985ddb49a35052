"""What each lint code means and how to fix it: the help text of SARIF rules.

Codes are stable (tests, suppressions and code-scanning alerts key on them). A code
missing here still renders, with a generic text; add one line per new code.
"""

from __future__ import annotations

#: code -> (short description, how to fix it)
HELP: dict[str, tuple[str, str]] = {
    "cel-syntax": ("CEL that does not parse.", "Fix the expression at the position shown."),
    "cel-undeclared": (
        "A CEL name that is not a variable here.",
        "Use args, tool, session, call (and commands in policies).",
    ),
    "cel-unknown-arg": (
        "A field the input schema does not declare.",
        "Use a declared field, or declare it in input_schema.",
    ),
    "cel-type": (
        "CEL operands of types that fail, or never compare equal, at run time.",
        "Compare values of one type; convert with int(), double(), string().",
    ),
    "cel-result-type": (
        "A rule or condition that is not a bool (fail-open), or a reason that is not a string.",
        "Write a comparison or a test.",
    ),
    "cel-optional": (
        "An optional field or map key read without has().",
        "Guard the read: has(args.x) && ..., or require the field.",
    ),
    "cel-nullable": ("A nullable field used where null fails.", "Guard it: args.x != null && ..."),
    "cel-cost": (
        "A CEL expression whose worst case exceeds cel_cost_limit.",
        "Add maxItems/maxLength/maxProperties to the schema, or simplify.",
    ),
    "cel-time": (
        "A CEL expression whose worst case would run past cel_time_limit_ms on the portable engine.",
        "Lower the schema bound it names to the value it names, or raise cel_time_limit_ms.",
    ),
    "cel-too-complex": ("Comprehensions or brackets nested too deep.", "Split the expression into several rules."),
    "cel-unchecked": ("CEL syntax lint cannot type.", "Rewrite it with standard operators, functions and macros."),
    "regex-invalid": ("A pattern RE2 cannot compile.", "Fix the pattern."),
    "regex-unsupported": (
        "A pattern feature RE2 does not have (look-around, back-reference).",
        "Rewrite the pattern without it.",
    ),
    "regex-catastrophic": ("A pattern with nested unbounded quantifiers.", "Remove the nesting, e.g. (a+)+ -> a+."),
    "retry-unsafe": (
        "retry on a tool that is never retried (neither read_only nor idempotent).",
        "Mark it idempotent if a repeat is harmless, or drop retry.",
    ),
    "schema-default-unused": (
        "A default on a required field, never used.",
        "Drop the default or the field from required.",
    ),
    "schema-unknown-keyword": (
        "An input-schema keyword that checks nothing.",
        "Use the keyword meant (did you mean ...).",
    ),
    "unknown-key": ("A key the document kind does not have.", "Use the key meant (did you mean ...)."),
    "missing-key": ("A required key is missing.", "Add the key."),
    "unknown-tool": ("A reference to a tool that is not declared.", "Declare the tool, or fix the name."),
}


def help_for(code: str) -> tuple[str, str]:
    """(short description, fix) for ``code``."""
    return HELP.get(code, (f"toolrt lint finding `{code}`.", "See the message, and the README's table of lint codes."))
