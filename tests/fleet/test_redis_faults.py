"""When the shared Redis fails: limits and grants fail closed (the call is refused with an
error naming the store) unless ``limit_store_on_error: allow``, and everything recovers
without a restart once the server is back. Real server, really killed, paused, full."""

from __future__ import annotations

from pathlib import Path

import pytest
from fleet_servers import RedisServer, free_port, wait_for
from fleet_support import write_config

from runtime import Runtime
from runtime.errors import LimitStoreError
from runtime.fleet.limits import RedisLimitStore
from runtime.records import Call, Session, Status
from runtime.settings import Settings

QUOTA = {"quotas": {"calls_per_session": 1000, "max_concurrent_per_tool": {"hold": 1}}}


def _runtime(config: Path, workspace: Path, url: str, **settings: object) -> Runtime:
    return Runtime([config], workspace_root=workspace, settings=Settings(limit_store=url, audit_sink="off", **settings))


def _ping(runtime: Runtime, session: str = "s") -> object:
    return runtime.run_turn_sync([Call("c", "ping", {})], Session(id=session))[0]


def test_an_unreachable_store_refuses_calls_naming_the_store(tmp_path: Path, workspace: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    runtime = _runtime(write_config(tmp_path / "c", QUOTA), workspace, url)
    try:
        result = _ping(runtime)
        assert (result.status, result.code) == (Status.denied, "limit_store_unavailable")
        assert f"127.0.0.1:{runtime.settings.limit_store.rsplit(':', 1)[1].split('/')[0]}" in result.content
        assert "limit_store_on_error" in result.content
    finally:
        runtime.close_sync()


def test_an_unreachable_store_lets_calls_run_when_told_to_allow(tmp_path: Path, workspace: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    runtime = _runtime(write_config(tmp_path / "c", QUOTA), workspace, url, limit_store_on_error="allow")
    try:
        assert _ping(runtime).status is Status.ok
    finally:
        runtime.close_sync()


def test_tools_without_limits_run_while_the_store_is_down(tmp_path: Path, workspace: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    runtime = _runtime(write_config(tmp_path / "c", {"quotas": {"calls_per_tool": {"boom": 1}}}), workspace, url)
    try:
        assert _ping(runtime).status is Status.ok  # nothing to count for ping
    finally:
        runtime.close_sync()


def test_a_restarted_server_is_used_again_without_restarting_the_runtime(
    tmp_path: Path, workspace: Path, fresh_redis: RedisServer
) -> None:
    runtime = _runtime(write_config(tmp_path / "c", {"quotas": {"calls_per_session": 3}}), workspace, fresh_redis.url)
    try:
        assert _ping(runtime).status is Status.ok
        fresh_redis.kill()
        down = _ping(runtime)
        assert down.code == "limit_store_unavailable"
        fresh_redis.start()
        # Nothing was persisted: the session's count starts again from zero.
        assert [_ping(runtime).status for _ in range(4)] == [Status.ok, Status.ok, Status.ok, Status.denied]
    finally:
        runtime.close_sync()


def test_a_server_restarted_between_admit_and_finish_loses_no_call(
    tmp_path: Path, workspace: Path, fresh_redis: RedisServer
) -> None:
    store = RedisLimitStore(fresh_redis.url, lease_s=0.5)
    try:
        assert store.try_acquire(None, "running:x", 1, 1) == (True, 1.0)
        fresh_redis.restart()
        # The slot died with the server; giving it back must not fail or go negative.
        assert store.release(None, "running:x", 1) == 0.0
        assert store.try_acquire(None, "running:x", 1, 1) == (True, 1.0)
    finally:
        store.close()


def test_a_server_that_stops_answering_refuses_within_the_timeout_then_recovers(
    tmp_path: Path, workspace: Path, fresh_redis: RedisServer
) -> None:
    runtime = _runtime(write_config(tmp_path / "c", QUOTA), workspace, fresh_redis.url, limit_store_timeout_s=0.2)
    try:
        assert _ping(runtime).status is Status.ok
        fresh_redis.pause()
        try:
            slow = _ping(runtime)
            assert slow.code == "limit_store_unavailable"
            assert "store" in slow.content
        finally:
            fresh_redis.resume()
        wait_for(lambda: _ping(runtime).status is Status.ok, 20, "calls to be admitted again")
    finally:
        runtime.close_sync()


def test_a_full_server_that_refuses_writes_fails_closed(tmp_path: Path, workspace: Path) -> None:
    server = RedisServer("--maxmemory", "2mb", "--maxmemory-policy", "noeviction").start()
    try:
        client = server.client()
        filler = b"x" * 100_000
        with pytest.raises(Exception, match="maxmemory"):
            for index in range(1000):
                client.set(f"fill:{index}", filler)
        # Full by data alone, not by the filling client's buffers: the server frees those
        # on its own clock (sooner or later on a loaded machine), which would let small
        # writes in again before the runtime's first call.
        client.config_set("maxmemory", "1500kb")
        with pytest.raises(Exception, match="maxmemory"):
            client.set("probe", b"x")
        runtime = _runtime(
            write_config(tmp_path / "c", {"quotas": {"calls_per_session": 10}}),
            workspace,
            server.url,
            limit_store_timeout_s=5.0,
        )
        try:
            result = _ping(runtime)
            assert result.code == "limit_store_unavailable"
            assert "out of memory" in result.content or "store" in result.content
            client.flushall()
            client.config_set("maxmemory", "2mb")
            assert _ping(runtime).status is Status.ok
        finally:
            runtime.close_sync()
    finally:
        server.stop()


def test_an_evicted_session_count_starts_over_and_nothing_else_breaks(
    tmp_path: Path, workspace: Path, redis_url: str
) -> None:
    runtime = _runtime(write_config(tmp_path / "c", {"quotas": {"calls_per_session": 2}}), workspace, redis_url)
    try:
        assert [_ping(runtime).status for _ in range(3)] == [Status.ok, Status.ok, Status.denied]
        client = __import__("redis").Redis.from_url(redis_url)
        assert client.delete("toolrt:s:s") == 1  # what an evicting server would do
        assert [_ping(runtime).status for _ in range(3)] == [Status.ok, Status.ok, Status.denied]
    finally:
        runtime.close_sync()


def test_grants_fail_closed_when_the_store_is_down(tmp_path: Path, workspace: Path, fresh_redis: RedisServer) -> None:
    from runtime.pipeline.permit import Approval

    asked: list[str] = []

    async def approver(call: object, session: object, decision: object) -> Approval:
        asked.append("asked")
        return Approval(approved=True, scope="session")

    policy = {
        "rules": [
            {"name": "ask-me", "effect": "ask", "tools": ["ask_me"]},
            {"name": "rest", "effect": "allow", "tools": ["*"]},
        ]
    }
    config = write_config(tmp_path / "c", policy)
    runtime = Runtime(
        [config],
        workspace_root=workspace,
        settings=Settings(limit_store=fresh_redis.url, audit_sink="off"),
        approver=approver,
    )
    try:
        call = [Call("c", "ask_me", {})]
        assert runtime.run_turn_sync(call, Session(id="g"))[0].status is Status.ok
        assert runtime.run_turn_sync(call, Session(id="g"))[0].metadata.get("approved") == "session-grant"
        assert len(asked) == 1
        fresh_redis.kill()
        # The grant cannot be read: the approver is asked again rather than the grant assumed.
        again = runtime.run_turn_sync(call, Session(id="g"))[0]
        assert again.metadata.get("approved") == "approver"
        assert len(asked) == 2
        runtime.approver = None
        assert runtime.run_turn_sync(call, Session(id="g"))[0].code == "denied"
    finally:
        runtime.close_sync()


def test_store_errors_name_the_store_without_its_password() -> None:
    port = free_port()
    store = RedisLimitStore(f"redis://user:s3cret@127.0.0.1:{port}/0", timeout_s=0.2)
    with pytest.raises(LimitStoreError) as caught:
        store.try_acquire("s", "calls", 1, 5)
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    assert "unreachable" in str(caught.value)


def test_a_missing_client_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import runtime.fleet.connection as connection

    monkeypatch.setattr(connection, "redis", None)
    with pytest.raises(LimitStoreError, match=r"toolrt\[redis\]"):
        RedisLimitStore("redis://127.0.0.1:1/0")


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "redis", "memcached://x", "redis:/x"])
def test_settings_reject_a_limit_store_that_is_not_memory_or_redis(url: str) -> None:
    with pytest.raises(ValueError, match="limit_store"):
        Settings(limit_store=url)
