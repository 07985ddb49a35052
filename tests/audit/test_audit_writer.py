"""AuditWriter: batches off the caller's thread, never blocks or raises at the caller."""

from __future__ import annotations

import atexit
import threading
import time

from audit_helpers import MemorySink, record

from runtime.audit import AuditWriter


def _ids(sink: MemorySink) -> list[str | None]:
    return [item.call_id for item in sink.records]


def test_flush_writes_everything_submitted_without_waiting_for_the_interval() -> None:
    sink = MemorySink()
    writer = AuditWriter(sink, batch_size=64, flush_interval_s=60)
    try:
        for index in range(1000):
            writer.submit(record(index))
        started = time.monotonic()
        assert writer.flush(timeout=10) is True
        assert time.monotonic() - started < 10
        assert _ids(sink) == [f"call-{index}" for index in range(1000)]
        assert max(len(batch) for batch in sink.batches) <= 64
        assert writer.written == 1000 and writer.pending == 0
    finally:
        writer.close()


def test_records_are_written_on_the_interval_without_a_flush() -> None:
    sink = MemorySink()
    writer = AuditWriter(sink, flush_interval_s=0.02)
    try:
        writer.submit(record(1))
        deadline = time.monotonic() + 5
        while not sink.records and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _ids(sink) == ["call-1"]
    finally:
        writer.close()


def test_flush_with_nothing_submitted_returns_at_once() -> None:
    writer = AuditWriter(MemorySink(), flush_interval_s=60)
    try:
        assert writer.flush(timeout=1) is True
    finally:
        writer.close()


def test_close_flushes_stops_the_thread_and_is_idempotent() -> None:
    sink = MemorySink()
    writer = AuditWriter(sink, flush_interval_s=60)
    for index in range(300):
        writer.submit(record(index))
    assert writer.close(timeout=10) is True
    assert len(sink.records) == 300 and sink.closed == 1
    assert writer.close() is True
    assert len(sink.records) == 300
    assert not writer._thread.is_alive()


def test_a_record_submitted_after_close_is_counted_as_dropped_not_raised() -> None:
    sink = MemorySink()
    writer = AuditWriter(sink)
    writer.close()
    writer.submit(record(1))
    assert writer.dropped == 1 and writer.pending == 0 and sink.records == []
    assert writer.flush(timeout=1) is True


def test_context_manager_closes_the_writer() -> None:
    sink = MemorySink()
    with AuditWriter(sink, flush_interval_s=60) as writer:
        writer.submit(record(1))
    assert _ids(sink) == ["call-1"] and sink.closed == 1


def test_a_failed_batch_is_counted_then_retried_once_and_written() -> None:
    sink = MemorySink(fail_times=1)
    writer = AuditWriter(sink, flush_interval_s=60, retry_delay_s=0.01)
    try:
        for index in range(5):
            writer.submit(record(index))  # no exception reaches the caller
        assert writer.flush(timeout=10) is True
        assert writer.failed_batches == 1 and writer.lost == 0
        assert writer.last_error == "OSError: disk unavailable (attempt 1)"
        assert _ids(sink) == [f"call-{index}" for index in range(5)]
        assert writer.written == 5
        writer.submit(record(5))
        assert writer.flush(timeout=10) and writer.written == 6 and writer.failed_batches == 1
    finally:
        writer.close()


def test_a_batch_failing_its_retry_too_is_counted_lost_and_the_writer_goes_on() -> None:
    sink = MemorySink(fail_times=2)
    writer = AuditWriter(sink, flush_interval_s=60, retry_delay_s=0.01)
    try:
        for index in range(3):
            writer.submit(record(index))
        assert writer.flush(timeout=10) is True  # given up counts as done
        assert writer.failed_batches == 2 and writer.lost == 3 and writer.written == 0
        writer.submit(record(99))
        assert writer.flush(timeout=10) is True
        assert _ids(sink) == ["call-99"] and writer.written == 1
    finally:
        writer.close()


def test_queue_overflow_drops_the_oldest_and_counts_them() -> None:
    sink = MemorySink(block=True)
    writer = AuditWriter(sink, batch_size=10, flush_interval_s=0.01, max_queue=100)
    try:
        writer.submit(record(0))
        assert sink.entered.wait(5)  # the writer now holds [call-0] inside the stuck sink
        for index in range(1, 251):
            writer.submit(record(index))
        assert writer.pending == 100 and writer.dropped == 150
        sink.release.set()
        assert writer.flush(timeout=10) is True
        assert _ids(sink) == ["call-0"] + [f"call-{index}" for index in range(151, 251)]
        assert writer.written == 101 and writer.dropped == 150
    finally:
        sink.release.set()
        writer.close()


def test_overflow_is_checked_even_when_max_queue_is_below_batch_size() -> None:
    sink = MemorySink(block=True)
    writer = AuditWriter(sink, batch_size=256, flush_interval_s=0.01, max_queue=5)
    try:
        writer.submit(record(0))
        assert sink.entered.wait(5)
        for index in range(1, 21):
            writer.submit(record(index))
        assert writer.pending == 5 and writer.dropped == 15
    finally:
        sink.release.set()
        writer.close()


def test_submit_does_not_wait_for_a_stuck_sink() -> None:
    sink = MemorySink(block=True)
    writer = AuditWriter(sink, batch_size=16, flush_interval_s=0.001)
    try:
        writer.submit(record(0))
        assert sink.entered.wait(5)
        for index in range(1, 20_001):
            writer.submit(record(index))
        # The sink is still stuck, yet every submit returned: none of them waited on it
        # (a submit that waited would never return, since nothing releases the sink).
        assert not sink.release.is_set() and sink.batches == []
        assert writer.pending == 20_000
        sink.release.set()
        assert writer.flush(timeout=20) is True
        assert writer.written == 20_001
    finally:
        sink.release.set()
        writer.close()


def test_submits_from_many_threads_are_all_written_once() -> None:
    sink = MemorySink()
    writer = AuditWriter(sink, batch_size=32, flush_interval_s=0.005)
    try:

        def submit_many(thread: int) -> None:
            for index in range(2000):
                writer.submit(record(thread * 10_000 + index))

        threads = [threading.Thread(target=submit_many, args=(thread,)) for thread in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert writer.flush(timeout=20) is True
        ids = _ids(sink)
        assert len(ids) == 16_000 and len(set(ids)) == 16_000
    finally:
        writer.close()


def test_the_writer_installs_no_exit_hook_and_runs_as_a_daemon_thread() -> None:
    before = atexit._ncallbacks()
    writer = AuditWriter(MemorySink())
    try:
        assert atexit._ncallbacks() == before
        assert writer._thread.daemon
    finally:
        writer.close()
