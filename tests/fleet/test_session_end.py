"""Ending a session never raises, also when the shared Redis is down: the end is logged,
tried again later, and until it is recorded the session's turns use no grants (asked
again) and keep their counts (never fewer than they should be). Real servers, really
killed; a persistent one keeps what it held across the kill, as a real outage would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_servers import RedisServer
from fleet_support import write_config
from loguru import logger

from runtime import Runtime
from runtime.errors import LimitStoreError
from runtime.fleet.ending import SessionEnds
from runtime.pipeline.permit import Approval
from runtime.policy.grants import SessionGrants
from runtime.records import Call, Session, Status
from runtime.settings import Settings

ASK = {
    "rules": [
        {"name": "ask-me", "effect": "ask", "tools": ["ask_me"]},
        {"name": "rest", "effect": "allow", "tools": ["*"]},
    ],
    "quotas": {"calls_per_session": 3},
}


@pytest.fixture
def persistent_redis() -> Iterator[RedisServer]:
    """A server that keeps its data across a SIGKILL (append-only file, fsync always)."""
    try:
        server = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    yield server
    server.stop()


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    seen: list[str] = []
    logger.enable("runtime")  # toolrt's records are off until an app turns them on
    sink = logger.add(lambda message: seen.append(str(message)), level="INFO", format="{level} {message}")
    try:
        yield seen
    finally:
        logger.remove(sink)
        logger.disable("runtime")


class _Asked:
    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, call: object, session: object, decision: object) -> Approval:
        self.count += 1
        return Approval(approved=True, scope="session")


def _runtime(tmp_path: Path, url: str, approver: _Asked, **settings: object) -> Runtime:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return Runtime(
        [write_config(tmp_path / "c", ASK)],
        workspace_root=workspace,
        settings=Settings(limit_store=url, audit_sink="off", limit_store_timeout_s=0.3, **settings),
        approver=approver,
    )


def _call(runtime: Runtime, tool: str, session: str) -> object:
    return runtime.run_turn_sync([Call("c", tool, {})], Session(id=session))[0]


@pytest.mark.parametrize("on_error", ["deny", "allow"])
def test_ending_sessions_while_redis_is_down_never_raises_and_warns_once(
    tmp_path: Path, fresh_redis: RedisServer, warnings: list[str], on_error: str
) -> None:
    asked = _Asked()
    runtime = _runtime(tmp_path, fresh_redis.url, asked, limit_store_on_error=on_error)
    try:
        assert _call(runtime, "ping", "a").status is Status.ok
        fresh_redis.kill()
        for session in ("a", "b", "c", "a"):
            assert runtime.end_session(session) is None
        said = [line for line in warnings if "could not record the end of session" in line]
        assert len(said) == 1 and fresh_redis.url in said[0] and said[0].startswith("WARNING")
        assert len(runtime._ends) == 3
    finally:
        runtime.close_sync()


def test_a_session_ended_during_an_outage_gets_no_stale_grant_or_count_when_redis_returns(
    tmp_path: Path, persistent_redis: RedisServer, warnings: list[str]
) -> None:
    asked = _Asked()
    runtime = _runtime(tmp_path, persistent_redis.url, asked)
    try:
        assert _call(runtime, "ask_me", "g").status is Status.ok
        assert _call(runtime, "ask_me", "g").metadata.get("approved") == "session-grant"
        assert _call(runtime, "ping", "g").status is Status.ok  # 3 of 3 calls used
        assert asked.count == 1
        persistent_redis.kill()
        runtime.end_session("g")  # cannot be recorded: Redis is down
        persistent_redis.start()  # back, with the grant and the count it held
        assert persistent_redis.client().exists("toolrt:g:g", "toolrt:s:g") == 2
        # The session's next turn records its end first: no grant, a fresh count.
        again = _call(runtime, "ask_me", "g")
        assert again.status is Status.ok and again.metadata.get("approved") == "approver"
        assert asked.count == 2
        assert [_call(runtime, "ping", "g").status for _ in range(3)] == [Status.ok, Status.ok, Status.denied]
        assert len(runtime._ends) == 0
        assert any("records session ends again" in line for line in warnings)
    finally:
        runtime.close_sync()


def test_unrecorded_ends_are_retried_after_a_later_end_succeeds(tmp_path: Path, persistent_redis: RedisServer) -> None:
    asked = _Asked()
    runtime = _runtime(tmp_path, persistent_redis.url, asked)
    try:
        for session in ("x", "y"):
            assert _call(runtime, "ask_me", session).status is Status.ok
        persistent_redis.kill()
        runtime.end_session("x")
        runtime.end_session("y")
        persistent_redis.start()
        runtime.end_session("z")  # succeeds, and records x's and y's ends too
        assert len(runtime._ends) == 0
        client = persistent_redis.client()
        assert [key for key in client.scan_iter("toolrt:*") if b":x" in key or b":y" in key] == []
    finally:
        runtime.close_sync()


# -- the bookkeeping itself, with a store that fails on demand (a plain function) ---------


class _Store:
    def __init__(self) -> None:
        self.down = False
        self.forgotten: list[str] = []

    def forget(self, session_id: str) -> None:
        if self.down:
            raise LimitStoreError("redis://store", "unreachable (connection refused)")
        self.forgotten.append(session_id)


def test_while_an_end_is_unrecorded_the_session_sees_no_grants_and_other_sessions_do() -> None:
    store, grants = _Store(), SessionGrants()
    ends = SessionEnds(store.forget)
    store.down = True
    assert ends.end("s") is False
    assert not ends.grants_for("s", grants)  # none while it cannot be recorded
    assert ends.grants_for("other", grants) is grants
    store.down = False
    assert ends.grants_for("s", grants) is grants  # recorded on the way in
    assert store.forgotten == ["s"] and len(ends) == 0


def test_the_no_grants_of_an_unrecorded_session_take_no_new_grant() -> None:
    store = _Store()
    store.down = True
    ends = SessionEnds(store.forget)
    ends.end("s")
    none = ends.grants_for("s", SessionGrants())
    assert none.add("s", object(), None, "rule") is None  # type: ignore[arg-type]
    assert none.of("s") == () and not none


def test_unrecorded_ends_are_bounded_and_dropping_them_is_logged(warnings: list[str]) -> None:
    store = _Store()
    store.down = True
    ends = SessionEnds(store.forget, max_unfinished=5)
    for n in range(12):
        assert ends.end(f"s{n}") is False
    assert len(ends) == 5
    assert sum("gave up recording the end" in line for line in warnings) == 7
    store.down = False
    assert ends.end("last") is True
    assert store.forgotten == ["last", "s7", "s8", "s9", "s10", "s11"]


def test_other_errors_than_the_store_s_are_not_hidden() -> None:
    def broken(session_id: str) -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        SessionEnds(broken).end("s")
