"""Output floods through a real Runtime and real commands: the disk, memory and the
result stay bounded whatever a command prints.

Before, a command's spilled output was written to its artifact for as long as the
command ran: one call printing at full speed for its whole time limit wrote gigabytes,
and the store's total budget was only enforced after the artifact was committed. An
artifact now stops at a quarter of the store's byte budget; the total is still counted
and the end still shown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.records import Call, Session, Status, ToolResult
from runtime.settings import Settings
from runtime.shaping.artifacts import ArtifactStore

STORE_BYTES = 256 * 1024  # the store's whole budget here; one artifact may hold a sixteenth in characters

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: Prints a lot.
  handler: {{command: {{argv: [{python}, -c, {program}]}}}}
  read_only: true
  timeout: {{total_s: 60}}
  output:
    {{max_chars: 2000, preview_chars: 500, head_chars: 300, tail_chars: 300, on_success: {mode}, on_error: {mode}}}
"""

FLOODS = {
    "one giant line": "import sys\nfor _ in range(40): sys.stdout.write('a' * 65536)\n",
    "many short lines": "import sys\nfor i in range(200000): print(i)\n",
    "a line per chunk": "import sys\nfor _ in range(300): sys.stdout.write('b' * 8191 + '\\n')\n",
    "multi-byte text": "import sys\nfor _ in range(200): sys.stdout.write('\\u00e9\\u4e2d\\U0001f600' * 3000)\n",
    "output then failure": "import sys\nsys.stdout.write('c' * 3000000)\nsys.exit(3)\n",
    "stderr flood": "import sys\nfor _ in range(40): sys.stderr.write('e' * 65536)\n",
    "carriage returns": "import sys\nfor n in range(300000): sys.stdout.write('\\r%d' % n)\n",
    "NUL bytes": "import sys\nsys.stdout.buffer.write(b'\\0' * 3000000)\n",
}
MODES = ["artifact", "head", "tail", "head_tail"]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    config = tmp_path / "config"
    config.mkdir()
    python = os.environ.get("PYTHON_FOR_TESTS") or __import__("sys").executable
    docs = [
        TOOL.format(name=f"flood_{i}_{mode}", python=python, program=json.dumps(program), mode=mode)
        for i, program in enumerate(FLOODS.values())
        for mode in MODES
    ]
    (config / "tools.yaml").write_text("---\n".join(docs))
    (config / "policy.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: all}\nspec: {rules: [{name: all, effect: allow, "
        "tools: ['*']}]}\n"
    )
    (tmp_path / "ws").mkdir()
    made = Runtime(
        [config],
        workspace_root=tmp_path / "ws",
        settings=Settings(state_dir=tmp_path / "state", audit_sink="off", hot_reload=False),
        artifacts=ArtifactStore(tmp_path / "artifacts", max_bytes=STORE_BYTES),
    )
    try:
        yield made
    finally:
        made.close_sync()


def _disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _call(runtime: Runtime, name: str) -> ToolResult:
    (result,) = runtime.run_turn_sync([Call("c1", name, {})], Session(id="s"))
    return result


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("flood", sorted(FLOODS))
def test_a_flood_leaves_a_bounded_artifact_and_a_bounded_result(runtime: Runtime, flood: str, mode: str) -> None:
    index = list(FLOODS).index(flood)
    result = _call(runtime, f"flood_{index}_{mode}")
    assert result.status in (Status.ok, Status.error), result.content
    assert len(result.content) < 10_000
    assert result.metadata.get("truncated") is True or "truncated" in result.content or "omitted" in result.content
    assert runtime.artifacts is not None
    assert _disk(runtime.artifacts.root) <= STORE_BYTES // 4 + 16_384  # one artifact, its metadata
    if flood != "carriage returns":  # every character counted, not only those saved
        assert "2,621,440" in result.content or "3,000,000" in result.content or "characters" in result.content


def test_many_floods_in_a_row_keep_the_store_within_its_budget(runtime: Runtime) -> None:
    for mode in MODES * 3:
        _call(runtime, f"flood_0_{mode}")
    assert runtime.artifacts is not None
    assert _disk(runtime.artifacts.root) <= STORE_BYTES + 16_384


def test_the_result_says_the_artifact_holds_only_the_start(runtime: Runtime) -> None:
    result = _call(runtime, "flood_0_artifact")
    assert "2,621,440" in result.content  # the whole output was counted
    assert "holds only its first 16,384 characters" in result.content, result.content
    artifact_id = result.metadata["artifact_id"]
    assert runtime.artifacts is not None
    page = runtime.artifacts.read(artifact_id, offset=16_000, limit=2000, session="s")
    assert page.total_chars == 16_384 and page.next_offset is None
