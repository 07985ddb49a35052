"""A private key printed in pieces by a command: every piece is redacted, whatever its
length. Real keys (openssl, ssh-keygen; a PGP block), real commands through a Runtime's
run_command, on every output path the command's text takes (the result, a spilled
artifact and its pages, a background job's output)."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from packs_support import DEFAULT_PACKS

from runtime import Runtime, Session
from runtime.records import Status
from runtime.settings import Settings
from runtime.shaping.key_material import GRAM, KeyIndex, KeyStream, key_bodies

BYPASS = Session(id="s", mode="bypass")
KINDS = ["rsa-pem", "ec-pem", "pkcs8", "encrypted-pem", "openssh-ed25519", "openssh-rsa", "pgp"]

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None or shutil.which("ssh-keygen") is None, reason="openssl and ssh-keygen make the keys"
)


def make_key(kind: str, path: Path) -> None:
    """A real private key of ``kind`` at ``path``."""
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True)  # noqa: E731
    if kind == "rsa-pem":
        run("openssl", "genrsa", "-traditional", "-out", str(path), "2048")
    elif kind == "ec-pem":
        run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(path))
    elif kind == "pkcs8":
        run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", str(path))
    elif kind == "encrypted-pem":
        run("openssl", "genrsa", "-traditional", "-aes256", "-passout", "pass:x", "-out", str(path), "1024")
    elif kind.startswith("openssh-"):
        run("ssh-keygen", "-q", "-t", kind.split("-")[1], "-N", "", "-f", str(path))
    else:  # an ASCII-armored PGP secret key block (random body, as a real one looks)
        body = base64.b64encode(os.urandom(700)).decode()
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        check = "=" + base64.b64encode(os.urandom(3)).decode()
        path.write_text(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join([*lines, check]) + "\n"
            "-----END PGP PRIVATE KEY BLOCK-----\n"
        )


def body_of(path: Path) -> list[str]:
    (body,) = key_bodies(path.read_bytes())
    return body


def leaks(output: str, body: list[str]) -> list[str]:
    """Pieces of the key ``body`` in ``output``: 12 characters in a row of it, or a whole
    body line (3+ characters) or a piece of one (6+) alone on a line."""
    joined = "".join(line.rstrip("=") for line in body)
    found = [joined[i : i + GRAM] for i in range(len(joined) - GRAM + 1) if joined[i : i + GRAM] in output]
    for raw in output.splitlines():
        piece = re.sub(r"^[\s\d:>+|-]*[\"']?|[\"']?,?\s*$", "", raw)
        if piece and ((piece in body and len(piece) >= 3) or (len(piece) >= 6 and piece.strip("=") in joined)):
            found.append(piece)
    return found


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("keys")
    made = {}
    for kind in KINDS:
        make_key(kind, folder / kind)
        made[kind] = folder / kind
    return made


def runtime_in(tmp_path: Path, keys: dict[str, Path]) -> Runtime:
    """A Runtime over a workspace holding a copy of every key (``keys/KIND.txt``)."""
    workspace = tmp_path / "ws"
    (workspace / "keys").mkdir(parents=True)
    for kind, path in keys.items():
        shutil.copy(path, workspace / "keys" / f"{kind}.txt")
    (workspace / "clean.txt").write_text(CLEAN)
    config = tmp_path / "config"
    config.mkdir()
    (config / "packs.yaml").write_text(DEFAULT_PACKS)
    settings = Settings(state_dir=tmp_path / "state", hot_reload=False, commands_outside_workspace="allow")
    made = Runtime([config], workspace_root=workspace, settings=settings)
    made.keys.refresh(force=True)
    return made


@pytest.fixture
def runtime(tmp_path: Path, keys: dict[str, Path]) -> Runtime:
    return runtime_in(tmp_path, keys)


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, Path]) -> Iterator[Runtime]:
    """One Runtime for the commands that only read the workspace's key files: they leave
    nothing a later command could see, and a Runtime built per case cost most of this
    module's time."""
    made = runtime_in(tmp_path_factory.mktemp("reader"), keys)
    yield made
    made.close_sync()


async def printed(runtime: Runtime, line: str) -> str:
    result = await runtime.call("run_command", {"command": line}, BYPASS)
    assert result.status is not Status.denied, result.content
    return result.content


# Commands that print a piece of a key file, {k} standing for the file.
PIECES = [
    "grep '=$' {k}",
    "grep -n '=$' {k}",
    "grep -H '=$' {k}",
    "tail -n 2 {k}",
    "tail -n 3 {k} | head -n 1",
    "tail -c 40 {k}",
    "head -c 120 {k}",
    "head -n 3 {k}",
    "cut -c1-8 {k}",
    "cut -c5-20 {k}",
    "cut -c30- {k}",
    "fold -w 10 {k}",
    "awk 'NR>1 {{print substr($0, 1, 16)}}' {k}",
    "awk '{{print NR\": \"$0}}' {k}",
    "tr -d '\\n' < {k}",
    "paste -sd, {k}",
    "cat -n {k}",
    "cat -A {k}",
    "rev {k} | rev",
    "python3 -c \"import json; print(json.dumps(open('{k}').read()))\"",
    "python3 -c \"print(open('{k}').read()[70:200])\"",
    "sed -n '$!N;$p' {k}",
    "sed 's/^/    /' {k} | grep -v BEGIN | grep -v END",
    "diff /dev/null {k}",
    "grep -v -- ----- {k} | sort",
    "while read l; do printf '%s' \"${{l:0:5}}\"; sleep 0.01; printf '%s\\n' \"${{l:5}}\"; done < {k}",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("line", PIECES)
async def test_a_piece_of_a_workspace_key_printed_by_a_command_is_redacted(
    reader: Runtime, keys: dict[str, Path], kind: str, line: str
) -> None:
    output = await printed(reader, line.format(k=f"keys/{kind}.txt"))
    assert leaks(output, body_of(keys[kind])) == [], output


@pytest.mark.parametrize("kind", KINDS)
async def test_every_line_of_a_key_printed_alone_is_redacted(reader: Runtime, keys: dict[str, Path], kind: str) -> None:
    total = len(keys[kind].read_text().splitlines())
    for number in range(1, total + 1):
        output = await printed(reader, f"sed -n {number}p keys/{kind}.txt")
        assert leaks(output, body_of(keys[kind])) == [], (number, output)


@pytest.mark.parametrize("kind", ["rsa-pem", "openssh-ed25519", "pgp"])
async def test_a_key_outside_the_workspace_named_by_its_absolute_path_is_known(
    runtime: Runtime, tmp_path: Path, kind: str
) -> None:
    outside = tmp_path / "elsewhere" / "id"
    outside.parent.mkdir()
    make_key(kind, outside)
    for line in (f"grep '=$' {outside}", f"tail -n 2 {outside}", f"cut -c1-9 {outside}"):
        output = await printed(runtime, line)
        assert leaks(output, body_of(outside)) == [], (line, output)
    await runtime.close()


@pytest.mark.parametrize(
    "line",
    [
        "ssh-keygen -q -t ed25519 -N '' -f gen.out && grep '=$' gen.out; tail -n 3 gen.out; cut -c1-7 gen.out",
        "openssl genrsa -traditional 1024 2>/dev/null > gen.out && grep '=$' gen.out; cut -c1-10 gen.out",
        "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out gen.out && tail -n 2 gen.out",
        "ssh-keygen -q -t rsa -b 1024 -N '' -f gen.out >/dev/null && sleep 0.3 && fold -w 9 gen.out",
    ],
)
async def test_a_key_made_by_the_command_itself_is_redacted_when_it_prints_pieces(runtime: Runtime, line: str) -> None:
    output = await printed(runtime, line)
    assert leaks(output, body_of(runtime.workspace_root / "gen.out")) == [], output
    await runtime.close()


async def test_a_spilled_output_and_its_artifact_pages_hold_no_piece_of_a_key(
    runtime: Runtime, keys: dict[str, Path]
) -> None:
    line = "seq 3000 | sed s/^/filler-line-/; cut -c1-11 keys/rsa-pem.txt; grep '=$' "
    line += " ".join(f"keys/{kind}.txt" for kind in KINDS)
    result = await runtime.call("run_command", {"command": line}, BYPASS)
    artifact = result.metadata.get("artifact_id") or (result.metadata.get("artifact") or {}).get("id")
    assert artifact, (result.metadata, result.content[-500:])
    text, offset = "", 0
    while True:
        page = await runtime.call("artifact_read", {"id": artifact, "offset": offset}, BYPASS)
        assert page.status is Status.ok, page.content
        text += page.content
        following = re.search(r"offset[=: ]+(\d+)", page.content.rsplit("\n", 3)[-1])
        if not following or int(following.group(1)) <= offset:
            break
        offset = int(following.group(1))
    for kind in KINDS:
        assert leaks(result.content + text, body_of(keys[kind])) == [], kind
    await runtime.close()


CLEAN = """\
def main():
    return 1
sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
token = os.environ["API_TOKEN"]
dGhpcyBpcyBub3QgYSBrZXk=
QUJD
Zm9vYmFy
aGVsbG8gd29ybGQ=
id: 12345
done
ok
AAAA
src/runtime/shaping/key_material.py:12: NAME = "private_key_material"
"""


async def test_clean_output_passes_unchanged_in_a_workspace_with_keys(runtime: Runtime) -> None:
    assert not runtime.keys.empty
    output = await printed(runtime, "cat clean.txt")
    assert CLEAN.strip() in output, output
    await runtime.close()


def test_clean_text_is_untouched_by_the_index(keys: dict[str, Path], tmp_path: Path) -> None:
    for kind, path in keys.items():
        shutil.copy(path, tmp_path / kind)
    index = KeyIndex(tmp_path)
    index.refresh(force=True)
    assert not index.empty
    assert index.redact(CLEAN) == (CLEAN, 0)
    words = Path(__file__).read_text()  # a source file full of words, paths and base64-ish runs
    assert index.redact(words)[1] == 0


def test_a_key_split_across_chunks_is_seen_whole(keys: dict[str, Path], tmp_path: Path) -> None:
    shutil.copy(keys["openssh-ed25519"], tmp_path / "k")
    index = KeyIndex(tmp_path)
    index.refresh(force=True)
    body = body_of(keys["openssh-ed25519"])
    text = "\n".join(line[:9] for line in body) + "\n" + body[-1] + "\n"
    for size in (1, 2, 3, 5, 7, 13):
        stream = KeyStream(index, None)
        out = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size)) + stream.finish()
        assert leaks(out, body) == [], (size, out)


def test_the_index_follows_changes_to_key_files(tmp_path: Path, keys: dict[str, Path]) -> None:
    index = KeyIndex(tmp_path)
    index.refresh(force=True)
    assert index.empty
    shutil.copy(keys["ec-pem"], tmp_path / "k")
    index.refresh(force=True)
    assert not index.empty
    (tmp_path / "k").unlink()
    index.refresh(force=True)
    assert index.empty
