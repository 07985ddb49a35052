"""End to end: the output of a tool with `redaction: []` spills into an artifact in
clear; paging it with artifact_read (which redacts with the shipped `secrets` profile)
at any page size shows no secret and no piece of one, wherever the pages are cut."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pipeline_support import ConfigDir, call, make_env

from runtime.pipeline.env import TurnEnv
from runtime.pipeline.turn import run_turn
from runtime.records import Session, Status

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2" * 9
PASSWORD = "hunter2-correct-horse"
SECRETS = (AWS, GITHUB, PASSWORD)

HANDLERS = f"""
def noisy(args):
    rows = []
    for i in range(args.get("n", 400)):
        pad = "x" * (i % 37)
        rows.append(f"row {{i}} {{pad}} key {AWS} then token {GITHUB} and password={PASSWORD} done")
    return "\\n".join(rows)
"""


@pytest.fixture
def env(config: ConfigDir, workspace: Path) -> TurnEnv:
    config.handlers(HANDLERS)
    config.include("redaction-default", "builtin-tools")
    config.tool("noisy", config.py("noisy"), read_only=True, redaction=[], output={"max_chars": 500})
    return make_env(config.snapshot(), workspace, session=Session(mode="bypass"))


@pytest.mark.parametrize("limit", [1, 5, 13, 29, 64, 97, 250, 1000, 5000])
async def test_paging_a_clear_artifact_never_shows_a_secret_or_a_piece_of_one(env: TurnEnv, limit: int) -> None:
    (result,) = await run_turn([call("noisy", {"n": 60 if limit < 20 else 400})], env)
    artifact_id = result.metadata["artifact_id"]
    offset, pages = 0, []
    while len(pages) < 20_000:
        (page,) = await run_turn([call("artifact_read", {"id": artifact_id, "offset": offset, "limit": limit})], env)
        assert page.status is Status.ok, page.content
        pages.append(page.content)
        found = re.search(r"offset=(\d+)\)\]$", page.content)
        if found is None:
            break
        assert int(found.group(1)) > offset
        offset = int(found.group(1))
    for content in pages:
        for secret in SECRETS:
            for piece in (secret[:8], secret[-8:]):
                assert piece not in content, (limit, piece, content[:200])


@pytest.mark.parametrize("shift", range(0, 40, 3))
async def test_an_offset_inside_a_secret_shows_only_its_mark(env: TurnEnv, shift: int) -> None:
    (result,) = await run_turn([call("noisy", {"n": 50})], env)
    artifact_id = result.metadata["artifact_id"]
    (head,) = await run_turn([call("artifact_read", {"id": artifact_id, "offset": 0, "limit": 300})], env)
    assert AWS not in head.content
    for secret in SECRETS:
        # Where the secret starts in the artifact (its first row is fixed by the handler).
        row = f"row 0  key {AWS} then token {GITHUB} and password={PASSWORD} done"
        start = row.index(secret) + min(shift, len(secret) - 1)
        (page,) = await run_turn([call("artifact_read", {"id": artifact_id, "offset": start, "limit": 40})], env)
        assert secret[len(secret) // 2 :] not in page.content, (secret, shift, page.content[:120])
