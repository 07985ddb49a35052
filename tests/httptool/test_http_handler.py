"""http tools end to end against a real local HTTP server started by the test: the
request is built from templates and secrets, responses are shaped, limits and
timeouts hold, redirects are checked hop by hop, and by default the loopback server
itself cannot be reached."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from runtime import Runtime
from runtime.config.compile import build_snapshot
from runtime.records import Status
from runtime.settings import Settings

pytest.importorskip("httpx")


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, object]] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet server
        return

    def _send(
        self, status: int, body: bytes, content_type: str = "application/json", extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record = {
            "method": self.command,
            "path": parts.path,
            "query": query,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode(),
        }
        type(self).seen.append(record)
        route = parts.path
        if route == "/echo" or route.startswith("/echo/"):
            self._send(200, json.dumps(record).encode())
        elif route == "/text":
            self._send(200, b"plain words\n", "text/plain; charset=utf-8")
        elif route.startswith("/status/"):
            self._send(int(route.rsplit("/", 1)[1]), b'{"error": "nope"}')
        elif route == "/big":
            size = int(query.get("n", "1000000"))
            self._send(200, b"x" * size, "text/plain")
        elif route == "/big-chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(200):
                self.wfile.write(b"y" * 65536)
        elif route == "/slow":
            time.sleep(float(query.get("s", "5")))
            self._send(200, b'{"late": true}')
        elif route == "/redirect":
            self._send(int(query.get("code", "302")), b"", extra={"Location": query["to"]})
        elif route == "/loop":
            self._send(302, b"", extra={"Location": "/loop"})
        elif route == "/binary":
            self._send(200, b"\x00\x01\x02\x03" * 100, "application/octet-stream")
        else:
            self._send(404, b'{"error": "no such route"}')

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False  # a handler still sleeping for a slow-response test is not waited for
    httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]  # a client that stops reading is expected
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def tool(
    name: str,
    http: str,
    *,
    schema: str = "{type: object, properties: {q: {type: string}, n: {type: integer}, who: {type: string}}}",
    extra: str = "",
) -> str:
    return f"""
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: An http tool.
  handler: {{http: {http}}}
  read_only: true
  input_schema: {schema}
{extra}
"""


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[[str], Runtime]]:
    made: list[Runtime] = []

    def build(documents: str) -> Runtime:
        config = tmp_path / "config"
        config.mkdir(exist_ok=True)
        (config / "tools.yaml").write_text(documents)
        (config / "policy.yaml").write_text(ALLOW_ALL)
        (tmp_path / "ws").mkdir(exist_ok=True)
        runtime = Runtime(
            [config], workspace_root=tmp_path / "ws", settings=Settings(state_dir=tmp_path / "state", audit_sink="off")
        )
        made.append(runtime)
        return runtime

    yield build
    for runtime in made:
        runtime.close_sync()


LOOPBACK = "allow_networks: [127.0.0.0/8]"
ALLOW_ALL = (
    "apiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: allow-all}\nspec: {rules: [{name: all, effect: allow, "
    "tools: ['*']}]}\n"
)


async def test_a_get_returns_status_headers_and_parsed_json(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("search", f'{{url: "http://{server}/echo?q={{q}}", {LOOPBACK}}}'))
    result = await runtime.call("search", {"q": "a b&c=d/../x"})
    assert result.status is Status.ok, result.content
    body = result.structured["body"]
    assert body["path"] == "/echo" and body["query"] == {"q": "a b&c=d/../x"}  # encoded: no injection
    assert result.structured["status"] == 200 and result.structured["headers"]["content-type"] == "application/json"


async def test_an_argument_cannot_change_the_host_or_the_path(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("item", f'{{url: "http://{server}/echo/{{q}}", {LOOPBACK}}}'))
    result = await runtime.call("item", {"q": "../status/500"})
    assert result.status is Status.ok, result.content
    assert _Handler.seen[-1]["path"] == "/echo/..%2Fstatus%2F500"
    result = await runtime.call("item", {"q": "@evil.example:80/x"})
    assert result.status is Status.ok and _Handler.seen[-1]["path"].startswith("/echo/%40evil")  # type: ignore[union-attr]


async def test_secrets_come_from_the_environment_and_are_redacted_from_the_response(
    server: str, make: Callable[[str], Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WF_TEST_TOKEN", "s3cr3t-token-value")
    http = (
        f'{{url: "http://{server}/echo", headers: {{Authorization: "Bearer {{token}}", X-Echo: "id {{token}}"}}, '
        f"secrets: {{token: WF_TEST_TOKEN}}, {LOOPBACK}}}"
    )
    runtime = make(tool("echo", http))
    result = await runtime.call("echo", {})
    assert result.status is Status.ok, result.content
    assert _Handler.seen[-1]["headers"]["authorization"] == "Bearer s3cr3t-token-value"  # type: ignore[index]
    assert "s3cr3t-token-value" not in result.content
    assert result.structured["body"]["headers"]["x-echo"] == "id [REDACTED:secret]"


async def test_a_missing_secret_is_a_clear_error_and_nothing_is_sent(
    server: str, make: Callable[[str], Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WF_TEST_MISSING", raising=False)
    http = (
        f'{{url: "http://{server}/echo", headers: {{X-Api-Key: "{{key}}"}}, secrets: {{key: WF_TEST_MISSING}}, '
        f"{LOOPBACK}}}"
    )
    runtime = make(tool("echo", http))
    result = await runtime.call("echo", {})
    assert result.is_error and "WF_TEST_MISSING" in result.content and "not set" in result.content
    assert _Handler.seen == []


async def test_a_post_sends_a_json_body_with_typed_values(server: str, make: Callable[[str], Runtime]) -> None:
    http = (
        f'{{method: POST, url: "http://{server}/echo", body: {{query: "{{q}}", count: "{{n}}", label: "n={{n}}"}}, '
        f"{LOOPBACK}}}"
    )
    runtime = make(tool("post", http))
    result = await runtime.call("post", {"q": "hello", "n": 3})
    assert result.status is Status.ok, result.content
    seen = _Handler.seen[-1]
    assert seen["method"] == "POST" and json.loads(seen["body"]) == {"query": "hello", "count": 3, "label": "n=3"}  # type: ignore[arg-type]
    assert seen["headers"]["content-type"] == "application/json"  # type: ignore[index]


async def test_a_header_value_with_a_line_break_is_refused(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("hdr", f'{{url: "http://{server}/echo", headers: {{X-Who: "{{who}}"}}, {LOOPBACK}}}'))
    result = await runtime.call("hdr", {"who": "me\r\nX-Admin: yes"})
    assert result.status is Status.invalid and "line break" in result.content
    assert _Handler.seen == []


async def test_a_text_response_is_text_and_binary_is_described(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(
        tool("text", f'{{url: "http://{server}/text", {LOOPBACK}}}')
        + "---"
        + tool("bin", f'{{url: "http://{server}/binary", {LOOPBACK}}}')
    )
    text = await runtime.call("text", {})
    assert text.structured["body"] == "plain words\n"
    binary = await runtime.call("bin", {})
    assert binary.status is Status.ok and "binary response" in binary.structured["body"]


@pytest.mark.parametrize("code", [400, 403, 404, 500])
async def test_an_http_error_status_is_an_error_result_with_the_body(
    server: str, make: Callable[[str], Runtime], code: int
) -> None:
    runtime = make(tool("st", f'{{url: "http://{server}/status/{code}", {LOOPBACK}}}'))
    result = await runtime.call("st", {})
    assert result.is_error and f"HTTP {code}" in result.content and "nope" in result.content


async def test_a_transient_status_is_retried_for_a_get(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(
        tool(
            "busy",
            f'{{url: "http://{server}/status/503", {LOOPBACK}}}',
            extra="  retry: {attempts: 2, backoff_s: 0.01}",
        )
    )
    result = await runtime.call("busy", {})
    assert result.is_error and result.metadata.get("attempts") == 3
    assert len(_Handler.seen) == 3


async def test_a_post_to_a_tool_that_is_not_idempotent_is_not_retried(
    server: str, make: Callable[[str], Runtime]
) -> None:
    doc = tool(
        "busy",
        f'{{method: POST, url: "http://{server}/status/503", {LOOPBACK}}}',
        extra="  retry: {attempts: 2, backoff_s: 0.01}",
    ).replace("read_only: true", "read_only: false")
    runtime = make(doc)
    result = await runtime.call("busy", {})
    assert result.is_error and len(_Handler.seen) == 1


async def test_a_huge_response_is_refused_past_the_limit(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("big", f'{{url: "http://{server}/big?n=5000000", max_response_bytes: 100000, {LOOPBACK}}}'))
    result = await runtime.call("big", {})
    assert result.is_error and result.code == "response_too_large" and "100,000" in result.content


async def test_a_huge_response_without_a_length_is_cut_while_reading(
    server: str, make: Callable[[str], Runtime]
) -> None:
    runtime = make(tool("big", f'{{url: "http://{server}/big-chunked", max_response_bytes: 200000, {LOOPBACK}}}'))
    result = await runtime.call("big", {})
    assert result.is_error and result.code == "response_too_large"


async def test_a_large_response_under_the_limit_spills_to_an_artifact(
    server: str, make: Callable[[str], Runtime]
) -> None:
    runtime = make(
        tool("big", f'{{url: "http://{server}/big?n=300000", {LOOPBACK}}}', extra="  output: {max_chars: 5000}")
    )
    result = await runtime.call("big", {})
    assert result.status is Status.ok and result.metadata.get("truncated") is True
    assert "artifact_read" in result.content


async def test_a_slow_response_hits_the_idle_timeout(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(
        tool("slow", f'{{url: "http://{server}/slow?s=5", {LOOPBACK}}}', extra="  timeout: {total_s: 20, idle_s: 0.3}")
    )
    result = await runtime.call("slow", {})
    assert result.status is Status.timeout and "idle" in result.content


async def test_a_slow_response_hits_the_total_timeout(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("slow", f'{{url: "http://{server}/slow?s=5", {LOOPBACK}}}', extra="  timeout: {total_s: 0.3}"))
    result = await runtime.call("slow", {})
    assert result.status is Status.timeout


async def test_a_write_that_times_out_is_result_unknown(server: str, make: Callable[[str], Runtime]) -> None:
    doc = tool(
        "slowpost", f'{{method: POST, url: "http://{server}/slow?s=5", {LOOPBACK}}}', extra="  timeout: {total_s: 0.3}"
    ).replace("read_only: true", "read_only: false")
    runtime = make(doc)
    result = await runtime.call("slowpost", {})
    assert result.status is Status.unknown and "unknown" in result.content.lower()


async def test_redirects_are_followed_and_counted(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("hop", f'{{url: "http://{server}/redirect?to=/echo", {LOOPBACK}}}'))
    result = await runtime.call("hop", {})
    assert (
        result.status is Status.ok
        and result.metadata["redirects"] == 1
        and result.structured["body"]["path"] == "/echo"
    )


async def test_a_303_after_a_post_becomes_a_get_without_body(server: str, make: Callable[[str], Runtime]) -> None:
    http = f'{{method: POST, url: "http://{server}/redirect?code=303&to=/echo", body: {{a: 1}}, {LOOPBACK}}}'
    runtime = make(tool("hop", http).replace("read_only: true", "read_only: false"))
    result = await runtime.call("hop", {})
    assert result.status is Status.ok and _Handler.seen[-1]["method"] == "GET" and _Handler.seen[-1]["body"] == ""


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://192.168.0.1/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://[::ffff:10.0.0.1]/",
        "http://0xa000001/",
        "http://012.0.0.1/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/",
    ],
)
async def test_a_redirect_to_a_private_address_or_another_scheme_is_refused(
    server: str, make: Callable[[str], Runtime], target: str
) -> None:
    from urllib.parse import quote

    runtime = make(
        tool("hop", f'{{url: "http://{server}/redirect?to={quote(target, safe="")}", allow_networks: [127.0.0.1/32]}}')
    )
    result = await runtime.call("hop", {})
    assert result.status is Status.denied and result.code == "address_refused", result.content
    assert len(_Handler.seen) == 1


async def test_a_redirect_loop_stops_at_the_limit(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("loop", f'{{url: "http://{server}/loop", max_redirects: 3, {LOOPBACK}}}'))
    result = await runtime.call("loop", {})
    assert result.is_error and len(_Handler.seen) == 4


async def test_secret_headers_are_dropped_on_a_redirect_to_another_host(
    server: str, make: Callable[[str], Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WF_TEST_TOKEN", "s3cr3t-token-value")
    port = server.rsplit(":", 1)[1]
    http = (
        f'{{url: "http://{server}/redirect?to=http%3A%2F%2F%5B%3A%3Affff%3A127.0.0.1%5D%3A{port}%2Fecho", headers: '
        f'{{Authorization: "Bearer {{token}}", X-Plain: ok}}, secrets: {{token: WF_TEST_TOKEN}}, {LOOPBACK}}}'
    )
    runtime = make(tool("hop", http))
    result = await runtime.call("hop", {})
    assert result.status is Status.ok, result.content
    headers = _Handler.seen[-1]["headers"]
    assert "authorization" not in headers and headers["x-plain"] == "ok"  # type: ignore[operator,index]


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]"]
)
async def test_the_local_server_is_refused_without_allow_networks(
    server: str, make: Callable[[str], Runtime], host: str
) -> None:
    port = server.rsplit(":", 1)[1]
    runtime = make(tool("local", f'{{url: "http://{host}:{port}/echo"}}'))
    result = await runtime.call("local", {})
    assert result.status is Status.denied and result.code == "address_refused", result.content
    assert _Handler.seen == []


async def test_a_host_taken_from_an_argument_is_still_guarded(server: str, make: Callable[[str], Runtime]) -> None:
    runtime = make(tool("anyhost", '{url: "http://{who}/x"}'))
    for host in ("127.0.0.1", "169.254.169.254", "10.0.0.1", "localhost"):
        result = await runtime.call("anyhost", {"who": host})
        assert result.status is Status.denied, (host, result.content)
    assert _Handler.seen == []


LINT_CASES = [
    ('{url: "ftp://example.com/x"}', "handler-template"),
    ('{url: "{q}"}', "handler-template"),
    ('{url: "https://example.com/{nope}"}', "handler-template"),
    ('{url: "https://example.com/{q.x}"}', "handler-template"),
    ('{url: "https://example.com/", headers: {X-A: "{missing}"}}', "handler-template"),
    ('{url: "https://example.com/", body: {a: "{missing}"}}', "handler-template"),
    ('{url: "https://example.com/", allow_networks: [not-a-cidr]}', "invalid-value"),
    ('{url: "https://example.com/", secrets: {q: SOME_VAR}}', "handler-template"),
    ('{url: "https://example.com/", max_response_bytes: 0}', "schema"),
]


@pytest.mark.parametrize(("http", "code"), LINT_CASES)
def test_a_broken_http_handler_is_a_lint_error(tmp_path: Path, http: str, code: str) -> None:
    (tmp_path / "t.yaml").write_text(tool("bad", http))
    problems = build_snapshot([tmp_path]).problems
    errors = [p for p in problems if p.is_error]
    assert errors and (code == "schema" or any(p.code == code for p in errors)), [str(p) for p in problems]


def test_a_literal_credential_in_a_header_is_a_lint_warning(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        tool("leaky", '{url: "https://example.com/", headers: {Authorization: "Bearer abc123"}}')
    )
    result = build_snapshot([tmp_path])
    assert [p.code for p in result.problems] == ["handler-secret"]
