"""`man` runs programs it is told of: its pager (`-P`, `--pager`), a browser for
`-H`/`--html`, and whatever its config file (`-C`) names. Under a `man *` allow rule
those lines must ask (no approver here: denied), while reading pages stays allowed.
Through a real Runtime and real `man` runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from runtime import Call, Runtime, Session
from runtime.records import Status
from runtime.settings import Settings

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, output-default, builtin-tools]}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: manual-pages}
spec:
  rules:
    - {name: allow-man, effect: allow, tools: [run_command], commands: ['man *']}
"""

RUNS_A_PROGRAM = [
    "man -P 'touch pwned' ls",
    "man -Ptouch ls",
    "man --pager='touch pwned' ls",
    "man --pager 'touch pwned' ls",
    "man --pag=touch ls",
    "man -P cat ls",
    "man -s 1 -P 'touch pwned' ls",
    "man -Htouch ls",
    "man --html=touch ls",
    "man -C evil.conf ls",
    "man --config-file=evil.conf ls",
    "MANPAGER='touch pwned' man ls",
    "PAGER='touch pwned' man ls",
]
READS_PAGES = ["man ls", "man -s 1 ls", "man 1 ls", "man -k directory", "man -f ls", "man -sP ls"]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("man")
    (root / "cfg").mkdir()
    (root / "cfg" / "p.yaml").write_text(CONFIG)
    (root / "ws").mkdir()
    runtime = Runtime(
        [root / "cfg"], workspace_root=root / "ws", settings=Settings(state_dir=root / "state", hot_reload=False)
    )
    yield runtime
    runtime.close_sync()


@pytest.mark.parametrize("line", RUNS_A_PROGRAM)
def test_a_man_line_that_names_a_program_to_run_is_not_covered_by_man_star(runtime: Runtime, line: str) -> None:
    (result,) = runtime.run_turn_sync([_call(line)], Session(mode="default"))
    assert result.status is Status.denied, (line, result.content[:300])
    assert not (runtime.workspace_root / "pwned").exists()


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
@pytest.mark.parametrize("line", READS_PAGES)
def test_reading_manual_pages_stays_allowed(runtime: Runtime, line: str) -> None:
    (result,) = runtime.run_turn_sync([_call(line)], Session(mode="default"))
    assert result.status is not Status.denied, (line, result.content[:300])


def _call(line: str) -> Call:
    return Call("m", "run_command", {"command": line})
