"""`toolrt audit verify`: exit 0 when the chain is intact, 1 at its first broken link
(named, with what is wrong), 2 on usage errors; text and JSON output."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from audit_helpers import record
from chain_tampering import rewrite_from, sql

from runtime import Call, Runtime, Session
from runtime.audit import JsonlSink, store_path
from runtime.cli import main
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default]}
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose audit log (in the state directory) holds six calls, written by
    the child-process writer."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "c.yaml").write_text(CONFIG)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\n")
    runtime = Runtime(
        [tmp_path / "config"], workspace_root=workspace, settings=Settings(audit_writer="process"), watch=False
    )
    calls = [Call(f"l{index}", "list_dir", {}) for index in range(3)] + [
        Call(f"r{index}", "file_read", {"path": "a.txt"}) for index in range(3)
    ]
    for call in calls:
        runtime.run_turn_sync([call], Session(id="s-v"))
    runtime.close_sync()
    return workspace


def test_an_intact_log_exits_0_and_prints_its_head(workspace: Path) -> None:
    code, out, err = run("audit", "verify", "--workspace", str(workspace))
    assert (code, err) == (0, "")
    assert out.startswith("intact: 6 records chained in ") and str(store_path(workspace)) in out
    assert "head 6:" in out


def test_json_output_has_the_head_as_an_anchor_and_no_problem(workspace: Path) -> None:
    code, out, _ = run("audit", "--workspace", str(workspace), "verify", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["problem"] is None
    assert (report["format"], report["chained"], report["before_chain"]) == ("sqlite", 6, 0)
    assert report["head"]["anchor"] == f"6:{report['head']['hash']}"


def test_a_changed_record_exits_1_naming_the_record_and_what_is_wrong(workspace: Path) -> None:
    sql(store_path(workspace), "UPDATE calls SET status = 'denied' WHERE id = 4")
    code, out, _ = run("audit", "verify", "--workspace", str(workspace))
    assert code == 1
    assert out.startswith("BROKEN at id 4 (position 4): altered: ")
    code, out, _ = run("audit", "verify", "--workspace", str(workspace), "--format", "json")
    problem = json.loads(out)["problem"]
    assert code == 1 and (problem["kind"], problem["id"], problem["position"]) == ("altered", 4, 4)


def test_a_rewrite_that_verifies_on_its_own_fails_against_an_anchor(workspace: Path) -> None:
    _, out, _ = run("audit", "verify", "--workspace", str(workspace), "--format", "json")
    anchor = json.loads(out)["head"]["anchor"]
    rewrite_from(store_path(workspace), 2)
    assert run("audit", "verify", "--workspace", str(workspace))[0] == 0
    code, out, _ = run("audit", "verify", "--workspace", str(workspace), "--anchor", anchor)
    assert code == 1 and "rewritten" in out


def test_a_json_lines_log_is_verified_through_store(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    sink = JsonlSink(log)
    sink.write_batch([record(index) for index in range(4)])
    sink.close()
    assert run("audit", "verify", "--store", str(log))[0] == 0
    with log.open("ab") as handle:
        handle.write(b"garbage\n")
    code, out, _ = run("audit", "verify", "--store", str(log))
    assert code == 1 and out.startswith("BROKEN at line 5: garbage: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["audit", "verify", "--anchor", "12:nothex"], "cannot read the anchor"),
        (["audit", "verify", "--anchor", "0:" + "a" * 64], "cannot read the anchor"),
        (["audit", "verify", "--session", "s"], "--session filters a query"),
        (["audit", "--anchor", "1:" + "a" * 64], "--anchor is for `toolrt audit verify`"),
        (["audit", "verfy"], "invalid choice"),
    ],
    ids=["anchor-not-hex", "anchor-position-0", "filter-with-verify", "anchor-without-verify", "misspelt-action"],
)
def test_usage_errors_exit_2(workspace: Path, argv: list[str], message: str) -> None:
    code, _, err = run(*argv, "--workspace", str(workspace))
    assert code == 2 and message in err


def test_a_missing_store_a_directory_and_a_foreign_database_exit_2(tmp_path: Path) -> None:
    code, _, err = run("audit", "verify", "--store", str(tmp_path / "none.sqlite3"))
    assert code == 2 and "no audit log at" in err
    assert run("audit", "verify", "--store", str(tmp_path))[0] == 2
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    with conn:
        conn.execute("CREATE TABLE things (x)")
    conn.close()
    code, _, err = run("audit", "verify", "--store", str(other))
    assert code == 2 and "not a toolrt audit database" in err


def test_verify_creates_nothing(tmp_path: Path) -> None:
    assert run("audit", "verify", "--workspace", str(tmp_path))[0] == 2
    assert not store_path(tmp_path).parent.exists()
