"""The pipeline hook the server forwards progress through: ``Runtime.run_turn(on_progress=...)``."""

from __future__ import annotations

import threading
from pathlib import Path

from mcpserver_support import CONFIG

from runtime import Call, Runtime
from runtime.settings import Settings


async def test_run_turn_hands_every_progress_message_to_the_listener_with_its_call_id(tmp_path: Path) -> None:
    runtime = Runtime([CONFIG], settings=Settings(audit_sink="off"), workspace_root=tmp_path, watch=False)
    heard: list[tuple[str, str | None, bool]] = []
    try:
        (result,) = await runtime.run_turn(
            [Call("c-7", "count_up", {"n": 2})],
            on_progress=lambda call_id, message: heard.append(
                (call_id, message, threading.current_thread() is threading.main_thread())
            ),
        )
        quiet = await runtime.run_turn(
            [Call("c-8", "count_up", {"n": 1})]
        )  # no listener: progress only resets the idle timer
    finally:
        await runtime.close()
    assert result.is_error is False and quiet[0].is_error is False
    assert [(call_id, message) for call_id, message, _ in heard] == [("c-7", "step 1 of 2"), ("c-7", "step 2 of 2")]
    assert not any(on_main for _, _, on_main in heard)  # a sync handler reports from its worker thread


async def test_a_failing_progress_listener_does_not_fail_the_call(tmp_path: Path) -> None:
    runtime = Runtime([CONFIG], settings=Settings(audit_sink="off"), workspace_root=tmp_path, watch=False)

    def broken(call_id: str, message: str | None) -> None:
        raise RuntimeError("listener is broken")

    try:
        (result,) = await runtime.run_turn([Call("c-9", "count_up", {"n": 2})], on_progress=broken)
    finally:
        await runtime.close()
    assert result.is_error is False and result.content == "counted to 2"
