"""The workspace tools' output paths are redacted by default: file_read windows inside a
key, grep hits of key body lines, file_edit's diff and its "closest lines" hint."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from pipeline_support import ConfigDir, call, make_env

from runtime.pipeline.env import TurnEnv
from runtime.pipeline.turn import run_turn
from runtime.records import Session

_RNG = random.Random(99)
BODY = "".join(_RNG.choice(string.ascii_letters + string.digits + "+/") for _ in range(1630))
LINES = [BODY[i : i + 64] for i in range(0, len(BODY), 64)]
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(LINES) + "\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def env(config: ConfigDir, workspace: Path) -> TurnEnv:
    (workspace / "deploy").mkdir()
    (workspace / "deploy" / "id_backup").write_text(KEY, encoding="utf-8")
    (workspace / "settings.py").write_text(
        'DEBUG = True\nDB_PASSWORD = "hunter2-prod"\nAPI_KEY = os.environ["API_KEY"]\n', encoding="utf-8"
    )
    config.include("workspace-tools", "output-default")
    return make_env(config.snapshot(), workspace, session=Session(mode="bypass"))


def leaked(text: str) -> list[str]:
    return [line for line in LINES if len(line) >= 16 and line[:16] in text]


@pytest.mark.parametrize(("offset", "limit"), [(1, 3), (2, 1), (5, 4), (10, 20), (25, 3), (26, 2), (27, 1), (1, 100)])
async def test_a_file_read_window_inside_a_key_shows_no_key_body(env: TurnEnv, offset: int, limit: int) -> None:
    (result,) = await run_turn([call("file_read", {"path": "deploy/id_backup", "offset": offset, "limit": limit})], env)
    assert not result.is_error, result.content
    assert not leaked(result.content)


@pytest.mark.parametrize("pattern", ["^[A-Za-z0-9+/=]{40,}", "[A-Z]", "."])
async def test_grep_hits_inside_a_key_show_no_key_body(env: TurnEnv, pattern: str) -> None:
    (result,) = await run_turn([call("grep", {"pattern": pattern, "path": "deploy"})], env)
    assert not leaked(result.content), result.content[:400]


async def test_file_edit_diff_is_redacted(env: TurnEnv) -> None:
    (result,) = await run_turn(
        [
            call(
                "file_edit",
                {
                    "path": "settings.py",
                    "old_string": "DEBUG = True",
                    "new_string": "DEBUG = False\nSECRET = 'n3w-s3cret-value'",
                },
            )
        ],
        env,
    )
    assert not result.is_error, result.content
    assert "n3w-s3cret-value" not in result.content
    assert 'API_KEY = os.environ["API_KEY"]' in (Path(env.workspace_root) / "settings.py").read_text()


async def test_file_edit_closest_lines_hint_is_redacted(env: TurnEnv) -> None:
    (result,) = await run_turn(
        [call("file_edit", {"path": "settings.py", "old_string": 'DB_PASSWORD = "hunter2-pro"', "new_string": "x"})],
        env,
    )
    assert result.is_error
    assert "hunter2-prod" not in result.content
