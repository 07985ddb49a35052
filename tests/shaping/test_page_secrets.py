"""Artifact pages never cut a secret in two: wherever a page boundary falls in or around
a secret, neither page shows the secret or a piece of it once redacted, and paging
with the offsets given still visits every character once, in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from shaping_samples import SECRETS

from runtime.shaping.artifacts import ArtifactPage, ArtifactStore
from runtime.shaping.page_secrets import LOOK_BEHIND, keep_secrets_whole
from runtime.shaping.redact import Redactor
from runtime.shaping.untrusted import LOOK_AHEAD
from runtime.snapshot import CompiledRedaction

FILLER = "log line filler ok\n" * 30
ONE_LINE = [(n, t, s) for n, t, s in SECRETS if "\n" not in s]


@pytest.fixture(scope="module")
def secrets_only(default_profiles: tuple[CompiledRedaction, ...]) -> Redactor:
    """The shipped `secrets` profile: what artifact_read redacts with by default."""
    return Redactor(default_profiles[:1])


def _page(store: ArtifactStore, ref: str, offset: int, limit: int, redactor: Redactor) -> ArtifactPage:
    """A page as artifact_read builds it: look-behind and look-ahead around it."""
    first = max(0, offset - LOOK_BEHIND)
    before = store.read(ref, offset=first, limit=offset - first).text if offset else ""
    page = store.read(ref, offset=offset, limit=limit, look_ahead=LOOK_AHEAD)
    return keep_secrets_whole(page, before, redactor)


def _pieces(secret: str, redactor: Redactor, text: str) -> list[str]:
    """Pieces of ``secret`` that must not be readable: its first and last thirds, unless
    redacting the whole ``text`` keeps them too (the key of ``password=...``)."""
    size = max(6, len(secret) // 3)
    kept = redactor.redact(text)[0]
    return [piece for piece in (secret[:size], secret[-size:]) if piece not in kept]


@pytest.mark.parametrize(
    ("name", "template", "secret"), ONE_LINE, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(ONE_LINE)]
)
def test_a_page_end_at_every_position_around_a_secret_never_shows_a_piece_of_it(
    tmp_path: Path, secrets_only: Redactor, name: str, template: str, secret: str
) -> None:
    text = FILLER + template.format(secret) + "\n" + FILLER
    store = ArtifactStore(tmp_path / "artifacts")
    ref = store.save(text, call_id="c", tool="t").id
    start = text.index(secret)
    pieces = _pieces(secret, secrets_only, text)
    for cut in range(start - 2, start + len(secret) + 3):
        first = _page(store, ref, 0, cut, secrets_only)
        assert first.next_offset is not None
        second = _page(store, ref, first.next_offset, len(text), secrets_only)
        shown = [secrets_only.redact(p.text)[0] for p in (first, second)]
        for page in shown:
            assert secret not in page, (name, cut)
            for piece in pieces:
                assert piece not in page, (name, cut, piece)
        # The offsets given still cover the artifact exactly once.
        assert first.text + second.text == text, (name, cut)


@pytest.mark.parametrize(
    ("name", "template", "secret"), ONE_LINE, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(ONE_LINE)]
)
def test_an_offset_chosen_inside_a_secret_masks_the_rest_of_it(
    tmp_path: Path, secrets_only: Redactor, name: str, template: str, secret: str
) -> None:
    text = FILLER + template.format(secret) + "\n" + FILLER
    store = ArtifactStore(tmp_path / "artifacts")
    ref = store.save(text, call_id="c", tool="t").id
    start = text.index(secret)
    for offset in range(start + 1, start + len(secret)):
        page = _page(store, ref, offset, 200, secrets_only)
        shown = secrets_only.redact(page.text)[0]
        assert secret[len(secret) // 2 :] not in shown, (name, offset)
        assert shown.startswith("[REDACTED"), (name, offset, shown[:60])


def test_a_secret_longer_than_the_page_is_one_page_of_its_mark(tmp_path: Path, secrets_only: Redactor) -> None:
    secret = "ghp_" + "a1B2" * 9
    text = FILLER + "token " + secret + " used\n" + FILLER
    store = ArtifactStore(tmp_path / "artifacts")
    ref = store.save(text, call_id="c", tool="t").id
    start = text.index(secret)
    page = _page(store, ref, start, 10, secrets_only)
    assert page.text == secret  # the page grows to hold it whole, and shaping redacts it
    assert secrets_only.redact(page.text)[0].startswith("[REDACTED")
    assert page.next_offset == start + len(secret)
    inside = _page(store, ref, start + 3, 10, secrets_only)
    assert inside.text.startswith("[REDACTED") and secret[3:] not in inside.text
    assert inside.next_offset == start + len(secret)


@pytest.mark.parametrize("limit", [1, 7, 19, 64, 333, 1000, 4096])
def test_paging_a_log_full_of_secrets_from_the_start_shows_none_and_reproduces_it(
    tmp_path: Path, secrets_only: Redactor, limit: int
) -> None:
    lines = [template.format(secret) for _, template, secret in ONE_LINE]
    text = "".join(f"{i} {FILLER[: i % 40]}{line}\n" for i, line in enumerate(lines * 3))
    store = ArtifactStore(tmp_path / "artifacts")
    ref = store.save(text, call_id="c", tool="t").id
    offset, raw, shown = 0, [], []
    while True:
        page = _page(store, ref, offset, limit, secrets_only)
        raw.append(page.text)
        shown.append(secrets_only.redact(page.text)[0])
        if page.next_offset is None:
            break
        assert page.next_offset > offset
        offset = page.next_offset
    assert "".join(raw) == text
    for _, _, secret in ONE_LINE:
        pieces = _pieces(secret, secrets_only, text)  # redacts the whole log: once per secret, not per page
        for page in shown:
            for piece in pieces:
                assert piece not in page, (limit, piece)


def test_a_page_without_secrets_is_left_as_it_is(tmp_path: Path, secrets_only: Redactor) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    ref = store.save(FILLER * 10, call_id="c", tool="t").id
    page = store.read(ref, offset=100, limit=500, look_ahead=LOOK_AHEAD)
    assert keep_secrets_whole(page, FILLER[:100], secrets_only) is page
