"""Option values that name files only in some forms (curl ``@FILE``, tar ``--newer``), and
curl's URL globs: part of the per-program table (:mod:`runtime.policy.program_table`)."""

from __future__ import annotations

from collections.abc import Callable

# -- values that name files only in some forms ---------------------------------------------


def at_file(value: str) -> tuple[str, ...]:
    """``@FILE`` (curl -d, -H, --json, -w): the file after the ``@``; other values are text."""
    return (value[1:],) if value.startswith("@") and len(value) > 1 else ()


def encoded_file(value: str) -> tuple[str, ...]:
    """curl --data-urlencode and --url-query: ``@FILE`` or ``NAME@FILE`` read a file;
    ``NAME=text``, ``=text`` and ``+text`` are text."""
    if value.startswith("+"):
        return ()
    at, equals = value.find("@"), value.find("=")
    if at < 0 or (0 <= equals < at):
        return ()
    return (value[at + 1 :],) if at + 1 < len(value) else ()


def form_file(value: str) -> tuple[str, ...]:
    """curl -F ``NAME=@FILE[;type=...]`` uploads FILE, ``NAME=<FILE`` sends its text;
    several files may be listed with commas. A quoted name is taken whole."""
    name, equals, content = value.partition("=")
    if not equals or content[:1] not in ("@", "<"):
        return ()
    rest = content[1:]
    if rest.startswith('"'):
        close = rest.find('"', 1)
        return (rest[1:close] if close > 0 else rest[1:],)
    rest = rest.split(";", 1)[0]
    return tuple(part for part in rest.split(",") if part) or ()


#: How many URLs a curl glob may stand for before it counts as unknown.
_MAX_URL_GLOBS = 256


def curl_globs(text: str) -> list[str] | None:
    """The URLs curl makes of ``text`` (``{a,b}`` lists, ``[a-z]``/``[1-9:2]`` ranges);
    None when they are more than :data:`_MAX_URL_GLOBS` or cannot be read."""
    results = [""]
    i = 0
    while i < len(text):
        char = text[i]
        choices: list[str]
        if char == "\\" and i + 1 < len(text):
            choices, i = [text[i + 1]], i + 2
        elif char in "{[":
            close = text.find("}" if char == "{" else "]", i)
            if close < 0:
                return None
            body = text[i + 1 : close]
            found = body.split(",") if char == "{" else _curl_range(body)
            if found is None:
                return None
            choices, i = found, close + 1
        else:
            choices, i = [char], i + 1
        if len(results) * len(choices) > _MAX_URL_GLOBS:
            return None
        results = [done + choice for done in results for choice in choices]
    return results


def _curl_range(body: str) -> list[str] | None:
    spec, _, step_text = body.partition(":")
    first, dash, last = spec.partition("-")
    if not dash:
        return None
    step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else 1
    if first.isdigit() and last.isdigit():
        low, high = int(first), int(last)
        if high < low or (high - low) // step >= _MAX_URL_GLOBS:
            return None
        width = len(first) if first.startswith("0") else 0
        return [str(n).zfill(width) for n in range(low, high + 1, step)]
    if len(first) == 1 and len(last) == 1 and first.isalpha() and last.isalpha() and first <= last:
        return [chr(n) for n in range(ord(first), ord(last) + 1, step)]
    return None


def upload_files(value: str) -> tuple[str, ...]:
    """curl -T: a glob (``{a,b}``, ``[1-3]``) uploads every file it names; one too large to
    list may name any file, ``/`` among them."""
    if "{" not in value and "[" not in value:
        return (value,)
    return tuple(curl_globs(value) or ("/",))


def cookie_file(value: str) -> tuple[str, ...]:
    """curl -b: a value without ``=`` is a file of cookies."""
    return () if "=" in value else (value,)


def variable_file(value: str) -> tuple[str, ...]:
    """curl --variable ``NAME@FILE`` reads FILE."""
    name, at, path = value.partition("@")
    return (path,) if at and "=" not in name and path else ()


def date_or_file(value: str) -> tuple[str, ...]:
    """tar -N/--newer/--mtime, curl -z: a value starting with ``/`` or ``.`` names a file
    (its date is used); a name without either may be one too (curl), so any value counts."""
    return (value,) if value else ()


def or_default(name: str) -> Callable[[str], tuple[str, ...]]:
    """A value that is optional: the file written when it is left out (gawk -d writes awkvars.out)."""
    return lambda value: (value or name,)
