"""Checks that tell a secret from something that only names one.

``password: hunter2`` holds a secret; ``password: ${DB_PASSWORD}``, ``password:
null``, ``api_key = os.environ["API_KEY"]`` and ``password = getpass()`` only point
at one, and redacting them hides what the code does without protecting anything.
The redaction patterns find every ``<secret-looking key> <separator> <value>``; these
functions (validators, see :mod:`runtime.shaping.validators`) keep the references.

A line of base64 may be the body of a private key printed without its armor lines
(a ``grep`` hit, a window of a file): :func:`key_body` tells random base64 from
hashes, identifiers and words. Every function takes the matched text and returns a
bool; none raises.
"""

from __future__ import annotations

import re
import string

# Values that say "no value here" or "look elsewhere".
# An opening brace or bracket is structure (the value is a nested object), not a secret.
_NULLISH = frozenset(
    {
        "",
        "null",
        "none",
        "nil",
        "undefined",
        "true",
        "false",
        "~",
        "-",
        "{",
        "[",
        "{}",
        "[]",
        "required",
        "optional",
        "string",
        "str",
    }
)
# `key` + separator, then the value: the key has no separator character of its own.
_ASSIGNMENT = re.compile(r"[^:=\s]*?[ \t]*(?::=|=>|:|=|[ \t])[ \t]*(.*)\Z", re.S)
_SCHEME = re.compile(r"(?i)(?:basic|bearer|digest|token|negotiate|ntlm)[ \t]+")
# An expression in code: a name followed by attribute access, an index or a call
# (os.environ["X"], settings.SECRET_KEY, getpass(), process.env.TOKEN).
_EXPRESSION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(.*|\[.*)?|\(.*|\[.*)\Z", re.S)
_MASKED = re.compile(r"[*xX•#.?]{3,}\Z|\[REDACTED[^\]]*\]?\Z|<[^<>]*>?\Z|\{\{.*|%[A-Za-z_]+%?\Z", re.S)
_QUOTES = "\"'`\\"


def is_reference(value: str, *, quoted: bool = False) -> bool:
    """Whether ``value`` (a value under a secret-looking key, quotes removed) only names
    a secret: empty, null-like, a variable (``$X``, ``${X}``, ``%X%``, ``{{ x }}``), a
    placeholder (``<password>``, ``***``, ``[REDACTED]``) or, unquoted, an expression
    in code (``os.environ["X"]``, ``getpass()``)."""
    text = value.strip()
    if not any(char.isalnum() for char in text):
        return True  # punctuation only: the end of a call or a structure, not a value
    if text.lower() in _NULLISH or text[:1] == "$" or _MASKED.match(text):
        return True
    return not quoted and _EXPRESSION.match(text) is not None


_OPENING = re.compile(r'\\"|["\'`]')


def value_span(candidate: str) -> tuple[int, int] | None:
    """Where the value of a ``<name> <separator> <value>`` match is: after the separator,
    the spaces and an opening quote (also ``\\"`` in escaped JSON), before the matching
    closing quote. None when the candidate has no such shape (or an empty value)."""
    found = _ASSIGNMENT.match(candidate)
    if found is None:
        return None
    start, end = found.start(1), len(candidate)
    quote = _OPENING.match(candidate, start)
    if quote is not None:
        start = quote.end()
        if end - start >= len(quote.group()) and candidate.endswith(quote.group()):
            end -= len(quote.group())
    return (start, end) if end > start else None


def assigned_secret(candidate: str) -> bool:
    """Validator for ``key: value`` matches: True (redact) unless the value is a reference."""
    found = _ASSIGNMENT.match(candidate)
    if found is None:
        return True  # a shape we do not understand: redact to be safe
    value = found.group(1)
    quoted = value[:1] in _QUOTES
    value = value.strip(_QUOTES + " \t")
    scheme = _SCHEME.match(value)
    if scheme is not None:
        value = value[scheme.end() :].strip(_QUOTES)
    return not is_reference(value, quoted=quoted)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{20,}")
_HEX = frozenset("0123456789abcdefABCDEF")


def key_body(candidate: str) -> bool:
    """Validator for a line of 40+ base64 characters: True when its longest base64 run
    looks random (digits, both cases, frequent case changes), as a key's body does.

    A hash in hex, a long identifier or a word joined to others stays: each fails one
    of the tests. A random 64-character base64 line passes all of them with
    overwhelming probability.
    """
    runs = _BASE64_RUN.findall(candidate)
    if not runs:
        return False
    run = max(runs, key=len)
    if _HEX.issuperset(run):
        return False
    # One C-level pass maps each character to its class; counting is then C-level too
    # (called for every 40+ character base64 line of an output: it must be cheap).
    classes = run.translate(_CLASSES)
    if classes.count("d") < 2 or classes.count("U") < 4 or classes.count("l") < 4:
        return False
    switches = classes.count("Ul") + classes.count("lU")
    return switches * 8 >= len(run)


_CLASSES = str.maketrans(
    {
        **dict.fromkeys(string.ascii_uppercase, "U"),
        **dict.fromkeys(string.ascii_lowercase, "l"),
        **dict.fromkeys(string.digits, "d"),
        "+": "p",
        "/": "p",
    }
)


def phone_digits(candidate: str) -> bool:
    """Validator for international phone numbers: 8 to 15 digits (E.164), and at least
    10 when written without any separator (``+3600000`` is an offset, not a number)."""
    digits = sum(char.isdigit() for char in candidate)
    if not 8 <= digits <= 15:
        return False
    separated = any(char in " -.()" for char in candidate.strip())
    return separated or digits >= 10
