"""Compact JSON text for the audit log, through one C encoder made once.

``json.JSONEncoder.encode`` builds a new C encoder on every call (about 1.5 us, more
than encoding a call's arguments costs); the audit writer encodes three times per
record, so :func:`compact` keeps one. Its text is exactly ``JSONEncoder(ensure_ascii=
False, separators=(",", ":"), allow_nan=False).encode(value)``, which the hash chain and
the JSON-lines log were written with: non-ASCII kept as is, NaN and the infinities
refused (ValueError). Cycles are not looked for: a cyclic value fails with
RecursionError instead of ValueError (callers catch both).

With orjson installed (the ``fast`` extra), plain values are encoded by it instead:
about a tenth of the standard encoder's instructions for a call's arguments or a
stored row, which the writer thread encodes for every record. Only values whose text
is proven the same take that path (:func:`_plain`): dicts with string keys, lists,
tuples, strings, ints, booleans, None, and floats written without an exponent
(``0`` and ``1e-4 <= |x| < 1e16``: there orjson and ``repr`` give the same digits, and
outside it their exponents are spelled differently), every one of exactly those types.
Anything else (a subclass, an Enum, a NaN, a lone surrogate, an int beyond 64 bits,
nesting past orjson's limit) is encoded as before. ``tests/audit/test_jsontext_fast.py``
holds the two encoders side by side over hostile values.
"""

from __future__ import annotations

import json
import json.encoder
from typing import Any

try:
    import orjson
except ImportError:  # the portable install: the standard encoder alone
    orjson = None  # type: ignore[assignment]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # None without the C accelerator
_encode_basestring = json.encoder.encode_basestring

if _c_make_encoder is not None:
    # markers=None: no cycle check (a dict per call); indent None, not sorted, no skipped keys, allow_nan False.
    _ITERENCODE = _c_make_encoder(None, _ENCODER.default, _encode_basestring, None, ":", ",", False, False, False)

    def _standard(value: Any) -> str:
        return "".join(_ITERENCODE(value, 0))

else:  # pragma: no cover

    def _standard(value: Any) -> str:
        return _ENCODER.encode(value)


_DUMPS = orjson.dumps if orjson is not None else None
_NONE = type(None)
# Leaf types whose orjson text is the standard encoder's, whatever their value (an int
# beyond 64 bits makes orjson raise, and the standard encoder is used).
_SAME_LEAVES = frozenset({str, int, bool, _NONE})
_STR = frozenset({str})
_MAX_DEPTH = 200  # orjson refuses deeper nesting (254 levels); deeper values go the standard way

#: orjson's ``dumps`` when it is installed (else None), and the leaf types whose orjson text
#: is always the standard encoder's: for callers that know where their floats are and
#: check the rest in C (:func:`runtime.audit.chain.row_body`).
ORJSON_DUMPS = _DUMPS
EXACT_LEAVES = _SAME_LEAVES


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether orjson writes ``value`` exactly as the standard encoder does (see the
    module docstring). The usual flat object or row is settled by one set of its
    value types, made in C; only containers and floats are looked at one by one."""
    kind = type(value)
    if kind is dict:
        if not _STR.issuperset(map(type, value)):
            return False  # the standard encoder turns int, float, bool and None keys into text
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return kind in _SAME_LEAVES or (kind is float and _plain_float(value))
    if depth >= _MAX_DEPTH:
        return False
    if _SAME_LEAVES.issuperset(map(type, items)):
        return True
    for item in items:
        kind = type(item)
        if kind in _SAME_LEAVES:
            continue
        if kind is float:
            if not _plain_float(item):
                return False
        elif kind is dict or kind is list or kind is tuple:
            if not _plain(item, depth + 1):
                return False
        else:
            return False
    return True


def _plain_float(number: float) -> bool:
    # NaN and the infinities fail every comparison here: the standard encoder refuses them.
    return number == 0.0 or 1e-4 <= abs(number) < 1e16


def compact(value: Any) -> str:
    """``value`` as compact JSON text (see the module docstring)."""
    if _DUMPS is not None and _plain(value):
        try:
            return _DUMPS(value).decode("utf-8")
        except TypeError:  # an int beyond 64 bits, a lone surrogate (orjson.JSONEncodeError)
            pass
    return _standard(value)


def compact_utf8(value: Any) -> bytes:
    """:func:`compact`'s text as UTF-8 (raises UnicodeEncodeError for a lone surrogate)."""
    if _DUMPS is not None and _plain(value):
        try:
            return _DUMPS(value)
        except TypeError:
            pass
    return _standard(value).encode("utf-8")
