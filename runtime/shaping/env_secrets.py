"""Secrets of the runtime's own environment, redacted by value wherever they show up.

A ``DB_PASSWORD`` of random letters has no shape a pattern could know: when a handler's
exception quotes its connection string, a command prints its environment or an http
error page echoes a header, only its value gives it away. So the values of the
environment variables whose names look secret (``env_secret_names``, globs matched
without regard to case: ``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*API_KEY*`` ...)
are compiled, at snapshot build, into one redaction profile that every redactor of the
snapshot starts with (every tool's, ``redaction: []`` included, and the audit's). Each
value is matched as written and in the spellings an ordinary program prints it in:
JSON- and Python-escaped, percent-encoded (either case of hex digits, ``+`` for a
space), HTML-escaped, hex, base64 (standard and URL-safe, with and without padding, and
the part of the encoding that does not depend on what precedes the value, so a password
inside ``Basic base64(user:password)`` is found too).

Values shorter than ``env_secret_min_chars`` (default 8) are left out: ``true``,
``1``, ``admin`` would be found in ordinary text everywhere.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import html
import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

from runtime.regex import compile_re2
from runtime.shaping.compiled import CompiledPattern, CompiledRedaction

#: The default ``env_secret_names``.
DEFAULT_NAMES = (
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*SECRET*",
    "*TOKEN*",
    "*API_KEY*",
    "*APIKEY*",
    "*ACCESS_KEY*",
    "*CREDENTIAL*",
    "*PRIVATE_KEY*",
)
PROFILE = "env-secrets"
PATTERN = "env_secret"
_CHUNK_CHARS = 3500  # one pattern's source stays under the 4,000 characters compile_re2 allows
_LONG = 512  # a longer spelling is matched piece by piece (each piece of it shown is redacted)
_PIECE = 128


def secret_values(environ: Mapping[str, str], names: Iterable[str], min_chars: int) -> list[str]:
    """The values of ``environ`` under a name matching one of the ``names`` globs (any
    case), at least ``min_chars`` long, without surrounding blanks, sorted."""
    globs = [glob.upper() for glob in names]
    found = set()
    for name, value in environ.items():
        upper = name.upper()
        if any(fnmatch.fnmatchcase(upper, glob) for glob in globs):
            value = value.strip()
            if len(value) >= min_chars:
                found.add(value)
    return sorted(found)


def spellings(value: str, min_chars: int) -> set[str]:
    """``value`` as written and as programs print it (see the module docstring)."""
    raw = value.encode("utf-8", "surrogateescape")
    found = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1].replace("/", "\\/"),
        repr(value)[1:-1],
        html.escape(value),
        raw.hex(),
        raw.hex().upper(),
    }
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value, safe=""), quote_plus(value)):
        found.add(encoded)
        found.add(re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded))
    for shift in range(3):
        data = b"\0" * shift + raw
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(data).decode("ascii")
            if shift == 0:
                found.add(text)
                found.add(text.rstrip("="))
            # Only the characters made of the value's bits alone: the same whatever
            # precedes it (shift bytes) or follows it.
            begin = -(-shift * 8 // 6)
            end = (shift + len(raw)) * 8 // 6
            found.add(text[begin:end])
    pieces: set[str] = set()
    for spelling in found:
        if len(spelling) > _LONG:
            pieces.update(spelling[i : i + _PIECE] for i in range(0, len(spelling), _PIECE))
        else:
            pieces.add(spelling)
    return {p for p in pieces if len(p) >= min_chars}


def _escape(text: str) -> str:
    """``text`` as a literal in both RE2 and Python syntax (lint parses with both)."""
    out = []
    for char in text:
        if char.isalnum() or char == " " or ord(char) >= 0x80:
            out.append(char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append("\\" + char)
    return "".join(out)


def env_secret_profile(
    environ: Mapping[str, str], names: Iterable[str], min_chars: int
) -> tuple[CompiledRedaction | None, str]:
    """The profile redacting the secret-named values of ``environ`` (None when there is
    none), and a digest of those values (for cache keys; it says nothing about them)."""
    values = secret_values(environ, names, min_chars)
    digest = hashlib.sha256("\0".join(values).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    if not values:
        return None, digest
    literals = sorted({_escape(s) for v in values for s in spellings(v, min_chars)}, key=lambda s: (-len(s), s))
    chunks: list[list[str]] = [[]]
    size = 0
    for literal in literals:
        if size + len(literal) + 1 > _CHUNK_CHARS and chunks[-1]:
            chunks.append([])
            size = 0
        chunks[-1].append(literal)
        size += len(literal) + 1
    mark = f"[REDACTED:{PATTERN}]"
    patterns = tuple(CompiledPattern(PATTERN, compile_re2("|".join(chunk)), mark, None) for chunk in chunks)
    return CompiledRedaction(PROFILE, patterns, None), digest
