"""Secrets of the runtime's environment with no shape a pattern knows (a random
``DB_PASSWORD``) are redacted by value, in every spelling a program prints them in,
wherever they reach: a handler's exception (in process and isolated), a ToolError, a
returned structure, a command's output (streamed, in pieces), a tool with
``redaction: []``, an artifact on disk and its pages, and the audit log on disk. Each
case goes through a real Runtime with real processes and files."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from runtime import Call, Runtime, Session
from runtime.settings import Settings
from runtime.shaping.env_secrets import DEFAULT_NAMES, env_secret_profile, secret_values

SECRETS = {
    "DB_PASSWORD": "x7Qp2vLm9RtK4wZs",
    "SERVICE_TOKEN": "tk/9+Zq81=aa&b?c#d",
    "stripe_api_key": "Zz0Yy1Xx2Ww3Vv4",
    "MY_CREDENTIALS": "päss wörd \"quoted\" <tag> 'x'",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYQQQQ",
    "APP_PRIVATE_KEY_PASS": "correct horse battery staple",
}
SHORT = {"SHORT_TOKEN": "abc123"}  # under 8 characters: left alone
PLAIN = {"BUILD_LABEL": "release-candidate-42"}  # not a secret name

SPELL = """
import base64, html, json, os, re, urllib.parse

def spell(kind, v):
    b = v.encode()
    return {
        "plain": v,
        "json": json.dumps(v)[1:-1],
        "json-unicode": json.dumps(v, ensure_ascii=False)[1:-1],
        "json-document": json.dumps({"password": v}),
        "json-slashes": json.dumps(v)[1:-1].replace("/", "\\\\/"),
        "repr": repr(v),
        "percent": urllib.parse.quote(v, safe=""),
        "percent-lower": re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(v, safe="")),
        "percent-plus": urllib.parse.quote_plus(v),
        "query-string": "https://api.example/x?password=" + urllib.parse.quote(v, safe="") + "&next=1",
        "base64": base64.b64encode(b).decode(),
        "base64-url": base64.urlsafe_b64encode(b).decode(),
        "base64-no-pad": base64.b64encode(b).decode().rstrip("="),
        "basic-auth-1": "Authorization: Basic " + base64.b64encode(b"u:" + b).decode(),
        "basic-auth-2": "Authorization: Basic " + base64.b64encode(b"us:" + b).decode(),
        "basic-auth-3": "Authorization: Basic " + base64.b64encode(b"usr:" + b).decode(),
        "hex": b.hex(),
        "hex-upper": b.hex().upper(),
        "html": html.escape(v),
        "dsn": "postgres://app:" + v + "@db.internal:5432/app",
        "coloured": v[:4] + "\\x1b[31m" + v[4:] + "\\x1b[0m",
        "zero-width": v[:5] + "\\u200b" + v[5:],
        "in-a-sentence": "the password is " + v + ", keep it safe",
        "twice": v + " and again " + v,
    }[kind]
"""

KINDS = [
    "plain",
    "json",
    "json-unicode",
    "json-document",
    "json-slashes",
    "repr",
    "percent",
    "percent-lower",
    "percent-plus",
    "query-string",
    "base64",
    "base64-url",
    "base64-no-pad",
    "basic-auth-1",
    "basic-auth-2",
    "basic-auth-3",
    "hex",
    "hex-upper",
    "html",
    "dsn",
    "coloured",
    "zero-width",
    "in-a-sentence",
    "twice",
]

HANDLERS = (
    SPELL
    + """
from runtime.errors import ToolError

def boom(args):
    raise RuntimeError("connect failed: " + spell(args["kind"], os.environ[args["var"]]))

def refuse(args):
    raise ToolError("refused: " + spell(args["kind"], os.environ[args["var"]]))

def give(args):
    text = spell(args["kind"], os.environ[args["var"]])
    return {"nested": {"deep": [text]}, text[:40]: "key", "note": "ok"}

def short(args):
    return "values: " + " ".join(os.environ[n] for n in ("SHORT_TOKEN", "BUILD_LABEL"))
"""
)

TOOL = """
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: {name}
  input_schema:
    type: object
    properties: {{kind: {{type: string}}, var: {{type: string}}, note: {{type: string}}}}
  handler: {handler}
  read_only: true
  timeout: {{total_s: 60, grace_s: 0.2}}
{extra}
"""
PRINTER = (
    SPELL
    + """
import sys, time
v = spell(sys.argv[1], os.environ[sys.argv[2]])
print(v[: len(v) // 2], end="", flush=True)  # in two pieces, apart in time
time.sleep(0.05)
print(v[len(v) // 2 :], flush=True)
"""
)
ENV_LIST = "[" + ", ".join(SECRETS) + "]"
DOCS = [
    TOOL.format(name="boom", handler='"python:env_handlers:boom"', extra=""),
    TOOL.format(name="boom_isolated", handler='"python:env_handlers:boom"', extra="  process_isolation: true"),
    TOOL.format(name="refuse", handler='"python:env_handlers:refuse"', extra=""),
    TOOL.format(name="give", handler='"python:env_handlers:give"', extra=""),
    TOOL.format(name="give_raw", handler='"python:env_handlers:give"', extra="  redaction: []"),
    TOOL.format(name="short", handler='"python:env_handlers:short"', extra=""),
    TOOL.format(
        name="printer",
        handler=f'{{command: {{argv: [python3, printer.py, "{{kind}}", "{{var}}"], env: {ENV_LIST}}}}}',
        extra="",
    ),
    TOOL.format(
        name="printer_raw",
        handler=f'{{command: {{argv: [python3, printer.py, "{{kind}}", "{{var}}"], env: {ENV_LIST}}}}}',
        extra="  redaction: []",
    ),
    TOOL.format(
        name="flood",
        handler=(
            '{command: {argv: [sh, -c, \'for i in $(seq 400); do echo line $i; done; echo "$DB_PASSWORD"; '
            "for i in $(seq 400); do echo more $i; done'], env: [DB_PASSWORD]}}"
        ),
        extra="  output: {max_chars: 500, preview_chars: 100}",
    ),
]
PACKS = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [builtin-tools, output-default]}
"""
SESSION = Session(id="env", mode="bypass")


def _spellings(value: str) -> list[str]:
    """What must never be seen: the value and its whole encodings (base64 inside Basic
    auth changes at its edges, so its middle is checked)."""
    raw = value.encode()
    found = [
        value,
        json.dumps(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value),
        base64.b64encode(raw).decode().rstrip("="),
        raw.hex(),
        html.escape(value),
    ]
    for prefix in (b"u:", b"us:", b"usr:"):
        encoded = base64.b64encode(prefix + raw).decode()
        found.append(encoded[4:-4])
    return found


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, Path]]:
    root = tmp_path_factory.mktemp("envsecrets")
    config = root / "config"
    config.mkdir()
    (config / "env_handlers.py").write_text(HANDLERS)
    (config / "tools.yaml").write_text(PACKS + "---".join(["", *DOCS]))
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "printer.py").write_text(PRINTER)
    saved = {name: os.environ.get(name) for name in (*SECRETS, *SHORT, *PLAIN)}
    os.environ.update({**SECRETS, **SHORT, **PLAIN})
    try:
        settings = Settings(state_dir=root / "state", hot_reload=False, audit_sink="sqlite")
        runtime = Runtime([config], workspace_root=workspace, settings=settings)
        yield runtime, root
        runtime.close_sync()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _call(runtime: Runtime, tool: str, **args: str) -> str:
    (result,) = runtime.run_turn_sync([Call("c", tool, dict(args))], SESSION)
    return (
        result.content
        + json.dumps(result.structured, ensure_ascii=False)
        + json.dumps({k: v for k, v in result.metadata.items() if k != "timings_ms"}, ensure_ascii=False, default=str)
    )


def _assert_clean(text: str, var: str) -> None:
    for spelling in _spellings(SECRETS[var]):
        if len(spelling) >= 8:
            assert spelling not in text, (var, spelling, text[:600])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tool", ["boom", "boom_isolated", "refuse", "give", "give_raw"])
def test_a_python_handlers_errors_and_values_never_show_an_environment_secret(
    place: tuple[Runtime, Path], tool: str, kind: str
) -> None:
    runtime, _root = place
    for var in ("DB_PASSWORD", "SERVICE_TOKEN", "MY_CREDENTIALS"):
        text = _call(runtime, tool, kind=kind, var=var)
        _assert_clean(text, var)
        assert "REDACTED" in text, (tool, kind, var, text[:400])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tool", ["printer", "printer_raw"])
def test_a_commands_output_never_shows_an_environment_secret(place: tuple[Runtime, Path], tool: str, kind: str) -> None:
    runtime, _root = place
    for var in ("DB_PASSWORD", "stripe_api_key", "AWS_SECRET_ACCESS_KEY", "APP_PRIVATE_KEY_PASS"):
        text = _call(runtime, tool, kind=kind, var=var)
        _assert_clean(text, var)
        assert "REDACTED" in text, (tool, kind, var, text[:400])


def test_short_values_and_other_names_are_left_alone(place: tuple[Runtime, Path]) -> None:
    runtime, _root = place
    text = _call(runtime, "short")
    assert "values: abc123 release-candidate-42" in text


def test_an_artifact_on_disk_and_its_pages_hold_no_environment_secret(place: tuple[Runtime, Path]) -> None:
    runtime, root = place
    (result,) = runtime.run_turn_sync([Call("f", "flood", {})], SESSION)
    artifact = result.metadata.get("artifact_id") or result.metadata.get("artifact")
    assert artifact, result.metadata
    secret = SECRETS["DB_PASSWORD"].encode()
    stored = [p for p in (root / "state").rglob("*") if p.is_file()]
    assert stored
    for path in stored:
        assert secret not in path.read_bytes(), path
    pages, offset = [], 0
    while offset is not None:
        (page,) = runtime.run_turn_sync([Call("p", "artifact_read", {"id": artifact, "offset": offset})], SESSION)
        pages.append(page.content)
        found = re.search(r"offset=(\d+)\)\]$", page.content)
        offset = int(found.group(1)) if found else None
    joined = "".join(pages)
    assert "more 400" in joined and "[REDACTED:env_secret]" in joined
    _assert_clean(joined, "DB_PASSWORD")


@pytest.mark.parametrize("kind", ["plain", "percent", "base64", "json-document", "hex", "dsn"])
def test_the_audit_log_on_disk_holds_no_environment_secret_the_model_sent(tmp_path: Path, kind: str) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "env_handlers.py").write_text(HANDLERS)
    (config / "tools.yaml").write_text(PACKS + "---".join(["", *DOCS]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    value = SECRETS["DB_PASSWORD"]
    namespace: dict[str, object] = {}
    exec(SPELL, namespace)  # noqa: S102 - the test's own spelling helper
    note = namespace["spell"](kind, value)  # type: ignore[operator]
    saved = os.environ.get("DB_PASSWORD")
    os.environ["DB_PASSWORD"] = value
    try:
        runtime = Runtime(
            [config], workspace_root=workspace, settings=Settings(state_dir=tmp_path / "state", hot_reload=False)
        )
        runtime.run_turn_sync([Call("a", "short", {"note": note})], SESSION)
        runtime.close_sync()
    finally:
        if saved is None:
            os.environ.pop("DB_PASSWORD", None)
        else:
            os.environ["DB_PASSWORD"] = saved
    stores = [p for p in (tmp_path / "state").rglob("audit*") if p.is_file()]
    assert stores
    for path in stores:
        data = path.read_bytes()
        for spelling in _spellings(value):
            assert spelling.encode() not in data, (kind, spelling, path)
    database = next(p for p in stores if p.name.endswith(".sqlite3"))
    with sqlite3.connect(database) as db:
        (args,) = db.execute("select args from calls order by rowid desc limit 1").fetchone()
    assert "REDACTED" in args, args


def test_the_profile_is_built_once_per_snapshot_and_finds_names_in_any_case() -> None:
    environ = {
        "db_password": "abcdefgh12",
        "Github_Token": "ghx_abcdefgh",
        "PWD": "/home/someone/project",
        "OLDPWD": "/tmp/elsewhere/x",
        "TOKENIZERS_PARALLELISM": "false",
        "MY_SECRET": "short",
        "SOME_CREDENTIAL_FILE": "  spaced-value-9  ",
    }
    assert secret_values(environ, DEFAULT_NAMES, 8) == ["abcdefgh12", "ghx_abcdefgh", "spaced-value-9"]
    assert secret_values(environ, (), 8) == []
    assert secret_values(environ, ("*dsn*",), 8) == []
    profile, digest = env_secret_profile(environ, DEFAULT_NAMES, 8)
    assert profile is not None and len(digest) == 16 and "abcdefgh" not in digest
    assert env_secret_profile({}, DEFAULT_NAMES, 8)[0] is None


def test_many_and_long_secrets_compile_into_patterns_under_the_length_limit() -> None:
    environ = {f"S{i}_TOKEN": os.urandom(24).hex() for i in range(60)}
    environ["BIG_PRIVATE_KEY"] = "-".join(os.urandom(16).hex() for _ in range(200))
    profile, _ = env_secret_profile(environ, DEFAULT_NAMES, 8)
    assert profile is not None and len(profile.patterns) > 1
    assert all(len(p.regex.pattern) <= 4000 for p in profile.patterns)
    from runtime.shaping.redact import Redactor

    redactor = Redactor((profile,))
    text = "x " + environ["S7_TOKEN"] + " y " + environ["BIG_PRIVATE_KEY"] + " z"
    redacted, counts = redactor.redact(text)
    assert environ["S7_TOKEN"] not in redacted
    assert all(piece not in redacted for piece in environ["BIG_PRIVATE_KEY"].split("-")[1:-1])
    assert counts


def test_the_names_are_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "env_handlers.py").write_text(HANDLERS)
    (config / "tools.yaml").write_text(PACKS + "---".join(["", *DOCS]))
    monkeypatch.setenv("BUILD_LABEL", "release-candidate-42")
    monkeypatch.setenv("SHORT_TOKEN", "abc123")
    settings = Settings(state_dir=tmp_path / "state", hot_reload=False, env_secret_names=("BUILD_*",))
    runtime = Runtime([config], workspace_root=tmp_path, settings=settings)
    try:
        text = _call(runtime, "short")
    finally:
        runtime.close_sync()
    assert "release-candidate-42" not in text and "[REDACTED:env_secret]" in text
