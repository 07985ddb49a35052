"""Hot reload under the edits real tools make, while turns are served: a file written in
steps with pauses, deleted and recreated, copied over with ``cp``, its folder renamed
away and back. The policy denies a read-only tool; the proof is that it never runs,
that no call fails because of a reload, and that the final state is always served."""

from __future__ import annotations

import itertools
import os
import random
import time
from pathlib import Path

import pytest
from fault_writers import WRITERS, CallLoad, policy_text, tools_text, write_in_chunks
from reload_support import EventLog, wait_until

from runtime.records import Call, Status
from runtime.runtime import Runtime
from runtime.settings import Settings

# Long enough that a writer's own pauses (at most 60 ms, stretched by a busy machine)
# never look like a finished edit; the tests that are about the window say so.
SETTLE_MS = 600
EDITS_PER_WRITER = 20


def _config(root: Path) -> Path:
    config = root / "config"
    (config / "tools").mkdir(parents=True)
    (config / "policies").mkdir()
    (config / "tools" / "tools.yaml").write_text(tools_text(0), encoding="utf-8")
    (config / "policies" / "policy.yaml").write_text(policy_text(0), encoding="utf-8")
    return config


def _runtime(config: Path | list[Path], tmp_path: Path, events: EventLog, settle_ms: int = SETTLE_MS) -> Runtime:
    paths = config if isinstance(config, list) else [config]
    runtime = Runtime(
        paths, workspace_root=tmp_path, settings=Settings(reload_settle_ms=settle_ms, audit_sink="off"), watch=False
    )
    runtime.watch(on_event=events)
    assert runtime.watcher is not None and runtime.watcher.ready
    return runtime


def _serving(runtime: Runtime, tools_edit: int, policy_edit: int) -> bool:
    snapshot = runtime.snapshot
    finder = snapshot.tools.get("finder")
    reasons = {rule.name: rule.reason for rule in snapshot.policy_rules}
    return (
        finder is not None
        and finder.spec.description == f"Finds tools, edit {tools_edit}."
        and reasons.get("finder-ok") == f"Finding is fine, edit {policy_edit}."
    )


def _assert_no_hole(load: CallLoad, runtime: Runtime) -> None:
    assert len(load.results) > 20
    assert load.denied_ran() == []
    assert [(r.code, r.content) for r in load.failed()] == []
    denied = [r for r in load.results if r.name == "secret_reader"]
    assert all(r.status is Status.denied for r in denied)
    assert {rule.name for rule in runtime.snapshot.policy_rules} == {"finder-ok", "never-secrets"}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("target", ["policy", "tools", "both"])
def test_step_wise_edits_under_load_never_run_a_denied_tool_nor_fail_a_call(
    tmp_path: Path, writer: str, target: str
) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events)
    rng = random.Random(f"{writer}-{target}")
    write = WRITERS[writer]
    try:
        with CallLoad(runtime) as load:
            for n in range(1, EDITS_PER_WRITER + 1):
                if target in ("policy", "both"):
                    write(config / "policies" / "policy.yaml", policy_text(n), rng)
                if target in ("tools", "both"):
                    write(config / "tools" / "tools.yaml", tools_text(n), rng)
            last = EDITS_PER_WRITER
            wait_until(
                lambda: _serving(runtime, last if target != "policy" else 0, last if target != "tools" else 0),
                timeout=30,
                what="the final state serving",
            )
        _assert_no_hole(load, runtime)
        assert runtime.watcher is not None
        published = [e for e in events.events if e.ok]
        assert len(published) <= EDITS_PER_WRITER // 2, [
            e.to_dict() for e in published
        ]  # stable views only, not every step
    finally:
        runtime.close_sync()


@pytest.mark.parametrize("seed", range(2))
def test_hundreds_of_mixed_step_wise_edits_to_two_config_files_keep_the_deny_rule(tmp_path: Path, seed: int) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events)
    rng = random.Random(seed)
    names = sorted(WRITERS)
    try:
        with CallLoad(runtime) as load:
            for n in range(1, 101):
                WRITERS[rng.choice(names)](config / "policies" / "policy.yaml", policy_text(n), rng)
                WRITERS[rng.choice(names)](config / "tools" / "tools.yaml", tools_text(n), rng)
                if n % 25 == 0:  # some edits are left alone long enough to go live
                    wait_until(lambda n=n: _serving(runtime, n, n), timeout=30, what=f"edit {n} serving")
            wait_until(lambda: _serving(runtime, 100, 100), timeout=30, what="the final state serving")
        _assert_no_hole(load, runtime)
    finally:
        runtime.close_sync()


def test_two_config_files_given_by_path_survive_one_being_deleted_and_recreated(tmp_path: Path) -> None:
    config = _config(tmp_path)
    tools, policy = config / "tools" / "tools.yaml", config / "policies" / "policy.yaml"
    events = EventLog()
    runtime = _runtime([tools, policy], tmp_path, events)
    rng = random.Random(3)
    try:
        with CallLoad(runtime) as load:
            for n in range(1, 41):
                target, text = (tools, tools_text(n)) if n % 2 else (policy, policy_text(n))
                WRITERS["delete-recreate"](target, text, rng)
            wait_until(lambda: _serving(runtime, 39, 40), timeout=30, what="the final state serving")
        _assert_no_hole(load, runtime)
        assert not [r for r in load.results if r.code == "unknown-tool"]
    finally:
        runtime.close_sync()


@pytest.mark.parametrize(
    "cut_after", ["effect: deny\n", "effect: deny", "tools:\n", "tools:", "      tools:\n        - secret_reader\n"]
)
def test_a_policy_file_left_cut_off_never_goes_live_in_a_weaker_form(tmp_path: Path, cut_after: str) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events, settle_ms=150)
    try:
        before = runtime.snapshot.version
        text = policy_text(1)
        cut = text[: text.index(cut_after) + len(cut_after)]
        if cut_after.startswith(
            "      tools:"
        ):  # cut before the rule's tools were all listed: drop the rule's last lines
            cut = text.replace("        - secret_reader\n", "        - nothing_real\n")
        mark = events.mark()
        (config / "policies" / "policy.yaml").write_text(cut, encoding="utf-8")
        event = events.wait_for(lambda e: e.event in ("error", "held", "reloaded"), since=mark)
        if event.event == "held":  # a weaker rule that parses: held, and live only if left that way
            assert "never-secrets" in event.errors[0]["message"]
        else:
            assert event.event == "error" and event.serving == before
            assert runtime.snapshot.version == before
        result = runtime.run_turn_sync([Call(id="s", name="secret_reader", args={})])[0]
        assert result.status is Status.denied
    finally:
        runtime.close_sync()


@pytest.mark.parametrize("kind", ["builtin", "python", "mcp", "command", "http"])
def test_a_tool_file_cut_after_its_handler_kind_is_an_error_not_a_handler(tmp_path: Path, kind: str) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events, settle_ms=150)
    try:
        before = runtime.snapshot.version
        text = tools_text(1).replace("    builtin: tool_search\n  read_only: true", f"    {kind}:", 1)
        text = text[: text.index(f"    {kind}:") + len(f"    {kind}:")] + "\n"
        mark = events.mark()
        (config / "tools" / "tools.yaml").write_text(text, encoding="utf-8")
        event = events.wait_for(lambda e: e.event == "error", since=mark)
        assert any("handler" in e["message"] for e in event.errors), event.errors
        assert runtime.snapshot.version == before
    finally:
        runtime.close_sync()


def test_a_tool_file_cut_right_after_handler_is_an_error(tmp_path: Path) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events, settle_ms=150)
    try:
        text = tools_text(1)
        mark = events.mark()
        (config / "tools" / "tools.yaml").write_text(
            text[: text.index("handler:") + len("handler:")] + "\n", encoding="utf-8"
        )
        event = events.wait_for(lambda e: e.event == "error", since=mark)
        assert event.errors[0]["code"] in ("wrong-type", "missing-key")
    finally:
        runtime.close_sync()


def test_a_deleted_policy_file_is_held_for_a_second_window_then_goes_live(tmp_path: Path) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events, settle_ms=300)
    try:
        mark = events.mark()
        (config / "policies" / "policy.yaml").unlink()
        held = events.wait_for(lambda e: e.event == "held", since=mark)
        assert (
            "Policy guard" in held.errors[0]["message"] and "deny rule guard/never-secrets" in held.errors[0]["message"]
        )
        assert held.serving == held.previous
        assert {r.name for r in runtime.snapshot.policy_rules} == {"finder-ok", "never-secrets"}  # not live yet
        live = events.wait_for(lambda e: e.event == "reloaded", since=mark)
        assert live.version == held.version
        assert events.times[events.events.index(live)] - events.times[events.events.index(held)] >= 0.3 * 0.9
        assert runtime.snapshot.policies == ()
        assert runtime.watcher is not None and runtime.watcher.reloads_held >= 1
    finally:
        runtime.close_sync()


@pytest.mark.parametrize("gap_fraction", [0.2, 0.5])
def test_a_policy_file_deleted_and_restored_within_the_hold_never_loses_its_deny_rule(
    tmp_path: Path, gap_fraction: float
) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events, settle_ms=400)
    policy = config / "policies" / "policy.yaml"
    try:
        original = runtime.snapshot.version
        mark = events.mark()
        policy.unlink()
        held = events.wait_for(
            lambda e: e.event == "held", since=mark, timeout=30
        )  # the deletion was stable for one window
        policy.write_text(policy_text(0), encoding="utf-8")  # restored during the second window
        assert held.version != original
        wait_until(
            lambda: (
                runtime.watcher is not None
                and runtime.watcher.last_event is not None
                and runtime.watcher.last_event.event == "reloaded"
            ),
            timeout=30,
            what="the restored config reported",
        )
        assert not any(e.event == "reloaded" and e.version == held.version for e in events.since(mark))
        assert runtime.snapshot.version == original
    finally:
        runtime.close_sync()


def test_edits_faster_than_the_window_are_not_published_until_they_stop(tmp_path: Path) -> None:
    # The premise is edits closer together than the settle window. A machine so loaded
    # that two edits were a window apart may publish between them: that run proves
    # nothing, and the next one has a longer window.
    for settle_ms in (500, 2000, 8000):
        if _burst_published_once(tmp_path / f"window-{settle_ms}", settle_ms):
            return
    raise AssertionError("the edits were never closer together than half the settle window")


def _burst_published_once(root: Path, settle_ms: int) -> bool:
    """Fifteen edits in a row: False when two of them were half a window apart or more
    (the premise failed); otherwise asserts that only the last one was published."""
    config = _config(root)
    events = EventLog()
    runtime = _runtime(config, root, events, settle_ms=settle_ms)
    try:
        mark = events.mark()
        tools = config / "tools" / "tools.yaml"
        written: list[float] = []
        for n in range(1, 16):
            tools.write_text(tools_text(n), encoding="utf-8")
            wait_until(
                lambda n=n: tools.read_text(encoding="utf-8") == tools_text(n)
            )  # each write is on disk before the next
            os.utime(tools)
            written.append(time.monotonic())
        wait_until(lambda: _serving(runtime, 15, 0), timeout=60, what="the last edit serving")
        # The event is delivered after the snapshot is published: wait for it too.
        version = runtime.snapshot.version
        wait_until(lambda: any(e.ok and e.version == version for e in events.since(mark)), what="its event")
        if max(b - a for a, b in itertools.pairwise(written)) >= settle_ms / 1000 / 2:
            return False
        assert [e.version for e in events.since(mark) if e.ok] == [version]
        return True
    finally:
        runtime.close_sync()


def test_the_default_settle_window_is_long_enough_for_step_wise_writers() -> None:
    assert Settings.model_fields["reload_settle_ms"].default >= 1000
    assert Settings(reload_settle_ms=250).reload_settle_ms == 250


def test_the_config_root_renamed_away_and_back_serves_no_partial_config(tmp_path: Path) -> None:
    config = _config(tmp_path)
    events = EventLog()
    runtime = _runtime(config, tmp_path, events, settle_ms=300)
    rng = random.Random(11)
    try:
        with CallLoad(runtime) as load:
            for n in range(1, 11):
                away = tmp_path / "config-away"
                os.rename(config, away)
                write_in_chunks(away / "tools" / "tools.yaml", tools_text(n), rng)
                os.rename(away, config)
            wait_until(lambda: _serving(runtime, 10, 0), timeout=30, what="the final state serving")
        _assert_no_hole(load, runtime)
    finally:
        runtime.close_sync()
