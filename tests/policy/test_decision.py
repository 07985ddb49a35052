"""Permission decisions from Policy documents (deny > ask > allow > mode default)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from runtime import Call, Runtime, Session, load_snapshot
from runtime.cli import main
from runtime.dryrun.policytests import run_policy_tests
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.decision import PolicyPermitter
from runtime.records import BoundCall, ValidatedCall

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TOOLS = """
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: {name}
  handler: builtin:tool_search
  read_only: {read_only}
  risk: {risk}
  input_schema: {{type: object, properties: {{path: {{type: string}}}}}}
"""


def make(tmp_path: Path, rules: str, *, forbidden: str = "[]") -> Path:
    docs = [
        TOOLS.format(name="reader", read_only="true", risk="low"),
        TOOLS.format(name="writer", read_only="false", risk="medium"),
        TOOLS.format(name="launcher", read_only="false", risk="critical"),
        f"apiVersion: toolrt/v1\nkind: Policy\nmetadata: {{name: p}}\nspec:\n  forbidden_modes: {forbidden}\n  "
        f"rules:\n{rules}",
    ]
    (tmp_path / "c.yaml").write_text("\n---\n".join(docs))
    return tmp_path


def decide(config: Path, name: str, args: dict, mode: str = "default"):
    snapshot = load_snapshot([config])
    bound = lookup(Call("1", name, args), snapshot)
    assert isinstance(bound, BoundCall)
    validated = validate(bound, Session(mode=mode), snapshot)
    assert isinstance(validated, ValidatedCall)
    return PolicyPermitter().decide(validated, Session(mode=mode), snapshot)


RULE = "    - {{name: {name}, effect: {effect}, tools: {tools}{extra}}}\n"


def rule(name: str, effect: str, tools: str = '["*"]', extra: str = "") -> str:
    return RULE.format(name=name, effect=effect, tools=tools, extra=extra)


def test_deny_wins_over_ask_and_allow(tmp_path: Path) -> None:
    config = make(
        tmp_path, rule("a", "allow") + rule("q", "ask") + rule("d", "deny", '["writer"]', ", reason: no writing")
    )
    decision = decide(config, "writer", {})
    assert (decision.effect, decision.rule, decision.reason) == ("deny", "p/d", "no writing")


def test_ask_wins_over_allow(tmp_path: Path) -> None:
    decision = decide(make(tmp_path, rule("a", "allow") + rule("q", "ask", '["reader"]')), "reader", {})
    assert (decision.effect, decision.rule) == ("ask", "p/q")


def test_rules_for_other_tools_do_not_apply_and_the_mode_decides(tmp_path: Path) -> None:
    config = make(tmp_path, rule("d", "deny", '["writer"]'))
    assert decide(config, "reader", {}).effect == "allow"
    assert decide(config, "writer", {"path": "x"}, mode="bypass").effect == "deny"


def test_a_failing_condition_counts_as_matching_for_deny_but_not_for_allow(tmp_path: Path) -> None:
    config = make(tmp_path, rule("d", "deny", '["reader"]', ", when: 'args.path.startsWith(\"/\")'"))
    decision = decide(config, "reader", {})  # args.path missing: the condition errors
    assert decision.effect == "deny"
    assert "could not be evaluated" in (decision.reason or "")
    allow_only = make(tmp_path, rule("a", "allow", '["writer"]', ", when: 'args.path.startsWith(\"/\")'"))
    assert decide(allow_only, "writer", {}).effect == "ask"  # the allow did not apply: mode default


def test_on_error_ignore_lets_a_failing_deny_condition_pass(tmp_path: Path) -> None:
    config = make(tmp_path, rule("d", "deny", '["reader"]', ", when: 'args.path == \"x\"', on_error: ignore"))
    assert decide(config, "reader", {}).effect == "allow"


def test_warn_rules_let_the_call_through_with_a_warning_and_audit_rules_change_nothing(tmp_path: Path) -> None:
    config = make(
        tmp_path,
        rule("w", "deny", '["reader"]', ", enforce: warn, reason: soon forbidden")
        + rule("au", "deny", '["reader"]', ", enforce: audit"),
    )
    decision = decide(config, "reader", {})
    assert decision.effect == "allow"
    assert decision.warnings == ("p/w would deny: soon forbidden",)


def test_critical_tools_ask_unless_an_allow_rule_names_them(tmp_path: Path) -> None:
    assert decide(make(tmp_path, rule("a", "allow")), "launcher", {}).effect == "ask"
    assert decide(make(tmp_path, rule("a", "allow", '["launcher"]')), "launcher", {}).effect == "allow"


def test_plan_mode_denies_writes_even_when_a_rule_allows_them(tmp_path: Path) -> None:
    decision = decide(make(tmp_path, rule("a", "allow", '["writer"]')), "writer", {}, mode="plan")
    assert decision.effect == "deny" and "plan mode" in (decision.reason or "")


def test_a_forbidden_mode_is_denied(tmp_path: Path) -> None:
    decision = decide(make(tmp_path, rule("a", "allow"), forbidden="[bypass]"), "reader", {}, mode="bypass")
    assert decision.effect == "deny" and "bypass" in (decision.reason or "")


@pytest.mark.parametrize("example", ["coding-agent", "customer-service"])
def test_the_shipped_policy_tests_hold(example: str) -> None:
    results = run_policy_tests(load_snapshot([EXAMPLES / example]))
    assert results
    assert [(r.name, r.detail) for r in results if not r.passed] == []


def test_toolrt_test_reports_a_failing_case_and_exits_1(tmp_path: Path) -> None:
    config = make(tmp_path, rule("q", "ask", '["reader"]'))
    (config / "t.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: PolicyTest\nmetadata: {name: suite}\nspec:\n  cases:\n"
        "    - {name: reading is allowed, tool: reader, expect: {decision: allow}}\n"
        "    - {name: reading asks, tool: reader, expect: {decision: ask, rule: q}}\n"
    )
    out = io.StringIO()
    assert main(["test", str(config)], stdout=out) == 1
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("FAIL  suite / reading is allowed: expected allow, got ask by rule `p/q`")
    assert lines[1] == "PASS  suite / reading asks: ask by rule `p/q`"
    assert lines[-1] == "2 case(s): 1 passed, 1 failed"


async def test_a_denied_call_says_which_rule_and_why(tmp_path: Path) -> None:
    runtime = Runtime(
        [make(tmp_path, rule("d", "deny", '["reader"]', ", reason: reading is off today"))], workspace_root=tmp_path
    )
    (result,) = await runtime.run_turn([Call("1", "reader", {})])
    assert result.status.value == "denied"
    assert "rule `p/d`" in result.content and "reading is off today" in result.content


def test_staged_allow_rules_never_allow(tmp_path: Path) -> None:
    warned = decide(make(tmp_path, rule("w", "allow", '["writer"]', ", enforce: warn")), "writer", {})
    assert warned.effect == "ask" and warned.warnings == ("p/w would allow: rule `w` of policy `p`",)
    assert decide(make(tmp_path, rule("au", "allow", '["writer"]', ", enforce: audit")), "writer", {}).effect == "ask"


def test_plan_mode_denies_writes_even_when_a_rule_asks_for_them(tmp_path: Path) -> None:
    decision = decide(make(tmp_path, rule("q", "ask", '["writer"]')), "writer", {}, mode="plan")
    assert decision.effect == "deny" and "plan mode" in (decision.reason or "")


def test_a_rule_naming_another_tool_does_not_name_a_critical_tool(tmp_path: Path) -> None:
    assert decide(make(tmp_path, rule("a", "allow", '["reader", "*"]')), "launcher", {}).effect == "ask"
    assert decide(make(tmp_path, rule("a", "allow", '["reader", "launcher"]')), "launcher", {}).effect == "allow"


def test_a_tools_conditions_are_evaluated_in_one_batch_that_falls_back_rule_by_rule_on_an_error(tmp_path: Path) -> None:
    rules = (
        # size() keeps each condition out of the forms read straight from the arguments
        rule("d", "deny", '["writer"]', ", when: 'args.path.startsWith(\"/etc\") && size(args.path) > 0'")
        + rule(
            "q",
            "ask",
            '["writer"]',
            ", when: 'args.path.endsWith(\".sh\") && size(args.path) > 0 // a trailing comment'",
        )
        + rule("a", "allow", '["writer"]', ", when: 'args.path.startsWith(\"/tmp\") && size(args.path) > 0'")
    )
    config = make(tmp_path, rules)
    snapshot = load_snapshot([config])
    if snapshot.cel_engine == "fast":
        assert snapshot.when_plans["writer"].positions == (0, 1, 2)
    assert decide(config, "writer", {"path": "/etc/passwd"}).rule == "p/d"
    assert decide(config, "writer", {"path": "/tmp/run.sh"}).rule == "p/q"
    assert decide(config, "writer", {"path": "/tmp/x"}).effect == "allow"
    missing = decide(config, "writer", {})  # every condition errors: deny fails closed, rule by rule
    assert (missing.effect, missing.rule) == ("deny", "p/d") and "could not be evaluated" in (missing.reason or "")


@pytest.mark.parametrize(
    "when", ['"path" in .args && .args.path.startsWith("/etc")', '0xe-args.size() < 14 && args.path.startsWith("/etc")']
)
def test_a_condition_reading_args_in_unusual_forms_is_never_folded_at_build(tmp_path: Path, when: str) -> None:
    config = make(tmp_path, rule("d", "deny", '["writer"]', f", when: '{when}'") + rule("a", "allow"))
    assert decide(config, "writer", {"path": "/etc/passwd"}).effect == "deny"


def test_the_shortcut_walk_decides_exactly_as_the_traced_full_walk(tmp_path: Path) -> None:
    from runtime.policy.decision import decide as decide_with

    rules = (
        rule("d-etc", "deny", '["*"]', ", when: 'has(args.path) && args.path.startsWith(\"/etc\")'")
        + rule("d-size", "deny", '["writer"]', ", when: 'size(args.path) > 40'")
        + rule("q-sh", "ask", '["*"]', ", when: 'args.path.endsWith(\".sh\")'")
        + rule("q-high", "ask", '["*"]', ", when: 'tool.risk == \"high\"'")
        + rule("a-tmp", "allow", '["writer", "launcher"]', ", when: 'args.path.startsWith(\"/tmp\")'")
        + rule("a-ro", "allow", '["*"]', ", when: 'tool.read_only'")
        + rule("a-launch", "allow", '["launcher"]', ", when: 'args.path == \"/tmp/go\"'")
    )
    snapshot = load_snapshot([make(tmp_path, rules)])
    assert all(snapshot.when_plans[name].quick is not None for name in ("reader", "writer", "launcher"))
    paths: list[object] = ["/etc/passwd", "/tmp/run.sh", "/tmp/x", "/tmp/go", "/home/a", "/" + "x" * 50, 7, None]
    # Values the closures cannot be sure of (the engine decides) or that make a condition err.
    paths += ["/etc/\x00x", "/tmp/\x00.sh", ("/etc",), ["/etc"], {"p": "/etc"}, 2**70, 1.5, True, b"/etc", ""]
    for name in ("reader", "writer", "launcher"):
        for mode in ("default", "plan", "bypass", "accept_edits"):
            for path in paths:
                args = {} if path is None else {"path": path}
                call = ValidatedCall(Call("1", name, args), snapshot.tools[name], args)
                quick = decide_with(call, Session(mode=mode), snapshot)
                full = decide_with(call, Session(mode=mode), snapshot, trace=[])
                assert (quick.effect, quick.rule, quick.reason) == (full.effect, full.rule, full.reason), (
                    name,
                    mode,
                    path,
                )


def test_a_policy_test_decided_by_the_mode_names_that_mode(tmp_path: Path) -> None:
    config = make(tmp_path, rule("nothing", "deny", '["reader"]', ", when: 'false'"))
    (tmp_path / "cases.yaml").write_text(
        "apiVersion: toolrt/v1\nkind: PolicyTest\nmetadata: {name: modes}\nspec:\n  cases:\n"
        "    - {name: bypass-allows, tool: writer, session: {mode: bypass}, expect: {decision: allow}}\n"
    )
    (result,) = run_policy_tests(load_snapshot([config]))
    assert result.passed and result.detail == "allow (the default of the `bypass` mode)"
