"""Runs one python handler in a child process (``process_isolation: true``).

A thread cannot be killed; a process can. The parent starts
``python -m runtime.execution.child REQUEST_FILE`` under the same timeouts and
process-tree stop as a command. The request file holds the handler, its arguments and
the context fields; the handler's own prints go to stderr; the result is written as
the last line of stdout after a marker, so output the handler prints cannot forge it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

RESULT_MARKER = "\x1etoolrt-result "


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    marker = RESULT_MARKER + request["nonce"] + " "
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # the handler's prints must not mix with the result line
    try:
        function = _resolve(request["target"], [Path(p) for p in request["search_dirs"]])
        args = request["args"]
        call_args: tuple[Any, ...] = (args, _Context(request["context"])) if request["takes_context"] else (args,)
        value = function(*call_args)
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
        payload = {"ok": True, "value": _jsonable(value)}
    except BaseException as err:  # noqa: BLE001 - everything the handler does is reported to the parent
        from runtime.errors import ToolError, TransientError

        payload = {
            "ok": False,
            "type": type(err).__name__,
            "message": str(err),
            "tool_error": isinstance(err, ToolError),
            "transient": isinstance(err, TransientError),
        }
    real_stdout.write(marker + json.dumps(payload, ensure_ascii=False, default=str) + "\n")
    real_stdout.flush()
    return 0


async def _await(value: Any) -> Any:
    return await value


def _resolve(target: str, search_dirs: list[Path]) -> Any:
    # The same lookup as the snapshot build, from a module that imports nothing heavy.
    from runtime.config.handler_import import import_handler_module

    module_name, _, attribute = target.partition(":")
    return getattr(import_handler_module(module_name, search_dirs), attribute)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        from runtime.shaping.serialize import serialize

        return serialize(value).text


class _Context:
    """The child's view of ToolContext: the same fields, progress reported as output."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.workspace_root = Path(fields["workspace_root"])
        self.session_id = fields["session_id"]
        self.call_id = fields["call_id"]
        self.request_id = fields["request_id"]
        self.trace_id = fields["trace_id"]
        self.tool = fields["tool"]
        self.snapshot_version = fields["snapshot_version"]
        self.cancelled = threading.Event()

    def progress(self, message: str | None = None) -> None:
        # Any output resets the parent's idle timer.
        sys.stderr.write(f"[progress] {message or ''}\n")
        sys.stderr.flush()


if __name__ == "__main__":
    os.environ.pop("PYTHONSTARTUP", None)
    sys.exit(main(sys.argv))
