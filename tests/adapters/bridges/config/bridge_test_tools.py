"""Handlers of the framework bridge test tools."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from runtime.errors import ToolError

DEPLOYED: list[str] = []
TALLIED: list[str] = []
_groups: dict[str, int] = {}
HANGING = threading.Event()  # set while a `hang` call runs
_lock = threading.Lock()


def lookup_city(args: dict[str, Any]) -> dict[str, Any]:
    units = args.get("units", "metric")
    return {"city": args["city"], "temp": 21 if units == "metric" else 70, "units": units}


async def rendezvous(args: dict[str, Any]) -> str:
    with _lock:
        _groups[args["group"]] = _groups.get(args["group"], 0) + 1
    for _ in range(500):  # up to 5 s for the other call to arrive
        if _groups[args["group"]] >= 2:
            return "met"
        await asyncio.sleep(0.01)
    return "alone"


def deploy(args: dict[str, Any]) -> dict[str, Any]:
    DEPLOYED.append(args["service"])
    return {"deployed": args["service"]}


def erase_disk(args: dict[str, Any]) -> str:
    raise AssertionError("erase_disk must never run")


async def sleepy(args: dict[str, Any]) -> str:
    await asyncio.sleep(60)
    return "woke up"


def explode(args: dict[str, Any]) -> str:
    raise RuntimeError("kaboom in the handler")


def refuse(args: dict[str, Any]) -> str:
    raise ToolError("ticket 42 not found; list the tickets first")


def leak(args: dict[str, Any]) -> str:
    return "the key is AKIAABCDEFGHIJKLMNOP, keep it safe"


async def noop(args: dict[str, Any]) -> str:
    return "ok"


async def hang(args: dict[str, Any]) -> str:
    HANGING.set()
    try:
        await asyncio.sleep(60)
    finally:
        HANGING.clear()
    return "finished"


def tally(args: dict[str, Any]) -> str:
    TALLIED.append(args["mark"])
    return f"tallied {args['mark']}"
