"""Handlers of the MCP server test tools."""

from __future__ import annotations

import asyncio
import time
from typing import Any


def lookup_city(args: dict[str, Any]) -> dict[str, Any]:
    return {"city": args["city"], "temp_c": 21, "sunny": True}


def count_up(args: dict[str, Any], context: Any) -> str:
    for step in range(1, args["n"] + 1):
        context.progress(f"step {step} of {args['n']}")
        time.sleep(0.01)
    return f"counted to {args['n']}"


def deploy(args: dict[str, Any]) -> dict[str, Any]:
    return {"deployed": args["service"]}


def erase_disk(args: dict[str, Any]) -> str:
    raise AssertionError("erase_disk must never run")


async def sleepy(args: dict[str, Any]) -> str:
    await asyncio.sleep(60)
    return "woke up"
