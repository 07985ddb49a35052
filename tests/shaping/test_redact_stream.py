"""StreamRedactor: chunked output is redacted exactly as the whole text would be, across chunk boundaries."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from shaping_samples import LOOK_ALIKES, PII, SECRETS, pem_key

from runtime.shaping.redact import DEFAULT_WINDOW, Redactor
from runtime.snapshot import CompiledRedaction


def run_stream(redactor: Redactor, chunks: Iterable[str]) -> tuple[str, dict[str, int]]:
    stream = redactor.stream()
    out = [stream.feed(chunk) for chunk in chunks]
    out.append(stream.finish())
    return "".join(out), stream.counts


def split_at(text: str, *cuts: int) -> list[str]:
    edges = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:], strict=False)]


SHORT_SECRETS = [
    (name, template, secret) for name, template, secret in SECRETS + PII if len(template.format(secret)) < 120
]


@pytest.fixture(scope="module")
def small_window(default_profiles: tuple[CompiledRedaction, ...]) -> Redactor:
    """A 160-byte window: small enough that the held-back logic runs on short texts."""
    return Redactor(default_profiles, window=160)


@pytest.mark.parametrize(
    ("name", "template", "secret"), SHORT_SECRETS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SHORT_SECRETS)]
)
def test_a_secret_split_across_two_chunks_at_every_offset_is_redacted(
    small_window: Redactor, name: str, template: str, secret: str
) -> None:
    # Filler longer than two windows, so that output is emitted (and the window
    # logic decides) before the whole text has arrived.
    text = "log line filler ok\n" * 20 + template.format(secret) + "\nmore filler text\n" * 20
    expected = small_window.redact(text)
    assert expected[1] == {name: 1}
    start = text.index(secret)
    for cut in range(start - 2, start + len(secret) + 3):
        assert run_stream(small_window, split_at(text, cut)) == expected, cut


def test_a_secret_fed_one_character_at_a_time_is_redacted(small_window: Redactor) -> None:
    text = "x " * 300 + "token ghp_" + "A" * 36 + " and bob@example.com " + "y " * 300
    assert run_stream(small_window, text) == small_window.redact(text)


def test_random_chunkings_of_a_mixed_text_give_exactly_the_whole_text_result(small_window: Redactor) -> None:
    rng = random.Random(7)
    parts = (
        [template.format(secret) for _, template, secret in SHORT_SECRETS] + LOOK_ALIKES + ["用户数据 🎉 ünïcödé"] * 5
    )
    rng.shuffle(parts)
    text = "\n".join(parts)
    expected = small_window.redact(text)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, 40)))
        assert run_stream(small_window, split_at(text, *cuts)) == expected


def test_a_word_boundary_at_the_held_back_edge_sees_the_character_before_it(small_window: Redactor) -> None:
    # "xAKIA..." has no \b before AKIA, so it is not a key, wherever the stream cuts.
    text = "z" * 400 + "AKIAIOSFODNN7EXAMPLE" + " " + "z" * 400
    assert small_window.redact(text) == (text, {})
    for cut in range(390, 425):
        assert run_stream(small_window, split_at(text, cut)) == (text, {}), cut


def test_multibyte_characters_are_never_split_by_the_window(small_window: Redactor) -> None:
    text = ("数据🎉é" * 100 + " bob@example.com ") * 5
    expected = small_window.redact(text)
    for size in (1, 2, 3, 7, 50, 161):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert run_stream(small_window, chunks) == expected


def test_a_4kb_pem_private_key_split_across_chunks_is_redacted_with_the_default_window(redactor: Redactor) -> None:
    key = pem_key(4096)
    assert len(key) > 4096
    line = "2024-05-01T12:00:00Z INFO request handled in 12 ms path=/api/v1/items\n"
    before = line * ((3 * DEFAULT_WINDOW) // len(line))
    after = line * 100
    text = before + key + "\n" + after
    expected = redactor.redact(text)
    assert expected[1] == {"pem_private_key": 1}
    body = key.splitlines()[5]
    rng = random.Random(3)
    for chunk_size in (1000, 4096, 65536, 9999):
        # Offset the start so the key straddles chunk and held-back boundaries differently each time.
        for shift in (0, 1, 2048, 4000, rng.randrange(chunk_size)):
            chunks = [text[:shift]] + [text[i : i + chunk_size] for i in range(shift, len(text), chunk_size)]
            out, counts = run_stream(redactor, chunks)
            assert counts == {"pem_private_key": 1}
            assert body not in out
            assert out == expected[0]


def test_secrets_straddling_the_default_window_edges_are_redacted(redactor: Redactor) -> None:
    rng = random.Random(11)
    secrets = [template.format(secret) for _, template, secret in SECRETS + PII]
    pieces: list[str] = []
    size = 0
    while size < 5 * DEFAULT_WINDOW:
        filler = "".join(rng.choice("abc def 0123\n") for _ in range(rng.randint(100, 30000)))
        secret = rng.choice(secrets)
        pieces += [filler, " ", secret, " "]
        size += len(filler) + len(secret) + 2
    text = "".join(pieces)
    expected = redactor.redact(text)
    for chunk_size in (4096, 4093, 70000):
        chunks = [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]
        assert run_stream(redactor, chunks) == expected


def test_output_is_released_before_the_end_once_more_than_two_windows_are_pending(redactor: Redactor) -> None:
    stream = redactor.stream()
    assert stream.feed("a" * 1000) == ""  # held back
    released = stream.feed("b" * (2 * DEFAULT_WINDOW))
    assert len(released) >= DEFAULT_WINDOW
    rest = stream.finish()
    assert released + rest == "a" * 1000 + "b" * (2 * DEFAULT_WINDOW)


def test_counts_accumulate_over_the_stream(small_window: Redactor) -> None:
    stream = small_window.stream()
    out = stream.feed("bob@example.com " * 50)
    out += stream.feed("AKIAIOSFODNN7EXAMPLE " * 30)
    out += stream.finish()
    assert stream.counts == {"email": 50, "aws_access_key": 30}
    assert out == "[REDACTED:email] " * 50 + "[REDACTED:aws_access_key] " * 30


def test_a_match_longer_than_the_window_may_be_missed_as_documented(
    default_profiles: tuple[CompiledRedaction, ...],
) -> None:
    tiny = Redactor(default_profiles, window=64)
    key = pem_key(1000)
    text = "x\n" * 100 + key + "\n" + "y\n" * 100
    assert tiny.redact(text)[1] == {"pem_private_key": 1}  # the whole text: found
    out, counts = run_stream(tiny, [text[i : i + 50] for i in range(0, len(text), 50)])
    # Streamed through a 64-byte window it is too long to be seen whole: the key-body
    # line rule still catches most of it, but not exactly as the whole text would.
    assert (out, counts) != tiny.redact(text)
    assert "pem_private_key" not in counts or counts.get("private_key_body")


def test_feed_after_finish_is_an_error_and_finish_twice_returns_nothing(redactor: Redactor) -> None:
    stream = redactor.stream()
    stream.feed("abc")
    assert stream.finish() == "abc"
    assert stream.finish() == ""
    with pytest.raises(RuntimeError, match="after finish"):
        stream.feed("more")


def test_streams_with_several_scanners_chain_their_stages(
    monkeypatch: pytest.MonkeyPatch, default_profiles: tuple[CompiledRedaction, ...]
) -> None:
    import re2

    import runtime.shaping.redact_scan as redact_module

    real = redact_module._compile

    def one_pattern_per_alternation(source: str) -> object:
        if ")|(?:" in source:
            raise re2.error("pattern too large - compile failed")
        return real(source)

    monkeypatch.setattr(redact_module, "_compile", one_pattern_per_alternation)
    split = Redactor(default_profiles, window=200)
    assert len(split._scanners) == sum(len(p.patterns) for p in default_profiles)
    text = "\n".join(template.format(secret) for _, template, secret in SHORT_SECRETS) * 3
    expected = split.redact(text)
    assert set(expected[1]) == {name for name, _, _ in SHORT_SECRETS}
    for size in (7, 100, 333):
        assert run_stream(split, [text[i : i + size] for i in range(0, len(text), size)]) == expected
