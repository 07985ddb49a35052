"""Fleet guarantees with real concurrency: worker processes, each with its own Runtime,
sharing one real redis-server. Quotas are exact however the workers race, a breaker
opened by one is open on all, a grant made on one is honoured on all, and a worker
killed while holding a concurrency slot frees it within the lease."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import fleet_worker
from fleet_servers import wait_for
from fleet_support import write_config

from runtime import Runtime
from runtime.records import Call, Session, Status
from runtime.settings import Settings

# Workers fork from a forkserver (a clean process that inherits nothing of the test
# process) with the runtime already imported, instead of each importing it anew.
CTX = multiprocessing.get_context("forkserver")
CTX.set_forkserver_preload(["runtime", "runtime.settings", "runtime.records", "fleet_worker"])
# A round trip may take seconds when 20 workers start at once on a busy 2-core machine; a
# timed-out admission that the server did count would read as a miscount (the default 0.5 s
# is for production, where a slow store must fail fast).
TIMEOUT_S = 10.0


def _start(target: Any, *args: Any) -> Any:
    process = CTX.Process(target=target, args=args, daemon=True)
    process.start()
    return process


def _race(
    config: Path,
    workspace: Path,
    settings: dict[str, Any],
    workers: int,
    per_worker: int,
    session_of: Any,
    tool: str = "ping",
    skews: Any = None,
) -> list[tuple[int, list[tuple[str, str | None]]]]:
    go = CTX.Event()
    results = CTX.Queue()
    processes = [
        _start(
            fleet_worker.calls,
            str(config),
            str(workspace),
            settings,
            go,
            session_of(i),
            tool,
            per_worker,
            results,
            (skews or (lambda _: 0.0))(i),
        )
        for i in range(workers)
    ]
    go.set()
    collected = [results.get(timeout=240) for _ in processes]
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    return collected


def test_twenty_workers_racing_on_one_session_admit_exactly_the_quota(
    tmp_path: Path, workspace: Path, redis_url: str
) -> None:
    config = write_config(tmp_path / "config", {"quotas": {"calls_per_session": 37, "calls_per_tool": {"ping": 1000}}})
    collected = _race(
        config,
        workspace,
        {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": "off"},
        workers=20,
        per_worker=5,
        session_of=lambda _: "shared",
    )
    outcomes = [outcome for _, worker in collected for outcome in worker]
    assert len(outcomes) == 100
    admitted = [o for o in outcomes if o[0] == "ok"]
    refused = [o for o in outcomes if o[0] != "ok"]
    assert len(admitted) == 37
    assert len(refused) == 63
    assert {code for _, code in refused} == {"quota_exceeded"}
    assert len({pid for pid, _ in collected}) == 20


def test_per_tool_quotas_are_exact_per_session_across_workers(tmp_path: Path, workspace: Path, redis_url: str) -> None:
    config = write_config(tmp_path / "config", {"quotas": {"calls_per_tool": {"ping": 3}}})
    # 8 workers, 4 sessions (two workers each), 4 calls each: 3 admitted per session.
    collected = _race(
        config,
        workspace,
        {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": "off"},
        workers=8,
        per_worker=4,
        session_of=lambda i: f"s{i % 4}",
    )
    outcomes = [outcome for _, worker in collected for outcome in worker]
    assert sum(1 for status, _ in outcomes if status == "ok") == 4 * 3
    assert sum(1 for _, code in outcomes if code == "quota_exceeded") == 32 - 12


def test_workers_with_skewed_wall_clocks_share_one_breaker(tmp_path: Path, workspace: Path, redis_url: str) -> None:
    config = write_config(
        tmp_path / "config",
        {"circuit_breakers": [{"tools": ["boom"], "failures": 3, "window_s": 60, "cooldown_s": 600}]},
    )
    # Three workers fail once each; their wall clocks are an hour apart.
    collected = _race(
        config,
        workspace,
        {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": "off"},
        workers=3,
        per_worker=1,
        session_of=lambda i: f"w{i}",
        tool="boom",
        skews=lambda i: (i - 1) * 3600.0,
    )
    assert sorted(code for _, worker in collected for _, code in worker) == ["handler_error"] * 3
    # A fourth worker, in this process, sees the breaker open at its very first call.
    runtime = Runtime([config], workspace_root=workspace, settings=Settings(limit_store=redis_url, audit_sink="off"))
    try:
        result = runtime.run_turn_sync([Call("c1", "boom", {})], Session(id="other"))[0]
        assert (result.status, result.code) == (Status.denied, "circuit_open")
        assert "paused" in result.content
    finally:
        runtime.close_sync()


def test_a_grant_made_on_one_worker_is_honoured_on_another(tmp_path: Path, workspace: Path, redis_url: str) -> None:
    policy = {
        "rules": [
            {"name": "ask-me", "effect": "ask", "tools": ["ask_me"]},
            {"name": "rest", "effect": "allow", "tools": ["*"]},
        ]
    }
    config = write_config(tmp_path / "config", policy)
    settings = {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": "off"}
    results = CTX.Queue()
    worker = _start(fleet_worker.grant, str(config), str(workspace), settings, "granted", results)
    assert results.get(timeout=120) == ("ok", None, "approver")
    worker.join(60)
    # This runtime has no approver: without the grant the call would be denied.
    runtime = Runtime([config], workspace_root=workspace, settings=Settings(**settings))
    try:
        again = runtime.run_turn_sync([Call("c1", "ask_me", {})], Session(id="granted"))[0]
        assert again.status is Status.ok
        assert again.metadata.get("approved") == "session-grant"
        other = runtime.run_turn_sync([Call("c2", "ask_me", {})], Session(id="not-granted"))[0]
        assert (other.status, other.code) == (Status.denied, "denied")
    finally:
        runtime.close_sync()


def test_a_killed_worker_frees_its_concurrency_slot_within_the_lease(
    tmp_path: Path, workspace: Path, redis_url: str
) -> None:
    config = write_config(tmp_path / "config", {"quotas": {"max_concurrent_per_tool": {"hold": 1}}})
    settings = {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": "off", "limit_lease_s": 1.5}
    started, release = tmp_path / "started", tmp_path / "release"
    worker = _start(fleet_worker.hold_slot, str(config), str(workspace), settings, "holder", str(release), str(started))
    wait_for(started.exists, 120, "the worker to hold its slot")
    runtime = Runtime([config], workspace_root=workspace, settings=Settings(**settings))
    ours = tmp_path / "release-ours"  # the worker's flag never appears: it holds its slot until killed
    ours.write_text("")  # our own call returns at once once admitted
    args = {"release": str(ours), "started": str(tmp_path / "started-here")}
    try:
        refused = runtime.run_turn_sync([Call("c0", "hold", args)], Session(id="other"))[0]
        assert refused.code == "quota_exceeded"  # the live worker holds the only slot (and renews it)
        assert worker.is_alive()
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)

        def admitted() -> bool:
            return runtime.run_turn_sync([Call("c1", "hold", args)], Session(id="other"))[0].status is Status.ok

        wait_for(admitted, 30, "the dead worker's slot to expire")
    finally:
        runtime.close_sync()


def test_a_live_worker_keeps_its_slot_past_the_lease_by_renewing_it(
    tmp_path: Path, workspace: Path, redis_url: str
) -> None:
    config = write_config(tmp_path / "config", {"quotas": {"max_concurrent_per_tool": {"hold": 1}}})
    settings = {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": "off", "limit_lease_s": 0.6}
    started, release = tmp_path / "started", tmp_path / "release"
    worker = _start(fleet_worker.hold_slot, str(config), str(workspace), settings, "holder", str(release), str(started))
    wait_for(started.exists, 120, "the worker to hold its slot")
    client = __import__("redis").Redis.from_url(redis_url)
    try:
        # Past several leases, the slot is still held: a renewal moved its expiry each time.
        first = client.zrange("toolrt:l:running:hold", 0, -1, withscores=True)
        assert len(first) == 1
        wait_for(
            lambda: client.zrange("toolrt:l:running:hold", 0, -1, withscores=True)[0][1] > first[0][1] + 1.2,
            30,
            "the lease to be renewed past two lease periods",
        )
        assert client.zcard("toolrt:l:running:hold") == 1
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)


def test_eight_workers_twenty_sessions_exact_quotas_and_one_audit_chain(
    tmp_path: Path, workspace: Path, redis_url: str, postgres_dsn: str
) -> None:
    from runtime.audit.pgread import query_postgres, verify_postgres

    config = write_config(tmp_path / "config", {"quotas": {"calls_per_session": 5}})
    settings = {"limit_store": redis_url, "limit_store_timeout_s": TIMEOUT_S, "audit_sink": postgres_dsn}
    sessions = [f"session-{i}" for i in range(20)]
    go, results = CTX.Event(), CTX.Queue()
    # Every worker makes 2 calls in every session: 16 attempts per session, 5 admitted.
    processes = [
        _start(fleet_worker.sessions, str(config), str(workspace), settings, go, sessions, 2, results) for _ in range(8)
    ]
    go.set()
    collected = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    outcomes = [outcome for _, worker in collected for outcome in worker]
    assert len(outcomes) == 8 * 20 * 2
    for session in sessions:
        mine = [o for o in outcomes if o[0] == session]
        assert sum(1 for o in mine if o[2] == "ok") == 5, session
        assert sum(1 for o in mine if o[3] == "quota_exceeded") == 11, session
    rows = query_postgres(postgres_dsn, limit=None)
    stored = sorted(row["call_id"] for row in rows)
    assert stored == sorted(o[1] for o in outcomes)  # every call's record, exactly once
    assert {row["status"] for row in rows} == {"ok", "denied"}
    (report,) = verify_postgres(postgres_dsn)  # one workspace: one chain through all eight writers
    assert report.ok and report.chained == len(outcomes)
