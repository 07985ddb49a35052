"""Compact JSON text for the audit log, through one C encoder made once.

``json.JSONEncoder.encode`` builds a new C encoder on every call (about 1.5 us, more
than encoding a call's arguments costs); the audit writer encodes three times per
record, so :func:`compact` keeps one. Its text is exactly ``JSONEncoder(ensure_ascii=
False, separators=(",", ":"), allow_nan=False).encode(value)``, which the hash chain and
the JSON-lines log were written with: non-ASCII kept as is, NaN and the infinities
refused (ValueError). Cycles are not looked for: a cyclic value fails with
RecursionError instead of ValueError (callers catch both).
"""

from __future__ import annotations

import json
import json.encoder
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # None without the C accelerator
_encode_basestring = json.encoder.encode_basestring

if _c_make_encoder is not None:
    # markers=None: no cycle check (a dict per call); indent None, not sorted, no skipped keys, allow_nan False.
    _ITERENCODE = _c_make_encoder(None, _ENCODER.default, _encode_basestring, None, ":", ",", False, False, False)

    def compact(value: Any) -> str:
        """``value`` as compact JSON text (see the module docstring)."""
        return "".join(_ITERENCODE(value, 0))

else:  # pragma: no cover

    def compact(value: Any) -> str:
        """``value`` as compact JSON text (see the module docstring)."""
        return _ENCODER.encode(value)
