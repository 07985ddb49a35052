"""Call items made into rows a batch at a time: exactly the rows their records give.

The batched path (:func:`runtime.audit.rows.rows_of`) scans every string of a batch in
one pass per redactor and remembers verdicts on sets of keys; whatever a batch holds
(secrets in nested arguments, bytes, sets, enums, read-only mappings, huge arguments,
secret keys, odd metadata, redactors that raise), each row must be the one
``AuditRecord.to_row`` gives for that call alone, and no secret may be stored in clear.
"""

from __future__ import annotations

import enum
import random
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from runtime import load_snapshot
from runtime.audit.record import AuditRecord, call_item
from runtime.audit.rows import rows_of
from runtime.records import Session, Status, ToolResult
from runtime.regex import compile_re2
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledPattern, CompiledRedaction

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shaping"))
from redaction_corpus import negatives, positives  # noqa: E402

SHIPPED = load_snapshot([Path(__file__).resolve().parents[2] / "policies"]).redactor
TOKEN = "ghp_" + "a1B2" * 9
METADATA = {
    "decision": "allow",
    "status": "ok",
    "snapshot": "d1e01fd6a043907c",
    "timings_ms": {"total_ms": 0.42},
    "tool_version": "1.2.0",
}


class Color(enum.Enum):
    RED = "red"
    SECRET = TOKEN


class Level(enum.IntEnum):
    LOW = 1


def _redactor(*sources: str) -> Redactor:
    patterns = tuple(CompiledPattern(f"p{i}", compile_re2(source), "[X]", None) for i, source in enumerate(sources))
    return Redactor((CompiledRedaction("custom", patterns, None),))


def item(
    args: Any,
    redactor: Any = SHIPPED,
    *,
    metadata: Mapping[str, Any] | None = METADATA,
    index: int = 0,
    session: Session | str | None = "s1",
    status: Status = Status.ok,
) -> tuple[Any, ...]:
    result = ToolResult(call_id=f"c{index}", name="noop", status=status, content="ok", metadata=metadata)
    return call_item(result, session, f"req-{index}", None, args, redactor)


def one_by_one(items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [AuditRecord.from_call(one).to_row() for one in items]


def assert_same(items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    rows = rows_of(items)
    assert rows == one_by_one(items)
    return rows


CLEAN = {"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": False}


def hostile_args() -> list[Any]:
    return [
        {"command": f"curl -H 'Authorization: Bearer {TOKEN}' https://x"},
        {"cfg": {"db": {"Password": "hunter2"}}},
        {"password": "hunter2"},
        {"items": [{"api_key": 12345678}]},
        MappingProxyType({"token": "abc", "path": "x"}),
        {"headers": MappingProxyType({"Authorization": "Bearer abcdef"})},
        {"nested": [[[[TOKEN]]]]},
        {1: TOKEN},
        {"bytes": TOKEN.encode()},
        {"raw": b"\xff\xfe" + TOKEN.encode()},
        {"set": {TOKEN, "b"}},
        {"frozen": frozenset({TOKEN})},
        {"color": Color.SECRET},
        {"level": Level.LOW},
        {"tuple": (TOKEN, 1.5, None)},
        {"escaped": f'he said "{TOKEN}"'},
        {"newline": f"line\n{TOKEN}\nline"},
        {"huge": "x" * 20_000 + TOKEN},
        {"many": [f"v{i}" for i in range(2000)] + [TOKEN]},
        {"mail": "write to maria.lopez@example.org today"},
        {TOKEN: "value"},
        {"nan": float("nan"), "note": TOKEN},
        {"unicode": "naïve café ✓", "k": TOKEN},
        {"lone": "\ud800" + TOKEN},
        [TOKEN, "list at the top"],
        TOKEN,
        {"split_a": "AKIA", "split_b": "IOSFODNN7EXAMPLE"},
        {"empty": {}, "also": [], "none": None},
    ]


@pytest.mark.parametrize("args", hostile_args(), ids=[f"hostile{i}" for i in range(len(hostile_args()))])
def test_a_hostile_record_among_clean_ones_gives_the_rows_each_record_gives_alone(args: Any) -> None:
    items = [item(dict(CLEAN, i=i), index=i) for i in range(20)]
    items.insert(7, item(args, index=99))
    rows = assert_same(items)
    stored = repr(rows)
    for clear in ("hunter2", "12345678", "abcdef", "a1B2a1B2", "maria.lopez"):
        assert clear not in stored, (args, rows[7][8])


def test_every_corpus_secret_in_every_shape_in_one_batch_matches_the_careful_path() -> None:
    texts = [text for text, _secret in positives()]
    texts = texts[:: max(1, len(texts) // 200)] + negatives()[::3]
    items = []
    for index, text in enumerate(texts):
        for shape in ({"note": text}, {"tags": ["a", text]}, {"o": {"i": text}}, {text[:40]: 1}):
            items.append(item(shape, index=index))
    random.Random(7).shuffle(items)
    assert_same(items)


def test_a_batch_of_clean_records_stores_the_text_the_arguments_encode_to() -> None:
    rows = assert_same([item(dict(CLEAN, i=i), index=i) for i in range(300)])
    assert rows[5][8] == '{"path":"src/app.py","limit":10,"mode":"fast","tags":["a"],"dry_run":false,"i":5}'


@pytest.mark.parametrize("dirty_at", [[0], [299], [0, 299], [150], list(range(0, 300, 37)), list(range(300))])
def test_records_with_secrets_anywhere_in_a_batch_are_found_and_only_they_are_redacted(dirty_at: list[int]) -> None:
    items = [item({"note": f"token {TOKEN}" if i in dirty_at else f"plain {i}", "n": i}, index=i) for i in range(300)]
    rows = assert_same(items)
    for i, row in enumerate(rows):
        assert ("a1B2a1B2" in row[8]) is False
        assert ("REDACTED" in row[8]) is (i in dirty_at), row[8]


def test_secret_keys_are_caught_whatever_keys_the_batch_saw_before() -> None:
    # The same set of keys first clean, then a secret key in a set that differs by one key.
    items = [item({"path": "a", "mode": "fast"}, index=i) for i in range(5)]
    items += [item({"path": "a", "password": "hunter2"}), item({"path": "a", "Mode": "x", "API_KEY": "k-77"})]
    items += [item({"path": "a", "mode": "fast"}) for _ in range(5)]
    rows = assert_same(items)
    assert all("hunter2" not in row[8] and "k-77" not in row[8] for row in rows)


def test_records_of_several_redactors_in_one_batch_are_each_redacted_with_their_own() -> None:
    digits = _redactor(r"\b\d{6}\b")
    edges = _redactor(r"^\d{4}$")  # anchored to a string's edges: never the batched scan
    lines = _redactor(r"(?m)^pin\d{4}$")
    items = []
    for i in range(30):
        items += [
            item({"code": "123456" if i % 7 == 0 else "12345"}, digits, index=i),
            item({"code": "4321" if i % 5 == 0 else "43210"}, edges, index=i),
            item({"code": ["x", "pin1234" if i % 3 == 0 else "xpin1234"]}, lines, index=i),
            item({"code": "123456", "t": TOKEN}, SHIPPED, index=i),
            item({"code": "123456", "t": TOKEN}, None, index=i),  # no redactor: stored as given
        ]
    rows = assert_same(items)
    assert "[X]" in rows[0][8] and "[X]" not in rows[5][8]
    assert "[X]" in rows[1][8] and "[X]" not in rows[6][8]
    assert "[X]" in rows[2][8] and "[X]" not in rows[7][8]
    assert "123456" in rows[3][8] and "a1B2a1B2" not in rows[3][8]
    assert TOKEN in rows[4][8]


class Exploding:
    """A redactor whose scans raise: arguments must then not be stored at all."""

    edge_anchored = False

    def is_secret_key(self, key: str) -> bool:
        return False

    def has_candidate(self, text: str) -> bool:
        raise RuntimeError("scanner broke")

    def redact_value(self, value: Any) -> Any:
        raise RuntimeError("scanner broke")


def test_a_redactor_that_raises_stores_no_arguments_for_its_records_and_spares_the_others() -> None:
    broken = Exploding()
    items = [item({"secret": "maybe"}, broken, index=0), item(CLEAN, index=1), item({"x": "y"}, broken, index=2)]
    rows = assert_same(items)
    assert rows[0][8] == '{"$unredactable":true}' and rows[2][8] == '{"$unredactable":true}'
    assert rows[1][8] == '{"path":"src/app.py","limit":10,"mode":"fast","tags":["a"],"dry_run":false}'


class OddMapping(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any], broken: bool = False) -> None:
        self.data, self.broken = data, broken

    def __getitem__(self, key: str) -> Any:
        if self.broken and key == "rule":
            raise KeyError("boom")
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        if self.broken and key == "rule":
            raise RuntimeError("boom")
        return self.data.get(key, default)

    def __iter__(self) -> Any:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {},
        MappingProxyType(dict(METADATA)),
        {**METADATA, "approved": "approver", "decision": "ask"},
        {**METADATA, "approved": "approver", "decision": None},
        {**METADATA, "timings_ms": "not a mapping"},
        {**METADATA, "timings_ms": MappingProxyType({"total_ms": 3})},
        {**METADATA, "timings_ms": {"total_ms": float("nan")}},
        {**METADATA, "timings_ms": {"total_ms": -0.0}},
        {**METADATA, "truncated": 1, "artifact_id": "art-1"},
        {**METADATA, "artifact": {"id": "art-2"}},
        {**METADATA, "path": Path("/w/x"), "hash_before": b"\x01\x02", "hash_after": "ab"},
        {**METADATA, "staged": [("p/r", "deny", "warn"), ["p/s", "ask", "audit"]]},
        {**METADATA, "staged": []},
        {**METADATA, "status": None},
        {**METADATA, "tool_version": 3, "rule": Status.error},
        OddMapping(dict(METADATA)),
        OddMapping(dict(METADATA), broken=True),
    ],
    ids=[f"metadata{i}" for i in range(18)],
)
def test_odd_metadata_gives_the_row_the_record_gives(metadata: Any) -> None:
    assert_same([item(CLEAN, metadata=metadata, index=i) for i in range(3)])


@pytest.mark.parametrize("status", list(Status))
def test_every_status_and_session_kind_gives_the_row_the_record_gives(status: Status) -> None:
    sessions: list[Any] = [None, "plain-id", Session(id="s-9", user="maria")]
    assert_same([item(CLEAN, session=s, status=status, index=i) for i, s in enumerate(sessions)])


def test_records_and_call_items_mix_in_one_batch_in_order() -> None:
    record = AuditRecord(ts=1700000000.5, session_id="r", tool="t", args={"k": TOKEN})
    record.redactor = SHIPPED
    mixed: list[Any] = [item(CLEAN, index=0), record, item({"k": TOKEN}, index=2)]
    rows = rows_of(mixed)
    assert [row[1] for row in rows] == ["s1", "r", "s1"]
    assert all("a1B2a1B2" not in row[8] for row in rows)


def test_the_batched_rows_equal_the_records_rows_on_random_mixed_batches() -> None:
    rng = random.Random(11)
    pool = [*hostile_args(), CLEAN, {"n": 1}, {}, None, {"q": "plain words"}]
    for _ in range(20):
        items = [item(rng.choice(pool), index=i) for i in range(rng.randint(1, 60))]
        assert_same(items)
