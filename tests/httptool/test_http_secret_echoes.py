"""A secret an http tool sends never comes back to the model in another spelling.

The secret sits in the URL's query (an API key parameter), a header or the body; a real
local server echoes it back the ways real servers do: the requested URL quoted in a 404
page (percent-encoded, hex in either case, ``+`` for a space), a redirect's Location, a
header, an error message about a redirect loop, a JSON string escaped inside a text
body. Before, only the plain value was removed, so an error page quoting the URL showed
a key holding ``+``, ``/``, ``=`` or a space to the model.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote, urlsplit

import pytest

from runtime import Runtime
from runtime.http.request import secret_spellings
from runtime.records import Status
from runtime.settings import Settings

pytest.importorskip("httpx")

LOOPBACK = "allow_networks: [127.0.0.0/8]"
ALLOW_ALL = (
    "apiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: allow-all}\nspec: {rules: [{name: all, effect: allow, "
    "tools: ['*']}]}\n"
)

#: Keys with the characters URL encoding changes (base64 ones, a space, a quote, non-ASCII).
SECRETS = [
    "Zk9+q/Lx7=Wm2pQ",
    "ab cd+ef/gh==",
    'p"w\\d-Q7rT9sK',
    "k€y-Ünïcode-91x",
    "plainAlnum12345",
]


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet server
        return

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        route = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        sent_body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        if route.startswith("/notfound-lower"):  # hex digits in lower case
            lowered = re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), self.path)
            self._send(404, f"no route {lowered}".encode(), "text/plain")
        elif route.startswith("/notfound"):  # an error page quoting the URL as requested
            self._send(404, f"Cannot GET {self.path}\n".encode(), "text/plain; charset=utf-8")
        elif route.startswith("/json-as-text"):  # the query, JSON-escaped, in a body not labelled JSON
            query = unquote(urlsplit(self.path).query.partition("=")[2])
            self._send(200, json.dumps({"key": query}).encode(), "text/plain")
        elif route.startswith("/json-ascii"):
            query = unquote(urlsplit(self.path).query.partition("=")[2])
            self._send(400, json.dumps({"bad": query}, ensure_ascii=True).encode(), "text/html")
        elif route.startswith("/moved"):  # a 3xx it may not follow: the Location shown
            self._send(300, b"", "text/plain", {"Location": self.path.replace("/moved", "/elsewhere", 1)})
        elif route.startswith("/loop"):  # redirects forever, the key in each hop
            self._send(302, b"", "text/plain", {"Location": self.path})
        elif route.startswith("/etag"):
            self._send(200, b"{}", "application/json", {"ETag": '"' + self.headers.get("X-Key", "") + '"'})
        elif route.startswith("/plus-body"):  # a form body echoed in its encoded form
            self._send(422, f"invalid form: {sent_body}".encode(), "text/plain")
        else:
            self._send(404, b"{}", "application/json")

    do_GET = do_POST = _handle


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[[str], Runtime]]:
    made: list[Runtime] = []

    def build(http: str) -> Runtime:
        config = tmp_path / "config"
        config.mkdir(exist_ok=True)
        (config / "tools.yaml").write_text(
            "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: api}\nspec:\n  description: An http tool.\n"
            f"  handler: {{http: {http}}}\n  read_only: true\n"
            "  input_schema: {type: object, properties: {q: {type: string}}}\n"
        )
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


def spellings_in(text: str, secret: str) -> list[str]:
    """Which spellings of ``secret`` a text holds (the plain one and every encoding a reader would undo)."""
    found = [form for form in secret_spellings(secret) if len(form) >= 4 and form in text]
    return found + (["unquoted"] if secret in unquote(text) else [])


ROUTES = ["notfound", "notfound-lower", "json-as-text", "json-ascii", "moved", "loop"]


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_secret_in_the_query_is_not_echoed_back_in_any_spelling(
    server: str, make: Callable[[str], Runtime], monkeypatch: pytest.MonkeyPatch, route: str, secret: str
) -> None:
    monkeypatch.setenv("ECHO_TEST_KEY", secret)
    runtime = make(
        f'{{url: "http://{server}/{route}/{{q}}?k={{key}}", secrets: {{key: ECHO_TEST_KEY}}, '
        f"max_redirects: 2, {LOOPBACK}}}"
    )
    result = await runtime.call("api", {"q": "item-1"})
    shown = result.content + json.dumps(result.structured, ensure_ascii=False)
    assert spellings_in(shown, secret) == [], (route, result.content)
    assert "REDACTED" in shown or route == "loop", result.content  # the echo was there, and was removed


@pytest.mark.parametrize("secret", SECRETS)
async def test_a_secret_header_echoed_in_a_shown_response_header_is_removed(
    server: str, make: Callable[[str], Runtime], monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    safe = secret.encode("ascii", "ignore").decode().replace('"', "").replace("\\", "")
    monkeypatch.setenv("ECHO_TEST_KEY", safe)
    runtime = make(
        f'{{url: "http://{server}/etag", headers: {{X-Key: "{{key}}"}}, secrets: {{key: ECHO_TEST_KEY}}, {LOOPBACK}}}'
    )
    result = await runtime.call("api", {})
    assert result.status is Status.ok, result.content
    assert safe not in result.content and safe not in json.dumps(result.structured)
    assert "REDACTED" in result.structured["headers"]["etag"]


@pytest.mark.parametrize("secret", SECRETS)
async def test_a_secret_in_a_form_body_echoed_encoded_in_an_error_is_removed(
    server: str, make: Callable[[str], Runtime], monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    monkeypatch.setenv("ECHO_TEST_KEY", quote_plus(secret))  # the operator stores the form-encoded value
    runtime = make(
        f'{{url: "http://{server}/plus-body", method: POST, body: "key={{key}}", secrets: {{key: ECHO_TEST_KEY}}, '
        f"{LOOPBACK}}}"
    )
    result = await runtime.call("api", {})
    assert result.status is Status.error
    assert spellings_in(result.content, quote_plus(secret)) == [], result.content


@pytest.mark.parametrize("secret", SECRETS)
def test_the_spellings_cover_every_url_and_json_form(secret: str) -> None:
    forms = secret_spellings(secret)
    for encoded in (quote(secret, safe=""), quote(secret), quote_plus(secret), json.dumps(secret)[1:-1]):
        assert encoded in forms
        assert encoded.lower() in {f.lower() for f in forms}
