"""Policy evaluation benchmarks, side by side in one process (read the ratios).

Per-call decision time for one validated call against:

- ``none``: no policy rules at all (the mode default decides): the baseline;
- ``200 other``: 200 rules with CEL conditions whose tool globs name other tools
  (the snapshot indexes rules by tool, so these must cost nothing);
- ``200 matching``: 200 rules with CEL conditions that all name the called tool
  (every condition is evaluated; none matches, so the walk is complete);
- ``commands``: a command-line tool whose line has 4 commands, judged against
  20 command-pattern rules (split + match per call).

Run: ``make bench`` (or ``python tests/benchmarks/bench_policy.py``).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runtime.config.compile import load_snapshot
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy import placecache
from runtime.policy.decision import PolicyPermitter
from runtime.policy.placed import NOWHERE, Where
from runtime.records import BoundCall, Call, Session, ValidatedCall
from runtime.settings import Settings

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: {name}
  handler: builtin:tool_search
  read_only: false
  {extra}
  input_schema:
    type: object
    required: [{required}]
    properties:
      path: {{type: string}}
      limit: {{type: integer}}
      line: {{type: string}}
"""


def config(rules: str, directory: Path) -> Path:
    docs = [
        TOOL.format(name="target", extra="", required="path"),
        TOOL.format(name="shell", extra="command_line: line", required="line"),
    ]
    docs += [TOOL.format(name=f"other{i}", extra="", required="path") for i in range(20)]
    docs.append(
        f"apiVersion: toolrt/v1\nkind: Policy\nmetadata: {{name: bench}}\nspec:\n  rules:\n{rules or '    []'}\n"
    )
    (directory / "c.yaml").write_text("---\n".join(docs))
    return directory


def cel_rules(count: int, tools: str) -> str:
    effects = ("deny", "ask", "allow")
    return "".join(
        f"    - {{name: r{i}, effect: {effects[i % 3]}, tools: {tools.format(i=i % 20)}, "
        f"when: 'args.path.startsWith(\"/secret{i}\") && args.limit > {i}'}}\n"
        for i in range(count)
    )


def command_rules(count: int) -> str:
    words = ("git", "npm", "ls", "cat", "grep", "make", "pytest", "rm", "curl", "python")
    return "".join(
        f"    - {{name: c{i}, effect: {'deny' if i % 2 else 'allow'}, tools: [shell], "
        f"commands: ['{words[i % 10]} {'push' if i % 3 else '*'} *']}}\n"
        for i in range(count)
    )


def validated(snapshot: Any, name: str, args: dict[str, Any]) -> ValidatedCall:
    bound = lookup(Call("1", name, args), snapshot)
    assert isinstance(bound, BoundCall)
    result = validate(bound, Session(), snapshot)
    assert isinstance(result, ValidatedCall)
    return result


def per_call_us(snapshot: Any, call: ValidatedCall, n: int, where: Where = NOWHERE) -> list[float]:
    permitter = PolicyPermitter(where)
    session = Session()
    samples = []
    for _ in range(10):
        started = time.perf_counter()
        for _ in range(n // 10):
            permitter.decide(call, session, snapshot)
        samples.append((time.perf_counter() - started) / (n // 10) * 1e6)
    return samples


def main() -> int:
    settings = Settings()
    cases: dict[str, tuple[Any, ValidatedCall]] = {}
    args = {"path": "/workspace/x", "limit": 5}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for label, rules, tool, call_args in (
            ("none", "", "target", args),
            ("200 other", cel_rules(200, "[other{i}]"), "target", args),
            ("200 matching", cel_rules(200, "[target]"), "target", args),
            ("commands", command_rules(20), "shell", {"line": "git status && npm test | grep ok; ls -la src"}),
        ):
            directory = root / label.replace(" ", "_")
            directory.mkdir()
            snapshot = load_snapshot([config(rules, directory)], settings)
            cases[label] = (snapshot, validated(snapshot, tool, call_args))
        engine = next(iter(cases.values()))[0].cel_engine
        results = {
            label: statistics.median(per_call_us(snapshot, call, 20_000 if label != "200 matching" else 2_000))
            for label, (snapshot, call) in cases.items()
        }
        # The same line as the Runtime judges it: placed in a workspace (paths resolved,
        # toolrt's own files protected), remembered while its paths resolve the same.
        workspace = root / "workspace"
        (workspace / "src").mkdir(parents=True)
        where = Where.of(workspace, [root / "commands", workspace / ".toolrt"])
        results["commands, ws"] = statistics.median(per_call_us(*cases["commands"], 20_000, where))
        results.update(shipped_packs(root, settings))
    base = results["none"]
    print(f"policy decision per call ({engine} CEL engine), median of 10 rounds:")
    for label, value in results.items():
        print(f"  {label:<40} {value:8.2f} us   {value / base:6.1f}x the no-rule baseline")
    print("a plain line, shipped packs, placed in a workspace (cached) vs the same line unplaced:")
    for line in PLAIN_LINES:
        placed, unplaced = results[f"packs ws: {line}"], results[f"packs: {line}"]
        print(f"  {line:<30} {placed:8.2f} us vs {unplaced:8.2f} us   {placed / unplaced:5.2f}x")
    return 0


PACKS = """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default]}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: shell}
spec:
  rules:
    - {name: no-rm, effect: deny, tools: [run_command], commands: ['rm *']}
    - {name: ro, effect: allow, tools: [run_command], commands: ['ls *', 'cat *', 'git status *', 'git diff *']}
"""
PLAIN_LINES = ("cat README.md", "git diff HEAD~1", "ls src && git status --short")


def shipped_packs(root: Path, settings: Settings) -> dict[str, float]:
    """A cached decision on plain lines with the shipped packs, placed in a workspace (the
    path every run_command call takes) and unplaced (no workspace: nothing resolved)."""
    directory = root / "packs"
    directory.mkdir()
    (directory / "c.yaml").write_text(PACKS)
    snapshot = load_snapshot([directory], settings)
    workspace = root / "packs-ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / ".git").mkdir()
    (workspace / "README.md").write_text("x\n")
    where = Where.of(workspace, [workspace / ".toolrt"], configs=[directory])
    # The placement cache trusts a folder only once its timestamps are older than the
    # racy window (a change within it may not show): wait for that, as a long session would.
    while time.time_ns() - os.lstat(workspace).st_ctime_ns < placecache.RACY_NS:
        time.sleep(0.05)
    found: dict[str, float] = {}
    for line in PLAIN_LINES:
        call = validated(snapshot, "run_command", {"command": line})
        for label, at in ((f"packs ws: {line}", where), (f"packs: {line}", NOWHERE)):
            found[label] = statistics.median(per_call_us(snapshot, call, 20_000, at))
    return found


if __name__ == "__main__":
    sys.exit(main())
