"""A local stand-in for the Anthropic Messages API, for running the real Claude Code CLI
(bundled with the Claude Agent SDK) offline: each request is answered with the next
scripted assistant turn (streamed as server-sent events when asked), and every request
is recorded so that a test can read the tool results the CLI sent back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class MessagesApi:
    """Serves ``turns`` (each a list of content blocks: text or tool_use) in order, then "done"."""

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def next_turn(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            return self.turns.pop(0) if self.turns else [{"type": "text", "text": "done"}]

    def tool_results(self) -> dict[str, dict[str, Any]]:
        """Every tool_result block the CLI sent, by tool_use id."""
        found = {}
        for body in self.requests:
            for message in body.get("messages", []):
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = block
        return found

    def tools_offered(self) -> list[str]:
        return [tool.get("name", "") for tool in self.requests[0].get("tools", [])] if self.requests else []


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _events(message: dict[str, Any]) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
                )
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _handler(api: MessagesApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(404, "application/json", b"{}")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            if "count_tokens" in self.path:
                self._send(200, "application/json", b'{"input_tokens": 10}')
                return
            if not self.path.startswith("/v1/messages"):
                self._send(404, "application/json", b"{}")
                return
            content = api.next_turn(body)
            stop = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
            message = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            if body.get("stream"):
                self._send(200, "text/event-stream", _events(message))
            else:
                self._send(200, "application/json", json.dumps(message).encode())

    return Handler


@contextmanager
def serving(api: MessagesApi) -> Iterator[str]:
    """The API at a local URL (for ANTHROPIC_BASE_URL) while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
