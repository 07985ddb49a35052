"""The relay between a handler's progress messages and the client: in order, bounded."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from runtime.mcpserver.progress import MAX_WAITING, ProgressRelay


class SlowClient:
    """A session whose progress notifications wait until ``reading`` is set."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()
        self.sent: list[tuple[float, str | None]] = []

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self.reading.wait()
        self.sent.append((progress, message))


async def test_progress_is_sent_in_order_with_growing_numbers() -> None:
    client = SlowClient()
    client.reading.set()
    relay = ProgressRelay(client)  # type: ignore[arg-type]
    for step in range(5):
        relay.listener("c", f"step {step}")
    await relay.aclose()
    assert client.sent == [(1, "step 0"), (2, "step 1"), (3, "step 2"), (4, "step 3"), (5, "step 4")]


async def test_a_handler_reporting_faster_than_the_client_reads_keeps_a_bounded_backlog_and_the_latest_message() -> (
    None
):
    client = SlowClient()
    relay = ProgressRelay(client)  # type: ignore[arg-type]
    reporter = threading.Thread(target=lambda: [relay.listener("c", f"step {n}") for n in range(20_000)])
    reporter.start()
    await asyncio.to_thread(reporter.join)
    client.reading.set()
    await relay.aclose()
    messages = [message for _, message in client.sent]
    assert len(messages) <= MAX_WAITING + 1  # the one in flight when the client stalled, then the backlog
    assert messages[-1] == "step 19999"
    assert [number for number, _ in client.sent] == list(range(1, len(messages) + 1))


async def test_progress_reported_after_the_result_is_not_sent() -> None:
    client = SlowClient()
    client.reading.set()
    relay = ProgressRelay(client)  # type: ignore[arg-type]
    relay.listener("c", "before")
    await relay.aclose()
    relay.listener("c", "after")  # a handler thread that outlived its call
    await asyncio.sleep(0)
    assert [message for _, message in client.sent] == ["before"]


async def test_a_client_that_fails_to_take_progress_does_not_stop_the_relay() -> None:
    class Broken:
        def __init__(self) -> None:
            self.calls: list[Any] = []

        async def report_progress(self, *args: Any) -> None:
            self.calls.append(args)
            raise ConnectionError("stream closed")

    broken = Broken()
    relay = ProgressRelay(broken)  # type: ignore[arg-type]
    relay.listener("c", "one")
    relay.listener("c", "two")
    await relay.aclose()
    assert [args[2] for args in broken.calls] == ["one", "two"]
