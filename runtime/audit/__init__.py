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

from typing import TYPE_CHECKING, Any

from runtime.audit.chain import GENESIS
from runtime.audit.query import format_json, format_table, parse_since, query
from runtime.audit.record import ARGS_MAX_BYTES, COLUMNS, AuditRecord, encode_args
from runtime.audit.sinks import SCHEMA_VERSION, AuditStoreError, JsonlSink, Sink, SqliteSink
from runtime.audit.verify import ChainBreak, ChainReport, verify
from runtime.audit.writer import AuditWriter

if TYPE_CHECKING:
    from runtime.audit.location import store_path


def __getattr__(name: str) -> Any:
    """``store_path`` on first use (PEP 562): finding the store reads the settings
    (pydantic-settings), which the writer child, started when an app's calls come fast,
    never needs (a sixth of its start-up CPU). (Only this name is lazy: a name that is
    also a submodule's, such as ``query`` or ``verify``, would be replaced by the
    submodule once that is imported.)"""
    if name == "store_path":
        from runtime.audit.location import store_path as found

        globals()[name] = found
        return found
    raise AttributeError(f"module 'runtime.audit' has no attribute {name!r}")


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
