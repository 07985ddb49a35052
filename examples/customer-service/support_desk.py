"""Handlers of the customer-service example, backed by a real SQLite database.

``python:support_desk:<function>`` handlers resolve to this module because it sits
beside the config files. The database is ``support_desk.sqlite3`` in the workspace
root (or the file named by ``SUPPORT_DESK_DB``); it is created with a few customers,
tickets, orders and articles on first use.

Who the agent acts for is the session's business, not the model's: the app starts a
session with :func:`customer_session`, whose labels carry the customer's id and the
ids of their tickets and orders. The tools' CEL rules check every id the model passes
against those labels before a handler runs; the handlers scope their queries to the
customer as well, so that a rule left out of a config does not open the data.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runtime import Session, ToolError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS customers (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), order_id TEXT, subject TEXT NOT NULL, status TEXT NOT NULL, resolution TEXT);
CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), item TEXT NOT NULL, status TEXT NOT NULL, shipped_on TEXT);
CREATE TABLE IF NOT EXISTS replies (id INTEGER PRIMARY KEY, ticket_id TEXT NOT NULL REFERENCES tickets(id), body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kb (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
"""
_SEED = """
INSERT OR IGNORE INTO customers VALUES ('C-42', 'Ada'), ('C-7', 'Grace');
INSERT OR IGNORE INTO tickets VALUES
  ('T-1001', 'C-42', 'O-555', 'Parcel has not arrived', 'open', NULL),
  ('T-1002', 'C-7', 'O-777', 'Refund request', 'open', NULL),
  ('T-1003', 'C-42', NULL, 'Change of address', 'closed', 'solved');
INSERT OR IGNORE INTO orders VALUES
  ('O-555', 'C-42', 'Desk lamp', 'shipped', '2024-06-03'),
  ('O-777', 'C-7', 'Office chair', 'delivered', '2024-05-20');
INSERT OR IGNORE INTO kb VALUES
  (1, 'Late deliveries', 'Parcels may take up to 7 working days. After that, we send a replacement or refund.'),
  (2, 'Refunds', 'Refunds are reviewed by the refunds team and issued within 14 days of the return.'),
  (3, 'Changing a delivery address', 'The address can be changed until the parcel is shipped.');
"""


def database_path(workspace_root: Path | str) -> Path:
    """Where the database lives for a workspace (``SUPPORT_DESK_DB`` overrides it)."""
    override = os.environ.get("SUPPORT_DESK_DB")
    return Path(override) if override else Path(workspace_root) / "support_desk.sqlite3"


def create_database(path: Path | str) -> Path:
    """Create (or complete) the database at ``path`` with its sample data."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.executescript(_SCHEMA + _SEED)
        conn.commit()
    return Path(path)


def customer_session(path: Path | str, customer_id: str, session_id: str | None = None) -> Session:
    """A session acting for ``customer_id``: its labels list their tickets and orders for the rules."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tickets = [row[0] for row in conn.execute("SELECT id FROM tickets WHERE customer_id = ? ORDER BY id", (customer_id,))]
        orders = [row[0] for row in conn.execute("SELECT id FROM orders WHERE customer_id = ? ORDER BY id", (customer_id,))]
    labels = {"customer_id": customer_id, "tickets": ",".join(tickets), "orders": ",".join(orders)}
    return Session(id=session_id or f"support-{customer_id}", user=customer_id, labels=labels)


@contextlib.contextmanager
def _connect(context: Any) -> Iterator[sqlite3.Connection]:
    """A connection for one call: committed if the call succeeds, always closed."""
    path = database_path(context.workspace_root)
    if not path.exists():
        create_database(path)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _customer(context: Any) -> str:
    customer = context.session.labels.get("customer_id")
    if not customer:
        raise ToolError("This conversation has no customer; the app must start the session for one.")
    return str(customer)


def query_ticket(args: dict[str, Any], context: Any) -> dict[str, Any]:
    """The customer's ticket ``ticket_id``."""
    with _connect(context) as conn:
        row = conn.execute("SELECT id, order_id, subject, status, resolution FROM tickets WHERE id = ? AND customer_id = ?", (args["ticket_id"], _customer(context))).fetchone()
    if row is None:
        raise ToolError(f"Ticket {args['ticket_id']} was not found for this customer; ask the customer for the ticket id.")
    return dict(row)


def search_kb(args: dict[str, Any], context: Any) -> list[dict[str, Any]]:
    """Help articles whose title or body has a word of ``query``."""
    words = [word for word in args["query"].split() if len(word) > 2] or [args["query"]]
    where = " OR ".join("title LIKE ? OR body LIKE ?" for _ in words)
    params = [f"%{word}%" for word in words for _ in (0, 1)]
    with _connect(context) as conn:
        rows = conn.execute(f"SELECT id, title, body FROM kb WHERE {where} ORDER BY id LIMIT ?", (*params, args.get("limit", 5))).fetchall()  # noqa: S608 - placeholders only
    return [dict(r) for r in rows]


def query_order(args: dict[str, Any], context: Any) -> dict[str, Any]:
    """The customer's order ``order_id``."""
    with _connect(context) as conn:
        row = conn.execute("SELECT id, item, status, shipped_on FROM orders WHERE id = ? AND customer_id = ?", (args["order_id"], _customer(context))).fetchone()
    if row is None:
        raise ToolError(f"Order {args['order_id']} was not found for this customer; ask the customer for the order number.")
    return dict(row)


def reply_customer(args: dict[str, Any], context: Any) -> dict[str, Any]:
    """Send ``body`` on the customer's ticket ``ticket_id``."""
    with _connect(context) as conn:
        owned = conn.execute("SELECT 1 FROM tickets WHERE id = ? AND customer_id = ?", (args["ticket_id"], _customer(context))).fetchone()
        if owned is None:
            raise ToolError(f"Ticket {args['ticket_id']} was not found for this customer; nothing was sent.")
        cursor = conn.execute("INSERT INTO replies (ticket_id, body) VALUES (?, ?)", (args["ticket_id"], args["body"]))
    return {"ticket_id": args["ticket_id"], "reply_id": cursor.lastrowid, "sent": True}


def close_ticket(args: dict[str, Any], context: Any) -> dict[str, Any]:
    """Close the customer's ticket ``ticket_id`` with ``resolution``."""
    with _connect(context) as conn:
        cursor = conn.execute("UPDATE tickets SET status = 'closed', resolution = ? WHERE id = ? AND customer_id = ?", (args["resolution"], args["ticket_id"], _customer(context)))
    if cursor.rowcount == 0:
        raise ToolError(f"Ticket {args['ticket_id']} was not found for this customer; nothing was closed.")
    return {"ticket_id": args["ticket_id"], "status": "closed", "resolution": args["resolution"]}
