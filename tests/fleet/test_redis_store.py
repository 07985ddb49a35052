"""The Redis limit store against a real redis-server: each operation atomic, the one-step
admission all or nothing, leases on the server's clock, breaker compare-and-set exact."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fleet_servers import wait_for

from runtime.config.models import CircuitBreaker, Quotas
from runtime.fleet.grants import decode_grant, encode_grant
from runtime.fleet.limits import RedisLimitStore, decode_breaker, encode_breaker
from runtime.policy.grants import Grant
from runtime.policy.limits import Admission, BreakerState, Limits, Refusal


@pytest.fixture
def store(redis_url: str):  # type: ignore[no-untyped-def]
    made = RedisLimitStore(redis_url, lease_s=5.0)
    yield made
    made.close()


def test_threads_racing_on_one_counter_never_pass_the_limit(store: RedisLimitStore) -> None:
    with ThreadPoolExecutor(16) as pool:
        admitted = list(pool.map(lambda _: store.try_acquire("s", "calls", 1.0, 25)[0], range(200)))
    assert admitted.count(True) == 25
    assert store.get("s", "calls") == 25.0


def test_threads_racing_for_slots_never_hold_more_than_the_limit(store: RedisLimitStore) -> None:
    with ThreadPoolExecutor(16) as pool:
        admitted = list(pool.map(lambda _: store.try_acquire(None, "running:t", 1.0, 3)[0], range(100)))
    assert admitted.count(True) == 3
    assert store.get(None, "running:t") == 3.0
    assert store.held_slots == 3
    for _ in range(3):
        store.release(None, "running:t", 1.0)
    assert store.get(None, "running:t") == 0.0
    assert store.held_slots == 0


def test_releasing_more_than_was_taken_never_goes_below_zero(store: RedisLimitStore) -> None:
    store.try_acquire("s", "calls", 1.0, 5)
    assert store.release("s", "calls", 3.0) == 0.0
    assert store.release("unknown-session", "calls", 1.0) == 0.0
    assert store.release(None, "running:never", 1.0) == 0.0


def test_spending_adds_up_in_floats_and_forget_drops_the_session(store: RedisLimitStore) -> None:
    assert store.add("s", "seconds", 0.25) == 0.25
    assert store.add("s", "seconds", 0.5) == 0.75
    store.forget("s")
    assert store.get("s", "seconds") == 0.0


def test_a_slot_not_renewed_expires_on_the_server_clock(redis_url: str) -> None:
    short = RedisLimitStore(redis_url, lease_s=0.3)
    try:
        assert short.try_acquire(None, "running:t", 1.0, 1)[0]
        short._stop.set()  # this "worker" stops renewing, as a dead one would
        short._renewer.join(2)  # type: ignore[union-attr]
        wait_for(
            lambda: short.try_acquire(None, "running:t", 1.0, 1)[0] if short.get(None, "running:t") == 0 else False,
            10,
            "the lease to expire",
        )
    finally:
        short.close()


def test_a_shared_session_key_expires_after_its_time_to_live(redis_url: str) -> None:
    short = RedisLimitStore(redis_url, session_ttl_s=1)
    try:
        short.try_acquire("s", "calls", 1.0, 1)
        ttl = short._client.ttl("toolrt:s:s")
        assert 0 < ttl <= 1
    finally:
        short.close()


def test_breaker_compare_and_set_lets_exactly_one_racer_win(store: RedisLimitStore) -> None:
    base = BreakerState("closed", failures=(1.0,))
    assert store.cas_breaker("b:t", None, base)
    barrier = threading.Barrier(8)

    def swap(index: int) -> bool:
        seen = store.get_breaker("b:t")
        barrier.wait()
        return store.cas_breaker("b:t", seen, BreakerState("open", since=float(index), opened_by=2))

    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(swap, range(8)))
    assert won.count(True) == 1
    assert store.get_breaker("b:t").phase == "open"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "state",
    [
        BreakerState(),
        BreakerState("closed", failures=(1.5, 2.25)),
        BreakerState("open", since=1e9 + 0.123456, opened_by=5),
        BreakerState("half_open", since=3.0, trials=2, opened_by=0),
    ],
)
def test_breaker_states_survive_the_round_trip_exactly(state: BreakerState) -> None:
    raw = encode_breaker(state)
    assert decode_breaker(raw) == state
    assert encode_breaker(decode_breaker(raw)) == raw


@pytest.mark.parametrize(
    "raw", [b"", b"garbage", b"[1,2]", b'["weird",[],0,0,0]', b'{"phase":"open"}', b'["open","x",0,0,0]']
)
def test_a_breaker_value_that_is_no_state_reads_as_closed(raw: bytes) -> None:
    assert decode_breaker(raw) is None


def _limits(store: RedisLimitStore, **quotas: object) -> Limits:
    return Limits(
        [Quotas(**quotas)], [CircuitBreaker(tools=["t"], failures=2, window_s=60, cooldown_s=60)], store=store
    )  # type: ignore[arg-type]


def test_a_refused_admission_counts_nothing(store: RedisLimitStore) -> None:
    limits = _limits(store, calls_per_session=100, calls_per_tool={"t": 100}, max_concurrent_per_tool={"t": 1})
    first = limits.admit("t", "s")
    assert isinstance(first, Admission)
    refused = limits.admit("t", "s")
    assert isinstance(refused, Refusal) and refused.quota == "max_concurrent_per_tool"
    used = limits.usage("s", "t")
    assert (used["calls_per_session"], used["calls_per_tool"], used["max_concurrent_per_tool"]) == (1.0, 1.0, 1.0)
    first.finish(seconds=0.5, output_bytes=10)
    assert limits.usage("s", "t")["max_concurrent_per_tool"] == 0.0


def test_a_spent_budget_refuses_before_anything_is_counted(store: RedisLimitStore) -> None:
    limits = _limits(store, calls_per_session=100, output_bytes_per_session=10)
    limits.admit("t", "s").finish(output_bytes=10)  # type: ignore[union-attr]
    refused = limits.admit("t", "s")
    assert isinstance(refused, Refusal) and refused.quota == "output_bytes_per_session"
    assert limits.usage("s")["calls_per_session"] == 1.0


def test_a_breaker_opens_half_opens_and_closes_on_the_server_clock(store: RedisLimitStore) -> None:
    limits = Limits([], [CircuitBreaker(tools=["t"], failures=2, window_s=60, cooldown_s=0.3)], store=store)
    for _ in range(2):
        limits.admit("t", "s").finish(failed=True, counts_for_breaker=True)  # type: ignore[union-attr]
    refused = limits.admit("t", "s")
    assert isinstance(refused, Refusal) and refused.kind == "breaker"
    time.sleep(0.35)  # the cool-down is what is under test here
    trial = limits.admit("t", "s")
    assert isinstance(trial, Admission)
    busy = limits.admit("t", "s")
    assert isinstance(busy, Refusal) and "recovering" in busy.message
    trial.finish()
    assert limits.breaker_states("t")["circuit_breakers[0]"].phase == "closed"


@pytest.mark.parametrize(
    "grant",
    [
        Grant("t@1"),
        Grant("t", {"path": "src/*", "mode": "r"}, "rule-1"),
        Grant("sh", None, None, frozenset({("git status", frozenset()), ("sed", frozenset({"-i"}))})),
        Grant("sh", None, "r", frozenset()),
    ],
)
def test_grants_survive_the_round_trip_exactly(grant: Grant) -> None:
    back = decode_grant(encode_grant(grant))
    assert back == grant
    assert encode_grant(back) == encode_grant(grant)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"[]",
        b'{"tool": 1, "pattern": null, "rule": null, "commands": null}',
        b'{"tool": "t"}',
        b'{"tool":"t","pattern":null,"rule":null,"commands":{"set":[{"bad":1}]}}',
    ],
)
def test_a_stored_grant_that_is_no_grant_covers_nothing(raw: bytes) -> None:
    assert decode_grant(raw) is None


def test_a_settlement_reaches_a_server_that_lost_its_scripts(store: RedisLimitStore) -> None:
    limits = _limits(store, max_concurrent_per_tool={"t": 1})
    admission = limits.admit("t", "s")
    assert isinstance(admission, Admission)
    store._client.script_flush()  # what a restarted server (or SCRIPT FLUSH) does to the script cache
    admission.finish()
    assert limits.usage("s", "t")["max_concurrent_per_tool"] == 0.0
    assert isinstance(limits.admit("t", "s"), Admission)  # the admit script is loaded again too


def test_closing_the_store_sends_the_settlements_still_queued(redis_url: str) -> None:
    first = RedisLimitStore(redis_url)
    limits = _limits(first, max_concurrent_per_tool={"t": 1}, execution_seconds_per_session=100.0)
    for _ in range(20):
        limits.admit("t", "s").finish(seconds=0.5)  # type: ignore[union-attr]
    first.close()
    second = RedisLimitStore(redis_url)
    try:
        assert second.get("s", "seconds") == 10.0
        assert second.get(None, "running:t") == 0.0
    finally:
        second.close()


def test_a_settlement_that_cannot_be_sent_is_logged_and_the_slot_expires(fresh_redis) -> None:  # type: ignore[no-untyped-def]
    store = RedisLimitStore(fresh_redis.url, lease_s=0.5)
    try:
        limits = _limits(store, max_concurrent_per_tool={"t": 1})
        admission = limits.admit("t", "s")
        assert isinstance(admission, Admission)
        fresh_redis.pause()
        try:
            admission.finish()  # never blocks the caller, whatever the server does
            store.flush()
        finally:
            fresh_redis.resume()
        wait_for(lambda: isinstance(limits.admit("t", "s2"), Admission), 20, "the slot to be free again")
    finally:
        store.close()
