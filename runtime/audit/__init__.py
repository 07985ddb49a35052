"""The audit log: one record per tool call, written off the hot path.

Every call (reads too) is recorded: time, session, request and trace ids, tool and
version, redacted arguments, permission decision and rule, status, duration,
truncation and artifact, and for writes the resolved path with the content hashes
before and after. The default store is SQLite in WAL mode (:class:`SqliteSink`,
safe with several writing processes); :class:`JsonlSink` appends JSON lines
instead. :class:`AuditWriter` batches records from a background thread so that
:meth:`AuditWriter.submit` costs a deque append; its docstring says what a hard
crash can lose. :func:`query` reads the database back for ``toolrt audit``.

::

    writer = AuditWriter(SqliteSink("audit.db"))
    writer.submit(AuditRecord.from_result(result, session=session, request_id=rid, trace_id=tid, args=redacted_args))
    ...
    writer.close()  # the final flush: the app (Runtime.close) must call it
"""

from runtime.audit.query import format_json, format_table, parse_since, query
from runtime.audit.record import ARGS_MAX_BYTES, COLUMNS, AuditRecord, encode_args
from runtime.audit.sinks import SCHEMA_VERSION, AuditStoreError, JsonlSink, Sink, SqliteSink
from runtime.audit.writer import AuditWriter

__all__ = [
    "ARGS_MAX_BYTES",
    "COLUMNS",
    "SCHEMA_VERSION",
    "AuditRecord",
    "AuditStoreError",
    "AuditWriter",
    "JsonlSink",
    "Sink",
    "SqliteSink",
    "encode_args",
    "format_json",
    "format_table",
    "parse_since",
    "query",
]
