"""W3C Trace Context: the trace id of a ``traceparent``, standard library only.

Its own module so that the tracing facade (:mod:`runtime.telemetry`) and the spans (:mod:`runtime.telemetry.traces`,
which the facade imports only when tracing is on) both read it without importing each other.
"""

from __future__ import annotations

import re

# version-traceid-parentid-flags, lowercase hex as W3C Trace Context requires; version
# ff is invalid and an all-zero trace or parent id means "no trace".
_TRACEPARENT = re.compile(r"[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(?:-[^\n]*|[ \t]*)")
MAX_TRACEPARENT_CHARS = 512  # longer values are refused before any parsing
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def trace_id_from_traceparent(traceparent: object) -> str | None:
    """The trace id (32 lowercase hex digits) of a W3C ``traceparent``, or None when
    it is missing or malformed. Never raises, whatever it is given."""
    if not isinstance(traceparent, str) or not traceparent or len(traceparent) > MAX_TRACEPARENT_CHARS:
        return None
    match = _TRACEPARENT.fullmatch(traceparent)
    if match is None:
        return None
    version, trace_id, parent_id = match.groups()
    if version == "ff" or trace_id == _ZERO_TRACE or parent_id == _ZERO_SPAN:
        return None
    if version == "00" and traceparent.rstrip(" \t").count("-") != 3:
        return None  # version 00 has exactly four fields
    return trace_id
