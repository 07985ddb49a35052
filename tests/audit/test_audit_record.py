"""AuditRecord: built from a ToolResult's metadata; its arguments always encode, capped."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from enum import Enum
from pathlib import PurePosixPath
from types import MappingProxyType

import pytest

from runtime.audit import ARGS_MAX_BYTES, COLUMNS, AuditRecord, encode_args
from runtime.records import Session, Stage, Status, ToolResult


def _result(**metadata: object) -> ToolResult:
    return ToolResult("call-1", "file_write", "done", Status.ok, None, None, None, MappingProxyType(metadata))


def test_from_result_reads_every_metadata_key_the_pipeline_sets() -> None:
    result = _result(
        snapshot="snap-7",
        status="ok",
        timings_ms={"total_ms": 0.042, "execute_ms": 0.01},
        decision="allow",
        rule="writes-in-workspace",
        truncated=True,
        artifact_id="art-9",
        tool_version="2",
        redactions={"secret": 1},
    )
    record = AuditRecord.from_result(
        result, session=Session(id="sess", user="ana"), request_id="req", trace_id="trace", args={"path": "a.txt"}
    ).resolve()
    assert (record.session_id, record.user, record.request_id, record.trace_id) == ("sess", "ana", "req", "trace")
    assert (record.call_id, record.tool, record.tool_version, record.snapshot) == (
        "call-1",
        "file_write",
        "2",
        "snap-7",
    )
    assert (record.decision, record.rule, record.status, record.code) == ("allow", "writes-in-workspace", "ok", None)
    assert record.duration_ms == 0.042
    assert record.truncated is True and record.artifact == "art-9"
    assert record.args == {"path": "a.txt"}
    assert record.ts > 1_600_000_000


def test_from_result_tolerates_an_early_error_result_with_no_metadata() -> None:
    result = ToolResult("call-2", "nope", "unknown tool", Status.invalid, "unknown_tool", Stage.lookup)
    record = AuditRecord.from_result(result, session="s", request_id=None, trace_id=None, args=None).resolve()
    assert record.status == "invalid" and record.code == "unknown_tool"
    assert record.decision is None and record.rule is None and record.duration_ms is None
    assert record.truncated is False and record.artifact is None and record.tool_version is None
    assert record.user is None and record.session_id == "s"


def test_from_result_leaves_the_metadata_for_the_writer_thread_to_read() -> None:
    result = _result(
        decision="deny", rule="no-writes", status="denied", timings_ms={"total_ms": 2.0}, snapshot="snap-1"
    )
    record = AuditRecord.from_result(result, session="s", request_id="r", trace_id="t", args={"a": 1})
    # Only references were taken on the caller's thread ...
    assert record.metadata is result.metadata and record.decision is None and record.status is Status.ok
    assert (record.call_id, record.tool, record.session_id) == ("call-1", "file_write", "s")
    # ... and writing the record reads the rest.
    row = dict(zip(COLUMNS, record.to_row(), strict=True))
    assert (row["decision"], row["rule"], row["status"], row["duration_ms"], row["snapshot"]) == (
        "deny",
        "no-writes",
        "denied",
        2.0,
        "snap-1",
    )
    assert record.metadata is None and record.decision == "deny" and record.status == "denied"
    assert record.resolve() is record  # idempotent


def test_extra_sets_the_write_path_and_hashes_and_wins_over_the_metadata() -> None:
    result = _result(path="/from/metadata", rule="meta-rule", hash_after="sha256:meta")
    record = AuditRecord.from_result(
        result,
        session=None,
        request_id=None,
        trace_id=None,
        args={},
        extra={"path": "/ws/a.txt", "hash_before": "sha256:aa", "hash_after": "sha256:bb"},
    )
    record.resolve()
    assert (record.path, record.hash_before, record.hash_after, record.rule) == (
        "/ws/a.txt",
        "sha256:aa",
        "sha256:bb",
        "meta-rule",
    )


def test_metadata_the_pipeline_may_set_for_writes_is_read_too() -> None:
    record = AuditRecord.from_result(
        _result(path="/ws/b.txt", hash_before="h0", hash_after="h1", artifact="art-2"),
        session=None,
        request_id=None,
        trace_id=None,
        args={},
    ).resolve()
    assert (record.path, record.hash_before, record.hash_after, record.artifact) == ("/ws/b.txt", "h0", "h1", "art-2")


def test_a_queued_record_keeps_the_metadata_but_not_the_output() -> None:
    result = ToolResult("call-3", "t", "x" * 100_000, Status.ok, None, None, None, MappingProxyType({"status": "ok"}))
    record = AuditRecord.from_result(result, session=None, request_id=None, trace_id=None, args=None)
    assert all(
        value is not result and value is not result.content
        for value in (getattr(record, name) for name in record.__slots__)
    )


def test_a_status_set_through_extra_wins_over_the_metadata() -> None:
    record = AuditRecord.from_result(
        _result(status="ok"), session=None, request_id=None, trace_id=None, args=None, extra={"status": "unknown"}
    ).resolve()
    assert record.status == "unknown"


def test_metadata_that_breaks_resolving_does_not_break_encoding() -> None:
    class Odd(dict):  # type: ignore[type-arg]
        def get(self, *args: object) -> object:
            raise RuntimeError("odd metadata")

    result = ToolResult("call-9", "t", "x", Status.ok, None, None, None, Odd())
    row = dict(
        zip(
            COLUMNS,
            AuditRecord.from_result(result, session="s", request_id=None, trace_id=None, args=None).to_row(),
            strict=True,
        )
    )
    assert (row["call_id"], row["tool"], row["session_id"], row["decision"]) == ("call-9", "t", "s", None)


def test_extra_with_an_unknown_field_name_is_refused_rather_than_lost() -> None:
    with pytest.raises(TypeError, match="hash_befor"):
        AuditRecord.from_result(
            _result(), session=None, request_id=None, trace_id=None, args={}, extra={"hash_befor": "x"}
        )
    with pytest.raises(TypeError, match="metadata"):
        AuditRecord.from_result(
            _result(), session=None, request_id=None, trace_id=None, args={}, extra={"metadata": None}
        )


def test_row_coerces_odd_field_values_to_storable_ones() -> None:
    record = AuditRecord(
        ts=1.0, status=Status.denied, hash_before=b"\x01\xff", artifact={"id": "art-1"}, duration_ms=math.nan
    )  # type: ignore[arg-type]
    row = {
        key: value
        for key, value in zip(COLUMNS, record.to_row(), strict=True)
        if key in ("ts", "status", "hash_before", "artifact", "duration_ms")
    }
    assert row == {"ts": 1.0, "status": "denied", "hash_before": "01ff", "artifact": "art-1", "duration_ms": None}


def test_to_json_is_one_object_with_args_nested() -> None:
    record = AuditRecord(ts=5.0, tool="t", args={"q": "x\ny"}, truncated=True)
    line = record.to_json()
    assert "\n" not in line
    data = json.loads(line)
    assert data["args"] == {"q": "x\ny"} and data["truncated"] is True and data["tool"] == "t"
    assert json.loads(AuditRecord(ts=5.0).to_json())["args"] is None


class Color(Enum):
    red = "red"


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_args_with_odd_types_encode_without_raising() -> None:
    args = {
        "text": b"plain bytes",
        "binary": b"\xff\x00\xfe",
        "tags": {"b", "a"},
        "mixed": frozenset({1, "x"}),
        "when": dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC),
        "day": dt.date(2024, 5, 1),
        "wait": dt.timedelta(seconds=90),
        "color": Color.red,
        "path": PurePosixPath("/ws/a.txt"),
        "amount": Decimal("1.50"),
        "nan": math.nan,
        "obj": Opaque(),
        "broken": BrokenRepr(),
        7: "int key",
        ("t", 1): "tuple key",
    }
    data = json.loads(encode_args(args) or "")
    assert data["text"] == "plain bytes"
    assert data["binary"] == {"$b64": "/wD+", "bytes": 3}
    assert data["tags"] == ["a", "b"] and sorted(map(str, data["mixed"])) == ["1", "x"]
    assert data["when"] == "2024-05-01T12:30:00+00:00" and data["day"] == "2024-05-01" and data["wait"] == 90.0
    assert data["color"] == "red" and data["path"] == "/ws/a.txt" and data["amount"] == "1.50"
    assert data["nan"] == "nan" and data["obj"] == "<Opaque Opaque()>" and data["broken"] == "<BrokenRepr>"
    assert data["7"] == "int key" and "tuple key" in data.values()


def test_deep_and_cyclic_args_are_cut_at_a_depth_marker() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):  # deeper than json.dumps could recurse
        node["child"] = {}
        node = node["child"]  # type: ignore[assignment]
    cyclic: list[object] = []
    cyclic.append(cyclic)
    text = encode_args({"deep": deep, "cyclic": cyclic})
    assert text is not None and "nested deeper than" in text
    json.loads(text)


def test_a_huge_value_is_capped_and_the_result_stays_valid_json() -> None:
    one_big = encode_args({"content": "x" * 5_000_000})
    assert one_big is not None and len(one_big) < 20_000
    assert "more chars" in json.loads(one_big)["content"]
    many = encode_args({f"k{i}": "y" * 8000 for i in range(200)})
    assert many is not None and len(many.encode()) <= ARGS_MAX_BYTES
    capped = json.loads(many)
    assert capped["$truncated"] is True and capped["original_bytes"] > ARGS_MAX_BYTES
    long_list = json.loads(encode_args({"items": list(range(5000))}) or "")
    assert len(long_list["items"]) == 1001 and "more item(s)" in long_list["items"][-1]


def test_non_finite_times_never_reach_the_row_or_the_json_line() -> None:
    record = AuditRecord(ts=math.inf, duration_ms=math.nan)
    row = dict(zip(COLUMNS, record.to_row(), strict=True))
    assert row["ts"] == 0.0 and row["duration_ms"] is None
    data = json.loads(AuditRecord(ts=1.0, duration_ms=-math.inf).to_json())
    assert data["duration_ms"] is None


def test_anchored_patterns_are_applied_to_each_argument_not_to_the_json_text() -> None:
    from runtime.audit.argsjson import redacted as _redacted
    from runtime.regex import compile_re2
    from runtime.shaping.redact import Redactor
    from runtime.snapshot import CompiledPattern, CompiledRedaction

    pin = CompiledPattern("pin", compile_re2(r"^\d{6}$"), "[PIN]", None)
    redactor = Redactor((CompiledRedaction("p", (pin,), None),))
    assert _redacted({"code": "123456", "other": "x"}, redactor) == {"code": "[PIN]", "other": "x"}


def test_arguments_that_cannot_be_redacted_are_not_stored() -> None:
    from runtime.audit.record import AuditRecord

    class Broken:
        anchored = False

        def has_candidate(self, text: str) -> bool:
            raise RuntimeError("no")

        def redact_value(self, value: object) -> object:
            raise RuntimeError("no")

    record = AuditRecord(1.0, args={"token": "ghp_" + "x" * 36})
    record.redactor = Broken()
    assert "ghp_" not in (record.to_row()[8] or "")


@pytest.mark.parametrize(
    "args",
    [
        {"password": "pw"},
        {"user": "bob", "password": "pw"},
        {"config": {"db": {"Password": "pw"}}},
        {"headers": {"Authorization": "Basic dXNlcjpwdw=="}},
        {"body": '{"password": "pw", "user": "bob"}'},
        {"body": '{\\"password\\": \\"pw\\"}'},
        {"items": [{"api_key": 12345678}]},
        {"smtp_pass": "pw", "note": "ok"},
    ],
    ids=["flat", "beside-others", "nested", "header", "json-in-a-string", "escaped-json", "number-in-a-list", "suffix"],
)
def test_values_under_secret_keys_are_never_stored_in_clear(args: dict) -> None:
    from pathlib import Path

    from runtime import load_snapshot
    from runtime.audit.record import AuditRecord

    snapshot = load_snapshot([Path(__file__).resolve().parents[2] / "policies"])
    record = AuditRecord(ts=1.0, tool="t", args=args)
    record.redactor = snapshot.redactor
    stored = record.to_json()
    assert "pw" not in stored.replace("pwd", "") and "12345678" not in stored and "dXNlcjpwdw" not in stored, stored
    assert "REDACTED" in stored
    if "user" in json.dumps(args):
        assert "bob" in stored
