"""``audit_writer=process`` hands call items to its child as plain tuples: the rows the
child stores must be exactly the rows the writer thread would store for the same items
(the same redaction, the same metadata read), whatever the items hold, and an item that
will not pickle, or whose metadata cannot be read, must still be stored, never lost
and never in clear. Real children, real SQLite and JSON-lines stores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from runtime.audit import AuditRecord, AuditWriter, JsonlSink, SqliteSink, handoff, query, verify
from runtime.audit.child import _REFUSE, _columns, _items
from runtime.audit.record import COLUMNS
from runtime.audit.remote import ProcessSink
from runtime.audit.rows import rows_of
from runtime.records import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_audit_rows import (  # noqa: E402
    CLEAN,
    METADATA,
    SHIPPED,
    TOKEN,
    Color,
    Exploding,
    OddMapping,
    hostile_args,
    item,
)

CLEAR = ("hunter2", "12345678", "abcdef", "a1B2a1B2", "maria.lopez")


def _stored(path: Path) -> list[dict[str, Any]]:
    """The stored rows in the order written."""
    rows = sorted(query(path, limit=None), key=lambda row: row["id"])
    return [{name: row[name] for name in COLUMNS} for row in rows]


def _through(kind: str, path: Path, items: list[Any], *, writer: str) -> list[dict[str, Any]]:
    if writer == "process":
        sink: Any = ProcessSink(kind, path)
    else:
        sink = SqliteSink(path) if kind == "sqlite" else JsonlSink(path)
    audit = AuditWriter(sink, batch_size=64, flush_interval_s=0.01)
    for one in items:
        audit.submit(one)
    assert audit.close(timeout=60)
    assert audit.written == len(items) and audit.lost == 0 and audit.failed_batches == 0, audit.stats()
    report = verify(path)
    assert report.ok, report.to_text()
    return _stored(path)


def _mixed_items() -> list[Any]:
    items: list[Any] = [item(dict(CLEAN, i=i), index=i) for i in range(150)]
    for at, args in enumerate(hostile_args()):
        items.insert(at * 5, item(args, index=1000 + at))
    return items


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_the_child_stores_the_rows_the_writer_thread_stores_for_hostile_and_clean_items(
    tmp_path: Path, kind: str
) -> None:
    items = _mixed_items()
    by_thread = _through(kind, tmp_path / "thread" / f"audit.{kind}", items, writer="thread")
    by_child = _through(kind, tmp_path / "child" / f"audit.{kind}", items, writer="process")
    assert len(by_child) == len(items)
    assert by_child == by_thread
    stored = repr(by_child)
    for clear in CLEAR:
        assert clear not in stored


def _unpicklable_values() -> list[Any]:
    return [threading.Lock(), lambda: TOKEN, (x for x in [TOKEN]), open(__file__)]  # noqa: SIM115


@pytest.mark.parametrize("at", range(4))
def test_an_argument_that_will_not_pickle_is_stored_redacted_with_the_rest_of_its_batch(
    tmp_path: Path, at: int
) -> None:
    odd = _unpicklable_values()[at]
    try:
        items = [item(dict(CLEAN, i=i), index=i) for i in range(40)]
        items[17] = item({"odd": odd, "note": f"token {TOKEN}", "password": "hunter2"}, index=17)
        rows = _through("sqlite", tmp_path / "audit.sqlite3", items, writer="process")
    finally:
        if hasattr(odd, "close"):
            odd.close()
    assert [row["call_id"] for row in rows] == [f"c{i}" for i in range(40)]
    assert "a1B2a1B2" not in repr(rows[17]["args"]) and "hunter2" not in repr(rows[17]["args"])
    assert rows[3]["args"] == dict(CLEAN, i=3)
    assert all(row["decision"] == "allow" and row["snapshot"] == METADATA["snapshot"] for row in rows)


@pytest.mark.parametrize(
    "metadata",
    [
        OddMapping(dict(METADATA), broken=True),
        OddMapping(dict(METADATA)),
        MappingProxyType({**METADATA, "rule": threading.Lock()}),
        {**METADATA, "staged": [("p/r", "deny", "warn")], "path": Path("/w/x"), "hash_before": b"\x01"},
        None,
        MappingProxyType(OddMapping(dict(METADATA))),  # type: ignore[arg-type]
        MappingProxyType(OrderedDict(METADATA)),
    ],
    ids=[
        "unreadable",
        "odd-mapping",
        "unpicklable-value",
        "odd-values",
        "none",
        "view-of-odd",
        "view-of-ordered",
    ],
)
def test_metadata_the_app_cannot_hand_over_as_is_gives_the_rows_the_thread_gives(
    tmp_path: Path, metadata: Mapping[str, Any] | None
) -> None:
    items = [item(dict(CLEAN, i=i), index=i, metadata=metadata if i % 3 == 0 else METADATA) for i in range(30)]
    by_child = _through("sqlite", tmp_path / "child.sqlite3", items, writer="process")
    by_thread = _through("sqlite", tmp_path / "thread.sqlite3", items, writer="thread")
    assert by_child == by_thread


def test_the_usual_batch_is_handed_over_column_by_column_as_each_item_holds_it_with_its_metadata_as_a_dict() -> None:
    sink = ProcessSink("sqlite", Path(tempfile.mkdtemp()) / "audit.sqlite3")
    items = [item(dict(CLEAN, i=i), index=i, status=Status.denied if i % 2 else Status.ok) for i in range(5)]
    items.append(item(CLEAN, index=5, redactor=None))
    frames: list[bytes] = []
    columns = sink._columns(items, lambda redactor: sink._redactor_key(redactor, frames))
    assert columns is not None and len(columns) == 12 and all(type(column) is list for column in columns)
    assert len(frames) == 1  # the one redactor's profiles, once
    for at, one in enumerate(items):
        sent = [column[at] for column in columns]
        assert sent[:10] == list(one[:10]) and sent[8] is one[8]  # the status enum itself: the child reads its text
        assert type(sent[10]) is dict and sent[10] == dict(one[10])
    assert columns[11] == [1, 1, 1, 1, 1, None]
    assert rows_of(_columns(columns, {1: SHIPPED})) == rows_of(items)


def test_a_batch_with_an_item_without_metadata_goes_item_by_item_and_reads_back_the_same() -> None:
    sink = ProcessSink("sqlite", Path(tempfile.mkdtemp()) / "audit.sqlite3")
    items = [item(dict(CLEAN, i=i), index=i, metadata=None if i == 2 else METADATA) for i in range(4)]
    frames: list[bytes] = []
    assert sink._columns(items, lambda redactor: sink._redactor_key(redactor, frames)) is None
    plain = sink._plain_items_one_by_one(items, frames)
    assert [sent[11] for sent in plain] == [1, 1, 1, 1]
    assert rows_of(_items(plain, {1: SHIPPED})) == rows_of(items)


@pytest.mark.parametrize(
    "columns",
    [
        [[1.0]] * 11,  # a column short
        [[1.0]] * 13,  # a column too many
        [[1.0, 2.0]] + [[1.0]] * 11,  # columns of unequal length
    ],
    ids=["eleven", "thirteen", "unequal"],
)
def test_a_columns_frame_of_the_wrong_shape_is_refused(columns: list[list[Any]]) -> None:
    with pytest.raises(ValueError):
        _columns(columns, {})


def test_a_columns_frame_naming_a_redactor_never_sent_refuses_the_arguments() -> None:
    items = [item(dict(CLEAN, i=i), index=i) for i in range(3)]
    columns = [[one[at] for one in items] for at in range(10)]
    columns += [[dict(one[10]) for one in items], [7, 7, 7]]
    made = _columns(columns, {})
    assert all(one[11] is _REFUSE for one in made)


def test_application_records_and_call_items_in_one_batch_are_stored_in_order(tmp_path: Path) -> None:
    items: list[Any] = []
    for i in range(60):
        if i % 4 == 0:
            items.append(
                AuditRecord(ts=1_700_000_000.0 + i, call_id=f"c{i}", tool="app", args={"t": TOKEN}, redactor=SHIPPED)
            )
        else:
            items.append(item(dict(CLEAN, i=i), index=i))
    by_child = _through("sqlite", tmp_path / "child.sqlite3", items, writer="process")
    assert [row["call_id"] for row in by_child] == [f"c{i}" for i in range(60)]
    assert all("a1B2a1B2" not in repr(row["args"]) for row in by_child)
    assert by_child[0]["tool"] == "app" and by_child[1]["tool"] == "noop"


def test_a_call_item_in_a_batch_with_an_application_record_keeps_the_status_text_of_its_metadata(
    tmp_path: Path,
) -> None:
    # The metadata's status text wins over the result's enum, as the thread reads it; a
    # batch holding an application's record used to send the enum's value instead.
    items: list[Any] = [AuditRecord(ts=1_700_000_000.0, call_id="app", tool="app")]
    items += [item(dict(CLEAN, i=i), index=i, status=Status.denied) for i in range(3)]
    by_child = _through("sqlite", tmp_path / "child.sqlite3", items, writer="process")
    by_thread = _through("sqlite", tmp_path / "thread.sqlite3", items, writer="thread")
    assert by_child == by_thread
    assert [row["status"] for row in by_child] == [None, "ok", "ok", "ok"]


def test_items_whose_redactor_the_child_was_never_told_about_store_no_arguments() -> None:
    plain = [(*one[:10], dict(one[10]), 7) for one in (item({"note": f"token {TOKEN}"}), item(CLEAN, index=1))]
    rows = rows_of(_items(plain, {}))
    assert [row[8] for row in rows] == ['{"$unredactable":true}', '{"$unredactable":true}']
    assert [row[5] for row in rows] == ["c0", "c1"]


def test_items_without_a_redactor_key_are_stored_as_given() -> None:
    plain = [(*one[:10], dict(one[10]), None) for one in (item({"note": "as given"}, None),)]
    assert rows_of(_items(plain, {}))[0][8] == '{"note":"as given"}'


def test_a_redactor_that_raises_in_the_child_stores_no_arguments_and_spares_the_other_items(tmp_path: Path) -> None:
    # A redactor whose profiles cannot travel (no patterns to send) goes through the app's own path.
    items = [item({"secret": "maybe"}, Exploding(), index=0), item(CLEAN, index=1)]
    by_child = _through("sqlite", tmp_path / "child.sqlite3", items, writer="process")
    by_thread = _through("sqlite", tmp_path / "thread.sqlite3", items, writer="thread")
    assert by_child == by_thread
    assert by_child[0]["args"] == {"$unredactable": True}


def test_a_frame_the_child_cannot_read_is_reported_and_the_frames_around_it_are_stored(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    SqliteSink(store).close()
    sink = ProcessSink("sqlite", store, prepared=True)  # only its framing: never started, no child of its own
    fd, path = handoff.create(store)
    try:
        handoff.append(fd, b"".join(sink._frames([item(dict(CLEAN, i=i), index=i) for i in range(5)])))
        garbage = b"\x80\x05not a pickle"
        handoff.append(fd, len(garbage).to_bytes(4, "big") + b"i" + garbage)
        handoff.append(fd, b"".join(sink._frames([item(dict(CLEAN, i=i), index=i) for i in range(5, 9)])))
    finally:
        os.close(fd)
    done = subprocess.run(
        [sys.executable, "-m", "runtime.audit.child", "sqlite", str(store), str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=True,
    )
    acks = done.stdout.decode().splitlines()
    assert acks[0] == "ack 1 5 " and acks[2] == "ack 2 4 ", acks
    assert acks[1].startswith("ack 0 0 a frame of the hand-off file could not be read"), acks
    assert [row["call_id"] for row in _stored(store)] == [f"c{i}" for i in range(9)]
    assert not path.exists()


def test_a_value_of_a_class_the_child_cannot_import_is_refused_by_the_framing() -> None:
    with pytest.raises(handoff.Unreadable, match="Color"):
        handoff.frame(("items", 1, [("x", Color.RED)]))
    for value in (Status.ok, Path("/x"), b"x", {1, 2}, 1.5, None, str, len):
        assert handoff.frame(("items", 1, [value]))


def test_the_writer_child_starts_without_the_settings() -> None:
    # runtime.audit imports store_path (which reads the settings) on first use: the child,
    # started when the calls come fast, does not pay for pydantic-settings.
    code = "import sys, runtime.audit.child; print(*sorted(m for m in sys.modules if m.startswith('runtime.')))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert {"runtime.audit.sinks", "runtime.audit.child", "runtime.shaping.redact"} <= loaded
    assert not loaded & {"runtime.settings", "runtime.audit.location"}


def test_the_writer_child_starts_without_the_config_models_or_the_snapshot() -> None:
    # The redaction profiles it is sent are rebuilt from runtime.shaping.compiled: the child
    # imports neither pydantic (the config models) nor the snapshot's world (policy, CEL, schemas).
    code = "import sys, runtime.audit.child; print(*sorted(sys.modules))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert {"runtime.audit.child", "runtime.shaping.redact", "runtime.shaping.compiled"} <= loaded
    assert not loaded & {"pydantic", "runtime.snapshot", "runtime.config.models", "runtime.policy", "jsonschema"}


def test_the_audit_packages_public_names_are_the_functions_and_classes_whatever_was_imported_before() -> None:
    code = (
        "import runtime.audit.verify, runtime.audit.query, runtime.audit.location; "
        "from runtime.audit import verify, query, store_path, __all__; import runtime.audit as a; "
        "print(callable(verify) and callable(query) and callable(store_path) and all(hasattr(a, n) for n in __all__))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "True"
    )
    import runtime.audit as audit

    assert callable(audit.verify) and callable(audit.query) and callable(audit.store_path)
    with pytest.raises(AttributeError):
        audit.no_such_name  # noqa: B018
