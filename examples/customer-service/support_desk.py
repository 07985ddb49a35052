"""Handlers of the customer-service example, backed by a real SQLite database.

``python:support_desk:<function>`` handlers resolve to this module because it sits
beside the config files. The database is created on first use in the directory named
by the ``SUPPORT_DESK_DB`` environment variable (default: the current directory).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, subject TEXT, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, item TEXT, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS replies (ticket_id TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kb (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
"""
_SEED = [
    "INSERT OR IGNORE INTO tickets VALUES ('T-1001', 'C-42', 'Parcel has not arrived', 'open')",
    "INSERT OR IGNORE INTO tickets VALUES ('T-1002', 'C-7', 'Refund request', 'open')",
    "INSERT OR IGNORE INTO orders VALUES ('O-555', 'C-42', 'Desk lamp', 'shipped')",
    "INSERT OR IGNORE INTO kb VALUES (1, 'Late deliveries', 'Parcels may take up to 7 working days.')",
    "INSERT OR IGNORE INTO kb VALUES (2, 'Refunds', 'Refunds are issued within 14 days of the return.')",
]


def _connect() -> sqlite3.Connection:
    path = Path(os.environ.get("SUPPORT_DESK_DB", ".")) / "support_desk.sqlite3"
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    conn.executescript(_SCHEMA)
    for statement in _SEED:
        conn.execute(statement)
    conn.commit()
    return conn


def query_ticket(args: dict[str, Any], context: Any = None) -> dict[str, Any] | None:
    with _connect() as conn:
        row = conn.execute("SELECT * FROM tickets WHERE id = ?", (args["ticket_id"],)).fetchone()
    return dict(row) if row else None


def search_kb(args: dict[str, Any], context: Any = None) -> list[dict[str, Any]]:
    with _connect() as conn:
        rows = conn.execute("SELECT id, title, body FROM kb WHERE title LIKE ? OR body LIKE ? LIMIT ?", (f"%{args['query']}%", f"%{args['query']}%", args.get("limit", 5))).fetchall()
    return [dict(r) for r in rows]


def query_order(args: dict[str, Any], context: Any = None) -> dict[str, Any] | None:
    with _connect() as conn:
        row = conn.execute("SELECT * FROM orders WHERE id = ?", (args["order_id"],)).fetchone()
    return dict(row) if row else None


def reply_customer(args: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with _connect() as conn:
        conn.execute("INSERT INTO replies VALUES (?, ?)", (args["ticket_id"], args["body"]))
    return {"ticket_id": args["ticket_id"], "sent": True}


def close_ticket(args: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with _connect() as conn:
        conn.execute("UPDATE tickets SET status = 'closed' WHERE id = ?", (args["ticket_id"],))
    return {"ticket_id": args["ticket_id"], "status": "closed"}
