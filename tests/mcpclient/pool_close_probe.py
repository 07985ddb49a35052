"""Run by the pool-close tests in a fresh interpreter, whose stderr they read: asyncio
reports a task destroyed while pending, or a loop closed under a child process, only
there (at collection, at exit). Opens a session with the fixture server in a mode that
ignores being closed, closes the pool, and prints what was left as one JSON line.

    python pool_close_probe.py stdio-live|stdio-starting PIDFILE CLOSE_WAIT_S
    python pool_close_probe.py http-live URL CLOSE_WAIT_S
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import threading
import time
from typing import Any

from mcp_support import SERVER_COMMAND

from runtime.config.models import McpServerSpec
from runtime.mcpclient.errors import McpFailure
from runtime.mcpclient.pool import McpPool

WAIT_S = 60.0


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def main() -> None:
    mode, where, close_wait_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if mode.startswith("stdio"):
        options = ["--ignore-close", *(["--silent"] if mode == "stdio-starting" else [])]
        spec = McpServerSpec(
            transport="stdio",
            command=[*SERVER_COMMAND, *options],
            env={"FIXTURE_PIDFILE": where},
            connect_timeout_s=WAIT_S,
        )
    else:
        spec = McpServerSpec(transport="http", url=where, connect_timeout_s=WAIT_S)
    pool = McpPool(close_wait_s=close_wait_s)
    answer: list[str] = []
    caller: threading.Thread | None = None
    if mode == "stdio-starting":

        def call(pool: McpPool) -> None:
            try:
                asyncio.run(pool.call_tool("fx", spec, "echo", {"text": "hi"}, total_s=WAIT_S))
                answer.append("answered")
            except McpFailure as err:
                answer.append(err.message)

        caller = threading.Thread(target=call, args=(pool,))
        caller.start()
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(where):  # the server runs: its handshake is under way, and never ends
            assert time.monotonic() < deadline, "the fixture server did not start"
            time.sleep(0.02)
    else:
        listed = pool.list_tools({"fx": spec})["fx"]
        assert isinstance(listed, list), listed
    loop: Any = pool._loop  # noqa: SLF001 - what the test checks is what the pool left on it
    started = time.monotonic()
    pool.close()
    close_s = time.monotonic() - started
    if caller is not None:
        caller.join(WAIT_S)
    pid = int(open(where).read()) if mode.startswith("stdio") else None
    result = {
        "close_s": close_s,
        "pending": sorted(task.get_name() for task in asyncio.all_tasks(loop)),
        "loop_closed": loop.is_closed(),
        "server_alive": alive(pid) if pid is not None else None,
        "answer": answer,
    }
    del loop, pool  # what asyncio reports of a pending task, it reports when the task is collected
    gc.collect()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
