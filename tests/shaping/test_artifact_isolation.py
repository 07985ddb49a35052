"""Artifacts belong to the session whose call made them: another session, guessing or
knowing the id, gets the same answer as for an id that never existed; the owner is kept
on disk, so a second store on the same directory (another process) enforces it too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import Runtime, Session
from runtime.shaping.artifacts import ArtifactError, ArtifactStore

REPO = Path(__file__).resolve().parents[2]
OWNER = "alice"
MISSING = "art_0123456789abcdef01234567"  # well formed, never saved

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [builtin-tools]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: long_listing}
spec:
  description: A command whose output is too long to show (spilled while it streams).
  handler: {command: {argv: [sh, -c, "i=0; while [ $i -lt 400 ]; do echo listing-line-$i; i=$((i+1)); done"]}}
  read_only: true
  output: {max_chars: 200, preview_chars: 100, on_success: artifact}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: long_report}
spec:
  description: A python tool whose result is too long to show (saved when shaped).
  handler: python:isolation_handlers:report
  read_only: true
  output: {max_chars: 200, preview_chars: 100, on_success: artifact}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: loose_artifact_read}
spec:
  description: artifact_read without the pack's id pattern, so that any id reaches the built-in.
  handler: builtin:artifact_read
  read_only: true
  input_schema:
    type: object
    properties:
      id: {}
      offset: {type: integer}
      limit: {type: integer}
      pattern: {type: string}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: allow-all}
spec:
  rules: [{name: everything, effect: allow, tools: ["*"]}]
"""

HANDLERS = """
def report(args):
    return "".join(f"report-line-{i}\\n" for i in range(400))
"""


def unknown_message(artifact_id: str) -> str:
    """What a session reads for an id that never existed (the store's wording, id swapped)."""
    with pytest.raises(ArtifactError) as caught:
        ArtifactStore(Path("/nonexistent-artifact-dir")).read(MISSING, session=OWNER)
    return str(caught.value).replace(MISSING, artifact_id)


def neighbours(artifact_id: str) -> list[str]:
    """Ids one step away from ``artifact_id``: what a counter would have handed out next."""
    value = int(artifact_id[4:], 16)
    return [f"art_{(value + step) % (1 << 96):024x}" for step in (-2, -1, 1, 2, 1 << 64)]


# -- the store --------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


@pytest.mark.parametrize(
    ("owner", "reader"),
    [
        ("alice", "bob"),
        ("default", "alice"),
        ("alice", "default"),
        ("alice", "Alice"),
        ("alice", "alice "),
        ("alice", " alice"),
        ("alice", "alice\x00"),
        ("alice", ""),
        ("", "alice"),
        ("mcp-0123456789abcdef", "mcp-0123456789abcdee"),
        ("mcp-0123456789abcdef", "mcp-0123456789abcdef0"),
        ("séance", "seance"),
        ("a" * 10_000, "a" * 9_999),
    ],
    ids=[
        "another-session",
        "default-session-is-not-a-master-key",
        "named-session-cannot-read-default",
        "case-differs",
        "trailing-space",
        "leading-space",
        "trailing-nul",
        "empty-reader",
        "empty-owner",
        "neighbouring-session-id",
        "session-id-prefix",
        "unicode-lookalike",
        "long-session-ids",
    ],
)
def test_an_artifact_of_another_session_is_answered_as_unknown(store: ArtifactStore, owner: str, reader: str) -> None:
    ref = store.save("secret output\n" * 10, call_id="c", tool="t", session=owner)
    with pytest.raises(ArtifactError) as caught:
        store.read(ref.id, session=reader)
    assert str(caught.value) == unknown_message(ref.id)
    with pytest.raises(ArtifactError) as caught_info:
        store.info(ref.id, session=reader)
    assert str(caught_info.value) == unknown_message(ref.id)
    assert store.read(ref.id, session=owner).text == "secret output\n" * 10


@pytest.mark.parametrize(
    "request_kwargs",
    [
        {},
        {"offset": 5, "limit": 3},
        {"offset": 10**9},  # past the end: must not answer an empty page that gives away the size
        {"pattern": "secret"},
        {"pattern": "no such line"},
    ],
    ids=["first-page", "middle", "past-the-end", "matching-pattern", "pattern-without-match"],
)
def test_no_kind_of_read_tells_another_sessions_artifact_from_a_missing_one(
    store: ArtifactStore, request_kwargs: dict[str, object]
) -> None:
    ref = store.save("secret output\n" * 10, call_id="c", tool="t", session=OWNER)
    with pytest.raises(ArtifactError) as theirs:
        store.read(ref.id, session="mallory", **request_kwargs)  # type: ignore[arg-type]
    with pytest.raises(ArtifactError) as missing:
        store.read(MISSING, session="mallory", **request_kwargs)  # type: ignore[arg-type]
    assert str(theirs.value) == str(missing.value).replace(MISSING, ref.id)


def test_ids_are_not_neighbours_of_each_other(store: ArtifactStore) -> None:
    ids = [store.save("x", call_id=str(i), tool="t", session=OWNER).id for i in range(200)]
    values = sorted(int(i[4:], 16) for i in ids)
    # 96 random bits: two of 200 ids closer than 2**64 apart would be a one-in-billions event.
    assert min(b - a for a, b in zip(values, values[1:], strict=False)) > 1 << 64


def test_neighbouring_ids_of_a_real_artifact_are_unknown_to_every_session(store: ArtifactStore) -> None:
    ref = store.save("x", call_id="c", tool="t", session=OWNER)
    for guess in neighbours(ref.id):
        for session in (OWNER, "mallory", "default"):
            with pytest.raises(ArtifactError) as caught:
                store.read(guess, session=session)
            assert str(caught.value) == unknown_message(guess)


def test_the_owner_is_recorded_without_naming_the_session(store: ArtifactStore) -> None:
    session = "mcp-feedfacecafebeef"
    ref = store.save("x", call_id="c", tool="t", session=session)
    record = (store.root / f"{ref.id}.json").read_text(encoding="utf-8")
    assert session not in record and "feedface" not in record
    assert re.fullmatch(r"[0-9a-f]{32}:[0-9a-f]{64}", json.loads(record)["owner"])


def test_the_same_session_saving_twice_gets_different_owner_records(store: ArtifactStore) -> None:
    first = store.save("x", call_id="c", tool="t", session=OWNER)
    second = store.save("x", call_id="c", tool="t", session=OWNER)
    owners = {json.loads((store.root / f"{ref.id}.json").read_text())["owner"] for ref in (first, second)}
    assert len(owners) == 2  # salted: records cannot be compared to link two artifacts to one session


def test_a_second_store_on_the_same_directory_enforces_the_owner(store: ArtifactStore) -> None:
    ref = store.save("shared disk\n", call_id="c", tool="t", session=OWNER)
    other = ArtifactStore(store.root)
    assert other.read(ref.id, session=OWNER).text == "shared disk\n"
    with pytest.raises(ArtifactError, match="does not exist or has expired"):
        other.read(ref.id, session="bob")


def test_another_process_reading_the_directory_enforces_the_owner(store: ArtifactStore) -> None:
    ref = store.save("across processes\n", call_id="c", tool="t", session=OWNER)
    script = (
        "import sys\nfrom pathlib import Path\nfrom runtime.shaping.artifacts import ArtifactStore, ArtifactError\n"
        "store = ArtifactStore(Path(sys.argv[1]))\n"
        "for session in sys.argv[3:]:\n"
        "    try:\n        print(session, 'read', repr(store.read(sys.argv[2], session=session).text))\n"
        "    except ArtifactError as err:\n        print(session, 'refused', str(err).split(':')[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(store.root), ref.id, OWNER, "bob", "default"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == [
        f"{OWNER} read 'across processes\\n'",
        f"bob refused no artifact {ref.id}",
        f"default refused no artifact {ref.id}",
    ]


@pytest.mark.parametrize(
    "owner",
    [
        None,
        "",
        "alice",
        "nosalt",
        ":" + "0" * 64,
        "abcd:" + "0" * 63,
        "abcd:" + "g" * 64,
        "abcd:" + "é" * 64,  # not ASCII: the comparison must refuse it, not raise
        12345,
        ["abcd", "0" * 64],
        {"salt": "abcd"},
    ],
    ids=[
        "null",
        "empty",
        "plain-session-id",
        "no-colon",
        "no-salt",
        "short-digest",
        "not-hex",
        "not-ascii",
        "number",
        "list",
        "object",
    ],
)
def test_a_missing_or_damaged_owner_record_makes_the_artifact_unknown_to_everyone(
    store: ArtifactStore, owner: object
) -> None:
    ref = store.save("x", call_id="c", tool="t", session=OWNER)
    meta_path = store.root / f"{ref.id}.json"
    meta = json.loads(meta_path.read_text())
    meta["owner"] = owner
    meta_path.write_text(json.dumps(meta))
    for session in (OWNER, "default", "alice", ""):
        with pytest.raises(ArtifactError) as caught:
            store.read(ref.id, session=session)
        assert str(caught.value) == unknown_message(ref.id)


def test_an_artifact_written_before_owners_were_recorded_belongs_to_no_session(store: ArtifactStore) -> None:
    ref = store.save("old\n", call_id="c", tool="t")
    meta_path = store.root / f"{ref.id}.json"
    meta = json.loads(meta_path.read_text())
    del meta["owner"]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="does not exist or has expired"):
        store.read(ref.id)


def test_calls_without_a_session_share_the_default_session(store: ArtifactStore) -> None:
    ref = store.save("default\n", call_id="c", tool="t")
    assert store.read(ref.id, session="default").text == "default\n"
    with pytest.raises(ArtifactError):
        store.read(ref.id, session=OWNER)


def test_a_streamed_artifact_belongs_to_the_writers_session(store: ArtifactStore) -> None:
    writer = store.writer(call_id="c", tool="t", session=OWNER)
    writer.write("streamed ")
    writer.write("text")
    ref = writer.close()
    assert store.read(ref.id, session=OWNER).text == "streamed text"
    with pytest.raises(ArtifactError, match="does not exist or has expired"):
        store.read(ref.id, session="bob")


# -- through the pipeline ---------------------------------------------------------------


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG, encoding="utf-8")
    (config / "isolation_handlers.py").write_text(HANDLERS, encoding="utf-8")
    rt = Runtime([config], workspace_root=tmp_path, watch=False)
    yield rt
    rt.close_sync()


async def saved_by(runtime: Runtime, tool: str, session: Session) -> str:
    result = await runtime.call(tool, {}, session)
    assert result.metadata.get("truncated") is True, result.content
    return str(result.metadata["artifact_id"])


@pytest.mark.parametrize(
    "tool", ["long_listing", "long_report"], ids=["streamed-command-output", "shaped-python-result"]
)
@pytest.mark.parametrize("reader", ["artifact_read", "loose_artifact_read"], ids=["shipped-tool", "no-id-pattern"])
async def test_artifact_read_from_another_session_is_the_unknown_id_answer(
    runtime: Runtime, tool: str, reader: str
) -> None:
    artifact_id = await saved_by(runtime, tool, Session(id=OWNER))
    own = await runtime.call(reader, {"id": artifact_id, "offset": 0, "limit": 50}, Session(id=OWNER))
    assert not own.is_error and "-line-0" in own.content
    theirs = await runtime.call(reader, {"id": artifact_id}, Session(id="mallory"))
    missing = await runtime.call(reader, {"id": MISSING}, Session(id="mallory"))
    assert theirs.is_error and missing.is_error
    assert theirs.content == missing.content.replace(MISSING, artifact_id)
    assert "-line-" not in theirs.content


async def test_the_default_session_cannot_read_a_named_sessions_artifact(runtime: Runtime) -> None:
    artifact_id = await saved_by(runtime, "long_listing", Session(id=OWNER))
    result = await runtime.call("artifact_read", {"id": artifact_id})
    assert result.is_error and "does not exist or has expired" in result.content


async def test_guessing_neighbours_of_a_known_id_finds_nothing(runtime: Runtime) -> None:
    mine = await saved_by(runtime, "long_listing", Session(id="mallory"))
    theirs = await saved_by(runtime, "long_listing", Session(id=OWNER))
    for guess in [*neighbours(mine), *neighbours(theirs), theirs]:
        result = await runtime.call("artifact_read", {"id": guess}, Session(id="mallory"))
        assert result.is_error and "does not exist or has expired" in result.content, guess


@pytest.mark.parametrize(
    "artifact_id",
    [
        "../artifacts/art_0123456789abcdef01234567",
        "art_0123456789abcdef01234567/../../x",
        "art_0123456789abcdef01234567.json",
        "art_0123456789abcdef01234567\x00",
        "/etc/passwd",
        "..",
        "ART_0123456789ABCDEF01234567",
        "art_" + "0" * 10_000,
        "",
        None,
        12,
        ["art_0123456789abcdef01234567"],
        {"id": "art_0123456789abcdef01234567"},
    ],
    ids=[
        "dot-dot-prefix",
        "dot-dot-suffix",
        "with-suffix",
        "nul",
        "absolute",
        "dot-dot",
        "upper-case",
        "huge",
        "empty",
        "null",
        "number",
        "list",
        "object",
    ],
)
async def test_malformed_ids_are_refused_without_reading_anything(runtime: Runtime, artifact_id: object) -> None:
    real = await saved_by(runtime, "long_listing", Session(id=OWNER))
    result = await runtime.call("loose_artifact_read", {"id": artifact_id}, Session(id="mallory"))
    assert result.is_error
    assert "-line-" not in result.content and real not in result.content
    assert len(result.content) < 2_000


async def test_another_runtime_process_on_the_same_workspace_refuses_another_sessions_artifact(
    runtime: Runtime, tmp_path: Path
) -> None:
    theirs = await saved_by(runtime, "long_listing", Session(id=OWNER))
    shared = await saved_by(runtime, "long_listing", Session())  # the session `toolrt call` uses
    config = str(tmp_path / "config")

    def toolrt_call(artifact_id: str) -> dict[str, object]:
        argv = [
            sys.executable,
            "-m",
            "runtime.cli",
            "call",
            "--config",
            config,
            "--workspace",
            str(tmp_path),
            "--format",
            "json",
        ]
        done = subprocess.run(
            [*argv, "artifact_read", "--args", json.dumps({"id": artifact_id, "limit": 50})],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=dict(os.environ),
            timeout=120,
            check=False,
        )
        return dict(json.loads(done.stdout))

    assert "listing-line-0" in json.dumps(toolrt_call(shared))
    refused = json.dumps(toolrt_call(theirs))
    assert "does not exist or has expired" in refused and "listing-line" not in refused
