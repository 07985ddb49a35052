"""Helpers of the lock drift tests: a locked config whose fixture server lists what a
JSON file next to it says (``FIXTURE_LISTING``, read at every listing), a log of reload
events, and the drift warnings loguru emits."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loguru import logger
from mcp_support import server_doc, write_config

from runtime.cli import main
from runtime.mcpclient.lock import LOCK_FILE
from runtime.reload import ReloadEvent

WAIT_S = 60.0  # generous: servers start slowly on a loaded machine; waits end as soon as the condition holds


#: The lock ``toolrt mcp lock`` wrote in this process, by the server's declaration (its
#: environment left out: only the listing file's path, absent when locking, differs).
_LOCKS: dict[str, str] = {}


def locked_config(tmp_path: Path, *documents: dict[str, Any], **spec: Any) -> tuple[Path, Path]:
    """A config with the fixture server ``fx`` (``spec`` added to its declaration) and
    ``documents``, locked with ``toolrt mcp lock``; and the file that changes its listing
    (absent: the server lists what was locked).

    The lock holds only what the server listed, the same for every config declaring the
    server alike, so ``toolrt mcp lock`` runs once per test process and declaration and
    later configs get a copy of the file it wrote: each run started a server process
    (about 1 s of CPU) to list the same tools again."""
    listing = tmp_path / "listing.json"
    declared = {"include": ["echo", "structured"], **spec, "env": {"FIXTURE_LISTING": str(listing)}}
    config = write_config(tmp_path / "config", server_doc(**declared), *documents)
    key = json.dumps({**declared, "env": None}, sort_keys=True)
    if key in _LOCKS:
        (config / LOCK_FILE).write_text(_LOCKS[key], encoding="utf-8")
        return config, listing
    out, err = io.StringIO(), io.StringIO()
    assert main(["mcp", "lock", "--config", str(config)], stdout=out, stderr=err) == 0, err.getvalue()
    _LOCKS[key] = (config / LOCK_FILE).read_text(encoding="utf-8")
    return config, listing


def change_listing(listing: Path, **change: Any) -> None:
    """Make the server list TOOLS with ``change`` (``drop``, ``patch``, ``add``) from now on."""
    temporary = listing.with_suffix(".tmp")
    temporary.write_text(json.dumps(change), encoding="utf-8")
    os.replace(temporary, listing)


FLIP_ECHO = {"patch": {"echo": {"annotations": {"readOnlyHint": False}}}, "drop": ["fail"]}


class EventLog:
    """Collects reload events from any thread and waits for them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.events: list[ReloadEvent] = []

    def __call__(self, event: ReloadEvent) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def kinds(self) -> list[str]:
        with self._changed:
            return [e.event for e in self.events]

    def wait_for(self, predicate: Callable[[ReloadEvent], bool], since: int = 0) -> int:
        """The index of the first event after ``since`` that satisfies ``predicate``."""
        deadline = time.monotonic() + WAIT_S
        with self._changed:
            while True:
                for index, event in enumerate(self.events[since:], start=since):
                    if predicate(event):
                        return index
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching event within {WAIT_S} s; got {self.kinds()}")
                self._changed.wait(left)


@contextmanager
def drift_warnings() -> Iterator[list[dict[str, Any]]]:
    """The extras of the ``mcp_lock_drift`` warnings logged inside the block."""
    seen: list[dict[str, Any]] = []

    def sink(message: Any) -> None:
        if message.record["extra"].get("event") == "mcp_lock_drift":
            seen.append(message.record["extra"])

    handle = logger.add(sink, level="WARNING")
    logger.enable("runtime")  # a library's logs are off until the app turns them on
    try:
        yield seen
    finally:
        logger.disable("runtime")
        logger.remove(handle)


def fixture_servers(listing: Path) -> list[int]:
    """The live fixture server processes started with ``listing`` in their environment."""
    marker = f"FIXTURE_LISTING={listing}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as file:
                environ = file.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as file:
                state = file.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != b"Z":
            found.append(int(entry))
    return found


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {WAIT_S} s")
        time.sleep(0.02)
