"""ArtifactStore: atomic saves, paging by characters without reading the whole file, id validation, retention."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import stat
import time
from pathlib import Path
from typing import Any

import pytest

import runtime.shaping.artifacts as artifacts_module
from runtime.errors import ToolrtError
from runtime.shaping.artifacts import INDEX_STRIDE, ArtifactError, ArtifactSaveError, ArtifactStore, check_artifact_id


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


def read_all(store: ArtifactStore, artifact_id: str, limit: int) -> str:
    """Follow next_offset from 0 to the end, as a model would."""
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = store.read(artifact_id, offset=offset, limit=limit)
        assert page.offset == offset
        parts.append(page.text)
        offset = page.next_offset
    return "".join(parts)


def mixed_text(chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    alphabet = "abcdefghij klmnop\n" * 4 + "é数据🎉ü\r"
    return "".join(rng.choices(alphabet, k=chars))


# -- saving -------------------------------------------------------------------------


def test_save_returns_a_ref_with_id_sizes_and_sha256(store: ArtifactStore) -> None:
    text = "héllo wörld 🎉\n" * 10
    ref = store.save(text, call_id="call_1", tool="run_command")
    data = text.encode("utf-8")
    assert ref.id.startswith("art_") and len(ref.id) == 28
    assert ref.chars == len(text) and ref.bytes == len(data)
    assert ref.sha256 == hashlib.sha256(data).hexdigest()
    assert ref.path.read_bytes() == data
    assert store.info(ref.id) == ref


def test_ids_are_random_url_safe_tokens(store: ArtifactStore) -> None:
    ids = {store.save("x", call_id=str(i), tool="t").id for i in range(50)}
    assert len(ids) == 50
    for artifact_id in ids:
        assert check_artifact_id(artifact_id) == artifact_id


def test_save_leaves_no_temporary_files_and_files_are_private(store: ArtifactStore) -> None:
    ref = store.save("abc", call_id="c", tool="t")
    names = sorted(p.name for p in store.root.iterdir())
    assert names == [f"{ref.id}.json", f"{ref.id}.txt"]  # ASCII: no index needed
    for path in store.root.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_metadata_records_call_and_tool(store: ArtifactStore) -> None:
    ref = store.save("abc", call_id="call_9", tool="grep")
    meta = json.loads((store.root / f"{ref.id}.json").read_text())
    assert meta["call_id"] == "call_9" and meta["tool"] == "grep" and meta["chars"] == 3


def test_an_empty_text_can_be_saved_and_read(store: ArtifactStore) -> None:
    ref = store.save("", call_id="c", tool="t")
    assert store.read(ref.id) == artifacts_module.ArtifactPage("", 0, None, 0)


def test_lone_surrogates_are_stored_as_replacement_characters_keeping_offsets(store: ArtifactStore) -> None:
    ref = store.save("a\ud800b" * 3, call_id="c", tool="t")
    assert ref.chars == 9
    assert store.read(ref.id).text == "a\ufffdb" * 3


def test_writer_streams_chunks_and_commits_on_close(store: ArtifactStore) -> None:
    text = mixed_text(50_000)
    writer = store.writer(call_id="c", tool="t")
    rng = random.Random(5)
    position = 0
    while position < len(text):
        size = rng.choice([1, 7, INDEX_STRIDE - 1, INDEX_STRIDE, INDEX_STRIDE + 1, 10_000])
        writer.write(text[position : position + size])
        position += size
    assert not any(p.suffix == ".json" for p in store.root.iterdir())  # not visible before close
    ref = writer.close()
    assert ref.chars == len(text)
    assert read_all(store, ref.id, 3000) == text


def test_writer_mixing_ascii_and_non_ascii_chunks_keeps_the_index_exact(store: ArtifactStore) -> None:
    chunks = ["a" * (INDEX_STRIDE - 3), "ééé数据", "b" * (3 * INDEX_STRIDE + 5), "🎉" * (INDEX_STRIDE + 2), "c" * 10]
    writer = store.writer(call_id="c", tool="t")
    for chunk in chunks:
        writer.write(chunk)
    ref = writer.close()
    text = "".join(chunks)
    for offset in [
        0,
        1,
        INDEX_STRIDE - 4,
        INDEX_STRIDE - 3,
        INDEX_STRIDE,
        INDEX_STRIDE + 1,
        2 * INDEX_STRIDE + 7,
        len(text) - 11,
        len(text) - 1,
    ]:
        assert store.read(ref.id, offset=offset, limit=20).text == text[offset : offset + 20], offset


def test_abort_discards_everything(store: ArtifactStore) -> None:
    writer = store.writer(call_id="c", tool="t")
    writer.write("partial")
    writer.abort()
    writer.abort()  # twice is fine
    assert list(store.root.iterdir()) == []


def test_leaving_a_with_block_by_an_exception_aborts(store: ArtifactStore) -> None:
    with pytest.raises(RuntimeError), store.writer(call_id="c", tool="t") as writer:
        writer.write("partial")
        raise RuntimeError("handler crashed")
    assert list(store.root.iterdir()) == []


def test_writing_after_close_is_an_error(store: ArtifactStore) -> None:
    writer = store.writer(call_id="c", tool="t")
    writer.close()
    with pytest.raises(ArtifactError, match="already closed"):
        writer.write("x")
    with pytest.raises(ArtifactError, match="already closed"):
        writer.close()


def test_output_beyond_the_store_byte_limit_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a", max_bytes=1000)
    writer = store.writer(call_id="c", tool="t")
    writer.write("x" * 600)
    with pytest.raises(ArtifactSaveError, match="larger than the artifact store's limit of 1,000 bytes") as info:
        writer.write("y" * 600)
    assert isinstance(info.value, OSError)  # callers handling I/O errors handle it
    assert isinstance(info.value, ToolrtError)
    assert list(store.root.iterdir()) == []


def test_an_unwritable_directory_gives_an_artifact_save_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ArtifactSaveError, match="cannot create the artifact directory"):
        ArtifactStore(blocker / "artifacts").save("x", call_id="c", tool="t")


# -- reading ------------------------------------------------------------------------


def test_pages_follow_next_offset_to_the_end_and_rebuild_the_text(store: ArtifactStore) -> None:
    text = mixed_text(20_000)
    ref = store.save(text, call_id="c", tool="t")
    assert read_all(store, ref.id, 2000) == text
    assert read_all(store, ref.id, 777) == text


def test_offsets_and_limits_count_characters_not_bytes(store: ArtifactStore) -> None:
    text = "🎉" * 10 + "abc"
    ref = store.save(text, call_id="c", tool="t")
    page = store.read(ref.id, offset=9, limit=2)
    assert page.text == "🎉a"
    assert page.next_offset == 11
    assert page.total_chars == 13


def test_carriage_returns_are_kept_and_counted(store: ArtifactStore) -> None:
    text = "a\r\nb\rc\n" * 3
    ref = store.save(text, call_id="c", tool="t")
    assert store.read(ref.id, offset=0, limit=100).text == text


def test_reading_past_the_end_returns_an_empty_last_page(store: ArtifactStore) -> None:
    ref = store.save("abc", call_id="c", tool="t")
    assert store.read(ref.id, offset=3) == artifacts_module.ArtifactPage("", 3, None, 3)
    assert store.read(ref.id, offset=100).next_offset is None


@pytest.mark.parametrize(("offset", "limit"), [(-1, 10), (0, 0), (0, -5), (True, 10), ("3", 10)])
def test_bad_offsets_and_limits_are_rejected(store: ArtifactStore, offset: Any, limit: Any) -> None:
    ref = store.save("abc", call_id="c", tool="t")
    with pytest.raises(ArtifactError, match="whole number"):
        store.read(ref.id, offset=offset, limit=limit)


class CountingReader(io.BufferedReader):
    """Counts the bytes a read pulls from disk."""

    total = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        CountingReader.total += len(data)
        return data

    def read1(self, size: int = -1) -> bytes:
        data = super().read1(size)
        CountingReader.total += len(data)
        return data


@pytest.mark.parametrize("ascii_only", [True, False])
def test_reading_a_page_of_a_multi_megabyte_artifact_reads_only_near_the_page(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch, ascii_only: bool
) -> None:
    text = ("0123456789abcdef" * 400_000) if ascii_only else mixed_text(3_000_000, seed=2)
    ref = store.save(text, call_id="c", tool="t")
    assert ref.bytes > 3_000_000

    def counting_open(path: Path) -> Any:
        fd = os.open(path, os.O_RDONLY)
        return CountingReader(io.FileIO(fd, "r"))

    monkeypatch.setattr(artifacts_module, "_open_nofollow", counting_open)
    rng = random.Random(9)
    for offset in [0, len(text) // 2, len(text) - 2000, *(rng.randrange(len(text)) for _ in range(20))]:
        CountingReader.total = 0
        page = store.read(ref.id, offset=offset, limit=2000)
        assert page.text == text[offset : offset + 2000]
        assert page.total_chars == len(text)
        assert CountingReader.total < 200_000, (offset, CountingReader.total)  # not megabytes


def test_the_index_is_written_only_for_non_ascii_text(store: ArtifactStore) -> None:
    ascii_ref = store.save("a" * 10_000, call_id="c", tool="t")
    other_ref = store.save("é" * 10_000, call_id="c", tool="t")
    assert not (store.root / f"{ascii_ref.id}.idx").exists()
    index = (store.root / f"{other_ref.id}.idx").read_bytes()
    assert len(index) == 8 * ((10_000 - 1) // INDEX_STRIDE + 1)  # one offset per 4,096 characters


# -- filtering by pattern ---------------------------------------------------------


def test_a_pattern_keeps_only_the_matching_lines(store: ArtifactStore) -> None:
    text = "".join(f"line {i} {'ERROR boom' if i % 10 == 0 else 'ok'}\n" for i in range(1000))
    ref = store.save(text, call_id="c", tool="t")
    page = store.read(ref.id, pattern="ERROR", limit=100_000)
    assert page.text == "".join(f"line {i} ERROR boom\n" for i in range(0, 1000, 10))
    assert page.next_offset is None


def test_filtered_pages_continue_from_next_offset_without_losing_or_repeating_lines(store: ArtifactStore) -> None:
    text = "".join(f"line {i} {'hit' if i % 3 == 0 else 'miss'}\n" for i in range(3000))
    ref = store.save(text, call_id="c", tool="t")
    found: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = store.read(ref.id, offset=offset, limit=500, pattern=r"hit$")
        assert len(page.text) <= 500
        found.append(page.text)
        offset = page.next_offset
    assert "".join(found) == "".join(f"line {i} hit\n" for i in range(0, 3000, 3))


def test_a_filtered_read_stops_after_its_scan_budget_and_says_where_to_go_on(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(artifacts_module, "PATTERN_SCAN_CHARS", 10_000)
    text = "nothing here\n" * 5000 + "needle\n"
    ref = store.save(text, call_id="c", tool="t")
    page = store.read(ref.id, pattern="needle")
    assert page.text == ""
    assert page.next_offset is not None and 10_000 <= page.next_offset < len(text)
    offset: int | None = 0
    hits = ""
    while offset is not None:
        page = store.read(ref.id, offset=offset, pattern="needle")
        hits += page.text
        offset = page.next_offset
    assert hits == "needle\n"


def test_a_matching_line_longer_than_the_page_is_returned_in_pieces(store: ArtifactStore) -> None:
    text = "short\n" + "X" * 5000 + "\nend\n"
    ref = store.save(text, call_id="c", tool="t")
    page = store.read(ref.id, pattern="X", limit=1000)
    assert page.text == "X" * 1000
    assert page.next_offset == 6 + 1000


@pytest.mark.parametrize(
    "pattern",
    [
        "ERROR",
        "^line 1",
        r"7$",
        r"\Aline",
        r"ok\z",
        r"^$",
        r"\bboom\b",
        r"(?i)error.*boom",
        r"x*",
        r"line \d+ ok\nline",
    ],
)
def test_batched_filtering_keeps_exactly_the_lines_a_line_by_line_filter_keeps(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    import re2

    monkeypatch.setattr(artifacts_module, "_BATCH_CHARS", 500)  # many batches
    monkeypatch.setattr(artifacts_module, "_LINE_CHUNK", 300)  # and long lines cut into pieces
    rng = random.Random(4)
    lines = []
    for i in range(2000):
        kind = rng.random()
        lines.append(
            f"line {i} {'ERROR boom' if kind < 0.05 else 'Error: boom' if kind < 0.07 else '' if kind < 0.1 else 'ok'}"
        )
        if kind > 0.995:
            lines.append("line " + "x" * 1000 + " ERROR boom")  # longer than a piece
    text = "\n".join(lines)  # no newline at the very end
    ref = store.save(text, call_id="c", tool="t")
    compiled = re2.compile(pattern)
    pieces = []
    for line in text.splitlines(keepends=True):
        pieces += [line[i : i + 300] for i in range(0, len(line), 300)]
    expected = "".join(p for p in pieces if compiled.search(p[:-1] if p.endswith("\n") else p))
    got = ""
    offset: int | None = 0
    while offset is not None:
        page = store.read(ref.id, offset=offset, limit=5000, pattern=pattern)
        got += page.text
        offset = page.next_offset
    assert got == expected


def test_an_invalid_pattern_is_an_artifact_error_that_says_why(store: ArtifactStore) -> None:
    ref = store.save("abc", call_id="c", tool="t")
    with pytest.raises(ArtifactError, match="look-ahead"):
        store.read(ref.id, pattern="(?=a)")


# -- ids ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("artifact_id", "reason"),
    [
        ("../../etc/passwd", "path separator"),
        ("art_../../../etc/passwd", "path separator"),
        ("/etc/passwd", "path separator"),
        ("art_0123456789abcdef01234567/../x", "path separator"),
        ("..\\..\\windows", "path separator"),
        ("art_0123456789abcdef0123456\x00", "NUL byte"),
        ("art_0123456789ABCDEF01234567", "24 lowercase hex digits"),
        ("art_0123456789abcdef0123456", "24 lowercase hex digits"),
        ("art_0123456789abcdef012345678", "24 lowercase hex digits"),
        ("ART_0123456789abcdef01234567", "24 lowercase hex digits"),
        ("", "24 lowercase hex digits"),
        ("art_0123456789abcdef0123456\u0661", "24 lowercase hex digits"),  # an Arabic-Indic digit
    ],
)
def test_crafted_ids_are_rejected_before_touching_the_file_system(
    store: ArtifactStore, artifact_id: str, reason: str
) -> None:
    with pytest.raises(ArtifactError, match=reason):
        store.read(artifact_id)


@pytest.mark.parametrize("artifact_id", [None, 5, b"art_0123456789abcdef01234567"])
def test_ids_that_are_not_strings_are_rejected(artifact_id: Any) -> None:
    with pytest.raises(ArtifactError, match="must be a string"):
        check_artifact_id(artifact_id)


def test_an_unknown_id_says_it_does_not_exist_or_has_expired(store: ArtifactStore) -> None:
    store.save("x", call_id="c", tool="t")
    with pytest.raises(ArtifactError, match="does not exist or has expired"):
        store.read("art_0123456789abcdef01234567")


def test_a_symlink_planted_in_the_directory_is_not_followed(store: ArtifactStore, tmp_path: Path) -> None:
    ref = store.save("x", call_id="c", tool="t")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    text_path = store.root / f"{ref.id}.txt"
    text_path.unlink()
    text_path.symlink_to(secret)
    with pytest.raises(ArtifactError, match="cannot be read"):
        store.read(ref.id)


# -- retention ------------------------------------------------------------------------


def age(store: ArtifactStore, artifact_id: str, seconds: float) -> None:
    """Make an artifact look ``seconds`` old (its commit record's mtime)."""
    when = time.time() - seconds
    os.utime(store.root / f"{artifact_id}.json", (when, when))


def saved_ids(store: ArtifactStore) -> set[str]:
    return {p.stem for p in store.root.glob("art_*.json")}


def test_retention_keeps_the_newest_max_count(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a", max_count=3)
    ids = []
    for i in range(6):
        ids.append(store.save(f"text {i}", call_id=str(i), tool="t").id)
        age(store, ids[-1], 100 - i)  # strictly increasing creation times
    assert saved_ids(store) == set(ids[-3:])
    assert {p.stem for p in store.root.iterdir()} == set(ids[-3:])  # text files went too


def test_retention_drops_the_oldest_until_total_bytes_fit(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a", max_bytes=1500)
    ids = []
    for i in range(4):
        ids.append(store.save(str(i) * 400, call_id=str(i), tool="t").id)
        age(store, ids[-1], 100 - i)
    kept = saved_ids(store)
    assert ids[-1] in kept and ids[0] not in kept
    assert sum(p.stat().st_size for p in store.root.iterdir()) <= 1500


def test_retention_drops_artifacts_older_than_max_age(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a", max_age_s=3600)
    old = store.save("old", call_id="1", tool="t").id
    age(store, old, 7200)
    new = store.save("new", call_id="2", tool="t").id
    assert saved_ids(store) == {new}
    with pytest.raises(ArtifactError, match="expired"):
        store.read(old)


def test_the_artifact_just_saved_is_kept_even_if_it_alone_exceeds_the_byte_limit(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a", max_bytes=1000)
    first = store.save("a" * 100, call_id="1", tool="t").id
    age(store, first, 10)
    big = store.save("b" * 950, call_id="2", tool="t").id
    assert saved_ids(store) == {big}


def test_retention_removes_stale_temporary_files_and_orphans_but_not_foreign_files(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a")
    store.root.mkdir(parents=True)
    stale = store.root / ".tmp-crashed.txt"
    stale.write_text("half")
    orphan = store.root / "art_0123456789abcdef01234567.txt"  # no commit record
    orphan.write_text("orphan")
    fresh = store.root / ".tmp-live.txt"
    fresh.write_text("being written")
    foreign = store.root / "README"
    foreign.write_text("not ours")
    long_ago = time.time() - 3 * 86400
    for path in (stale, orphan):
        os.utime(path, (long_ago, long_ago))
    store.save("x", call_id="c", tool="t")
    assert not stale.exists() and not orphan.exists()
    assert fresh.exists() and foreign.exists()


def test_retention_tolerates_files_vanishing_concurrently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ArtifactStore(tmp_path / "a", max_count=1)
    first = store.save("1", call_id="1", tool="t").id
    age(store, first, 10)
    (store.root / f"{first}.txt").unlink()  # another process got there first
    store.save("2", call_id="2", tool="t")
    assert len(saved_ids(store)) == 1
