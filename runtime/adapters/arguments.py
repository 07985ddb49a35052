"""Stage 01 helpers: turn a provider's tool arguments into a dict, or say what is wrong.

OpenAI sends arguments as a JSON *string* the model wrote token by token, so it can
be anything: bad JSON, a list, ``NaN``, megabytes of text, ten thousand nested
brackets, lone UTF-16 surrogates. Anthropic sends an already-decoded ``input``
object, which still deserves the same checks. Both functions here never raise: they
return an error message the model can act on instead.

Rules (the same for both entry points):

- the arguments must be a JSON object; ``None``, ``""`` (and whitespace) mean ``{}``,
  which is what OpenAI sends for a tool without parameters;
- at most ``max_bytes`` (UTF-8 bytes of the raw string; characters of the strings
  and keys of a decoded object) and at most ``max_depth`` nested arrays/objects. The
  depth is measured without recursion, so ten thousand ``[`` give a clean error;
- no ``NaN``, ``Infinity``, ``-Infinity``, no number that overflows a double, no
  integer longer than Python converts (4,300 digits), no repeated key in one object;
- no lone surrogate (``"\\ud800"``) in a string or key: it cannot be encoded as UTF-8
  and would break every later stage. The message gives the JSON pointer of the value;
- NUL characters and raw control characters inside strings are accepted (tools decide
  what a path with a NUL means; a raw newline inside a string is a common and
  unambiguous model slip).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

MAX_BYTES = 1_000_000
MAX_DEPTH = 64

_EXCERPT_CHARS = 30
_POINTER_CHARS = 200
# A JSON string literal, unrolled-loop form (linear, no nested quantifier blow-up).
_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")
_BRACKET_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_CONTROL_RE = re.compile("[\x00-\x1f\x7f]")


class _Bad:
    """A value json.loads could parse but JSON does not allow; reported with its pointer."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text


def decode_arguments(
    raw: str | None, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> tuple[dict[str, Any] | None, str | None]:
    """Decode an OpenAI argument string: ``(args, None)`` or ``(None, message)``.

    The message says what is wrong and where, e.g.
    ``arguments are not valid JSON: Expecting ',' delimiter at line 1 column 14: ...`{"path": "a" "b"}`...``.
    """
    try:
        return _decode(raw, max_bytes, max_depth, None)
    except Exception as err:  # noqa: BLE001 - a model's text must never raise out of stage 01
        return None, f"arguments could not be decoded: {type(err).__name__}"


def decode_noting_nulls(raw: str | None) -> tuple[dict[str, Any] | None, str | None, bool]:
    """:func:`decode_arguments` (default limits), and whether the arguments may hold a
    ``null`` (False only when the check of every value found none), so that a parser
    undoing strict mode's nulls need not walk them again."""
    nulls: list[Any] = []
    try:
        args, problem = _decode(raw, MAX_BYTES, MAX_DEPTH, nulls)
    except Exception as err:  # noqa: BLE001 - a model's text must never raise out of stage 01
        return None, f"arguments could not be decoded: {type(err).__name__}", True
    return args, problem, bool(nulls)


def check_object(value: Any, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> str | None:
    """Check already-decoded arguments (Anthropic ``input``): None when fine, else a message.

    Applies the same rules as :func:`decode_arguments`: a JSON object, not too deep,
    not too large, only JSON values, finite numbers, no lone surrogates.
    """
    try:
        if not isinstance(value, Mapping):
            return _not_object(value)
        return _walk(value, max_bytes=max_bytes, max_depth=max_depth)
    except Exception as err:  # noqa: BLE001 - a hostile object (a broken __iter__...) must not raise
        return f"arguments could not be checked: {type(err).__name__}"


# ---------------------------------------------------------------------------


def _decode(
    raw: Any, max_bytes: int, max_depth: int, nulls: list[Any] | None
) -> tuple[dict[str, Any] | None, str | None]:
    """``nulls`` (when given) receives a mark for every ``null`` found, or one for
    arguments it could not follow (already decoded by the client)."""
    if raw is None:
        return {}, None
    if type(raw) is not str and isinstance(raw, Mapping):  # some clients hand over arguments already decoded
        if nulls is not None:
            nulls.append(None)  # not walked by the fast checks below: assume it may hold one
        problem = check_object(raw, max_bytes=max_bytes, max_depth=max_depth)
        return (None, problem) if problem else (dict(raw), None)
    if isinstance(raw, bytes | bytearray):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as err:
            return None, f"arguments are not valid UTF-8 (byte {err.start})"
    if not isinstance(raw, str):
        return None, f"arguments must be a JSON string, got {type(raw).__name__}"
    if not raw.strip():
        return {}, None
    if len(raw) > max_bytes or (len(raw) * 4 > max_bytes and len(raw.encode("utf-8", "surrogatepass")) > max_bytes):
        # A character is 1 to 4 bytes: only the uncertain middle needs encoding.
        return None, (
            f"arguments are too large: {len(raw):,} characters, the limit is {max_bytes:,} bytes; "
            "pass large content by reference (a file path) or in smaller pieces"
        )
    depth = _bracket_depth(raw, max_depth)
    if depth > max_depth:
        return None, _too_deep(depth, max_depth)
    if raw.isascii() and "\\u" not in raw:
        plain = _plain_object(raw)
        if plain is not None:
            if nulls is not None and "null" in raw and _holds_null(plain):
                nulls.append(None)
            return plain, None
    try:
        value = _decoder().decode(raw)
    except json.JSONDecodeError as err:
        return (
            None,
            f"arguments are not valid JSON: {err.msg} at line {err.lineno} column {err.colno}:"
            f" ...`{_excerpt(err.doc, err.pos)}`...",
        )
    except RecursionError:  # a backstop: the bracket scan above should have caught it
        return None, _too_deep(max_depth + 1, max_depth)
    if isinstance(value, _Bad) and value.kind == "duplicate":
        return None, _bad_message(value, _pointer(()))
    if not isinstance(value, dict):
        return None, _not_object(value)
    # Bounded: raw is at most max_bytes characters long (checked above).
    problem = _walk(value, max_bytes=max_bytes, max_depth=max_depth, nulls=nulls, bounded=True)
    return (None, problem) if problem else (value, None)


@functools.cache
def _decoder() -> json.JSONDecoder:
    """One decoder with the hooks below, made once (json.loads would make one per call)."""
    return json.JSONDecoder(
        strict=False, parse_constant=_constant, parse_float=_float, parse_int=_int, object_pairs_hook=_object
    )


class _Unsure(Exception):
    """Raised by the plain decoder's hooks: a value only the full decoder can word."""


def _unsure(_text: str) -> Any:
    raise _Unsure


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unsure
    return value


# Integers and objects stay on the C scanner's own path here (a hook is a Python call
# per value); only floats and the NaN/Infinity constants, rare in arguments, are hooked.
_PLAIN = json.JSONDecoder(strict=False, parse_constant=_unsure, parse_float=_finite)


def _plain_object(raw: str) -> dict[str, Any] | None:
    """The arguments of the usual call, decoded without any per-value check; None
    whenever one could find something (then the full decoder and walk run).

    The caller has checked that ``raw`` is ASCII without a ``\\u`` escape (so no
    string can hold a surrogate or count more than it takes in ``raw``, which is
    within the size limit) and within the depth limit. The hooks reject NaN,
    Infinity and overflowing floats; an integer too long to convert raises. A repeated
    key is ruled out by counting: every key is followed by a colon, so a single object
    with as many keys as ``raw`` has colons cannot have lost one to a repeat (a colon
    inside a string only makes the count disagree, and the full decoder decides)."""
    try:
        value = _PLAIN.decode(raw)
    except (ValueError, _Unsure):  # a syntax error, or a value the full decoder words
        return None
    if type(value) is not dict or raw.count("{") != 1 or raw.count(":") != len(value):
        return None
    return value


def quick_decode(raw: Any) -> tuple[dict[str, Any], bool] | None:
    """The usual arguments (one ASCII object of plain values, ``{`` first and ``}``
    last, within the default limits), decoded as :func:`decode_noting_nulls` decodes
    them: ``(args, may hold a null)``; None for anything else, which then takes that
    function's whole way. What :func:`decode_noting_nulls` does before the plain
    decoder, and the decoder's own Python wrapper, are done here in a few tests: the C
    scanner is called directly, and only a scan that ends at the last character counts
    (the full decoder would find nothing else to say about such a text)."""
    # The text tests are operators where they can be (a method call such as count()
    # costs several times more on a text this short).
    if (
        type(raw) is not str
        or not raw.isascii()
        or raw[:1] != "{"
        or "{" in raw[1:]  # one object (the plain decoder's condition), and so not too deep:
        or (len(raw) > _SURELY_SHALLOW and raw.count("[") >= MAX_DEPTH)  # brackets, "{" one of them, at most max_depth
        or len(raw) > MAX_BYTES
        or "\\u" in raw
    ):
        return None
    try:
        value, end = _PLAIN_SCAN(raw, 0)
    except (ValueError, StopIteration, _Unsure):  # not JSON, or a value the full decoder words
        return None
    if end != len(raw) or type(value) is not dict or raw.count(":") != len(value):
        return None
    return value, "null" in raw and _holds_null(value)


_PLAIN_SCAN: Any = _PLAIN.scan_once  # type: ignore[attr-defined]  # the C scanner the decoder made
# A text that scans as one object has as many "]" as "[" outside its strings, so one no
# longer than this has fewer than MAX_DEPTH of them there (and the ones inside strings
# do not nest): it is within the depth limit without counting. Longer texts are counted.
_SURELY_SHALLOW = 2 * MAX_DEPTH + 1


def _holds_null(value: dict[str, Any]) -> bool:
    """Whether a single object of plain decoded values holds a ``null`` (in a nested
    list of lists: assumed to)."""
    for item in value.values():
        if item is None or (type(item) is list and (None in item or list in map(type, item))):
            return True
    return False


def _bracket_depth(raw: str, max_depth: int) -> int:
    """Deepest nesting of arrays/objects in ``raw``, by a linear scan (no recursion).

    Brackets inside string literals do not count. On malformed JSON the answer is an
    estimate; json.loads reports the syntax error when the estimate is within limits.
    """
    if raw.count("[") + raw.count("{") <= max_depth:
        return 0  # cannot be deeper than the number of opening brackets
    brackets = _NOT_BRACKET_RE.sub("", _STRING_RE.sub("", raw))
    if not brackets:
        return 0
    return max(accumulate(map(_BRACKET_DELTA.__getitem__, brackets)))


def _too_deep(depth: int, max_depth: int) -> str:
    return (
        f"arguments are nested too deeply ({depth:,} levels of arrays/objects, the limit is {max_depth});"
        " send a flatter structure"
    )


def _constant(text: str) -> _Bad:
    return _Bad("constant", text)


def _float(text: str) -> float | _Bad:
    value = float(text)
    return value if math.isfinite(value) else _Bad("overflow", text)


def _int(text: str) -> int | _Bad:
    try:
        return int(text)
    except ValueError:  # longer than sys.get_int_max_str_digits()
        return _Bad("digits", text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Bad:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                return _Bad("duplicate", key)
            seen.add(key)
    return result


def _excerpt(doc: str, pos: int) -> str:
    start = max(0, pos - _EXCERPT_CHARS)
    return printable(doc[start : pos + _EXCERPT_CHARS])


def printable(text: str) -> str:
    """``text`` safe to quote in a message: control characters and lone surrogates escaped."""
    text = _CONTROL_RE.sub(lambda m: json.dumps(m.group())[1:-1], text)
    return _SURROGATE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _pointer(path: tuple[str | int, ...]) -> str:
    """RFC 6901 pointer of ``path`` (printable), or "the top level" for the root."""
    if not path:
        return "the top level"
    text = printable("".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path))
    return text if len(text) <= _POINTER_CHARS else text[: _POINTER_CHARS - 3] + "..."


_JSON_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _type_name(value: Any) -> str:
    if isinstance(value, _Bad):
        return value.text if value.kind == "constant" else "a number"
    for kind, name in _JSON_NAMES.items():
        if type(value) is kind:
            return name
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _not_object(value: Any) -> str:
    return f'arguments must be a JSON object such as {{"name": value}}, got {_type_name(value)}'


def _bad_message(bad: _Bad, where: str) -> str:
    if bad.kind == "constant":
        return (
            f"arguments contain {bad.text} at {where}, which is not a JSON number;"
            " use a finite number, null or a string"
        )
    if bad.kind == "overflow":
        return f"the number {printable(bad.text[:40])} at {where} is too large (it overflows a 64-bit float)"
    if bad.kind == "digits":
        return (
            f"the integer at {where} has {len(bad.text.lstrip('-')):,} digits, too many to convert; send it as a string"
        )
    return f'the object at {where} repeats the key "{printable(bad.text[:100])}"; send each key once'


def _walk(
    root: Any, *, max_bytes: int, max_depth: int, nulls: list[Any] | None = None, bounded: bool = False
) -> str | None:
    """Check every value under ``root`` iteratively; the first problem, or None.
    ``nulls`` (when given) receives a mark for every ``null`` met on the way, and for
    any value that is not plain decoded JSON. ``bounded``: the values cannot add up to
    more than ``max_bytes`` (decoded from a text no longer than that: every string,
    key and bracket takes at least as many characters there as it counts here), so an
    ASCII string can raise no problem at all and is settled where it is met.

    Runs on every parsed call, so the JSON types are tested by exact type first (an
    ``isinstance`` against ``Mapping``, an abstract base class, costs several times
    more) and a value's path is kept as a link to its parent's, made into a pointer
    only when there is a problem to report."""
    size = 0
    stack: list[tuple[Any, int, _Link]] = [(root, 1, None)]
    while stack:
        value, depth, link = stack.pop()
        kind = type(value)
        if kind is str:
            size += len(value)
            if size > max_bytes:
                return _TOO_MUCH_TEXT.format(max_bytes)
            if not value.isascii():
                problem = _surrogate(value, _path(link), "")
                if problem:
                    return problem
            continue
        if kind is int or kind is bool:
            continue
        if value is None:
            if nulls is not None:
                nulls.append(None)
            continue
        if kind is dict or kind is list:
            if depth > max_depth:
                return _too_deep(depth, max_depth) + f" (at {_pointer(_path(link))})"
            if kind is dict:
                for key, item in value.items():
                    if type(key) is not str:
                        problem = _key_problem(key, link)
                        if problem:
                            return problem
                    size += len(key) + 1
                    if not key.isascii():
                        problem = _surrogate(key, (*_path(link), key), " in a key")
                        if problem:
                            return problem
                    # The commonest values, which no check can fault, are settled here
                    # instead of going through the stack (see `bounded` for strings).
                    of = type(item)
                    if of is int or of is bool:
                        continue
                    if item is None:
                        if nulls is not None:
                            nulls.append(None)
                        continue
                    if bounded and of is str and item.isascii():
                        size += len(item)
                        continue
                    stack.append((item, depth + 1, (link, key)))
            else:
                for index, item in enumerate(value):
                    of = type(item)
                    if of is int or of is bool:
                        continue
                    if item is None:
                        if nulls is not None:
                            nulls.append(None)
                        continue
                    if bounded and of is str and item.isascii():
                        size += len(item)
                        continue
                    stack.append((item, depth + 1, (link, index)))
            size += 1
            if size > max_bytes:
                return (
                    f"arguments are too large: more than {max_bytes:,} characters;"
                    " pass large content by reference (a file path) or in smaller pieces"
                )
            continue
        # Anything else (a float, a decoding marker, a subclass, a mapping or tuple from
        # an app): the general checks, in the order that decides which problem is told.
        if nulls is not None and kind is not float:
            nulls.append(None)  # not plain decoded JSON: whoever undoes nulls walks it whole
        if isinstance(value, str):
            size += len(value)
            if size > max_bytes:
                return (
                    f"arguments are too large: more than {max_bytes:,} characters of text;"
                    " pass large content by reference (a file path) or in smaller pieces"
                )
            problem = _surrogate(value, _path(link), "")
            if problem:
                return problem
            continue
        if isinstance(value, bool | int):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                return (
                    f"arguments contain {_non_finite(value)} at {_pointer(_path(link))}, which is not a JSON number;"
                    " use a finite number, null or a string"
                )
            continue
        if isinstance(value, _Bad):
            return _bad_message(value, _pointer(_path(link)))
        if depth > max_depth:
            return _too_deep(depth, max_depth) + f" (at {_pointer(_path(link))})"
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    return (
                        f"the object at {_pointer(_path(link))} has a key that is not a string ({type(key).__name__})"
                    )
                size += len(key) + 1
                problem = _surrogate(key, (*_path(link), key), " in a key")
                if problem:
                    return problem
                stack.append((item, depth + 1, (link, key)))
            size += 1
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1, (link, i)) for i, item in enumerate(value))
            size += 1
        else:
            return f"arguments contain a {type(value).__name__} at {_pointer(_path(link))}, which is not a JSON value"
        if size > max_bytes:
            return (
                f"arguments are too large: more than {max_bytes:,} characters;"
                " pass large content by reference (a file path) or in smaller pieces"
            )
    return None


_TOO_MUCH_TEXT = (
    "arguments are too large: more than {:,} characters of text; pass large content by reference (a file path) or "
    "in smaller pieces"
)

#: A value's place in the arguments: None for the top, else (the parent's link, key or index).
_Link = tuple[Any, str | int] | None


def _path(link: _Link) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))


def _key_problem(key: Any, link: _Link) -> str | None:
    """A problem with a dict key that is not exactly a str (a str subclass is fine)."""
    if isinstance(key, str):
        return None
    return f"the object at {_pointer(_path(link))} has a key that is not a string ({type(key).__name__})"


def _surrogate(text: str, path: tuple[str | int, ...], where: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        char = text[err.start]
        return (
            f"arguments contain a lone UTF-16 surrogate (\\u{ord(char):04x}){where} at {_pointer(path)}; "
            "send valid Unicode text (a \\ud800-\\udbff escape must be followed by a \\udc00-\\udfff one)"
        )
    return None


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
