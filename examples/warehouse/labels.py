"""The label printer (two versions) and the buyer notification of the warehouse example."""

from __future__ import annotations

from typing import Any

from runtime.errors import ToolError


def print_v1(args: dict[str, Any]) -> str:
    return f"[label v1] {args['sku']}: {args['count']} on hand"


def print_v2(args: dict[str, Any]) -> str:
    return f"[label v2] {args['sku']}: {args['count']} on hand [QR]"


def notify_buyer(args: dict[str, Any]) -> str:
    if "FAIL" in args["message"] or args["sku"].startswith("ZZZ"):
        raise ToolError("the buyer's mailbox refused the message")
    return f"told the buyer: {args['message']}"
