"""examples/customer-service/app.py end to end, against a real SQLite database in a temp dir."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "examples" / "customer-service" / "app.py"


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One run of the app (its stdout) and the database it left behind."""
    workspace = tmp_path_factory.mktemp("support-desk")
    env = {k: v for k, v in os.environ.items() if k != "SUPPORT_DESK_DB"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, str(APP), "--workspace", str(workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, workspace / "support_desk.sqlite3"


def outcome(out: str, call_id: str) -> str:
    line = next(line for line in out.splitlines() if line.startswith(f"  <- {call_id} "))
    return line.split(": ", 1)[1]


def test_the_session_acts_for_one_customer_whose_ids_are_in_its_labels(conversation: tuple[str, Path]) -> None:
    assert (
        "session support-C-42 acts for C-42: {'customer_id': 'C-42', 'tickets': 'T-1001,T-1003', 'orders': 'O-555'}"
        in conversation[0]
    )


def test_lookups_and_a_reply_in_one_turn_all_succeed_in_call_order(conversation: tuple[str, Path]) -> None:
    out = conversation[0]
    first_turn = out[: out.index("(3 calls in")]
    assert [line.split()[1] for line in first_turn.splitlines() if line.startswith("  <- ")] == [
        "toolu_01",
        "toolu_02",
        "toolu_03",
    ]
    assert [outcome(out, f"toolu_0{i}") for i in (1, 2, 3, 4)] == ["ok", "ok", "ok", "ok"]
    assert '"subject": "Parcel has not arrived"' in out and '"title": "Late deliveries"' in out


def test_another_customers_ticket_is_refused_by_the_own_ticket_rule(conversation: tuple[str, Path]) -> None:
    out, database = conversation
    assert outcome(out, "toolu_05") == "invalid (rule_failed, rule `own-ticket`)"
    assert "Refund request" not in out  # T-1002's subject never reached the model
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT status FROM tickets WHERE id = 'T-1002'").fetchone() == ("open",)


def test_a_reply_promising_a_refund_is_refused_and_never_sent(conversation: tuple[str, Path]) -> None:
    out, database = conversation
    assert outcome(out, "toolu_06") == "invalid (rule_failed, rule `no-refund-promises`)"
    with sqlite3.connect(database) as conn:
        bodies = [row[0] for row in conn.execute("SELECT body FROM replies WHERE ticket_id = 'T-1001' ORDER BY id")]
    assert len(bodies) == 2 and not any("guaranteed refund" in body for body in bodies)


def test_replies_and_closing_the_ticket_ask_and_run_once_approved(conversation: tuple[str, Path]) -> None:
    out, database = conversation
    assert out.count("approval asked for reply_customer") == 2  # the refused reply never got that far
    assert (
        "approval asked for close_ticket {'ticket_id': 'T-1001', 'resolution': 'solved'} (rule "
        "`customer-service/closing-needs-approval`): approved by the script" in out
    )
    assert outcome(out, "toolu_08") == "ok"
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT status, resolution FROM tickets WHERE id = 'T-1001'").fetchone() == (
            "closed",
            "solved",
        )
