"""truncate(): long results are cut by mode, and the notice says how long the original was and how to read the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config.models import TruncationMode
from runtime.shaping.artifacts import ArtifactRef, ArtifactStore
from runtime.shaping.truncate import Truncation, truncate
from runtime.snapshot import ResolvedOutput

NOTICE_MAX = 400  # what a notice may add on top of max_chars


def limits(
    mode: TruncationMode = TruncationMode.artifact, error_mode: TruncationMode = TruncationMode.head_tail, **sizes: int
) -> ResolvedOutput:
    values = {"max_chars": 1000, "preview_chars": 200, "head_chars": 300, "tail_chars": 300, **sizes}
    return ResolvedOutput(on_success=mode, on_error=error_mode, **values)


def numbered(lines: int, width: int = 20) -> str:
    return "".join(f"line {i:06d}".ljust(width - 1, ".") + "\n" for i in range(lines))


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


def saver(store: ArtifactStore):  # type: ignore[no-untyped-def]
    return lambda text: store.save(text, call_id="call_1", tool="run_command")


def test_text_within_max_chars_is_unchanged() -> None:
    text = "x" * 1000
    assert truncate(text, limits(), is_error=False, save=None) == (text, Truncation(False, None, 1000, None))


def test_artifact_mode_saves_the_full_text_and_says_exactly_how_to_read_the_rest(store: ArtifactStore) -> None:
    text = numbered(500)  # 10,000 characters, 20 per line
    body, info = truncate(text, limits(), is_error=False, save=saver(store))
    assert info.truncated and info.mode == "artifact" and info.original_chars == 10_000
    artifact_id = info.artifact_id
    assert artifact_id is not None
    notice, _, preview = body.partition("\n")
    assert notice == (
        "[Output truncated: 10,000 characters in total; the first 200 are shown below. The full output is saved as "
        f"artifact {artifact_id}. "
        f'To read the rest, call artifact_read(id="{artifact_id}", offset=200) and go on from the next_offset it '
        "returns; "
        'add pattern="<regex>" to get only the matching lines.]'
    )
    assert preview == text[:200]
    # The offset in the notice continues exactly where the preview stops.
    assert store.read(artifact_id, offset=200, limit=100).text == text[200:300]
    assert store.info(artifact_id).chars == len(text)


def test_the_preview_ends_at_a_line_break_near_the_limit_and_the_offset_follows_it(store: ArtifactStore) -> None:
    text = numbered(500, width=30)  # lines of 30: 200 is not a line boundary, 180 is
    body, info = truncate(text, limits(), is_error=False, save=saver(store))
    assert "the first 180 are shown below" in body
    assert f'artifact_read(id="{info.artifact_id}", offset=180)' in body
    assert body.endswith(text[:180])


def test_a_preview_of_zero_characters_still_says_how_to_read_the_output(store: ArtifactStore) -> None:
    body, info = truncate("y" * 5000, limits(preview_chars=0), is_error=False, save=saver(store))
    assert body == (
        f"[Output too long to show: 5,000 characters. The full output is saved as artifact {info.artifact_id}. "
        f'To read it, call artifact_read(id="{info.artifact_id}", offset=0) and go on from the next_offset it returns; '
        'add pattern="<regex>" to get only the matching lines.]'
    )


def test_without_a_store_artifact_mode_falls_back_to_head_and_tail_and_says_so() -> None:
    text = numbered(500)
    body, info = truncate(text, limits(), is_error=False, save=None)
    assert info == Truncation(True, "head_tail", 10_000, None)
    assert body.startswith(
        "[The full output (10,000 characters) could not be kept (no artifact store is configured), so only its start "
        "and end are shown.]\n"
    )
    assert text[-300:] in body


def test_a_failing_save_falls_back_to_head_and_tail_and_gives_the_reason() -> None:
    def broken(text: str) -> ArtifactRef:
        raise OSError(28, "No space left on device")

    body, info = truncate(numbered(500), limits(), is_error=False, save=broken)
    assert info.mode == "head_tail" and info.artifact_id is None
    assert body.startswith(
        "[The full output (10,000 characters) could not be kept (saving it failed: [Errno 28] No space left on "
        "device), so only its start and end are shown.]\n"
    )


def test_head_mode_keeps_the_start_and_says_how_much_was_cut() -> None:
    text = numbered(500)
    body, info = truncate(text, limits(TruncationMode.head), is_error=False, save=None)
    assert info == Truncation(True, "head", 10_000, None)
    assert body == text[:300] + (
        "[... output truncated: the first 300 of 10,000 characters are shown above; the remaining 9,700 "
        "characters were cut and are not kept.]"
    )


def test_tail_mode_keeps_the_end_and_says_how_much_was_cut() -> None:
    text = numbered(500)
    body, info = truncate(text, limits(TruncationMode.tail), is_error=False, save=None)
    assert info.mode == "tail"
    assert (
        body
        == (
            "[... output truncated: the first 9,700 of 10,000 characters were cut and are not kept; the last 300 are "
            "shown below.]\n"
        )
        + text[-300:]
    )


def test_head_tail_keeps_both_ends_so_the_final_error_lines_survive() -> None:
    text = numbered(500) + "Traceback (most recent call last):\nValueError: the real error\n"
    body, info = truncate(text, limits(), is_error=True, save=None)
    assert info.mode == "head_tail"
    assert body.endswith("ValueError: the real error\n")
    assert body.startswith(text[:280])
    head, marker, tail = body.partition("[... ")
    omitted = len(text) - len(head) - len(tail.partition("\n")[2])
    assert marker + tail.partition("\n")[0] == f"[... {omitted:,} characters omitted ...]"


def test_errors_use_on_error_and_successes_use_on_success() -> None:
    text = numbered(500)
    output = limits(TruncationMode.head, TruncationMode.tail)
    assert truncate(text, output, is_error=False, save=None)[1].mode == "head"
    assert truncate(text, output, is_error=True, save=None)[1].mode == "tail"


@pytest.mark.parametrize("mode", list(TruncationMode))
@pytest.mark.parametrize("text", [numbered(2000), "z" * 40_000, "数据🎉" * 9000, "a\nb" * 9000])
def test_the_result_never_exceeds_max_chars_plus_a_small_notice(
    store: ArtifactStore, mode: TruncationMode, text: str
) -> None:
    for output in (
        limits(mode),
        limits(mode, head_chars=5000, tail_chars=5000, preview_chars=5000),
        limits(mode, max_chars=10, head_chars=0, tail_chars=0),
    ):
        body, info = truncate(text, output, is_error=False, save=saver(store))
        assert info.truncated
        assert len(body) <= output.max_chars + NOTICE_MAX


def test_head_and_tail_sizes_are_scaled_down_to_fit_max_chars() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(50_000))  # no line breaks
    body, _ = truncate(
        text,
        limits(TruncationMode.head_tail, max_chars=1000, head_chars=3000, tail_chars=1000),
        is_error=False,
        save=None,
    )
    head, _, rest = body.partition("\n[... ")
    tail = rest.partition("...]\n")[2]
    assert (len(head), len(tail)) == (750, 250)  # 3:1, as configured


def test_head_chars_of_zero_means_max_chars() -> None:
    body, _ = truncate("q" * 5000, limits(TruncationMode.head, head_chars=0), is_error=False, save=None)
    assert body.startswith("q" * 1000 + "\n[... output truncated: the first 1,000 of")


def test_a_cut_never_splits_a_surrogate_pair() -> None:
    pair = "\ud83c\udf89"  # as decoded with surrogatepass: two code points
    text = "a" + pair * 5000
    for mode in (TruncationMode.head, TruncationMode.tail, TruncationMode.head_tail):
        for max_chars in (99, 100, 101):
            body, _ = truncate(
                text,
                limits(mode, max_chars=max_chars, head_chars=max_chars // 2, tail_chars=max_chars // 2),
                is_error=False,
                save=None,
            )
            for index in range(len(body) - 1):
                if "\ud800" <= body[index] <= "\udbff":
                    assert "\udc00" <= body[index + 1] <= "\udfff"
            assert not ("\udc00" <= body[0] <= "\udfff")


def test_tail_cut_prefers_a_line_start() -> None:
    text = numbered(500, width=30)
    body, _ = truncate(text, limits(TruncationMode.tail), is_error=False, save=None)
    kept = body.partition("\n")[2]
    assert kept.startswith("line ")
    assert len(kept) <= 300
