"""Staged rollout you can watch: matches of rules under ``enforce: warn`` and
``enforce: audit`` are kept in the audit log (which rule, what it would have done,
in which mode) and counted in the metrics, while the decision stays what the
enforced rules make it; ``toolrt audit --staged`` shows them."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runtime import Call, Runtime, Session
from runtime.audit import AuditRecord, SqliteSink, query
from runtime.audit.verify import verify
from runtime.cli import main
from runtime.metrics import Metrics
from runtime.settings import Settings

TOOL = """
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: {name}
  handler: builtin:tool_search
  read_only: {read_only}
  input_schema: {{type: object, properties: {{path: {{type: string, maxLength: 200}}}}}}
"""

POLICY = """
apiVersion: toolrt/v1
kind: Policy
metadata: {name: rollout}
spec:
  rules:
    - name: shadow-secrets
      effect: deny
      tools: [reader]
      when: 'has(args.path) && args.path.startsWith("secret")'
      reason: secrets will be off limits
      enforce: warn
    - name: trial-ask-writes
      effect: ask
      tools: [writer]
      enforce: audit
    - name: trial-allow-readers
      effect: allow
      tools: ["read*"]
      when: 'has(args.path) && args.path.endsWith(".md")'
      enforce: audit
    - name: no-env
      effect: deny
      tools: [reader]
      when: 'has(args.path) && args.path.endsWith(".env")'
"""

SHADOW = ("rollout/shadow-secrets", "deny", "warn")
TRIAL_ASK = ("rollout/trial-ask-writes", "ask", "audit")
TRIAL_ALLOW = ("rollout/trial-allow-readers", "allow", "audit")


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config"
    config.mkdir()
    docs = [
        TOOL.format(name="reader", read_only="true"),
        TOOL.format(name="writer", read_only="false"),
        POLICY,
    ]
    (config / "c.yaml").write_text("\n---\n".join(docs))
    return config


def _text(staged: tuple[tuple[str, str, str], ...]) -> str | None:
    return " ".join(":".join(match) for match in staged) or None


# (call id, tool, args, session mode, status, decision, staged matches)
CASES: list[tuple[str, str, dict[str, Any], str, str, str, tuple[tuple[str, str, str], ...]]] = [
    ("plain", "reader", {"path": "notes.txt"}, "default", "ok", "allow", ()),
    ("shadowed", "reader", {"path": "secret/key.txt"}, "default", "ok", "allow", (SHADOW,)),
    ("both-staged", "reader", {"path": "secret/plan.md"}, "default", "ok", "allow", (SHADOW, TRIAL_ALLOW)),
    ("denied-and-staged", "reader", {"path": "secret/.env"}, "default", "denied", "deny", (SHADOW,)),
    ("denied-only", "reader", {"path": "a.env"}, "default", "denied", "deny", ()),
    ("no-path", "reader", {}, "default", "ok", "allow", ()),
    ("writer-bypass", "writer", {"path": "x"}, "bypass", "ok", "allow", (TRIAL_ASK,)),
    # No approver: the mode's ask becomes a denial, and the audit-only ask rule is still recorded.
    ("writer-asked", "writer", {"path": "x"}, "default", "denied", "ask", (TRIAL_ASK,)),
]


@pytest.fixture(params=["sqlite", "jsonl"])
def ran(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Runtime, Path, dict[str, Any]]:
    """A real Runtime with the chosen audit sink, after every case's call."""
    settings = Settings() if request.param == "sqlite" else Settings(audit_sink="jsonl")
    runtime = Runtime([_config(tmp_path)], workspace_root=tmp_path, settings=settings)
    results = {}
    for call_id, tool, args, mode, *_ in CASES:
        [result] = runtime.run_turn_sync([Call(call_id, tool, args)], Session(id=f"s-{call_id}", mode=mode))
        results[call_id] = result
    runtime.close_sync()
    store = Path(runtime.settings.audit_store)
    return runtime, store, results


def test_each_call_records_the_staged_rules_that_matched_and_keeps_its_decision(
    ran: tuple[Runtime, Path, dict[str, Any]],
) -> None:
    _runtime, store, results = ran
    rows = {row["call_id"]: row for row in query(store, limit=None)}
    assert set(rows) == {case[0] for case in CASES}
    for call_id, _tool, _args, _mode, status, decision, staged in CASES:
        row = rows[call_id]
        assert (row["status"], row["decision"].split(":")[0]) == (status, decision), call_id
        assert row["staged"] == _text(staged), call_id
        assert results[call_id].metadata.get("staged", ()) == staged, call_id


def test_the_staged_matches_are_counted_by_rule_effect_and_mode(ran: tuple[Runtime, Path, dict[str, Any]]) -> None:
    runtime, _store, _results = ran
    expected: dict[tuple[str, str, str], int] = {}
    for *_, staged in CASES:
        for match in staged:
            expected[match] = expected.get(match, 0) + 1
    snap = runtime.metrics.snapshot()
    counted = {
        (rule, effect, enforce): n
        for rule, by_effect in snap["staged"].items()
        for effect, by_enforce in by_effect.items()
        for enforce, n in by_enforce.items()
    }
    assert counted == expected == {SHADOW: 3, TRIAL_ASK: 2, TRIAL_ALLOW: 1}
    text = runtime.metrics.prometheus()
    assert "# TYPE toolrt_staged_matches_total counter" in text
    assert 'toolrt_staged_matches_total{rule="rollout/shadow-secrets",effect="deny",enforce="warn"} 3' in text
    assert 'toolrt_staged_matches_total{rule="rollout/trial-ask-writes",effect="ask",enforce="audit"} 2' in text


def test_the_chain_of_a_log_with_staged_matches_verifies(ran: tuple[Runtime, Path, dict[str, Any]]) -> None:
    _runtime, store, _results = ran
    report = verify(store)
    assert report.ok, report.to_text()


def test_toolrt_audit_staged_lists_only_the_calls_a_staged_rule_matched(
    ran: tuple[Runtime, Path, dict[str, Any]],
) -> None:
    _runtime, store, _results = ran
    out, err = io.StringIO(), io.StringIO()
    assert main(["audit", "--store", str(store), "--staged", "--format", "json", "--limit", "100"], out, err) == 0
    rows = json.loads(out.getvalue())
    expected = {case[0] for case in CASES if case[6]}
    assert {row["call_id"] for row in rows} == expected
    by_call = {row["call_id"]: row for row in rows}
    assert by_call["both-staged"]["staged"] == [
        {"rule": "rollout/shadow-secrets", "effect": "deny", "enforce": "warn"},
        {"rule": "rollout/trial-allow-readers", "effect": "allow", "enforce": "audit"},
    ]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("rollout/shadow-secrets", {"shadowed", "both-staged", "denied-and-staged"}),
        ("rollout/trial-ask-writes", {"writer-bypass", "writer-asked"}),
        ("rollout/trial-allow-readers", {"both-staged"}),
        ("rollout/shadow", set()),  # a prefix of a rule name is not that rule
        ("rollout/no-env", set()),  # an enforced rule is not a staged match
        ("rollout/shadow_secrets", set()),  # `_` is not a wildcard
        ("%", set()),
        ("rollout/%", set()),
    ],
)
def test_toolrt_audit_staged_with_a_rule_lists_the_calls_that_rule_matched(
    ran: tuple[Runtime, Path, dict[str, Any]], rule: str, expected: set[str]
) -> None:
    _runtime, store, _results = ran
    rows = query(store, staged=rule, limit=None)
    assert {row["call_id"] for row in rows} == expected


def test_the_table_says_what_each_staged_rule_would_have_done(ran: tuple[Runtime, Path, dict[str, Any]]) -> None:
    _runtime, store, _results = ran
    out, err = io.StringIO(), io.StringIO()
    assert main(["audit", "--store", str(store), "--staged", "rollout/trial-ask-writes"], out, err) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # the header and the two writer calls
    assert all("audit:rollout/trial-ask-writes would ask" in line for line in lines[1:])


def test_verify_refuses_the_staged_filter(ran: tuple[Runtime, Path, dict[str, Any]]) -> None:
    _runtime, store, _results = ran
    out, err = io.StringIO(), io.StringIO()
    assert main(["audit", "verify", "--store", str(store), "--staged"], out, err) == 2
    assert "--staged filters a query" in err.getvalue()


def _record(n: int, staged: str | None = None) -> AuditRecord:
    return AuditRecord(ts=1000.0 + n, session_id="s", call_id=f"c{n}", tool="reader", decision="allow", staged=staged)


def test_a_log_written_before_the_column_existed_still_verifies_and_takes_staged_records(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteSink(db)
    sink.write_batch([_record(1), _record(2)])
    sink.close()
    # The layout before the staged column: no such column, schema version 2.
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE calls DROP COLUMN staged")
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    assert verify(db).ok
    assert [row["staged"] for row in query(db)] == [None, None]
    assert query(db, staged="*") == []
    sink = SqliteSink(db)  # migrates: the column is added, the old rows keep their hashes
    sink.write_batch([_record(3, "rollout/shadow-secrets:deny:warn")])
    sink.close()
    report = verify(db)
    assert report.ok, report.to_text()
    assert [row["call_id"] for row in query(db, staged="rollout/shadow-secrets")] == ["c3"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    conn.close()


def test_changing_a_stored_staged_value_breaks_the_chain(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteSink(db)
    sink.write_batch([_record(1, "rollout/a:deny:warn"), _record(2), _record(3, "rollout/b:ask:audit")])
    sink.close()
    assert verify(db).ok
    for tampered in ("rollout/a:allow:warn", None):
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE calls SET staged = ? WHERE call_id = 'c1'", (tampered,))
        conn.close()
        assert not verify(db).ok
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE calls SET staged = 'rollout/x:deny:warn' WHERE call_id = 'c2'")
    conn.close()
    assert not verify(db).ok


def test_the_opentelemetry_counter_and_the_prometheus_collector_show_the_staged_matches() -> None:
    metrics = Metrics()
    metrics.record_call("reader", "ok", {}, "allow", None, False, None, staged=(SHADOW, TRIAL_ALLOW))
    metrics.record_call("reader", "denied", {}, "deny", "denied", False, None, staged=(SHADOW,))
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from runtime.telemetry.prometheus import register

    registry = prometheus_client.CollectorRegistry()
    register(metrics, registry)
    families = {f.name: f for f in text_string_to_metric_families(prometheus_client.generate_latest(registry).decode())}
    samples = {
        (s.labels["rule"], s.labels["effect"], s.labels["enforce"]): s.value
        for s in families["toolrt_staged_matches"].samples
        if s.name == "toolrt_staged_matches_total"
    }
    assert samples == {SHADOW: 2.0, TRIAL_ALLOW: 1.0}
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    metrics.bind_opentelemetry(MeterProvider(metric_readers=[reader]))
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        (p.attributes["rule"], p.attributes["effect"], p.attributes["enforce"]): p.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "toolrt.staged_matches"
        for p in metric.data.data_points
    }
    assert points == {SHADOW: 2, TRIAL_ALLOW: 1}
