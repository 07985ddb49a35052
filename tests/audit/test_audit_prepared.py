"""Batches the calling thread prepares for the writer child (``AuditWriter.submit`` with a
sink that ``prepares``): the child stores exactly the rows the writer thread would, in call
order, redacted, across hand-off files, from several threads, through a flush or a close
with a batch half made, and when the child cannot be kept and the thread takes over. Real
children, real SQLite and JSON-lines stores.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from runtime.audit import AuditRecord, AuditWriter, JsonlSink, SqliteSink, handoff, query, remote, verify
from runtime.audit.auto import AutoSink
from runtime.audit.prepared import Prepared
from runtime.audit.remote import ProcessSink
from runtime.audit.writer import PREPARE_EVERY
from runtime.records import Status
from runtime.regex import compile_re2
from runtime.shaping.compiled import CompiledPattern, CompiledRedaction
from runtime.shaping.redact import Redactor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_audit_process_items import CLEAR, _stored  # noqa: E402
from test_audit_rows import (  # noqa: E402
    CLEAN,
    METADATA,
    SHIPPED,
    TOKEN,
    Exploding,
    OddMapping,
    hostile_args,
    item,
)


def _by_thread(kind: str, path: Path, items: Sequence[Any]) -> list[dict[str, Any]]:
    audit = AuditWriter(SqliteSink(path) if kind == "sqlite" else JsonlSink(path), flush_interval_s=0.01)
    for one in items:
        audit.submit(one)
    assert audit.close(timeout=60)
    return _stored(path)


def _by_child(kind: str, path: Path, items: Sequence[Any], **writer: Any) -> tuple[AuditWriter, list[dict[str, Any]]]:
    audit = AuditWriter(ProcessSink(kind, path), **writer)
    assert audit._preparing  # the default batch of a process sink is prepared by the calling thread
    for one in items:
        audit.submit(one)
    assert audit.close(timeout=120)
    assert audit.written == len(items) and audit.lost == 0 and audit.failed_batches == 0, audit.stats()
    report = verify(path)
    assert report.ok and report.chained == len(items), report.to_text()
    assert handoff.files_of(path) == []
    return audit, _stored(path)


class _Local:
    """A class of the app's own: the child could not import it."""


def _hostile_mix(total: int) -> list[Any]:
    items: list[Any] = [item(dict(CLEAN, i=i), index=i) for i in range(total)]
    for at, args in enumerate(hostile_args()):
        items.insert(at * 7, item(args, index=100_000 + at))
    return items


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_prepared_batches_store_the_rows_the_writer_thread_stores_for_hostile_and_clean_items(
    tmp_path: Path, kind: str
) -> None:
    items = _hostile_mix(3000)
    by_thread = _by_thread(kind, tmp_path / "thread" / f"audit.{kind}", items)
    _audit, by_child = _by_child(kind, tmp_path / "child" / f"audit.{kind}", items)
    assert by_child == by_thread
    assert all(secret not in repr(row["args"]) for row in by_child for secret in CLEAR)


@pytest.mark.parametrize(
    "odd",
    [
        lambda i: item(CLEAN, index=i, metadata=None),
        lambda i: item(CLEAN, index=i, metadata=OddMapping(METADATA)),
        lambda i: AuditRecord(ts=1_700_000_000.0 + i, call_id=f"c{i}", tool="app", args={"t": TOKEN}),
        lambda i: item({"when": _Local()}, index=i),  # a value the child could not read back
        lambda i: item(CLEAN, index=i, status=Status.denied, redactor=None),
    ],
    ids=["no-metadata", "odd-mapping", "app-record", "unpicklable", "no-redactor"],
)
def test_a_chunk_the_sink_will_not_prepare_keeps_its_place_in_call_order(tmp_path: Path, odd: Any) -> None:
    items = [odd(i) if i % 97 == 5 else item(dict(CLEAN, i=i), index=i) for i in range(2500)]
    by_thread = _by_thread("sqlite", tmp_path / "thread.sqlite3", items)
    _audit, by_child = _by_child("sqlite", tmp_path / "child.sqlite3", items)
    assert by_child == by_thread
    assert [row["call_id"] for row in by_child] == [f"c{i}" for i in range(2500)]


class _Text(str):
    """A str of the app's own class."""


class _Number(float):
    """A float of the app's own class."""


def _recursive() -> dict[str, Any]:
    loop: dict[str, Any] = {"note": f"token {TOKEN}"}
    loop["self"] = loop
    return loop


def _deep(depth: int) -> Any:
    value: Any = TOKEN
    for _ in range(depth):
        value = {"d": value}
    return value


def _more_hostile() -> list[Any]:
    return [
        _recursive(),
        _deep(50),
        _deep(3000),  # deeper than the child's reader would go: the careful way
        {"big": "y" * 2_000_000 + TOKEN},
        {"text": _Text(f"token {TOKEN}")},
        {"number": _Number(1.5), "t": TOKEN},
        {(1, 2): TOKEN},
        None,
        list(range(50_000)),
        {"inf": float("inf"), "minus_zero": -0.0, "t": TOKEN},
        {"int": 2**200, "t": TOKEN},
        {"\x00key": "\x00" + TOKEN},
    ]


@pytest.mark.parametrize("args", _more_hostile(), ids=[f"more{i}" for i in range(len(_more_hostile()))])
def test_more_hostile_arguments_in_prepared_batches_store_what_the_writer_thread_stores(
    tmp_path: Path, args: Any
) -> None:
    items = [item(dict(CLEAN, i=i), index=i) for i in range(300)]
    for at in (0, 70, 299):
        items.insert(at, item(args, index=10_000 + at))
    by_thread = _by_thread("sqlite", tmp_path / "thread.sqlite3", items)
    _audit, by_child = _by_child("sqlite", tmp_path / "child.sqlite3", items)
    assert by_child == by_thread
    assert all("a1B2a1B2" not in repr(row["args"]) for row in by_child)


class _NoProfiles:
    """A redactor of the app's own whose profiles cannot be read for the child."""

    edge_anchored = True

    def redact_value(self, value: Any) -> Any:
        return "[gone]"

    def has_candidate(self, text: str) -> bool:
        return True

    def is_secret_key(self, key: str) -> bool:
        return False


@pytest.mark.parametrize("odd", [Exploding(), _NoProfiles()], ids=["exploding", "no-profiles"])
def test_a_redactor_the_child_cannot_be_sent_finishes_its_records_here_and_loses_none(tmp_path: Path, odd: Any) -> None:
    items = [item({"note": f"token {TOKEN}", "i": i}, odd if i % 50 == 3 else SHIPPED, index=i) for i in range(2000)]
    by_thread = _by_thread("sqlite", tmp_path / "thread.sqlite3", items)
    _audit, by_child = _by_child("sqlite", tmp_path / "child.sqlite3", items)
    assert by_child == by_thread
    assert all(TOKEN not in repr(row["args"]) for row in by_child)


def test_prepared_batches_carry_their_redaction_profiles_into_every_hand_off_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handoff, "ROTATE_BYTES", 8192)  # a new file every few batches
    items = [item({"note": f"token {TOKEN}", "i": i}, index=i) for i in range(4000)]
    _audit, rows = _by_child("sqlite", tmp_path / "audit.sqlite3", items)
    assert [row["call_id"] for row in rows] == [f"c{i}" for i in range(4000)]
    assert all(TOKEN not in repr(row["args"]) and "note" in repr(row["args"]) for row in rows)


def test_a_flush_with_a_batch_half_prepared_stores_every_record_submitted_before_it(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(ProcessSink("sqlite", store), flush_interval_s=60)  # only the flush moves them
    total = 0
    for size in (PREPARE_EVERY - 1, PREPARE_EVERY, PREPARE_EVERY + 1, 3 * PREPARE_EVERY + 7, 1500):
        for _ in range(size):
            audit.submit(item(dict(CLEAN, i=total), index=total))
            total += 1
        assert audit.pending <= total  # records, not batches
        assert audit.flush(60)
        assert audit.pending == 0
        assert len(query(store, limit=None)) == total
    assert audit.close(timeout=60)
    assert audit.written == total
    assert [row["call_id"] for row in _stored(store)] == [f"c{i}" for i in range(total)]


def test_the_writer_counts_prepared_records_not_batches(tmp_path: Path) -> None:
    audit = AuditWriter(ProcessSink("sqlite", tmp_path / "audit.sqlite3"), flush_interval_s=60)
    for i in range(5 * PREPARE_EVERY + 3):
        audit.submit(item(CLEAN, index=i))
    assert audit.pending == 5 * PREPARE_EVERY + 3 and audit.stats()["pending"] == audit.pending
    assert audit.close(timeout=60)
    assert audit.written == 5 * PREPARE_EVERY + 3 and audit.pending == 0


def test_calls_submitted_from_several_threads_are_each_stored_once(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(ProcessSink("sqlite", store), flush_interval_s=0.01)
    threads = 4
    each = 1500

    def submit_many(start: int) -> None:
        for i in range(start, start + each):
            audit.submit(item(dict(CLEAN, i=i), index=i))

    workers = [threading.Thread(target=submit_many, args=(n * each,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert audit.close(timeout=120)
    ids = [row["call_id"] for row in _stored(store)]
    assert sorted(ids) == sorted(f"c{i}" for i in range(threads * each))
    assert audit.written == threads * each and audit.dropped == 0
    for n in range(threads):  # each thread's own calls stay in its order
        mine = [int(one[1:]) for one in ids if n * each <= int(one[1:]) < (n + 1) * each]
        assert mine == sorted(mine)
    assert verify(store).ok


class _StuckSink:
    """A sink that prepares, and whose writes wait until let go (a store that hangs)."""

    prepares = True
    batch_size = 1024

    def __init__(self) -> None:
        self.release = threading.Event()
        self.written: list[Any] = []

    def prepare(self, items: Sequence[Any]) -> Prepared:
        return Prepared(b"x" * len(items), (), len(items))

    def write_items(self, items: Sequence[Any]) -> None:
        self.release.wait(60)
        self.written += items

    def write_batch(self, records: Sequence[Any]) -> None:
        self.write_items(records)

    def close(self) -> None:
        pass


def test_prepared_records_over_the_bound_are_dropped_oldest_first_and_counted_as_records() -> None:
    sink = _StuckSink()
    audit = AuditWriter(sink, max_queue=2000, flush_interval_s=0.01)  # type: ignore[arg-type]
    for i in range(1100):  # a whole batch: the writer takes it and hangs in the store
        audit.submit(item(CLEAN, index=i))
    deadline = time.monotonic() + 60
    while audit.pending > 1100 - 1024:
        assert time.monotonic() < deadline, audit.stats()
        time.sleep(0.005)
    for i in range(1100, 6000):
        audit.submit(item(CLEAN, index=i))
    assert audit.pending <= 2000 + PREPARE_EVERY
    assert audit.dropped >= 6000 - 1024 - 2000 - PREPARE_EVERY and audit.dropped % PREPARE_EVERY == 0
    sink.release.set()
    assert audit.close(timeout=60)
    stored = sum(entry.records if type(entry) is Prepared else 1 for entry in sink.written)
    assert stored + audit.dropped == 6000 and audit.written == stored


class _FailingPrepare(ProcessSink):
    def prepare(self, items: Sequence[Any]) -> Prepared | None:
        raise RuntimeError("prepare broke")


def test_a_prepare_that_raises_leaves_the_items_to_the_writer_thread(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(_FailingPrepare("sqlite", store), flush_interval_s=0.01)
    for i in range(700):
        audit.submit(item({"note": f"token {TOKEN}", "i": i}, index=i))
    assert audit.close(timeout=60)
    rows = _stored(store)
    assert [row["call_id"] for row in rows] == [f"c{i}" for i in range(700)]
    assert all(TOKEN not in repr(row["args"]) for row in rows)


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_prepared_batches_of_a_child_that_cannot_be_kept_are_stored_by_the_thread_in_order(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every child exits at once: the third start within a minute gives up; the batches the
    # calling thread prepared for it are read back and stored by the thread, in call order.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    store = tmp_path / f"audit.{kind}"
    direct = SqliteSink(store) if kind == "sqlite" else JsonlSink(store)
    sink = AutoSink(kind, store, direct, rate=10, batch=16, window_s=60)
    writer = AuditWriter(sink, flush_interval_s=0.01)
    total = 0
    deadline = time.monotonic() + 120
    while sink.last_error is None or total < 3000:
        assert time.monotonic() < deadline, sink.stats()
        for _ in range(100):
            writer.submit(item({"note": f"token {TOKEN}", "i": total}, index=total))
            total += 1
        writer.flush(30)  # (False while the child is gone: it never confirms)
    assert writer.close(timeout=60)
    assert writer.written == total and writer.lost == 0
    assert sink.process is None and sink.moved_at is not None and "keeps exiting" in (sink.last_error or "")
    report = verify(store)
    assert report.ok and report.chained == total, report.to_text()
    rows = _stored(store)
    assert [row["call_id"] for row in rows] == [f"c{i}" for i in range(total)]
    assert all(TOKEN not in repr(row["args"]) for row in rows)
    assert handoff.files_of(store) == []


def test_a_process_sink_remembers_a_bounded_number_of_redactors_and_never_reuses_a_key(tmp_path: Path) -> None:
    def made(n: int) -> Redactor:
        pattern = CompiledPattern(f"p{n}", compile_re2(f"secret{n}"), "[X]", None)
        return Redactor((CompiledRedaction(f"profile{n}", (pattern,), None),))

    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(ProcessSink("sqlite", store), flush_interval_s=0.01)
    redactors = [made(n) for n in range(remote._KEPT_REDACTORS * 3)]  # as a config reloaded with new profiles
    total = 0
    for _round in range(2):  # the first ones come back after they were let go
        for n, redactor in enumerate(redactors):
            for _ in range(3):
                audit.submit(item({"note": f"secret{n} and secret{n + 1}"}, redactor, index=total))
                total += 1
    sink = audit.sink
    assert isinstance(sink, ProcessSink)
    assert audit.close(timeout=120)
    assert len(sink._redactors) <= remote._KEPT_REDACTORS
    assert sink._last_key >= len(redactors) * 2 - remote._KEPT_REDACTORS  # every let-go one got a new key
    rows = _stored(store)
    assert [row["call_id"] for row in rows] == [f"c{i}" for i in range(total)]
    for at, row in enumerate(rows):
        n = (at // 3) % len(redactors)
        assert row["args"] == {"note": f"[X] and secret{n + 1}"}, (at, row["args"])


class _AppText(str):
    """A str of the app's own class: profiles named with it read fine and do not pickle."""


def test_a_redactor_whose_profiles_do_not_pickle_loses_no_batch_and_spoils_no_later_one(tmp_path: Path) -> None:
    odd = Redactor(
        (
            CompiledRedaction(
                _AppText("app"), (CompiledPattern(_AppText("tok"), compile_re2("ghp_[A-Za-z0-9]+"), "[T]", None),), None
            ),
        )
    )
    good = Redactor(
        (CompiledRedaction("p", (CompiledPattern("tok2", compile_re2("ghp_[A-Za-z0-9]+"), "[G]", None),), None),)
    )
    order = [good] * 64 + [odd] * 64 + [good] * 64 + [good] * 128
    items = [item({"note": f"token {TOKEN}", "i": i}, redactor, index=i) for i, redactor in enumerate(order)]
    by_thread = _by_thread("sqlite", tmp_path / "thread.sqlite3", items)
    _audit, by_child = _by_child("sqlite", tmp_path / "child.sqlite3", items)
    assert by_child == by_thread
    assert all(TOKEN not in repr(row["args"]) and "$unredactable" not in repr(row["args"]) for row in by_child)


class _HeldPrepare(ProcessSink):
    """Its prepare waits until told to go on: a submit caught preparing when close() comes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.preparing = threading.Event()
        self.go_on = threading.Event()

    def prepare(self, items: Sequence[Any]) -> Prepared | None:
        self.preparing.set()
        assert self.go_on.wait(60)
        return super().prepare(items)


def test_a_close_while_a_submit_prepares_its_chunk_stores_that_chunk(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    sink = _HeldPrepare("sqlite", store)
    audit = AuditWriter(sink, flush_interval_s=60)
    for i in range(PREPARE_EVERY - 1):
        audit.submit(item(CLEAN, index=i))
    last = threading.Thread(target=audit.submit, args=(item(CLEAN, index=PREPARE_EVERY - 1),))
    last.start()
    assert sink.preparing.wait(60)
    closed: list[bool] = []
    closing = threading.Thread(target=lambda: closed.append(audit.close(timeout=60)))
    closing.start()
    deadline = time.monotonic() + 60
    while not audit._stopping:  # close() has begun: the writer's last drain is on its way
        assert time.monotonic() < deadline
        time.sleep(0.001)
    sink.go_on.set()
    last.join(60)
    closing.join(60)
    assert closed == [True]
    assert audit.written == PREPARE_EVERY and audit.dropped == 0, audit.stats()
    assert [row["call_id"] for row in _stored(store)] == [f"c{i}" for i in range(PREPARE_EVERY)]


class _InterruptedPrepare(ProcessSink):
    """Its first prepare is cut short by a Ctrl-C."""

    interrupted = False

    def prepare(self, items: Sequence[Any]) -> Prepared | None:
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return super().prepare(items)


def test_a_ctrl_c_while_a_submit_prepares_reaches_the_app_and_loses_no_record(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(_InterruptedPrepare("sqlite", store), flush_interval_s=60)
    for i in range(PREPARE_EVERY - 1):
        audit.submit(item(CLEAN, index=i))
    with pytest.raises(KeyboardInterrupt):
        audit.submit(item(CLEAN, index=PREPARE_EVERY - 1))
    assert audit.pending == PREPARE_EVERY
    for i in range(PREPARE_EVERY, 3 * PREPARE_EVERY):
        audit.submit(item(CLEAN, index=i))
    assert audit.close(timeout=60)
    assert audit.written == 3 * PREPARE_EVERY
    assert [row["call_id"] for row in _stored(store)] == [f"c{i}" for i in range(3 * PREPARE_EVERY)]


@pytest.mark.parametrize("max_queue", [1, 10, 100, 1000])
def test_the_queue_bound_holds_below_the_sink_batch_size(tmp_path: Path, max_queue: int) -> None:
    audit = AuditWriter(ProcessSink("sqlite", tmp_path / "audit.sqlite3"), max_queue=max_queue, flush_interval_s=60)
    for i in range(3000):
        audit.submit(item(CLEAN, index=i))
        assert audit.pending <= max_queue + PREPARE_EVERY, (i, audit.stats())
    assert audit.close(timeout=60)
    assert audit.written + audit.dropped == 3000 and audit.lost == 0
    assert len(query(tmp_path / "audit.sqlite3", limit=None)) == audit.written


def test_a_flush_never_confirms_records_no_child_could_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # every child exits at once
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(ProcessSink("sqlite", store), flush_interval_s=0.01)
    total = 0
    for _round in range(6):
        for _ in range(200):
            audit.submit(item(CLEAN, index=total))
            total += 1
        confirmed = audit.flush(10)
        assert not confirmed or len(query(store, limit=None)) == total, (_round, audit.stats())
    audit.close(timeout=30)


def test_flushes_from_several_threads_while_others_submit_each_see_their_records_stored(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(ProcessSink("sqlite", store), flush_interval_s=0.05)
    failures: list[str] = []
    counter = iter(range(1_000_000))
    lock = threading.Lock()

    def submit_then_flush(rounds: int) -> None:
        for _ in range(rounds):
            with lock:
                mine = [next(counter) for _ in range(97)]
            for i in mine:
                audit.submit(item(dict(CLEAN, i=i), index=i))
            if not audit.flush(60):
                failures.append("flush gave up")
                return
            stored = {row["call_id"] for row in query(store, limit=None)}
            missing = [i for i in mine if f"c{i}" not in stored]
            if missing:
                failures.append(f"flushed but not stored: {missing[:5]}")
                return

    workers = [threading.Thread(target=submit_then_flush, args=(12,)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []
    assert audit.close(timeout=60)
    assert audit.written == 4 * 12 * 97 and audit.dropped == 0 and audit.lost == 0
    assert verify(store).ok


def test_records_submitted_after_close_are_counted_dropped_and_close_twice_is_harmless(tmp_path: Path) -> None:
    store = tmp_path / "audit.sqlite3"
    audit = AuditWriter(ProcessSink("sqlite", store), flush_interval_s=60)
    for i in range(3 * PREPARE_EVERY + 5):
        audit.submit(item(CLEAN, index=i))
    assert audit.close(timeout=60)
    for i in range(2 * PREPARE_EVERY):
        audit.submit(item(CLEAN, index=1000 + i))
    assert audit.close(timeout=60)
    assert audit.written == 3 * PREPARE_EVERY + 5 and audit.dropped == 2 * PREPARE_EVERY
    assert audit.pending == 0
    assert len(query(store, limit=None)) == 3 * PREPARE_EVERY + 5
