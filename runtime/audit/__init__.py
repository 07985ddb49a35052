"""The audit log: one record per tool call, written off the hot path, hash-chained.

Every call (reads too) is recorded: time, session, request and trace ids, tool and
version, redacted arguments, permission decision and rule, status, duration,
truncation and artifact, and for writes the resolved path with the content hashes
before and after. The default store is SQLite in WAL mode (:class:`SqliteSink`,
safe with several writing processes); :class:`JsonlSink` appends JSON lines
instead. :class:`AuditWriter` batches records from a background thread so that
:meth:`AuditWriter.submit` costs a deque append; its docstring says what a hard
crash can lose. :func:`query` reads the database back for ``toolrt audit``.

Each stored record is linked to the one before by a SHA-256 hash chain
(:mod:`runtime.audit.chain`, computed by the sink in the writer thread or process);
:func:`verify` walks it for ``toolrt audit verify``. By default the log lives in the
user's state directory, one per workspace (:func:`store_path`), out of the reach of
the agent's file tools.

::

    writer = AuditWriter(SqliteSink("audit.db"))
    writer.submit(AuditRecord.from_result(result, session=session, request_id=rid, trace_id=tid, args=redacted_args))
    ...
    writer.close()  # the final flush: the app (Runtime.close) must call it
    assert verify("audit.db").ok
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.audit.chain import GENESIS
    from runtime.audit.location import store_path
    from runtime.audit.query import format_json, format_table, parse_since, query
    from runtime.audit.record import ARGS_MAX_BYTES, COLUMNS, AuditRecord, encode_args
    from runtime.audit.sinks import SCHEMA_VERSION, AuditStoreError, JsonlSink, Sink, SqliteSink
    from runtime.audit.verify import ChainBreak, ChainReport, verify
    from runtime.audit.writer import AuditWriter

# The public names are imported on first use (PEP 562), as the package's own are: the
# writer child (runtime.audit.child), started when an app's calls come fast, needs the
# sinks and redaction only, not the settings that finding the store's location reads
# (a third of its start-up CPU).
_LAZY = {
    "GENESIS": "runtime.audit.chain",
    "store_path": "runtime.audit.location",
    "format_json": "runtime.audit.query",
    "format_table": "runtime.audit.query",
    "parse_since": "runtime.audit.query",
    "query": "runtime.audit.query",
    "ARGS_MAX_BYTES": "runtime.audit.record",
    "COLUMNS": "runtime.audit.record",
    "AuditRecord": "runtime.audit.record",
    "encode_args": "runtime.audit.record",
    "SCHEMA_VERSION": "runtime.audit.sinks",
    "AuditStoreError": "runtime.audit.sinks",
    "JsonlSink": "runtime.audit.sinks",
    "Sink": "runtime.audit.sinks",
    "SqliteSink": "runtime.audit.sinks",
    "ChainBreak": "runtime.audit.verify",
    "ChainReport": "runtime.audit.verify",
    "verify": "runtime.audit.verify",
    "AuditWriter": "runtime.audit.writer",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it as a module attribute."""
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'runtime.audit' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ARGS_MAX_BYTES",
    "COLUMNS",
    "GENESIS",
    "SCHEMA_VERSION",
    "AuditRecord",
    "AuditStoreError",
    "AuditWriter",
    "ChainBreak",
    "ChainReport",
    "JsonlSink",
    "Sink",
    "SqliteSink",
    "encode_args",
    "format_json",
    "format_table",
    "parse_since",
    "query",
    "store_path",
    "verify",
]
