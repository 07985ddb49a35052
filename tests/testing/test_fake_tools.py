"""runtime.testing.FakeTool: a faked tool goes through the whole pipeline, records each
call it receives, and answers on cue (return, raise, compute, wait for an event, hang
until the tool's timeout)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from runtime import Call, Session, ToolError, TransientError
from runtime.approvers import ScriptedApprover
from runtime.records import Status
from runtime.testing import Cue, FakeTool, runtime_from_yaml

ORDERS = """
apiVersion: toolrt/v1
kind: Tool
metadata: {name: lookup_order}
spec:
  description: Look up an order.
  handler: python:myapp.orders:lookup   # the app's real handler: not importable here, never imported
  read_only: true
  process_isolation: true
  input_schema:
    type: object
    properties: {order_id: {type: string, pattern: "^O-[0-9]+$"}}
    required: [order_id]
  retry: {attempts: 2, backoff_s: 0.01}
  timeout: {total_s: 1.5}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: refund}
spec:
  description: Refund an order.
  handler: {command: {argv: [refund-cli, "{order_id}"]}}
  input_schema:
    type: object
    properties: {order_id: {type: string}, cents: {type: integer, minimum: 1}}
    required: [order_id, cents]
  rules:
    - name: small-refunds
      expression: args.cents <= 10000
      message: Refunds over 100.00 go through a person.
  timeout: {total_s: 1.5}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: shop}
spec:
  rules:
    - {name: lookups, effect: allow, tools: [lookup_order]}
    - {name: refunds-ask, effect: ask, tools: [refund]}
"""


def lookup(call_id: str = "c1", order: str = "O-1") -> Call:
    return Call(id=call_id, name="lookup_order", args={"order_id": order})


def refund(call_id: str = "r1", cents: int = 500) -> Call:
    return Call(id=call_id, name="refund", args={"order_id": "O-1", "cents": cents})


def run(fakes: dict[str, FakeTool], *calls: Call, **options: object) -> list:
    """One turn of ``calls``; the tools not in ``fakes`` are faked too (their real handlers do not exist here)."""
    fakes = {"lookup_order": FakeTool(), "refund": FakeTool(), **fakes}
    with runtime_from_yaml(ORDERS, fakes=fakes, **options) as runtime:  # type: ignore[arg-type]
        return runtime.run_turn_sync(list(calls), Session(id="s1"))


def test_a_fake_returns_its_value_to_every_call_and_records_each_call() -> None:
    fake = FakeTool(returns={"status": "shipped"})
    results = run({"lookup_order": fake}, lookup("a", "O-1"), lookup("b", "O-2"))
    assert [(r.status, r.content) for r in results] == [(Status.ok, '{"status": "shipped"}')] * 2
    # The two read-only calls run concurrently: they may reach the fake in either order.
    assert sorted(fake.args, key=str) == [{"order_id": "O-1"}, {"order_id": "O-2"}]
    assert sorted((c.tool, c.call_id, c.session_id, c.outcome) for c in fake.calls) == [
        ("lookup_order", "a", "s1", "returned"),
        ("lookup_order", "b", "s1", "returned"),
    ]
    assert fake.last.value == {"status": "shipped"} and fake.name == "lookup_order"


def test_queued_cues_serve_one_call_each_in_order_then_the_default_serves() -> None:
    fake = FakeTool(returns="default").next(returns="first").next(raises=ToolError("second fails"))
    with runtime_from_yaml(ORDERS, fakes={"lookup_order": fake}) as runtime:
        contents = [runtime.run_turn_sync([lookup(f"c{i}")])[0].content for i in range(4)]
    assert contents == ["first", "second fails", "default", "default"]
    assert [c.outcome for c in fake.calls] == ["returned", "raised", "returned", "returned"]


def test_a_tool_error_reaches_the_model_as_an_error_result_with_its_message() -> None:
    fake = FakeTool(raises=ToolError("order O-1 is archived"))
    [result] = run({"lookup_order": fake}, lookup())
    assert result.is_error and result.code == "tool_error" and "order O-1 is archived" in result.content
    assert isinstance(fake.last.error, ToolError)


def test_a_transient_error_is_retried_as_the_tool_declares_and_the_fake_sees_every_attempt() -> None:
    fake = FakeTool(returns="found").next(raises=TransientError("busy")).next(raises=TransientError("busy"))
    [result] = run({"lookup_order": fake}, lookup())
    assert (result.status, result.content) == (Status.ok, "found")
    assert [c.outcome for c in fake.calls] == ["raised", "raised", "returned"]


def test_an_exception_class_is_raised_and_a_tool_that_is_not_read_only_reports_the_result_unknown() -> None:
    fake = FakeTool(raises=ConnectionResetError)
    [result] = run({"refund": fake}, refund(), approver=ScriptedApprover({"refund": True}))
    assert result.is_error and result.content.startswith("Result unknown: `refund` failed with ConnectionResetError")
    assert isinstance(fake.last.error, ConnectionResetError)


def test_a_hanging_fake_is_stopped_by_the_tools_timeout_and_recorded_as_cancelled() -> None:
    fake = FakeTool(hang=True)
    [result] = run({"lookup_order": fake}, lookup())
    assert result.status is Status.timeout and result.code == "timeout"
    assert fake.wait_for_calls(1, finished=True)[0].outcome == "cancelled"


def test_a_fake_waiting_for_a_threading_event_answers_only_once_the_test_sets_it() -> None:
    gate = threading.Event()
    fake = FakeTool(wait_for=gate, returns="released")
    results: list = []
    with runtime_from_yaml(ORDERS, fakes={"lookup_order": fake}) as runtime:
        turn = threading.Thread(target=lambda: results.extend(runtime.run_turn_sync([lookup()])))
        turn.start()
        [call] = fake.wait_for_calls(1)
        assert call.outcome == "running" and not results  # it is inside the handler, waiting
        gate.set()
        turn.join(30)
    assert [r.content for r in results] == ["released"] and fake.last.outcome == "returned"


async def test_a_fake_waiting_for_an_asyncio_event_of_the_runtimes_loop_answers_once_it_is_set() -> None:
    gate = asyncio.Event()
    fake = FakeTool(wait_for=gate, returns="released")
    async with runtime_from_yaml(ORDERS, fakes={"lookup_order": fake}) as runtime:
        turn = asyncio.ensure_future(runtime.run_turn([lookup()]))
        await fake.wait_for_calls_async(1)
        assert not turn.done()
        gate.set()
        [result] = await turn
    assert result.content == "released"


def test_an_event_that_is_never_set_ends_in_the_tools_timeout() -> None:
    fake = FakeTool(wait_for=threading.Event())
    [result] = run({"lookup_order": fake}, lookup())
    assert result.status is Status.timeout
    assert fake.wait_for_calls(1, finished=True)[0].outcome == "cancelled"


def test_read_only_calls_to_a_fake_run_concurrently() -> None:
    gate = threading.Event()
    fake = FakeTool(wait_for=gate, returns="x")
    results: list = []
    with runtime_from_yaml(ORDERS, fakes={"lookup_order": fake}) as runtime:
        turn = threading.Thread(target=lambda: results.extend(runtime.run_turn_sync([lookup("a"), lookup("b")])))
        turn.start()
        both = fake.wait_for_calls(2)  # the second started while the first still waits
        assert [c.outcome for c in both] == ["running", "running"]
        gate.set()
        turn.join(30)
    assert [r.content for r in results] == ["x", "x"]


def test_respond_computes_the_answer_from_the_arguments_sync_or_async() -> None:
    async def later(args: dict) -> str:
        await asyncio.sleep(0)
        return f"async {args['order_id']}"

    fake = FakeTool(respond=lambda args: f"order {args['order_id']}").next(respond=later)
    results = run({"lookup_order": fake}, lookup("a", "O-7"))
    assert [r.content for r in results] == ["async O-7"]
    assert run({"lookup_order": fake}, lookup("b", "O-8"))[0].content == "order O-8"


def test_the_recorded_arguments_are_a_copy_the_handler_cannot_change_afterwards() -> None:
    def mutate(args: dict) -> str:
        args["order_id"] = "changed"
        return "ok"

    fake = FakeTool(respond=mutate)
    run({"lookup_order": fake}, lookup("a", "O-1"))
    assert fake.args == [{"order_id": "O-1"}]


def test_a_returned_value_is_copied_per_call_so_callers_cannot_share_it() -> None:
    fake = FakeTool(returns={"items": []})
    run({"lookup_order": fake}, lookup("a"), lookup("b"))
    first, second = (c.value for c in fake.calls)
    assert first == second and first is not second and first is not fake.default.returns


def test_invalid_arguments_never_reach_the_fake() -> None:
    fake = FakeTool()
    [result] = run({"lookup_order": fake}, Call(id="c", name="lookup_order", args={"order_id": "x; rm -rf /"}))
    assert result.status is Status.invalid and fake.calls == []


def test_a_rule_or_a_declined_approval_keeps_the_call_from_the_fake() -> None:
    fake = FakeTool()
    approver = ScriptedApprover({"refund": False})
    too_big, declined = run({"refund": fake}, refund("a", cents=50_000), refund("b"), approver=approver)
    assert too_big.is_error and "over 100.00" in too_big.content
    assert declined.is_error and [a.tool for a in approver.asked] == ["refund"]
    assert fake.calls == []


def test_every_version_of_a_faked_tool_is_served_by_the_fake() -> None:
    versions = """
    apiVersion: toolrt/v1
    kind: Tool
    metadata: {name: quote, version: "1"}
    spec: {description: v1, handler: "python:nowhere:quote_v1", read_only: true}
    ---
    apiVersion: toolrt/v1
    kind: Tool
    metadata: {name: quote, version: "2"}
    spec: {description: v2, handler: "python:nowhere:quote_v2", read_only: true}
    """
    fake = FakeTool(returns="quoted")
    with runtime_from_yaml(versions, fakes={"quote": fake}) as runtime:
        served = {version: tool.handler.function for version, tool in runtime.snapshot.tool_versions["quote"].items()}
        assert served == {"1": fake, "2": fake}
        assert runtime.run_turn_sync([Call(id="q", name="quote", args={})])[0].content == "quoted"


def test_the_fakes_output_is_shaped_like_any_handlers_redacted_and_truncated() -> None:
    secret = "AKIA" + "Q" * 16
    fake = FakeTool(returns=f"key={secret}").next(returns="line\n" * 20_000)
    [second] = run({"lookup_order": fake}, lookup("b"))
    [first] = run({"lookup_order": fake}, lookup("a"))
    assert secret not in first.content and "REDACTED" in first.content
    assert len(second.content) < 40_000 and second.metadata.get("truncated") is True


def test_wait_for_calls_fails_with_what_arrived_after_its_timeout() -> None:
    fake = FakeTool()
    with pytest.raises(AssertionError, match=r"waited 0.05 s for 1 call\(s\), got \[\]"):
        fake.wait_for_calls(1, timeout=0.05)
    with pytest.raises(AssertionError, match="was never called"):
        _ = fake.last


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"raises": ToolError("x"), "hang": True}, ValueError),
        ({"raises": ToolError("x"), "respond": str}, ValueError),
        ({"respond": str, "hang": True}, ValueError),
        ({"wait_for": 5}, TypeError),
        ({"wait_for": "event"}, TypeError),
        ({"respond": "not callable"}, TypeError),
    ],
)
def test_contradictory_or_malformed_cues_are_refused_when_made(options: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        FakeTool(**options)
    with pytest.raises(error):
        FakeTool().next(**options)
    with pytest.raises(error):
        Cue(**options)
