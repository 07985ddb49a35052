"""The policy walk laid out at snapshot build (runtime.policy.quickwalk) decides exactly as
the full, traced walk over every rule, on many generated configs: tool globs of every
shape (wildcards, character classes, ``name@version``, names no tool has), versions,
staged rules (``enforce: warn|audit``), command patterns, conditions settled at build,
read straight from the arguments, translated into closures, left to the engine or
failing, reason expressions, critical tools, every mode; tools mounted from an MCP
server; and tools added by a reload, whose new snapshot lays out its own walks."""

from __future__ import annotations

import fnmatch
import json
import random
from pathlib import Path
from typing import Any

import pytest

from runtime import Call, Runtime, Session
from runtime.config.compile import build_snapshot
from runtime.config.models import McpServerSpec
from runtime.mcpclient.mount import ConfigFacts, ListedTool, mount_server
from runtime.policy.decision import decide
from runtime.records import Decision, ValidatedCall
from runtime.settings import Settings
from runtime.snapshot import Snapshot

NAMES = ["read_file", "read_dir", "write_file", "git_push", "deploy", "x", "fetch"]
GLOBS = [
    "*",
    "read_*",
    "*_file",
    "read_fil?",
    "[rw]*",
    "[!r]*",
    "x",
    "deploy",
    "git_push",
    "nothing_here",
    "*@2",
    "fetch@1",
    "fetch@*",
    "read_file@1",
    "?",
    "*e*",
    "srv__*",
    "srv__lookup",
]
CONDITIONS = [
    None,
    'args.path.startsWith("/etc")',  # read straight from the arguments
    'has(args.path) && args.path.endsWith(".sh")',  # closures
    "has(args.n) && args.n > 10",
    'has(args.tags) && args.tags.exists(t, t == "prod")',
    'has(args.tags) && args.tags.all(t, t.startsWith("a"))',
    "args.n > 3",  # an error when n is missing: deny and ask fail closed, allow does not match
    "tool.read_only",  # settled at build
    'tool.risk == "high"',
    "!tool.read_only && tool.name != 'x'",
    'tool.labels.team == "core"',  # settled at build, as an error (no such label): deny and ask fail closed
    "false",
    "true",
    'string(args.n) == "5"',  # left to the engine
    'has(args.path) && args.path.matches("^/(etc|root)/")',
    "session.mode == 'bypass'",
    "size(args.path) > 12 || call.index > 0",
]
PATHS: list[Any] = ["/etc/passwd", "/tmp/run.sh", "/tmp/x", "/root/.ssh", "a" * 20, "", None, 7, ["/etc"]]


def _tool(
    name: str, rng: random.Random, version: str | None = None, command_line: bool = False, read_only: bool | None = None
) -> str:
    metadata = f"{{name: {name}, version: '{version}'}}" if version else f"{{name: {name}}}"
    if read_only is None:
        read_only = rng.random() < 0.5 and not command_line
    risk = rng.choice(["low", "medium", "high", "critical"])
    extra = "  command_line: line\n" if command_line else ""
    line_prop = ", line: {type: string, maxLength: 200}" if command_line else ""
    return (
        f"apiVersion: toolrt/v1\nkind: Tool\nmetadata: {metadata}\nspec:\n  description: {name}\n"
        f"  handler: builtin:tool_search\n  read_only: {str(read_only).lower()}\n  risk: {risk}\n{extra}"
        f"  input_schema: {{type: object,{' required: [line],' if command_line else ''} properties: {{"
        "path: {type: string, maxLength: 100}, n: {type: integer}, "
        f"tags: {{type: array, items: {{type: string, maxLength: 10}}, maxItems: 5}}{line_prop}}}}}\n"
    )


def _rule(index: int, rng: random.Random, staged_ok: bool) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "name": f"r{index}",
        "effect": rng.choice(["deny", "ask", "allow", "allow"]),
        "tools": rng.sample(GLOBS, rng.randint(1, 3)),
    }
    when = rng.choice(CONDITIONS)
    if when is not None:
        rule["when"] = when
    roll = rng.random()
    if roll < 0.15:
        rule["reason"] = f"because {index}"
    elif roll < 0.25:
        rule["reason_expression"] = '"args: " + string(size(args))'
    if staged_ok and rng.random() < 0.12:
        rule["enforce"] = rng.choice(["warn", "audit"])
    if rng.random() < 0.1:
        rule["on_error"] = "ignore"
    if rng.random() < 0.1:
        rule["commands"] = [rng.choice(["rm *", "git push *", "ls"])]
    return rule


def generated_config(seed: int, folder: Path) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    docs = []
    for name in rng.sample(NAMES, rng.randint(3, len(NAMES))):
        if name == "fetch":  # two versions of one tool
            docs += [_tool(name, rng, "1"), _tool(name, rng, "2")]
        else:
            docs.append(_tool(name, rng, command_line=name == "git_push" and rng.random() < 0.5))
    staged_ok = rng.random() < 0.5  # half the configs have no staged rule at all: every plain tool walks quick
    rules = [_rule(i, rng, staged_ok) for i in range(rng.randint(0, 25))]
    policy = {"apiVersion": "toolrt/v1", "kind": "Policy", "metadata": {"name": "p"}, "spec": {"rules": rules}}
    docs.append(json.dumps(policy))
    (folder / "tools.yaml").write_text("---\n".join(docs))
    return folder


def tool_keys(snapshot: Snapshot) -> list[tuple[str, str | None]]:
    return [(name, version or None) for name, versions in snapshot.tool_versions.items() for version in versions]


def calls_for(snapshot: Snapshot, name: str, version: str | None) -> list[ValidatedCall]:
    tool = snapshot.tool(name, version)
    assert tool is not None
    calls = []
    for index, path in enumerate(PATHS):
        args: dict[str, Any] = {} if path is None else {"path": path}
        if index % 3 == 0:
            args["n"] = index * 4
        if index % 4 == 1:
            args["tags"] = ["a", "prod"] if index % 8 == 1 else ["ab"]
        if tool.spec.command_line:
            args["line"] = ["ls", "rm -rf x", "git push origin", "echo $(id)"][index % 4]
        calls.append(ValidatedCall(Call(str(index), name, args, index % 2), tool, args))
    return calls


def same(quick: Decision, full: Decision) -> bool:
    return (quick.effect, quick.rule, quick.reason, quick.warnings, quick.staged) == (
        full.effect,
        full.rule,
        full.reason,
        full.warnings,
        full.staged,
    )


def check_equivalent(snapshot: Snapshot) -> int:
    """Every tool, call and mode: the quick walk's decision is the full walk's. Returns how
    many decisions came through a walk laid out at build."""
    walked = 0
    for name, version in tool_keys(snapshot):
        tool = snapshot.tool(name, version)
        assert tool is not None
        plan = snapshot.when_plans.get(tool.key)
        for call in calls_for(snapshot, name, version):
            for mode in ("default", "plan", "bypass", "accept_edits"):
                session = Session(mode=mode)
                quick = decide(call, session, snapshot)
                full = decide(call, session, snapshot, trace=[])
                assert same(quick, full), (tool.key, call.args, mode, quick, full)
                walked += plan is not None and plan.walk is not None
    return walked


def check_index(snapshot: Snapshot) -> None:
    """Each tool's rules are those whose globs match its name or name@version, in order."""
    every = snapshot.policy_rules
    for name, version in tool_keys(snapshot):
        tool = snapshot.tool(name, version)
        assert tool is not None
        keys = [name] + ([f"{name}@{version}"] if version else [])
        expected = tuple(
            rule for rule in every if any(fnmatch.fnmatchcase(key, glob) for key in keys for glob in rule.tool_globs)
        )
        assert snapshot.rule_index.get(tool.key, ()) == expected, tool.key


@pytest.mark.parametrize("seed", range(40))
def test_the_walk_laid_out_at_build_decides_as_the_full_walk_on_generated_configs(tmp_path: Path, seed: int) -> None:
    result = build_snapshot([generated_config(seed, tmp_path / "config")], Settings())
    assert result.snapshot is not None, [p.message for p in result.errors]
    snapshot = result.snapshot
    check_index(snapshot)
    check_equivalent(snapshot)


def test_the_generated_configs_do_exercise_the_laid_out_walk(tmp_path: Path) -> None:
    walked = 0
    for seed in range(40):
        result = build_snapshot([generated_config(seed, tmp_path / f"c{seed}")], Settings())
        assert result.snapshot is not None
        walked += sum(
            1
            for plan in result.snapshot.when_plans.values()
            if plan.walk is not None and (plan.walk.deny or plan.walk.rest)
        )
    assert walked >= 40


@pytest.mark.parametrize("engine", ["fast", "portable"])
def test_both_engines_walk_as_the_full_walk(tmp_path: Path, engine: str) -> None:
    for seed in (3, 11):
        result = build_snapshot([generated_config(seed, tmp_path / f"c{seed}")], Settings(cel_engine=engine))
        assert result.snapshot is not None
        check_equivalent(result.snapshot)


def test_a_staged_rule_for_a_tool_leaves_that_tool_to_the_full_walk(tmp_path: Path) -> None:
    rules = [
        {"name": "w", "effect": "deny", "tools": ["read_*"], "when": "args.n > 1", "enforce": "warn"},
        {"name": "d", "effect": "deny", "tools": ["*"], "when": 'args.path.startsWith("/etc")'},
    ]
    snapshot = _snapshot(tmp_path, rules)
    staged = snapshot.when_plans.get("read_file")
    assert (staged is None or staged.walk is None) and snapshot.when_plans["write_file"].walk is not None
    call = ValidatedCall(Call("1", "read_file", {"path": "/etc/x", "n": 5}), snapshot.tools["read_file"], {})
    call.args = {"path": "/etc/x", "n": 5}
    decision = decide(call, Session(), snapshot)
    assert (decision.effect, decision.rule, decision.staged) == ("deny", "p/d", (("p/w", "deny", "warn"),))
    check_equivalent(snapshot)


def test_rules_that_can_never_apply_are_left_out_of_the_walk(tmp_path: Path) -> None:
    rules = [
        {"name": "never", "effect": "deny", "tools": ["*"], "when": "tool.name == 'nobody'"},
        {"name": "cmd", "effect": "deny", "tools": ["*"], "commands": ["rm *"]},
        {"name": "always", "effect": "ask", "tools": ["write_*"], "when": "!tool.read_only"},
        {"name": "ok", "effect": "allow", "tools": ["*"], "reason": "fine"},
    ]
    snapshot = _snapshot(tmp_path, rules)
    walk = snapshot.when_plans["write_file"].walk
    assert [step.rule.name for step in walk.deny] == []
    assert [step.rule.name for step in walk.rest] == ["always", "ok"]
    decision = decide(_call(snapshot, "write_file", {}), Session(), snapshot)
    assert (decision.effect, decision.rule) == ("ask", "p/always")
    check_equivalent(snapshot)


def test_mounted_mcp_tools_walk_as_the_full_walk(tmp_path: Path) -> None:
    rules = [
        {"name": "no-etc", "effect": "deny", "tools": ["srv__*"], "when": 'args.path.startsWith("/etc")'},
        {"name": "ask-big", "effect": "ask", "tools": ["srv__lookup"], "when": "has(args.n) && args.n > 10"},
        {"name": "allow-srv", "effect": "allow", "tools": ["srv__*"], "when": "tool.read_only"},
    ]
    config = tmp_path / "config"
    config.mkdir()
    server = {"apiVersion": "toolrt/v1", "kind": "McpServer", "metadata": {"name": "srv"}}
    server["spec"] = {"transport": "stdio", "command": ["server"], "trust": "trusted"}
    policy = {"apiVersion": "toolrt/v1", "kind": "Policy", "metadata": {"name": "p"}, "spec": {"rules": rules}}
    (config / "tools.yaml").write_text(json.dumps(server) + "\n---\n" + json.dumps(policy))
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}}
    listed = [
        ListedTool("lookup", "Looks up.", schema, read_only=True),
        ListedTool("store", "Stores.", schema, read_only=False),
    ]
    spec = McpServerSpec(transport="stdio", command=["server"], trust="trusted")

    def mount(documents: Any) -> Any:
        return mount_server("srv", spec, listed, ConfigFacts.of(documents))

    result = build_snapshot([config], Settings(), mount=mount)
    assert result.snapshot is not None, [p.message for p in result.errors]
    snapshot = result.snapshot
    assert {"srv__lookup", "srv__store"} <= set(snapshot.tools)
    assert snapshot.when_plans["srv__lookup"].walk is not None
    check_index(snapshot)
    assert check_equivalent(snapshot) > 0
    assert decide(_call(snapshot, "srv__lookup", {"path": "/etc/x"}), Session(), snapshot).rule == "p/no-etc"
    assert decide(_call(snapshot, "srv__lookup", {"path": "/a", "n": 11}), Session(), snapshot).rule == "p/ask-big"
    assert decide(_call(snapshot, "srv__lookup", {"path": "/a"}), Session(), snapshot).rule == "p/allow-srv"


def test_a_reload_that_adds_tools_and_rules_lays_out_new_walks(tmp_path: Path) -> None:
    config = tmp_path / "config"
    rules = [{"name": "d", "effect": "deny", "tools": ["*_file"], "when": 'args.path.startsWith("/etc")'}]
    _write(config, ["read_file"], rules)
    (tmp_path / "ws").mkdir()
    runtime = Runtime([config], workspace_root=tmp_path / "ws", settings=Settings(audit_sink="off"))
    try:
        before = runtime.snapshot
        assert "write_file" not in before.tools
        rules.append({"name": "q", "effect": "ask", "tools": ["write_*"], "when": "has(args.n) && args.n > 2"})
        _write(config, ["read_file", "write_file"], rules)
        assert runtime.reload().snapshot is not None
        after = runtime.snapshot
        assert after is not before and after.when_plans["write_file"].walk is not None
        assert [s.rule.name for s in after.when_plans["write_file"].walk.deny] == ["d"]
        assert [s.rule.name for s in after.when_plans["write_file"].walk.rest] == ["q"]
        assert decide(_call(after, "write_file", {"path": "/etc/x"}), Session(), after).rule == "p/d"
        assert decide(_call(after, "write_file", {"path": "/a", "n": 3}), Session(), after).rule == "p/q"
        check_index(after)
        check_equivalent(after)
    finally:
        runtime.close_sync()


def _write(config: Path, names: list[str], rules: list[dict[str, Any]]) -> None:
    config.mkdir(exist_ok=True)
    rng = random.Random(0)
    policy = {"apiVersion": "toolrt/v1", "kind": "Policy", "metadata": {"name": "p"}, "spec": {"rules": rules}}
    tools = [_tool(name, rng, read_only=name.startswith("read")) for name in names]
    (config / "tools.yaml").write_text("---\n".join([*tools, json.dumps(policy)]))


def _snapshot(tmp_path: Path, rules: list[dict[str, Any]]) -> Snapshot:
    config = tmp_path / "config"
    _write(config, ["read_file", "write_file"], rules)
    result = build_snapshot([config], Settings())
    assert result.snapshot is not None, [p.message for p in result.errors]
    return result.snapshot


def _call(snapshot: Snapshot, name: str, args: dict[str, Any]) -> ValidatedCall:
    return ValidatedCall(Call("1", name, args), snapshot.tools[name], args)
