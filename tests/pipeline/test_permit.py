"""Stage 04, permit: read-only tools run; others follow the session mode (bypass allows,
plan denies, anything else asks the Approver); no approver, a failing or a slow one
all mean "no", and a denied call never reaches its handler."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pipeline_support import ConfigDir, FakeApprover, call, make_env

from runtime.pipeline.permit import Approval
from runtime.pipeline.turn import run_turn
from runtime.policy.grants import SessionGrants
from runtime.records import Session, Stage, Status, ToolResult
from runtime.snapshot import Snapshot

HANDLERS = """
from pathlib import Path

def touch(args, context):
    (Path(context.workspace_root) / args["file"]).write_text("ran")
    return "touched " + args["file"]

def look(args):
    return "looked"
"""

FILE_SCHEMA = {"type": "object", "required": ["file"], "properties": {"file": {"type": "string"}}}


@pytest.fixture
def snapshot(config: ConfigDir) -> Snapshot:
    config.handlers(HANDLERS)
    config.tool("look", config.py("look"), read_only=True)
    config.tool("touch", config.py("touch"), input_schema=FILE_SCHEMA)
    return config.snapshot()


async def run_one(snapshot: Snapshot, workspace: Path, name: str, args: dict | None = None, **env_kw) -> ToolResult:
    (result,) = await run_turn([call(name, args or {})], make_env(snapshot, workspace, **env_kw))
    return result


def assert_denied(result: ToolResult, *phrases: str) -> None:
    assert (result.status, result.code, result.stage) == (Status.denied, "denied", Stage.permit)
    assert result.content.startswith("Permission denied for `touch`")
    for phrase in phrases:
        assert phrase in result.content


async def test_read_only_tool_is_allowed_without_asking(snapshot: Snapshot, workspace: Path) -> None:
    approver = FakeApprover()
    result = await run_one(snapshot, workspace, "look", approver=approver)
    assert result.status is Status.ok
    assert result.metadata["decision"] == "allow"
    assert approver.asked == []


async def test_write_tool_asks_the_approver_with_the_validated_call(snapshot: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(True, "looks fine"))
    session = Session(id="s1", user="alice")
    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=approver, session=session)
    assert result.status is Status.ok
    assert result.content == "touched a.txt"
    assert (workspace / "a.txt").read_text() == "ran"
    (asked_call, asked_session, decision) = approver.asked[0]
    assert len(approver.asked) == 1
    assert asked_call.tool.name == "touch" and dict(asked_call.args) == {"file": "a.txt"}
    assert asked_session == session
    assert decision.effect == "ask"
    assert result.metadata["decision"] == "allow"


async def test_write_tool_without_an_approver_is_denied_saying_so(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=None)
    assert_denied(result, "no approver is available", "so it was not run")
    assert not (workspace / "a.txt").exists()


async def test_declined_call_is_denied_with_the_reason_and_does_not_run(snapshot: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(False, "not on a Friday"))
    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=approver)
    assert_denied(result, "a person declined this call: not on a Friday")
    assert result.metadata["decision"] == "ask"
    assert not (workspace / "a.txt").exists()


async def test_declined_without_a_reason_says_declined(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=FakeApprover(Approval(False)))
    assert_denied(result, "a person declined this call.")


async def test_an_approver_that_raises_counts_as_no(snapshot: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(error=RuntimeError("approval service is down"))
    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=approver)
    assert_denied(result, "the approver failed (RuntimeError)")
    assert "approval service is down" not in result.content
    assert not (workspace / "a.txt").exists()


async def test_a_slow_approver_times_out_as_denied(snapshot: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(delay=60.0)
    started = time.monotonic()
    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=approver, approval_timeout_s=0.2)
    elapsed = time.monotonic() - started
    assert_denied(result, "approval did not arrive within 0.2 s")
    assert elapsed < 30  # denied at the approval timeout, not after the approver's 60 s
    assert not (workspace / "a.txt").exists()


async def test_plan_mode_denies_writes_without_asking(snapshot: Snapshot, workspace: Path) -> None:
    approver = FakeApprover()
    result = await run_one(
        snapshot, workspace, "touch", {"file": "a.txt"}, approver=approver, session=Session(mode="plan")
    )
    assert_denied(result, "plan mode")
    assert approver.asked == []
    assert not (workspace / "a.txt").exists()


async def test_plan_mode_still_allows_read_only_tools(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "look", session=Session(mode="plan"))
    assert result.status is Status.ok


async def test_bypass_mode_allows_writes_without_an_approver(snapshot: Snapshot, workspace: Path) -> None:
    result = await run_one(snapshot, workspace, "touch", {"file": "b.txt"}, session=Session(mode="bypass"))
    assert result.status is Status.ok
    assert (workspace / "b.txt").read_text() == "ran"
    assert result.metadata["decision"] == "allow"


async def test_each_write_in_a_turn_is_asked_separately(snapshot: Snapshot, workspace: Path) -> None:
    answers = iter([Approval(True), Approval(False, "no")])

    class Alternating(FakeApprover):
        async def __call__(self, call, session, decision):  # type: ignore[override]
            self.asked.append((call, session, decision))
            return next(answers)

    approver = Alternating()
    results = await run_turn(
        [call("touch", {"file": "1.txt"}), call("touch", {"file": "2.txt"})],
        make_env(snapshot, workspace, approver=approver),
    )
    assert [r.status for r in results] == [Status.ok, Status.denied]
    assert len(approver.asked) == 2
    assert (workspace / "1.txt").exists() and not (workspace / "2.txt").exists()


@pytest.mark.parametrize("answer", [True, None, "yes"])
async def test_an_approver_returning_something_else_than_an_approval_counts_as_no(
    snapshot: Snapshot, workspace: Path, answer: object
) -> None:
    async def sloppy(call, session, decision):  # noqa: ANN001, ANN202 - an embedder's approver, not typed
        return answer

    result = await run_one(snapshot, workspace, "touch", {"file": "a.txt"}, approver=sloppy)
    assert_denied(result, "approver")
    assert not (workspace / "a.txt").exists()


# -- approve for the session, edited arguments, accept_edits ------------------------


@pytest.fixture
def editing(config: ConfigDir) -> Snapshot:
    config.handlers(HANDLERS)
    config.tool(
        "touch",
        config.py("touch"),
        input_schema={**FILE_SCHEMA, "properties": {"file": {"type": "string", "pattern": "^[a-z0-9.]+$"}}},
        edits_workspace=True,
    )
    config.tool("launch", config.py("touch"), input_schema=FILE_SCHEMA, risk="critical")
    config.document(
        "Policy",
        "p",
        {
            "rules": [
                {
                    "name": "no-env",
                    "effect": "deny",
                    "tools": ["touch"],
                    "when": "args.file == 'env'",
                    "reason": "never touch env",
                }
            ]
        },
    )
    return config.snapshot()


async def test_allow_for_session_is_not_asked_again_for_the_same_tool(editing: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(True, scope="session"))
    grants = SessionGrants()
    env = make_env(editing, workspace, approver=approver, grants=grants, session=Session(id="s1"))
    results = await run_turn([call("touch", {"file": "1.txt"}), call("touch", {"file": "2.txt"})], env)
    assert [r.status for r in results] == [Status.ok, Status.ok]
    assert len(approver.asked) == 1
    assert results[1].metadata["approved"] == "session-grant"


async def test_a_session_grant_does_not_leak_into_other_sessions(editing: Snapshot, workspace: Path) -> None:
    grants = SessionGrants()
    await run_turn(
        [call("touch", {"file": "1.txt"})],
        make_env(
            editing,
            workspace,
            approver=FakeApprover(Approval(True, scope="session")),
            grants=grants,
            session=Session(id="s1"),
        ),
    )
    other = FakeApprover(Approval(False, "no"))
    (result,) = await run_turn(
        [call("touch", {"file": "2.txt"})],
        make_env(editing, workspace, approver=other, grants=grants, session=Session(id="s2")),
    )
    assert result.status is Status.denied and len(other.asked) == 1


async def test_a_session_grant_with_a_pattern_covers_only_matching_arguments(
    editing: Snapshot, workspace: Path
) -> None:
    approver = FakeApprover(Approval(True, scope="session", pattern={"file": "*.txt"}))
    env = make_env(editing, workspace, approver=approver, grants=SessionGrants(), session=Session(id="s1"))
    await run_turn(
        [call("touch", {"file": "1.txt"}), call("touch", {"file": "2.txt"}), call("touch", {"file": "3.md"})], env
    )
    assert [dict(c.args)["file"] for c, _, _ in approver.asked] == ["1.txt", "3.md"]


async def test_a_session_grant_never_overrides_a_deny_rule(editing: Snapshot, workspace: Path) -> None:
    env = make_env(
        editing,
        workspace,
        approver=FakeApprover(Approval(True, scope="session")),
        grants=SessionGrants(),
        session=Session(id="s1"),
    )
    results = await run_turn([call("touch", {"file": "1.txt"}), call("touch", {"file": "env"})], env)
    assert results[1].status is Status.denied and "never touch env" in results[1].content
    assert not (workspace / "env").exists()


async def test_critical_tools_are_asked_every_time_despite_allow_for_session(
    editing: Snapshot, workspace: Path
) -> None:
    approver = FakeApprover(Approval(True, scope="session"))
    env = make_env(editing, workspace, approver=approver, grants=SessionGrants(), session=Session(id="s1"))
    results = await run_turn([call("launch", {"file": "1.txt"}), call("launch", {"file": "2.txt"})], env)
    assert [r.status for r in results] == [Status.ok, Status.ok]
    assert len(approver.asked) == 2


async def test_approve_with_edited_arguments_runs_the_edited_call(editing: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(True, args={"file": "safe.txt"}))
    (result,) = await run_turn([call("touch", {"file": "risky.txt"})], make_env(editing, workspace, approver=approver))
    assert result.status is Status.ok and result.content == "touched safe.txt"
    assert (workspace / "safe.txt").exists() and not (workspace / "risky.txt").exists()
    assert result.metadata["arguments_edited_by_approver"] is True


async def test_edited_arguments_that_fail_validation_are_not_run(editing: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(True, args={"file": "Bad Name!"}))
    (result,) = await run_turn([call("touch", {"file": "ok.txt"})], make_env(editing, workspace, approver=approver))
    assert result.status is Status.invalid and result.stage is Stage.permit
    assert "edited arguments were not accepted" in result.content and "file" in result.content
    assert list(workspace.iterdir()) in ([], [workspace / ".artifacts"])


async def test_edited_arguments_that_a_deny_rule_catches_are_denied(editing: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(True, args={"file": "env"}))
    (result,) = await run_turn([call("touch", {"file": "ok.txt"})], make_env(editing, workspace, approver=approver))
    assert (
        result.status is Status.denied and "edited arguments" in result.content and "never touch env" in result.content
    )
    assert not (workspace / "env").exists()


async def test_accept_edits_mode_runs_workspace_edits_without_asking(editing: Snapshot, workspace: Path) -> None:
    approver = FakeApprover(Approval(False, "should not be asked"))
    (result,) = await run_turn(
        [call("touch", {"file": "a.txt"})],
        make_env(editing, workspace, approver=approver, session=Session(mode="accept_edits")),
    )
    assert result.status is Status.ok and approver.asked == []
    assert result.metadata["decision"] == "allow"


async def test_accept_edits_mode_still_asks_for_tools_that_do_not_edit_the_workspace(
    snapshot: Snapshot, workspace: Path
) -> None:
    approver = FakeApprover(Approval(False, "no"))
    (result,) = await run_turn(
        [call("touch", {"file": "a.txt"})],
        make_env(snapshot, workspace, approver=approver, session=Session(mode="accept_edits")),
    )
    assert result.status is Status.denied and len(approver.asked) == 1


async def test_accept_edits_mode_does_not_override_a_deny_rule(editing: Snapshot, workspace: Path) -> None:
    (result,) = await run_turn(
        [call("touch", {"file": "env"})], make_env(editing, workspace, session=Session(mode="accept_edits"))
    )
    assert result.status is Status.denied


async def test_plan_mode_denies_an_asked_write_even_with_a_session_grant(editing: Snapshot, workspace: Path) -> None:
    grants = SessionGrants()
    await run_turn(
        [call("touch", {"file": "1.txt"})],
        make_env(
            editing,
            workspace,
            approver=FakeApprover(Approval(True, scope="session")),
            grants=grants,
            session=Session(id="s1"),
        ),
    )
    (result,) = await run_turn(
        [call("touch", {"file": "2.txt"})],
        make_env(editing, workspace, grants=grants, session=Session(id="s1", mode="plan")),
    )
    assert result.status is Status.denied and "plan mode" in result.content
    assert not (workspace / "2.txt").exists()


async def test_a_path_pattern_grant_does_not_cover_a_path_that_climbs_out_of_it(
    snapshot: Snapshot, workspace: Path
) -> None:
    (workspace / "src" / "x").mkdir(parents=True)
    approver = FakeApprover(Approval(True, scope="session", pattern={"file": "src/*"}))
    env = make_env(snapshot, workspace, approver=approver, grants=SessionGrants(), session=Session(id="s1"))
    await run_turn(
        [
            call("touch", {"file": "src/a.txt"}),
            call("touch", {"file": "src/../b.txt"}),
            call("touch", {"file": "src/x/c.txt"}),
        ],
        env,
    )
    assert [dict(c.args)["file"] for c, _, _ in approver.asked] == [
        "src/a.txt",
        "src/../b.txt",
        "src/x/c.txt",
    ]  # a.txt granted the rest: none covered
    (again,) = await run_turn([call("touch", {"file": "src/d.txt"})], env)
    assert again.metadata["approved"] == "session-grant"


async def test_a_rejected_edit_of_the_arguments_leaves_no_session_grant(editing: Snapshot, workspace: Path) -> None:
    grants = SessionGrants()
    approver = FakeApprover(Approval(True, scope="session", args={"file": "env"}))  # caught by the deny rule
    (result,) = await run_turn(
        [call("touch", {"file": "ok.txt"})],
        make_env(editing, workspace, approver=approver, grants=grants, session=Session(id="s1")),
    )
    assert result.status is Status.denied
    assert grants.of("s1") == ()
