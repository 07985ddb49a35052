"""The label printer (two versions) and the buyer notification of the warehouse example."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from runtime.errors import ToolError


def _jam() -> None:
    """With WAREHOUSE_PRINTER_JAM set (to a file to create), the printer jams: the call
    makes that file and hangs. app.py uses it to stop a process in the middle of a run."""
    marker = os.environ.get("WAREHOUSE_PRINTER_JAM")
    if not marker:
        return
    Path(marker).write_text("jammed\n")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise ToolError("the label printer stayed jammed")


def print_v1(args: dict[str, Any]) -> str:
    _jam()
    return f"[label v1] {args['sku']}: {args['count']} on hand"


def print_v2(args: dict[str, Any]) -> str:
    _jam()
    return f"[label v2] {args['sku']}: {args['count']} on hand [QR]"


def notify_buyer(args: dict[str, Any]) -> str:
    if "FAIL" in args["message"] or args["sku"].startswith("ZZZ"):
        raise ToolError("the buyer's mailbox refused the message")
    return f"told the buyer: {args['message']}"
