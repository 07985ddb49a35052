"""Workflows run against real tools: data passing, scheduling, failure policies,
compensation, timeouts, approvals, retries and the audit trail."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from runtime import Runtime
from runtime.approvers import ScriptedApprover
from runtime.records import Session, Status


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_step_reads_an_earlier_steps_hash_and_edits_with_it(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: bump}
        spec:
          input_schema: {type: object, required: [path], properties: {path: {type: string}}}
          steps:
            - {id: read, tool: file_read, args: {path: "${input.path}"}}
            - id: edit
              tool: file_edit
              depends_on: [read]
              args: {path: "${input.path}", old_string: beta, new_string: gamma,
                     expected_hash: "${steps.read.metadata.sha256}"}
    """)
    result = await runtime.run_workflow("bump", {"path": "notes.txt"})
    assert result.status == "ok", result.render()
    assert (workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    assert [s.status for s in result.steps] == ["ok", "ok"]


async def test_interpolated_strings_and_typed_values_reach_the_tool(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: shapes}
        spec:
          input_schema: {type: object, properties: {n: {type: integer}, who: {type: string}}}
          steps:
            - {id: one, tool: echo, args: {value: "hello ${input.who}, n=${input.n} $${literal}", n: "${input.n + 1}"}}
            - {id: two, tool: echo, depends_on: [one],
               args: {value: "${steps.one.data.echo}", n: "${steps.one.data.n * 10}"}}
            - {id: three, tool: shout, depends_on: [two], args: {text: "${steps.two.data.echo}"}}
    """)
    result = await runtime.run_workflow("shapes", {"n": 4, "who": "ana"})
    assert result.status == "ok", result.render()
    two = result.step("two")
    assert two is not None and two.result is not None
    assert two.result.structured == {"echo": "hello ana, n=4 ${literal}", "n": 50}
    three = result.step("three")
    assert three is not None and three.result is not None and three.result.content == "hello ana, n=4 ${literal}"


async def test_independent_read_only_steps_run_at_the_same_time(make_runtime: Callable[..., Runtime]) -> None:
    # Each step waits for the other's marker: run one after the other, the first never meets the second.
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: meet}
        spec:
          steps:
            - {id: a, tool: rendezvous, args: {me: a, other: b}}
            - {id: b, tool: rendezvous, args: {me: b, other: a}}
            - {id: after, tool: echo, depends_on: [a, b], args: {value: "${steps.a.content + ' / ' + steps.b.content}"}}
    """)
    result = await runtime.run_workflow("meet")
    assert result.status == "ok", result.render()
    after = result.step("after")
    assert after is not None and after.result is not None and after.result.structured["echo"] == "met b / met a"


async def test_independent_write_steps_never_overlap(make_runtime: Callable[..., Runtime], workspace: Path) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: writes}
        spec:
          steps:
            - {id: w1, tool: interval, args: {name: w1}}
            - {id: w2, tool: interval, args: {name: w2}}
            - {id: w3, tool: interval, args: {name: w3}}
            - {id: r1, tool: echo, args: {value: 1}}
    """)
    result = await runtime.run_workflow("writes")
    assert result.status == "ok", result.render()
    spans = sorted(json.loads(line)[1:] for line in (workspace / "intervals.txt").read_text().splitlines())
    assert len(spans) == 3
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start


async def test_compensations_run_in_reverse_completion_order(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: saga}
        spec:
          steps:
            - {id: s1, tool: log, args: {text: do-1}, compensate: {tool: log, args: {text: undo-1}},
               on_failure: compensate}
            - {id: s2, tool: log, depends_on: [s1], args: {text: do-2},
               compensate: {tool: log, args: {text: "undo-2 after ${steps.s2.content}"}}}
            - {id: s3, tool: log, depends_on: [s2], args: {text: do-3}, compensate: {tool: log, args: {text: undo-3}}}
            - {id: boom, tool: fail, depends_on: [s3], on_failure: compensate}
            - {id: never, tool: log, depends_on: [boom], args: {text: never}}
    """)
    result = await runtime.run_workflow("saga")
    assert result.status == "compensated", result.render()
    assert (workspace / "log.txt").read_text().splitlines() == [
        "do-1",
        "do-2",
        "do-3",
        "undo-3",
        "undo-2 after logged do-2",
        "undo-1",
    ]
    assert [c.step for c in result.compensations] == ["s3", "s2", "s1"]
    assert {s.id: s.status for s in result.steps} == {
        "s1": "ok",
        "s2": "ok",
        "s3": "ok",
        "boom": "failed",
        "never": "not_run",
    }


async def test_a_failing_compensation_is_reported_and_the_others_still_run(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: saga}
        spec:
          steps:
            - {id: s1, tool: log, args: {text: do-1}, compensate: {tool: log, args: {text: undo-1}}}
            - {id: s2, tool: log, depends_on: [s1], args: {text: do-2},
               compensate: {tool: fail, args: {message: cannot undo}}}
            - {id: boom, tool: fail, depends_on: [s2], on_failure: compensate}
    """)
    result = await runtime.run_workflow("saga")
    assert result.status == "compensation_failed", result.render()
    assert [(c.step, c.status) for c in result.compensations] == [("s2", "failed"), ("s1", "ok")]
    assert "cannot undo" in (result.compensations[0].reason or "")
    assert (workspace / "log.txt").read_text().splitlines() == ["do-1", "do-2", "undo-1"]


async def test_on_failure_stop_runs_no_compensation(make_runtime: Callable[..., Runtime], workspace: Path) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: stopper}
        spec:
          steps:
            - {id: s1, tool: log, args: {text: do-1}, compensate: {tool: log, args: {text: undo-1}}}
            - {id: boom, tool: fail, depends_on: [s1]}
            - {id: later, tool: log, depends_on: [s1], args: {text: later}}
    """)
    result = await runtime.run_workflow("stopper")
    assert result.status == "failed" and result.compensations == ()
    assert "undo-1" not in (workspace / "log.txt").read_text()


async def test_on_failure_continue_runs_the_steps_that_do_not_depend_on_the_failure(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: goon}
        spec:
          steps:
            - {id: boom, tool: fail, on_failure: continue}
            - {id: child, tool: log, depends_on: [boom], args: {text: child}}
            - {id: grandchild, tool: log, depends_on: [child], args: {text: grandchild}}
            - {id: other, tool: log, args: {text: other}}
    """)
    result = await runtime.run_workflow("goon")
    statuses = {s.id: s.status for s in result.steps}
    assert statuses == {"boom": "failed", "child": "not_run", "grandchild": "not_run", "other": "ok"}
    assert result.status == "failed"
    assert (workspace / "log.txt").read_text().splitlines() == ["other"]
    child = result.step("child")
    assert child is not None and "boom" in (child.reason or "")


async def test_when_false_skips_a_step_and_its_dependents_still_run(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: maybe}
        spec:
          input_schema: {type: object, properties: {loud: {type: boolean}}}
          steps:
            - {id: loud, tool: log, when: "input.loud", args: {text: LOUD}}
            - {id: after, tool: log, depends_on: [loud], args: {text: "after ${steps.loud.status}"}}
    """)
    result = await runtime.run_workflow("maybe", {"loud": False})
    assert result.status == "ok"
    assert [s.status for s in result.steps] == ["skipped", "ok"]
    assert (workspace / "log.txt").read_text().splitlines() == ["after skipped"]


async def test_a_when_that_errors_fails_the_step(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: broken-when}
        spec:
          input_schema: {type: object, properties: {n: {type: integer}}}
          steps:
            - {id: a, tool: echo, when: "input.n / 0 > 1", args: {value: 1}}
    """)
    result = await runtime.run_workflow("broken-when", {"n": 3})
    step = result.step("a")
    assert result.status == "failed" and step is not None and step.status == "failed" and "when" in (step.reason or "")


async def test_an_argument_expression_that_errors_fails_the_step_without_calling_the_tool(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: bad-arg}
        spec:
          input_schema: {type: object, properties: {missing: {type: string}}}
          steps:
            - {id: a, tool: log, args: {text: "${input.missing}"}}
    """)
    result = await runtime.run_workflow("bad-arg", {})
    step = result.step("a")
    assert step is not None and step.status == "failed" and "could not be computed" in (step.reason or "")
    assert not (workspace / "log.txt").exists()


async def test_a_write_step_that_times_out_is_result_unknown_and_the_run_compensates(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: slow}
        spec:
          steps:
            - {id: s1, tool: log, args: {text: do-1}, compensate: {tool: log, args: {text: undo-1}}}
            - {id: nap, tool: sleeper, depends_on: [s1], args: {seconds: "30"}, timeout_s: 0.3, on_failure: compensate}
    """)
    result = await runtime.run_workflow("slow")
    nap = result.step("nap")
    assert nap is not None and nap.status == "unknown" and "unknown" in (nap.reason or "").lower()
    assert result.status == "compensated"
    assert (workspace / "log.txt").read_text().splitlines() == ["do-1", "undo-1"]


async def test_a_read_only_step_that_times_out_fails(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: slow-read}
        spec:
          steps:
            - {id: wait, tool: rendezvous, args: {me: x, other: never}, timeout_s: 0.3}
    """)
    result = await runtime.run_workflow("slow-read")
    step = result.step("wait")
    assert (
        step is not None
        and step.status == "failed"
        and step.result is not None
        and step.result.status is Status.timeout
    )


async def test_an_approval_denied_mid_workflow_fails_the_step_and_compensates(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    asked: list[str] = []
    approver = ScriptedApprover({"guarded": False}, on_ask=lambda a: asked.append(a.tool))
    runtime = make_runtime(
        """
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: needs-ok}
        spec:
          steps:
            - {id: s1, tool: log, args: {text: do-1}, compensate: {tool: log, args: {text: undo-1}}}
            - {id: ask, tool: guarded, depends_on: [s1], args: {text: guarded}, on_failure: compensate}
    """,
        approver=approver,
    )
    result = await runtime.run_workflow("needs-ok")
    step = result.step("ask")
    assert asked == ["guarded"]
    assert (
        step is not None and step.status == "failed" and step.result is not None and step.result.status is Status.denied
    )
    assert result.status == "compensated"
    assert (workspace / "log.txt").read_text().splitlines() == ["do-1", "undo-1"]


async def test_an_approval_granted_mid_workflow_lets_the_step_run(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime(
        """
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: needs-ok}
        spec:
          steps:
            - {id: ask, tool: guarded, args: {text: guarded}}
    """,
        approver=ScriptedApprover({"guarded": True}),
    )
    result = await runtime.run_workflow("needs-ok")
    assert result.status == "ok", result.render()
    assert (workspace / "log.txt").read_text().splitlines() == ["guarded"]


async def test_a_read_only_step_is_retried_until_it_succeeds(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: retrying}
        spec:
          steps:
            - {id: f, tool: flaky, args: {name: f, times: 3}, retry: {attempts: 3, backoff_s: 0}}
    """)
    result = await runtime.run_workflow("retrying")
    step = result.step("f")
    assert result.status == "ok" and step is not None and step.attempts == 3
    assert step.result is not None and step.result.structured == {"count": 3}


async def test_retries_run_out(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: retrying}
        spec:
          steps:
            - {id: f, tool: flaky, args: {name: g, times: 10}, retry: {attempts: 2, backoff_s: 0}}
    """)
    result = await runtime.run_workflow("retrying")
    step = result.step("f")
    assert result.status == "failed" and step is not None and step.attempts == 3


async def test_builtin_compensation_restores_an_edited_file_exactly(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    original = sha(workspace / "notes.txt")
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: edit-then-fail}
        spec:
          steps:
            - {id: edit, tool: file_edit, args: {path: notes.txt, old_string: alpha, new_string: omega},
               compensate: builtin}
            - {id: boom, tool: fail, depends_on: [edit], on_failure: compensate}
    """)
    result = await runtime.run_workflow("edit-then-fail")
    assert result.status == "compensated", result.render()
    assert sha(workspace / "notes.txt") == original
    assert [(c.step, c.tool, c.status) for c in result.compensations] == [("edit", "file_edit", "ok")]


async def test_builtin_compensation_refuses_when_the_file_changed_since(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: edit-change-fail}
        spec:
          steps:
            - {id: edit, tool: file_edit, args: {path: notes.txt, old_string: alpha, new_string: omega},
               compensate: builtin}
            - {id: again, tool: file_edit, depends_on: [edit], args: {path: notes.txt, mode: append, content: extra}}
            - {id: boom, tool: fail, depends_on: [again], on_failure: compensate}
    """)
    result = await runtime.run_workflow("edit-change-fail")
    assert result.status == "compensation_failed", result.render()
    statuses = {c.step: c.status for c in result.compensations}
    assert statuses == {"again": "not_declared", "edit": "failed"}
    assert (workspace / "notes.txt").read_text() == "omega\nbeta\nextra"


async def test_builtin_compensation_removes_a_file_the_step_created(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: create-then-fail}
        spec:
          steps:
            - {id: create, tool: file_edit, args: {path: new/made.txt, mode: replace, content: hello},
               compensate: builtin}
            - {id: boom, tool: fail, depends_on: [create], on_failure: compensate}
    """)
    result = await runtime.run_workflow("create-then-fail")
    assert result.status == "compensated", result.render()
    assert not (workspace / "new" / "made.txt").exists()


async def test_builtin_compensation_restores_a_deleted_file(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    original = sha(workspace / "notes.txt")
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: delete-then-fail}
        spec:
          steps:
            - {id: rm, tool: file_delete, args: {path: notes.txt}, compensate: builtin}
            - {id: boom, tool: fail, depends_on: [rm], on_failure: compensate}
    """)
    result = await runtime.run_workflow("delete-then-fail")
    assert result.status == "compensated", result.render()
    assert sha(workspace / "notes.txt") == original


async def test_builtin_compensation_of_a_delete_refuses_when_the_file_was_recreated(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: delete-recreate-fail}
        spec:
          steps:
            - {id: rm, tool: file_delete, args: {path: notes.txt}, compensate: builtin}
            - {id: make, tool: file_edit, depends_on: [rm], args: {path: notes.txt, mode: replace, content: newer},
               compensate: builtin}
            - {id: boom, tool: fail, depends_on: [make], on_failure: compensate}
    """)
    result = await runtime.run_workflow("delete-recreate-fail")
    # make is undone first (its file removed), then rm's file comes back: both verified.
    assert [(c.step, c.status) for c in result.compensations] == [("make", "ok"), ("rm", "ok")]
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"


async def test_builtin_compensation_of_a_binary_file_is_refused(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: blob}
        spec:
          steps:
            - {id: rm, tool: file_delete, args: {path: blob.bin}, compensate: builtin}
            - {id: boom, tool: fail, depends_on: [rm], on_failure: compensate}
    """)
    result = await runtime.run_workflow("blob")
    assert result.status == "compensation_failed"
    assert result.compensations[0].status == "refused" and "binary" in (result.compensations[0].reason or "")


async def test_every_step_is_audited_with_the_run_id_and_step_name(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: audited}
        spec:
          steps:
            - {id: first, tool: log, args: {text: one}, compensate: {tool: log, args: {text: undo}}}
            - {id: second, tool: fail, depends_on: [first], on_failure: compensate}
    """)
    result = await runtime.run_workflow("audited")
    await runtime.close()
    with sqlite3.connect(runtime.audit_path()) as db:
        rows = db.execute("SELECT request_id, call_id, tool, status FROM calls ORDER BY id").fetchall()
    run = result.run_id
    assert rows == [
        (run, f"{run}.first", "log", "ok"),
        (run, f"{run}.second", "fail", "error"),
        (run, f"{run}.first.compensate", "log", "ok"),
    ]


async def test_a_workflow_is_a_tool_the_model_can_call(make_runtime: Callable[..., Runtime], workspace: Path) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: note}
        spec:
          description: Log a line twice.
          input_schema: {type: object, additionalProperties: false, required: [text],
                         properties: {text: {type: string}}}
          steps:
            - {id: a, tool: log, args: {text: "${input.text}"}}
            - {id: b, tool: log, depends_on: [a], args: {text: "${input.text} again"}}
    """)
    tool = runtime.snapshot.tool("note")
    assert tool is not None and tool.spec.read_only is False and tool.spec.risk.value == "medium"
    result = await runtime.call("note", {"text": "hi"})
    assert result.status is Status.ok, result.content
    assert "a (log): ok" in result.content and result.metadata["workflow_status"] == "ok"
    assert (workspace / "log.txt").read_text().splitlines() == ["hi", "hi again"]
    bad = await runtime.call("note", {"text": 3})
    assert bad.status is Status.invalid


async def test_a_failed_workflow_called_as_a_tool_is_an_error_result(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: doomed}
        spec:
          steps:
            - {id: a, tool: fail}
    """)
    result = await runtime.call("doomed", {})
    assert result.is_error and "doomed" in result.content and result.metadata["workflow_status"] == "failed"


async def test_the_python_api_refuses_unknown_workflows_and_bad_input(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: typed}
        spec:
          input_schema: {type: object, additionalProperties: false, required: [text],
                         properties: {text: {type: string}}}
          steps:
            - {id: a, tool: log, args: {text: "${input.text}"}}
    """)
    unknown = await runtime.run_workflow("nope")
    assert unknown.error is not None and "typed" in unknown.error
    bad = await runtime.run_workflow("typed", {"text": 1})
    assert bad.error is not None and bad.steps == ()
    extra = await runtime.run_workflow("typed", {"text": "x", "more": 1})
    assert extra.error is not None
    assert not (workspace / "log.txt").exists()


async def test_a_session_in_plan_mode_stops_write_steps(make_runtime: Callable[..., Runtime], workspace: Path) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: planned}
        spec:
          steps:
            - {id: read, tool: file_read, args: {path: notes.txt}}
            - {id: edit, tool: file_edit, depends_on: [read], args: {path: notes.txt, old_string: alpha, new_string: x}}
    """)
    result = await runtime.run_workflow("planned", session=Session(id="p", mode="plan"))
    assert result.step("read").status == "ok"  # type: ignore[union-attr]
    assert result.step("edit").status == "failed"  # type: ignore[union-attr]
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"


def test_toolrt_workflow_run_and_list(make_runtime: Callable[..., Runtime], tmp_path: Path, workspace: Path) -> None:
    import io

    from runtime.cli import main

    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: note}
        spec:
          input_schema: {type: object, required: [text], properties: {text: {type: string}}}
          steps:
            - {id: a, tool: log, args: {text: "${input.text}"}}
            - {id: b, tool: fail, depends_on: [a]}
    """)
    runtime.close_sync()
    config = str(tmp_path / "config")
    out, err = io.StringIO(), io.StringIO()
    assert main(["workflow", "list", "--config", config], out, err) == 0
    assert "note  risk=medium  writes  steps: a -> b" in out.getvalue()
    out = io.StringIO()
    code = main(
        ["workflow", "run", "note", "--config", config, "--workspace", str(workspace), "--args", '{"text": "cli"}'],
        out,
        err,
    )
    assert code == 1
    report = json.loads(out.getvalue())
    assert report["status"] == "failed" and [s["status"] for s in report["steps"]] == ["ok", "failed"]
    assert main(["workflow", "run", "note", "--config", config, "--args", "[1]"], io.StringIO(), err) == 2


async def test_an_expression_over_all_steps_sees_every_upstream_result(
    make_runtime: Callable[..., Runtime], workspace: Path
) -> None:
    runtime = make_runtime("""
        apiVersion: toolrt/v1
        kind: Workflow
        metadata: {name: overall}
        spec:
          steps:
            - {id: a, tool: echo, args: {value: one}}
            - {id: b, tool: echo, args: {value: two}}
            - id: c
              tool: log
              depends_on: [a, b]
              when: 'steps.all(k, steps[k].ok)'
              args: {text: "${steps.a.data.echo + '+' + steps.b.data.echo}"}
    """)
    result = await runtime.run_workflow("overall")
    assert result.status == "ok", result.render()
    assert (workspace / "log.txt").read_text().splitlines() == ["one+two"]
