"""parse_since, format_table and format_json: what the `toolrt audit` command prints."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from runtime.audit import format_json, format_table, parse_since

NOW = 1_714_564_800.0  # 2024-05-01T12:00:00Z


@pytest.mark.parametrize(
    ("text", "age_s"),
    [
        ("30s", 30),
        ("15m", 900),
        ("2h", 7200),
        ("7d", 7 * 86400),
        ("2w", 14 * 86400),
        ("1.5h", 5400),
        (" 15M ", 900),
        ("0m", 0),
    ],
)
def test_relative_ages_count_back_from_now(text: str, age_s: float) -> None:
    assert parse_since(text, NOW) == NOW - age_s


def test_iso_datetimes_with_a_zone_are_exact() -> None:
    assert parse_since("2024-05-01T12:00:00Z", NOW) == NOW
    assert parse_since("2024-05-01T14:00:00+02:00", NOW) == NOW
    assert parse_since("2024-05-01 12:00:00.500+00:00", NOW) == NOW + 0.5


def test_iso_dates_and_naive_datetimes_are_local_time() -> None:
    assert parse_since("2024-05-01", NOW) == dt.datetime(2024, 5, 1).timestamp()
    assert parse_since("2024-05-01T08:30", NOW) == dt.datetime(2024, 5, 1, 8, 30).timestamp()


def test_now_defaults_to_the_current_time() -> None:
    before = dt.datetime.now().timestamp()
    assert before - 3600 - 1 <= parse_since("1h") <= dt.datetime.now().timestamp() - 3600 + 1


@pytest.mark.parametrize(
    "text", ["", "   ", "yesterday", "15", "15x", "-5m", "m15", "2024-13-01", "2024-05-01T25:00", "5 minutes"]
)
def test_anything_else_is_a_value_error_listing_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_since(text, NOW)
    message = str(caught.value)
    assert "15m" in message and "ISO-8601" in message


ROWS: list[dict[str, Any]] = [
    {
        "id": 2,
        "ts": NOW,
        "session_id": "a-very-long-session-identifier",
        "tool": "file_write",
        "status": "ok",
        "decision": "allow",
        "duration_ms": 12.345,
        "call_id": "toolu_01",
        "rule": "writes-ok",
        "code": None,
        "path": "/ws/a.txt",
        "artifact": None,
        "truncated": False,
        "args": {"path": "a.txt"},
    },
    {
        "id": 1,
        "ts": NOW - 60,
        "session_id": "s",
        "tool": "shell",
        "status": "denied",
        "decision": "deny",
        "duration_ms": 0.042,
        "call_id": "toolu_02",
        "rule": None,
        "code": "denied",
        "path": None,
        "artifact": "art-1",
        "truncated": True,
        "args": None,
    },
    {
        "id": 0,
        "ts": None,
        "session_id": None,
        "tool": None,
        "status": None,
        "decision": None,
        "duration_ms": None,
        "call_id": None,
    },
]


def test_table_has_a_header_and_fixed_columns() -> None:
    lines = format_table(ROWS).splitlines()
    assert len(lines) == 4
    header = lines[0]
    assert header.split() == ["TIME", "SESSION", "TOOL", "STATUS", "DECISION", "MS", "CALL", "DETAIL"]
    for column in ("SESSION", "TOOL", "STATUS", "CALL", "DETAIL"):
        start = header.index(column)
        for line in lines[1:3]:
            assert line[start - 2 : start] == "  ", (column, line)  # every column starts at the same place
    assert "a-very-long…" in lines[1] and "a-very-long-session-identifier" not in lines[1]
    assert dt.datetime.fromtimestamp(NOW).strftime("%Y-%m-%d %H:%M:%S") in lines[1]
    assert "12.3" in lines[1] and "0.042" in lines[2]
    assert lines[1].endswith("rule=writes-ok path=/ws/a.txt")
    assert lines[2].endswith("code=denied artifact=art-1 truncated")
    assert lines[3].split()[:7] == ["-"] * 7


def test_an_empty_table_says_so() -> None:
    assert format_table([]) == "no matching calls"


def test_json_output_is_valid_json_with_utc_times() -> None:
    data = json.loads(format_json(ROWS))
    assert [row["id"] for row in data] == [2, 1, 0]
    assert data[0]["time"] == "2024-05-01T12:00:00Z" and data[0]["args"] == {"path": "a.txt"}
    assert "time" not in data[2]
    assert json.loads(format_json([])) == []
