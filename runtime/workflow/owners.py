"""Which process owns a journaled run: its pid and start time, and whether it still runs."""

from __future__ import annotations

import os
from pathlib import Path


def process_token() -> str:
    """This process as a run owner: its pid and start time (a reused pid is another owner)."""
    return f"{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(token: str) -> bool:
    """Whether the process ``token`` names still runs (a zombie does not)."""
    pid_text, _, ticks = token.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rpartition(")")[2].split()
    except OSError:
        if not Path("/proc/self/stat").exists():  # no /proc: the pid alone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        return False
    return fields[0] != "Z" and fields[19] == ticks


def _start_ticks(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return "0"
