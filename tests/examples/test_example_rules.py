"""The shipped examples hold against hostile arguments, on both CEL / JSON Schema engines:
test paths that climb out of tests/ or turn into pytest options, pushes whose remote or
branch would be a git option or another spelling of main, ids of another customer,
refund promises spelled apart. Also that their PolicyTest cases pass on each engine,
and that git_push really pushes the named branch and nothing else."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from runtime import Runtime
from runtime.approvers import ScriptedApprover
from runtime.config.compile import load_snapshot
from runtime.dryrun.policytests import run_policy_tests
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.decision import PolicyPermitter
from runtime.records import Call, Session, ToolResult, ValidatedCall
from runtime.settings import Settings
from runtime.snapshot import Snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ENGINES = ("fast", "portable")
CUSTOMER = Session(id="s", user="C-42", labels={"customer_id": "C-42", "tickets": "T-1001,T-1003", "orders": "O-555"})

_SNAPSHOTS: dict[tuple[str, str], Snapshot] = {}


def snapshot(example: str, engine: str) -> Snapshot:
    key = (example, engine)
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = load_snapshot([EXAMPLES / example], Settings(cel_engine=engine, schema_engine=engine))
    return _SNAPSHOTS[key]


def validated(
    example: str, engine: str, tool: str, args: dict[str, Any], session: Session | None = None
) -> ValidatedCall | ToolResult:
    snap = snapshot(example, engine)
    bound = lookup(Call("c1", tool, args), snap)
    assert not isinstance(bound, ToolResult), bound.content
    return validate(bound, session or Session(), snap)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("example", ["coding-agent", "customer-service"])
def test_the_example_policy_tests_pass_on_each_engine(example: str, engine: str) -> None:
    snap = snapshot(example, engine)
    assert snap.cel_engine == engine
    results = run_policy_tests(snap)
    assert len(results) >= 30
    assert [(r.name, r.detail) for r in results if not r.passed] == []


HOSTILE_TEST_PATHS = [
    "tests/../..",
    "tests/..",
    "tests_evil",
    "testsX/../../etc",
    "tests/./../x",
    "tests/.",
    "tests/unit/../../src",
    "/etc/passwd",
    "/home/user/tests",
    "tests\\..\\..\\x",
    "tests\\unit",
    "tests/x\x00.py",
    "tests\n",
    "tests/\n-p",
    "--rootdir=/",
    "-pevil",
    "-p",
    "--basetemp=/home",
    "-c/etc/x.ini",
    "--pyargs",
    "-o addopts=-pevil",
    "tests/ -p evil",
    "tests/-pevil",
    "tests/.hidden",
    "tests//unit",
    "TESTS/unit",
    "./tests",
    "tests/unit/test_x.py::",
    "tests/x.py::t[a b]",
    "tests/x.py::t;rm",
    "~/tests",
    "$HOME/tests",
    "tests/$(id)",
    "tests/\u200bunit",
    "tests/\u0443nit",
    "",
]
FINE_TEST_PATHS = [
    "tests",
    "tests/",
    "tests/unit",
    "tests/unit/test_inventory.py",
    "tests/unit/test_inventory.py::test_low_stock_lists_the_skus_to_reorder",
    "tests/unit/test_x.py::TestClass::test_case[param-1]",
    "tests/a..b/test_x.py",
    "tests/_private",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("tool", ["run_tests", "collect_tests"])
@pytest.mark.parametrize("path", HOSTILE_TEST_PATHS, ids=repr)
def test_a_hostile_test_path_is_refused_before_pytest_sees_it(engine: str, tool: str, path: str) -> None:
    outcome = validated("coding-agent", engine, tool, {"path": path})
    assert isinstance(outcome, ToolResult) and outcome.is_error, f"{path!r} passed validation"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("tool", ["run_tests", "collect_tests"])
@pytest.mark.parametrize("path", FINE_TEST_PATHS)
def test_a_plain_path_under_tests_is_accepted(engine: str, tool: str, path: str) -> None:
    assert isinstance(validated("coding-agent", engine, tool, {"path": path}), ValidatedCall)


def test_collect_tests_is_not_read_only_because_collecting_runs_the_project_code() -> None:
    assert snapshot("coding-agent", "fast").tools["collect_tests"].spec.read_only is False


HOSTILE_PUSHES = [
    {"remote": "--receive-pack=touch /tmp/x", "branch": "feature/x"},
    {"remote": "--receive-pack", "branch": "feature/x"},
    {"remote": "--mirror", "branch": "feature/x"},
    {"remote": "-f", "branch": "feature/x"},
    {"remote": "--force", "branch": "feature/x"},
    {"remote": "..", "branch": "feature/x"},
    {"remote": ".", "branch": "feature/x"},
    {"remote": "/tmp/repo", "branch": "feature/x"},
    {"remote": "ext::sh -c touch% /tmp/x", "branch": "feature/x"},
    {"remote": "origin\n", "branch": "feature/x"},
    {"branch": "--delete"},
    {"branch": "-f"},
    {"branch": "+feature/x"},
    {"branch": "feature:main"},
    {"branch": "HEAD:main"},
    {"branch": "main"},
    {"branch": "Main"},
    {"branch": "MASTER"},
    {"branch": "feature/../main"},
    {"branch": "./main"},
    {"branch": ".hidden"},
    {"branch": "feature//x"},
    {"branch": "feature/"},
    {"branch": "/main"},
    {"branch": "feature x"},
    {"branch": "main\n"},
    {"branch": "ma\u200bin"},
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("args", HOSTILE_PUSHES, ids=repr)
def test_a_push_whose_remote_or_branch_would_be_an_option_or_main_is_refused(engine: str, args: dict[str, str]) -> None:
    outcome = validated("coding-agent", engine, "git_push", args)
    assert isinstance(outcome, ToolResult) and outcome.is_error, f"{args!r} passed validation"


HOSTILE_CI_PATHS = [
    ".github/workflows/ci.yml",
    "./.github/workflows/ci.yml",
    "src/../.github/workflows/ci.yml",
    ".GitHub/workflows/ci.yml",
    ".github//x",
    ".github",
    "a/./.github/x",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", HOSTILE_CI_PATHS)
def test_every_spelling_of_a_ci_file_is_denied_to_file_edit(engine: str, path: str) -> None:
    call = validated("coding-agent", engine, "file_edit", {"path": path, "mode": "replace", "content": "x"})
    assert isinstance(call, ValidatedCall)
    decision = PolicyPermitter().decide(call, Session(mode="accept_edits"), snapshot("coding-agent", engine))
    assert (decision.effect, decision.rule) == ("deny", "coding-agent/no-edits-to-ci")


HOSTILE_IDS = [
    ("query_ticket", {"ticket_id": "T-1002"}),
    ("query_ticket", {"ticket_id": "t-1001"}),
    ("query_ticket", {"ticket_id": "T-1001\n"}),
    ("query_ticket", {"ticket_id": "T-1001 "}),
    ("query_ticket", {"ticket_id": " T-1001"}),
    ("query_ticket", {"ticket_id": "T-1001,T-1002"}),
    ("query_ticket", {"ticket_id": 1001}),
    ("query_ticket", {"ticket_id": ["T-1001"]}),
    ("query_ticket", {"ticket_id": {"id": "T-1001"}}),
    ("query_ticket", {"ticket_id": "T-\u0661\u0660\u0660\u0661"}),
    ("query_ticket", {"ticket_id": "T-01001"}),
    ("query_ticket", {"ticket_id": "T-100"}),
    ("query_ticket", {"ticket_id": "T-1001\u200b"}),
    ("query_ticket", {"ticket_id": "T\u20111001"}),
    ("query_ticket", {"ticket_id": "%"}),
    ("query_order", {"order_id": "O-777"}),
    ("query_order", {"order_id": "o-555"}),
    ("query_order", {"order_id": "O-55"}),
    ("reply_customer", {"ticket_id": "T-1002", "body": "Hello."}),
    ("close_ticket", {"ticket_id": "T-1002", "resolution": "solved"}),
    ("close_ticket", {"ticket_id": "T-1001", "resolution": "SOLVED"}),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("tool", "args"), HOSTILE_IDS, ids=[f"{tool} {args!r}" for tool, args in HOSTILE_IDS])
def test_an_id_that_is_not_the_customers_own_in_any_spelling_or_type_is_refused(
    engine: str, tool: str, args: dict[str, Any]
) -> None:
    outcome = validated("customer-service", engine, tool, args, CUSTOMER)
    assert isinstance(outcome, ToolResult) and outcome.is_error, f"{tool} {args!r} passed validation"


REFUND_PROMISES = [
    "You get a guaranteed refund.",
    "You get a GUARANTEED REFUND.",
    "a guaranteed  refund",
    "a guaranteed\nrefund",
    "a guaranteed\trefund",
    "a guaranteed\u00a0refund",
    "a guaranteed\u3000refund",
    "a guaranteed-refund",
    "a guaranteed, refund",
    "We guarantee you a full refund.",
    "We guarantee a refund.",
    "Your refund is guaranteed.",
    "Your refund will be guaranteed.",
    "a guaranteed\u200brefund",
    "guaranteed\u00adrefund",
    "Your parcel \u202edevirra",
    "Hello \x1b[2K",
    "Hello\x00",
    "Hi\u2028there",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("body", REFUND_PROMISES, ids=repr)
def test_a_refund_promise_or_hidden_characters_in_a_reply_fail_validation(engine: str, body: str) -> None:
    outcome = validated("customer-service", engine, "reply_customer", {"ticket_id": "T-1001", "body": body}, CUSTOMER)
    assert isinstance(outcome, ToolResult) and outcome.is_error, f"{body!r} passed validation"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "body",
    [
        "The refunds team will review your request.",
        "Hello Ada,\n\nyour parcel left today.\tThanks!",
        "Merci, René. 谢谢",
    ],
)
def test_an_ordinary_reply_passes_validation(engine: str, body: str) -> None:
    outcome = validated("customer-service", engine, "reply_customer", {"ticket_id": "T-1001", "body": body}, CUSTOMER)
    assert isinstance(outcome, ValidatedCall)


# ---------------------------------------------------------------------------
# git_push against a real repository


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30)
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_push_pushes_exactly_the_named_branch_and_a_hostile_remote_never_reaches_git(tmp_path: Path) -> None:
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    git(work, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "first")
    git(work, "branch", "feature/login")
    git(work, "remote", "add", "origin", str(remote))
    runtime = Runtime(
        [EXAMPLES / "coding-agent"], workspace_root=work, approver=ScriptedApprover({"git_push": True}), watch=False
    )
    try:
        pushed, mirror, delete = runtime.run_turn_sync(
            [
                Call("c1", "git_push", {"branch": "feature/login"}),
                Call("c2", "git_push", {"remote": "--mirror", "branch": "origin"}),
                Call("c3", "git_push", {"branch": "--delete"}),
            ],
            Session(id="push"),
        )
    finally:
        runtime.close_sync()
    assert not pushed.is_error, pushed.content
    assert mirror.is_error and delete.is_error
    assert git(remote, "branch", "--format=%(refname)").split() == ["refs/heads/feature/login"]
