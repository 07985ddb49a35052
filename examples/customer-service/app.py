"""A customer-service agent on toolrt, replaying a scripted conversation.

    python examples/customer-service/app.py [--workspace DIR]

The support desk is a real SQLite database (``support_desk.sqlite3`` in the workspace,
by default a temporary directory) created with sample customers, tickets and orders.
The session acts for customer C-42: its labels list their tickets and orders, and the
tools' CEL rules refuse any other id. Replies and closing a ticket ask for approval;
nobody is there, so a scripted approver answers. Every turn is an Anthropic-format
assistant message, parsed with ``runtime.adapters.parse_calls`` and answered with
``render_results``, as a model loop would.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runtime import Runtime, adapters
from runtime.approvers import AskedApproval, ScriptedApprover

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # support_desk, beside this file (the runtime finds it the same way)

import support_desk  # noqa: E402

CUSTOMER = "C-42"


def _use(id_: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


# (what the customer says, the assistant's turn): the model's side, scripted.
CONVERSATION: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "Hi, this is Ada. My desk lamp still hasn't arrived (ticket T-1001).",
        # The exercise's turn: two lookups and a reply at once. The lookups run together,
        # the reply alone after them; the results come back in the order of the calls.
        [
            _use("toolu_01", "query_ticket", ticket_id="T-1001"),
            _use("toolu_02", "search_kb", query="late delivery"),
            _use("toolu_03", "reply_customer", ticket_id="T-1001", body="Sorry for the wait, Ada. I am checking where your parcel is."),
        ],
    ),
    ("", [_use("toolu_04", "query_order", order_id="O-555")]),
    ("And what happened to ticket T-1002?", [_use("toolu_05", "query_ticket", ticket_id="T-1002")]),
    ("If it doesn't come, I want my money back.", [_use("toolu_06", "reply_customer", ticket_id="T-1001", body="If it does not arrive by Friday you get a guaranteed refund.")]),
    ("", [_use("toolu_07", "reply_customer", ticket_id="T-1001", body="If it does not arrive within 7 working days, the refunds team will review a refund for you.")]),
    ("It just arrived, thanks!", [_use("toolu_08", "close_ticket", ticket_id="T-1001", resolution="solved")]),
]

# The scripted approver: replies are sent, a ticket is closed only as solved.
APPROVALS = {
    "reply_customer": True,
    "close_ticket": lambda call: call.args.get("resolution") == "solved",
}


def main(argv: list[str] | None = None) -> int:
    """Create the support desk, replay the conversation, show the database; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--workspace", type=Path, default=None, help="where the database is created (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="support-desk-") as temporary:
        workspace = (args.workspace or Path(temporary)).resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        database = support_desk.create_database(support_desk.database_path(workspace))
        run_conversation(workspace, database)
        show_database(database)
    return 0


def run_conversation(workspace: Path, database: Path) -> None:
    """Every scripted turn through the runtime, as customer C-42's session."""
    approver = ScriptedApprover(APPROVALS, on_ask=show_approval)
    runtime = Runtime([HERE], workspace_root=workspace, approver=approver, watch=False)
    session = support_desk.customer_session(database, CUSTOMER)
    print(f"database: {database}\nsession {session.id} acts for {CUSTOMER}: {dict(session.labels)}")
    try:
        for said, uses in CONVERSATION:
            if said:
                print(f"\ncustomer: {said}")
            message = {"role": "assistant", "content": uses}
            calls = adapters.parse_calls("anthropic", message)
            for call in calls:
                print(f"  -> {call.id} {call.name} {dict(call.args or {})}")
            started = time.perf_counter()
            results = runtime.run_turn_sync(calls, session)
            elapsed = (time.perf_counter() - started) * 1000
            reply = adapters.render_results("anthropic", results)  # what the model would read next
            for result, block in zip(results, reply["content"], strict=True):
                why = f" ({result.code}" + (f", rule `{result.metadata['rule']}`" if result.metadata.get("rule") and result.is_error else "") + ")" if result.is_error else ""
                print(f"  <- {result.call_id} {result.name}: {result.status.value}{why}")
                print("     " + " ".join(str(block["content"]).split())[:200])
            print(f"  ({len(results)} call{'s' if len(results) > 1 else ''} in {elapsed:.0f} ms)")
    finally:
        runtime.close_sync()


def show_approval(asked: AskedApproval) -> None:
    """One line per question the scripted approver answered."""
    verdict = "approved" if asked.approval.approved else "declined"
    print(f"  ?  approval asked for {asked.tool} {dict(asked.args)} (rule `{asked.rule}`): {verdict} by the script")


def show_database(database: Path) -> None:
    """The tickets and the replies sent, as the conversation left them."""
    with sqlite3.connect(database) as conn:
        print("\ntickets afterwards:")
        for row in conn.execute("SELECT id, customer_id, status, resolution FROM tickets ORDER BY id"):
            print(f"  {row[0]} customer {row[1]}: {row[2]}" + (f" ({row[3]})" if row[3] else ""))
        print("replies sent:")
        for row in conn.execute("SELECT ticket_id, body FROM replies ORDER BY id"):
            print(f"  {row[0]}: {row[1]}")
    conn.close()


if __name__ == "__main__":
    sys.exit(main())
