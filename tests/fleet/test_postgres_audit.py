"""The audit log of a fleet in a real PostgreSQL: the same records, one hash chain per
workspace however many processes write, the query API and ``toolrt audit --dsn``, and
no record lost or stored twice when the server goes away and comes back."""

from __future__ import annotations

import io
import json
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fleet_servers import PostgresServer, free_port, wait_for
from fleet_support import write_config
from loguru import logger

from runtime import Runtime
from runtime.audit.pgread import chains, query_postgres, verify_postgres
from runtime.audit.postgres import TABLE, PostgresSink
from runtime.audit.record import COLUMNS, AuditRecord
from runtime.cli import main
from runtime.records import Call, Session, Status
from runtime.settings import Settings

_COLUMNS = ", ".join(f'"{name}"' for name in COLUMNS)


def _runtime(config: Path, workspace: Path, dsn: str, **settings: Any) -> Runtime:
    return Runtime([config], workspace_root=workspace, settings=Settings(audit_sink=dsn, **settings))


def _calls(runtime: Runtime, count: int, session: str = "s", tool: str = "ping") -> list[str]:
    ids = []
    for _ in range(count):
        call = Call(f"call_{uuid.uuid4().hex[:12]}", tool, {})
        runtime.run_turn_sync([call], Session(id=session))
        ids.append(call.id)
    return ids


def _stored_ids(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [row[0] for row in conn.execute(f"SELECT call_id FROM {TABLE} ORDER BY id")]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _sink(dsn: str, tmp_path: Path, chain: str = "w", **options: Any) -> PostgresSink:
    return PostgresSink(dsn, chain=chain, spool_dir=tmp_path / f"spool-{chain}", **options)


def _records(count: int, **fields: Any) -> list[AuditRecord]:
    return [
        AuditRecord(
            ts=time.time(),
            session_id=fields.get("session", "s"),
            call_id=f"c{i}-{uuid.uuid4().hex[:6]}",
            tool="t",
            status="ok",
            args=fields.get("args", {"i": i}),
        )
        for i in range(count)
    ]


def test_a_runtime_records_every_call_in_postgres_as_one_intact_chain(
    tmp_path: Path, workspace: Path, postgres_dsn: str
) -> None:
    runtime = _runtime(write_config(tmp_path / "c", {}), workspace, postgres_dsn)
    try:
        ids = _calls(runtime, 5, session="a") + _calls(runtime, 3, session="b", tool="boom")
        assert runtime.audit is not None and runtime.audit.flush(10)
    finally:
        runtime.close_sync()
    assert sorted(_stored_ids(postgres_dsn)) == sorted(ids)
    (report,) = verify_postgres(postgres_dsn)
    assert report.ok and report.chained == 8
    rows = query_postgres(postgres_dsn, session="b")
    assert len(rows) == 3 and {row["tool"] for row in rows} == {"boom"} and {row["status"] for row in rows} == {"error"}
    assert rows[0]["ts"] >= rows[-1]["ts"]  # newest first, like the SQLite query
    assert query_postgres(postgres_dsn, status=Status.ok, limit=2)[0]["session_id"] == "a"


def test_the_audit_command_reads_and_verifies_a_postgres_log(
    tmp_path: Path, workspace: Path, postgres_dsn: str
) -> None:
    sink = _sink(postgres_dsn, tmp_path)
    sink.write_batch(_records(4, session="cli"))
    sink.close()
    code, out, _ = _cli("audit", "--dsn", postgres_dsn, "--format", "json")
    assert code == 0 and len(json.loads(out)) == 4
    code, out, _ = _cli("audit", "--dsn", postgres_dsn, "--session", "nobody", "--format", "json")
    assert code == 0 and json.loads(out) == []
    code, out, _ = _cli("audit", "verify", "--dsn", postgres_dsn)
    assert code == 0 and "intact: 4 records chained" in out and "chain w" in out
    head = verify_postgres(postgres_dsn)[0].head
    assert head is not None
    code, out, err = _cli(
        "audit", "verify", "--dsn", postgres_dsn, "--chain", "w", "--anchor", f"{head.seq}:{head.hash}"
    )
    assert code == 0, err
    code, _, err = _cli("audit", "verify", "--dsn", postgres_dsn, "--chain", "elsewhere")
    assert code == 2 and "no chain 'elsewhere'" in err and "chains: w" in err


def test_a_log_written_before_staged_matches_were_recorded_is_read_and_verified(
    tmp_path: Path, postgres_dsn: str
) -> None:
    sink = _sink(postgres_dsn, tmp_path)
    sink.write_batch(_records(3, session="old"))
    sink.close()
    with psycopg.connect(postgres_dsn) as conn:  # the table as an older toolrt made it
        conn.execute(f'ALTER TABLE {TABLE} DROP COLUMN "staged"')
    rows = query_postgres(postgres_dsn)
    assert len(rows) == 3 and {row["staged"] for row in rows} == {None}
    assert query_postgres(postgres_dsn, staged="*") == []
    (report,) = verify_postgres(postgres_dsn)
    assert report.ok and report.chained == 3
    code, out, err = _cli("audit", "--dsn", postgres_dsn, "--format", "json")
    assert code == 0 and len(json.loads(out)) == 3, err
    code, out, err = _cli("audit", "--dsn", postgres_dsn, "--staged", "--format", "json")
    assert code == 0 and json.loads(out) == [], err
    code, out, _ = _cli("audit", "verify", "--dsn", postgres_dsn)
    assert code == 0 and "intact: 3 records chained" in out


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgresql://postgres@127.0.0.1:{free}/postgres", "cannot connect to the audit database"),
        ("mysql://x", "must be a postgresql:// URL"),
    ],
)
def test_the_audit_command_says_what_is_wrong_with_a_dsn(dsn: str, message: str) -> None:
    code, _, err = _cli("audit", "--dsn", dsn.format(free=free_port()))
    assert code == 2 and message in err
    assert "Traceback" not in err


def test_a_database_without_a_log_is_a_clear_usage_error(postgres_dsn: str) -> None:
    code, _, err = _cli("audit", "verify", "--dsn", postgres_dsn)
    assert code == 2 and "no toolrt audit log in this database" in err


def test_each_workspace_has_a_chain_of_its_own(tmp_path: Path, postgres_dsn: str) -> None:
    config = write_config(tmp_path / "c", {})
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        runtime = _runtime(config, root, postgres_dsn)
        _calls(runtime, 3)
        runtime.close_sync()
    names = chains(postgres_dsn)
    assert len(names) == 2 and all(name.startswith(("one-", "two-")) for name in names)
    reports = verify_postgres(postgres_dsn)
    assert [r.chained for r in reports] == [3, 3] and all(r.ok for r in reports)


@pytest.mark.parametrize(
    "value",
    [
        "nul \x00 inside",
        "lone \udc80 surrogate",
        "emoji \U0001f600 and \u2028 separators",
        "x" * 200_000,
        "",
        'quote " and \\ backslash',
        "tab\tnew\nline",
    ],
)
def test_odd_text_is_stored_and_still_verifies(tmp_path: Path, postgres_dsn: str, value: str) -> None:
    sink = _sink(postgres_dsn, tmp_path)
    record = AuditRecord(
        ts=time.time(), session_id=value, call_id="c", tool=value, status="ok", args={"v": value}, path=value
    )
    sink.write_batch([record])
    sink.close()
    (report,) = verify_postgres(postgres_dsn)
    assert report.ok and report.chained == 1


def _tamper(dsn: str, sql: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        (f"UPDATE {TABLE} SET args = '{{\"i\": 99}}' WHERE seq = 3", "altered"),
        (f"UPDATE {TABLE} SET status = 'ok ' WHERE seq = 5", "altered"),
        (f"UPDATE {TABLE} SET ts = ts + 1 WHERE seq = 1", "altered"),
        (f"DELETE FROM {TABLE} WHERE seq = 4", "deleted"),
        (f"DELETE FROM {TABLE} WHERE seq >= 5", "truncated"),
        (
            f"INSERT INTO {TABLE} (chain, ts, truncated, seq, prev_hash, hash, batch) VALUES ('w', 1, 0, 7, 'x', 'y', "
            "'z')",
            "altered",
        ),
        (
            f"INSERT INTO {TABLE} (chain, {_COLUMNS}, seq, prev_hash, hash, batch) SELECT chain, {_COLUMNS}, seq, "
            f"prev_hash, hash, batch FROM {TABLE} WHERE seq = 3",
            "inserted",
        ),
        ("UPDATE toolrt_audit_head SET seq = 9", "truncated"),
    ],
)
def test_verify_finds_what_was_done_to_the_log(tmp_path: Path, postgres_dsn: str, sql: str, kind: str) -> None:
    sink = _sink(postgres_dsn, tmp_path)
    sink.write_batch(_records(6))
    sink.close()
    _tamper(postgres_dsn, sql)
    (report,) = verify_postgres(postgres_dsn)
    assert not report.ok and report.problem is not None
    assert report.problem.kind == kind, report.to_text()
    code, out, _ = _cli("audit", "verify", "--dsn", postgres_dsn)
    assert code == 1 and "BROKEN" in out


def test_a_batch_sent_twice_is_stored_once(tmp_path: Path, postgres_dsn: str) -> None:
    sink = _sink(postgres_dsn, tmp_path)
    try:
        rows = [record.to_row() for record in _records(3)]
        assert sink._store("batch-1", rows) is True
        assert sink._store("batch-1", rows) is False  # a replay of a batch whose commit was not acknowledged
        assert len(_stored_ids(postgres_dsn)) == 3
        assert sink.stats()["duplicates_skipped"] == 3
    finally:
        sink.close()
    assert verify_postgres(postgres_dsn)[0].ok


def test_postgres_killed_and_restarted_mid_run_loses_and_duplicates_nothing(
    tmp_path: Path, workspace: Path, fresh_postgres: PostgresServer
) -> None:
    dsn = fresh_postgres.create_database("audit")
    runtime = _runtime(write_config(tmp_path / "c", {}), workspace, dsn)
    try:
        before = _calls(runtime, 5)
        assert runtime.audit is not None and runtime.audit.flush(10)
        fresh_postgres.kill()
        during = _calls(runtime, 7)
        wait_for(
            lambda: runtime.metrics.snapshot()["sources"].get("audit", {}).get("spooled", 0) >= 7,
            30,
            "the records made during the outage to be spooled",
        )
        gauges = runtime.metrics.snapshot()["sources"]["audit"]
        assert gauges["postgres_up"] == 0 and gauges["spool_lost"] == 0
        fresh_postgres.start()
        after = _calls(runtime, 4)
        assert runtime.audit.flush(30)
        assert runtime.metrics.snapshot()["sources"]["audit"]["postgres_up"] == 1
    finally:
        runtime.close_sync()
    stored = _stored_ids(dsn)
    assert sorted(stored) == sorted(before + during + after)  # each exactly once
    assert stored.index(during[-1]) < stored.index(after[0])  # replayed in order, before what came later
    (report,) = verify_postgres(dsn)
    assert report.ok and report.chained == 16


def test_a_runtime_started_while_postgres_is_down_spools_then_delivers(
    tmp_path: Path, workspace: Path, fresh_postgres: PostgresServer
) -> None:
    dsn = fresh_postgres.create_database("audit")
    fresh_postgres.kill()
    runtime = _runtime(write_config(tmp_path / "c", {}), workspace, dsn)
    try:
        ids = _calls(runtime, 3)
        assert (
            runtime.run_turn_sync([Call("x", "ping", {})], Session(id="s"))[0].status is Status.ok
        )  # calls never wait for the log
        ids.append("x")
        wait_for(
            lambda: runtime.metrics.snapshot()["sources"]["audit"]["spooled"] >= 4, 30, "the records to be spooled"
        )
        fresh_postgres.start()
        wait_for(
            lambda: len(_stored_ids(dsn)) == 4 if _reachable(dsn) else False,
            30,
            "the spool to be replayed by the retry thread",
        )
    finally:
        runtime.close_sync()
    assert sorted(_stored_ids(dsn)) == sorted(ids)


def _reachable(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            return conn.execute(f"SELECT to_regclass('{TABLE}')").fetchone()[0] is not None  # type: ignore[index]
    except psycopg.Error:
        return False


def test_a_spool_left_by_a_closed_sink_is_replayed_by_the_next_one(
    tmp_path: Path, fresh_postgres: PostgresServer
) -> None:
    dsn = fresh_postgres.create_database("audit")
    fresh_postgres.kill()
    first = _sink(dsn, tmp_path, connect_timeout_s=1)
    first.write_batch(_records(5))
    first.close()  # still down: the records stay on disk
    assert first.spool.pending() == 1
    fresh_postgres.start()
    second = _sink(dsn, tmp_path)
    try:
        assert second.sync(30)
    finally:
        second.close()
    assert len(_stored_ids(dsn)) == 5
    assert verify_postgres(dsn)[0].ok


def test_records_that_do_not_fit_the_spool_are_counted_and_logged_as_lost(tmp_path: Path) -> None:
    dsn = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"  # nothing listens there
    messages: list[str] = []
    logger.enable("runtime")  # toolrt's records are off until an app turns them on
    handler = logger.add(lambda message: messages.append(str(message)), level="WARNING")
    sink = _sink(dsn, tmp_path, spool_max_bytes=2000, connect_timeout_s=1)
    try:
        sink.write_batch(_records(2))  # fits
        sink.write_batch(_records(50, args={"pad": "y" * 200}))  # does not
        stats = sink.stats()
        assert stats["spooled"] == 2 and stats["spool_lost"] == 50 and stats["postgres_up"] == 0
    finally:
        sink.close()
        logger.remove(handler)
        logger.disable("runtime")
    assert any("cannot be reached" in m for m in messages)
    assert any("50 record(s) lost" in m and "audit_spool_max_bytes" in m for m in messages)


def test_a_damaged_spool_file_is_set_aside_not_replayed(tmp_path: Path, postgres_dsn: str) -> None:
    sink = _sink(postgres_dsn, tmp_path)
    try:
        (sink.spool.folder / "00000000000000000001-0000001-000000001-bad.json").write_text("{not json")
        sink.write_batch(_records(2))
        assert sink.sync(10)
        assert list(sink.spool.folder.glob("*.damaged"))
    finally:
        sink.close()
    assert len(_stored_ids(postgres_dsn)) == 2


@pytest.mark.parametrize("sink", ["postgresql:/x", "mysql://db", "PostgreSQL", "sqlite3"])
def test_settings_reject_an_audit_sink_that_is_none_of_the_known_ones(sink: str) -> None:
    with pytest.raises(ValueError, match="audit_sink"):
        Settings(audit_sink=sink)
