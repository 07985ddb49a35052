"""Quotas and circuit breakers checked around each call (runtime.policy.limits)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from runtime.config.models import CircuitBreaker, PolicySpec, Quotas
from runtime.policy.limits import Admission, BreakerState, InMemoryLimitStore, Limits, Refusal


class Clock:
    """A clock tests move by hand, so breaker windows need no sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Policy:
    name: str
    spec: PolicySpec = field(default_factory=PolicySpec)


def admitted(outcome: Admission | Refusal) -> Admission:
    assert isinstance(outcome, Admission), getattr(outcome, "message", outcome)
    return outcome


def refused(outcome: Admission | Refusal) -> Refusal:
    assert isinstance(outcome, Refusal), "expected a refusal"
    return outcome


def fail(admission: Admission, *, counts: bool = True) -> None:
    admission.finish(failed=True, counts_for_breaker=counts)


def breaker_limits(clock: Clock, **spec: object) -> Limits:
    return Limits(breakers=[("ops.circuit_breakers[0]", CircuitBreaker.model_validate(spec))], clock=clock)


# ---------------------------------------------------------------------------
# quotas


def test_calls_per_session_refuses_exactly_at_its_limit_and_names_it() -> None:
    limits = Limits([Quotas(calls_per_session=3)])
    for _ in range(3):
        admitted(limits.admit("search", "s1")).finish()
    refusal = refused(limits.admit("other", "s1"))
    assert (refusal.kind, refusal.quota, refusal.limit) == ("quota", "calls_per_session", 3)
    assert "at most 3 tool calls (calls_per_session); none are left" in refusal.message
    admitted(limits.admit("search", "s2"))  # another session has its own count


def test_calls_per_tool_counts_each_tool_separately() -> None:
    limits = Limits([Quotas(calls_per_tool={"run_tests": 2})])
    admitted(limits.admit("run_tests", "s"))
    admitted(limits.admit("run_tests", "s"))
    refusal = refused(limits.admit("run_tests", "s"))
    assert (refusal.quota, refusal.limit) == ("calls_per_tool", 2)
    assert "may call `run_tests` at most 2 times (calls_per_tool); none are left" in refusal.message
    for _ in range(5):
        admitted(limits.admit("search", "s"))


def test_calls_per_tool_glob_key_limits_each_matching_tool_and_is_named() -> None:
    limits = Limits([Quotas(calls_per_tool={"db_*": 1})])
    admitted(limits.admit("db_read", "s"))
    admitted(limits.admit("db_write", "s"))
    refusal = refused(limits.admit("db_read", "s"))
    assert "(calls_per_tool `db_*`)" in refusal.message
    admitted(limits.admit("dbx", "s"))
    admitted(limits.admit("dbx", "s"))


def test_exact_tool_name_beats_a_glob_in_the_same_document() -> None:
    limits = Limits([Quotas(calls_per_tool={"*": 1, "run_tests": 3})])
    for _ in range(3):
        admitted(limits.admit("run_tests", "s"))
    assert refused(limits.admit("run_tests", "s")).limit == 3
    admitted(limits.admit("search", "s"))
    assert refused(limits.admit("search", "s")).limit == 1


def test_smallest_limit_wins_across_documents() -> None:
    limits = Limits(
        [
            Quotas(calls_per_session=5, calls_per_tool={"run_tests": 4}, max_concurrent_per_tool={"*": 3}),
            Quotas(calls_per_session=10, calls_per_tool={"run_*": 2}, max_concurrent_per_tool={"run_tests": 5}),
        ]
    )
    running = [admitted(limits.admit("run_tests", "a")) for _ in range(2)]
    refusal = refused(limits.admit("run_tests", "a"))
    assert (refusal.quota, refusal.limit) == (
        "calls_per_tool",
        2,
    )  # run_* in one document beats run_tests: 4 in the other
    assert "`run_*`" in refusal.message
    for admission in running:
        admission.finish()
    for i in range(5):
        admitted(limits.admit(f"t{i}", "b")).finish()
    assert refused(limits.admit("t9", "b")).limit == 5
    in_flight = [admitted(limits.admit("run_tests", session)) for session in ("c1", "c2", "c3")]
    refusal = refused(limits.admit("run_tests", "c4"))
    assert (refusal.quota, refusal.limit) == ("max_concurrent_per_tool", 3)  # the "*" glob's 3, not run_tests: 5
    for admission in in_flight:
        admission.finish()


def test_max_concurrent_per_tool_refuses_while_slots_are_taken_across_sessions() -> None:
    limits = Limits([Quotas(max_concurrent_per_tool={"run_tests": 2})])
    first = admitted(limits.admit("run_tests", "s1"))
    admitted(limits.admit("run_tests", "s2"))
    refusal = refused(limits.admit("run_tests", "s3"))
    assert (refusal.quota, refusal.limit) == ("max_concurrent_per_tool", 2)
    assert (
        "at most 2 concurrent `run_tests` executions (max_concurrent_per_tool); wait for one to finish"
        in refusal.message
    )
    first.finish()
    admitted(limits.admit("run_tests", "s3"))


def test_execution_seconds_budget_is_spent_after_finish_and_refuses_the_next_call() -> None:
    limits = Limits([Quotas(execution_seconds_per_session=10)])
    admitted(limits.admit("build", "s")).finish(seconds=6)
    admitted(limits.admit("build", "s")).finish(seconds=4.5)  # admitted with budget left, may overrun it
    refusal = refused(limits.admit("search", "s"))
    assert (refusal.quota, refusal.limit) == ("execution_seconds_per_session", 10)
    assert "at most 10 s in total (execution_seconds_per_session); 10.5 s are used" in refusal.message
    admitted(limits.admit("search", "fresh"))


def test_output_bytes_budget_is_spent_after_finish_and_refuses_the_next_call() -> None:
    limits = Limits([Quotas(output_bytes_per_session=1_000_000)])
    admitted(limits.admit("read", "s")).finish(output_bytes=999_999)
    admitted(limits.admit("read", "s")).finish(output_bytes=1)
    refusal = refused(limits.admit("read", "s"))
    assert (refusal.quota, refusal.limit) == ("output_bytes_per_session", 1_000_000)
    assert (
        "at most 1000000 bytes of output in total (output_bytes_per_session); 1000000 bytes are used" in refusal.message
    )


def test_a_refused_admit_leaves_no_counter_changed() -> None:
    limits = Limits(
        [Quotas(calls_per_session=10, calls_per_tool={"run_tests": 10}, max_concurrent_per_tool={"run_tests": 1})]
    )
    running = admitted(limits.admit("run_tests", "s"))
    before = limits.usage("s", "run_tests")
    assert before == {**before, "calls_per_session": 1, "calls_per_tool": 1, "max_concurrent_per_tool": 1}
    refused(limits.admit("run_tests", "s"))
    assert limits.usage("s", "run_tests") == before
    running.finish()
    assert limits.usage("s", "run_tests")["max_concurrent_per_tool"] == 0


def test_a_refused_call_does_not_use_up_capacity() -> None:
    limits = Limits([Quotas(calls_per_session=2, max_concurrent_per_tool={"run_tests": 1})])
    running = admitted(limits.admit("run_tests", "s"))
    for _ in range(5):
        assert refused(limits.admit("run_tests", "s")).quota == "max_concurrent_per_tool"
    running.finish()
    admitted(limits.admit("run_tests", "s")).finish()  # the second of two calls: the refusals took none
    assert refused(limits.admit("run_tests", "s")).quota == "calls_per_session"


def test_tools_no_quota_applies_to_are_admitted_without_counting() -> None:
    limits = Limits([Quotas(calls_per_tool={"run_tests": 1})])
    for _ in range(3):
        admitted(limits.admit("search", "s")).finish(seconds=5, output_bytes=100)
    assert limits.usage("s", "search") == dict.fromkeys(limits.usage("s", "search"), 0.0)


# ---------------------------------------------------------------------------
# atomic check-and-count with real threads


def test_concurrent_admits_never_exceed_calls_per_session() -> None:
    limits = Limits([Quotas(calls_per_session=5000)])
    counts: list[int] = []
    start = threading.Barrier(16)

    def worker() -> None:
        start.wait()
        counts.append(sum(isinstance(limits.admit("search", "s"), Admission) for _ in range(1000)))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == 5000
    assert limits.usage("s")["calls_per_session"] == 5000


def test_max_concurrent_per_tool_holds_with_real_threads() -> None:
    limits = Limits([Quotas(max_concurrent_per_tool={"run_tests": 2})])
    guard = threading.Lock()
    in_flight = peak = ran = 0
    start = threading.Barrier(8)

    def worker() -> None:
        nonlocal in_flight, peak, ran
        start.wait()
        for _ in range(200):
            outcome = limits.admit("run_tests", "s")
            if isinstance(outcome, Refusal):
                continue
            with guard:
                in_flight += 1
                peak = max(peak, in_flight)
                ran += 1
            time.sleep(0)  # let another thread try while this one holds a slot
            with guard:
                in_flight -= 1
            outcome.finish()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 <= peak <= 2
    assert ran > 0
    assert limits.usage("s", "run_tests")["max_concurrent_per_tool"] == 0


def test_store_try_acquire_counts_only_within_the_limit() -> None:
    store = InMemoryLimitStore()
    assert store.try_acquire("s", "k", 2, 3) == (True, 2)
    assert store.try_acquire("s", "k", 2, 3) == (False, 2)
    assert store.try_acquire("s", "k", 1, 3) == (True, 3)
    assert store.try_acquire(None, "k", 1, 1) == (True, 1)  # the shared scope is separate
    assert store.release("s", "k", 10) == 0
    assert store.release("gone", "k", 1) == 0
    assert store.get("gone", "k") == 0


def test_store_compare_and_set_refuses_a_stale_expectation() -> None:
    store = InMemoryLimitStore()
    opened = BreakerState("open", since=1.0)
    assert store.cas_breaker("b", None, opened)
    assert not store.cas_breaker("b", None, BreakerState("open", since=2.0))
    assert store.get_breaker("b") is opened
    assert store.cas_breaker("b", opened, None)
    assert store.get_breaker("b") is None


# ---------------------------------------------------------------------------
# circuit breakers


def test_breaker_opens_after_n_failures_within_the_window() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=3, window_s=60, cooldown_s=30)
    for _ in range(2):
        fail(admitted(limits.admit("api", "s")))
        clock.advance(10)
    fail(admitted(limits.admit("api", "s")))
    refusal = refused(limits.admit("api", "s"))
    assert (refusal.kind, refusal.quota, refusal.limit) == ("breaker", "ops.circuit_breakers[0]", 3)
    assert refusal.message == (
        "`api` is failing: 3 failures in the last 60 s; it is paused for another 30 s (circuit breaker "
        "`ops.circuit_breakers[0]`). Try again later or use another tool."
    )


def test_failures_spread_beyond_the_window_do_not_open_it() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=3, window_s=60)
    for _ in range(10):
        fail(admitted(limits.admit("api", "s")))
        clock.advance(31)  # never three within 60 s
    admitted(limits.admit("api", "s"))


def test_open_breaker_refuses_with_the_remaining_cooldown() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=1, cooldown_s=30)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(17.5)
    refusal = refused(limits.admit("api", "s"))
    assert refusal.retry_after_s == pytest.approx(12.5)
    assert "1 failure in the last 60 s; it is paused for another 13 s" in refusal.message


def test_after_cooldown_half_open_lets_exactly_half_open_calls_through() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=1, cooldown_s=30, half_open_calls=2)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(30)
    trials = [admitted(limits.admit("api", "s")) for _ in range(2)]
    busy = refused(limits.admit("api", "s"))
    assert "`api` is recovering from failures: 2 trial calls are checking whether it works again" in busy.message
    assert limits.breaker_states("api")["ops.circuit_breakers[0]"].phase == "half_open"
    assert len(trials) == 2


def test_a_successful_trial_closes_the_breaker_and_clears_its_failures() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=2, cooldown_s=30)
    fail(admitted(limits.admit("api", "s")))
    fail(admitted(limits.admit("api", "s")))
    clock.advance(30)
    admitted(limits.admit("api", "s")).finish()
    assert limits.breaker_states("api")["ops.circuit_breakers[0]"] == BreakerState()
    fail(admitted(limits.admit("api", "s")))  # one failure after closing: below the threshold again
    admitted(limits.admit("api", "s"))


def test_a_trial_ending_in_a_non_counting_failure_closes_the_breaker() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=1, cooldown_s=30)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(30)
    fail(admitted(limits.admit("api", "s")), counts=False)  # the tool answered, with an error
    assert limits.breaker_states("api")["ops.circuit_breakers[0]"].phase == "closed"


def test_a_failed_trial_reopens_for_another_cooldown() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=1, cooldown_s=30)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(30)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(29)
    refusal = refused(limits.admit("api", "s"))
    assert (
        "`api` is still failing: a trial call after its pause failed too; it is paused for another 1 s"
        in refusal.message
    )
    clock.advance(1)
    admitted(limits.admit("api", "s"))


def test_non_counting_failures_do_not_trip_the_breaker() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=2)
    for _ in range(5):
        fail(admitted(limits.admit("api", "s")), counts=False)
    admitted(limits.admit("api", "s"))


def test_breakers_track_each_tool_separately() -> None:
    clock = Clock()
    limits = breaker_limits(clock, tools=["*"], failures=1)
    fail(admitted(limits.admit("api", "s")))
    refused(limits.admit("api", "s"))
    admitted(limits.admit("search", "s"))


def test_breaker_applies_only_to_tools_its_globs_match() -> None:
    clock = Clock()
    limits = breaker_limits(clock, tools=["http_*"], failures=1)
    fail(admitted(limits.admit("local", "s")))
    admitted(limits.admit("local", "s"))
    assert limits.breaker_states("local") == {}


def test_a_breaker_refusal_counts_nothing() -> None:
    clock = Clock()
    limits = Limits(
        [Quotas(calls_per_session=2, max_concurrent_per_tool={"api": 1})], [CircuitBreaker(failures=1)], clock=clock
    )
    fail(admitted(limits.admit("api", "s")))
    for _ in range(3):
        assert refused(limits.admit("api", "s")).kind == "breaker"
    assert limits.usage("s", "api") == {
        **limits.usage("s", "api"),
        "calls_per_session": 1,
        "max_concurrent_per_tool": 0,
    }


def test_a_call_refused_by_one_breaker_gives_back_its_trial_in_another() -> None:
    clock = Clock()
    wide = CircuitBreaker(failures=1, cooldown_s=30, half_open_calls=2)
    narrow = CircuitBreaker(failures=1, cooldown_s=30, half_open_calls=1)
    limits = Limits(breakers=[wide, narrow], clock=clock)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(30)
    trial = admitted(limits.admit("api", "s"))
    assert refused(limits.admit("api", "s")).quota == "circuit_breakers[1]"
    assert limits.breaker_states("api")["circuit_breakers[0]"].trials == 1
    trial.finish()
    assert {state.phase for state in limits.breaker_states("api").values()} == {"closed"}


def test_a_trial_that_never_reports_back_does_not_pause_the_tool_forever() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=1, cooldown_s=30)
    fail(admitted(limits.admit("api", "s")))
    clock.advance(30)
    admitted(limits.admit("api", "s"))  # never finished
    refused(limits.admit("api", "s"))
    clock.advance(30)
    admitted(limits.admit("api", "s")).finish()
    admitted(limits.admit("api", "s"))


def test_a_failure_of_a_call_begun_before_the_breaker_opened_changes_nothing() -> None:
    clock = Clock()
    limits = breaker_limits(clock, failures=1, cooldown_s=30)
    slow = admitted(limits.admit("api", "s"))
    fail(admitted(limits.admit("api", "s")))
    clock.advance(20)
    fail(slow)  # the breaker is open already: its cool-down does not restart
    clock.advance(10)
    admitted(limits.admit("api", "s"))


def test_state_survives_new_limits_on_the_same_store() -> None:
    clock = Clock()
    store = InMemoryLimitStore()
    policies = [
        Policy("ops", PolicySpec(quotas=Quotas(calls_per_session=2), circuit_breakers=[CircuitBreaker(failures=1)]))
    ]
    old = Limits.from_policies(policies, store=store, clock=clock)
    fail(admitted(old.admit("api", "s")))
    new = Limits.from_policies(policies, store=store, clock=clock)
    assert "(circuit breaker `ops.circuit_breakers[0]`)" in refused(new.admit("api", "s")).message
    admitted(new.admit("search", "s"))
    assert refused(new.admit("search", "s")).quota == "calls_per_session"


# ---------------------------------------------------------------------------
# lifecycle


def test_finishing_twice_is_harmless() -> None:
    limits = Limits([Quotas(max_concurrent_per_tool={"run_tests": 2}, execution_seconds_per_session=100)])
    first = admitted(limits.admit("run_tests", "s"))
    second = admitted(limits.admit("run_tests", "s"))
    first.finish(seconds=3)
    first.finish(seconds=3)
    usage = limits.usage("s", "run_tests")
    assert (usage["max_concurrent_per_tool"], usage["execution_seconds_per_session"]) == (1, 3)
    third = admitted(limits.admit("run_tests", "s"))  # the slot the first call held is free once, not twice
    assert refused(limits.admit("run_tests", "s")).quota == "max_concurrent_per_tool"
    second.finish()
    third.finish()


def test_forget_session_drops_its_counts() -> None:
    limits = Limits([Quotas(calls_per_session=1, output_bytes_per_session=10)])
    admitted(limits.admit("read", "s")).finish(output_bytes=5)
    refused(limits.admit("read", "s"))
    limits.forget_session("s")
    assert limits.usage("s") == dict.fromkeys(limits.usage("s"), 0.0)
    admitted(limits.admit("read", "s"))


def test_the_store_keeps_a_bounded_number_of_sessions() -> None:
    store = InMemoryLimitStore(max_sessions=3)
    limits = Limits([Quotas(calls_per_session=1)], store=store)
    for session in ("a", "b", "c", "d"):
        admitted(limits.admit("read", session))
    assert store.tracked_sessions == 3
    refused(limits.admit("read", "d"))
    admitted(limits.admit("read", "a"))  # the least recently counted one started over


def test_empty_limits_are_falsy_and_admit_everything() -> None:
    for limits in (Limits.empty(), Limits(), Limits([Quotas()]), Limits.from_policies([Policy("p")])):
        assert not limits
        for _ in range(3):
            admitted(limits.admit("anything", "s")).finish(
                seconds=1e9, output_bytes=10**12, failed=True, counts_for_breaker=True
            )
        assert limits.usage("s") == {}
    assert Limits([Quotas(calls_per_session=1)])
    assert Limits(breakers=[CircuitBreaker()])
